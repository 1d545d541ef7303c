// How Pulumi reads a plain scalar of a stack file, from Go's yaml.v3 itself: the fixture
// tests/hostile/fixtures/yaml_v3_scalars.json that tests/hostile/test_yaml_reader.py holds stacks/reader.py to.
//
// Pulumi v3.259.0 loads a stack file with gopkg.in/yaml.v3 v3.0.1 (sdk/go/common/workspace/loaders.go
// LoadProjectStackBytes: unmarshal, marshal again, unmarshal into config.Map), keeps a YAML timestamp as its Go
// String() (sdk/go/common/resource/config/object.go unmarshalObject) and hands the program JSON (json.Marshal).
// For each scalar `s` on stdin (a JSON list) this prints that JSON for `v: s`, or the error.
//
// Regenerate (Debian bookworm: apt-get install golang-go golang-gopkg-yaml.v3-dev, which is yaml.v3 3.0.1):
//
//	cd scripts/yaml_v3 && GOPATH=/usr/share/gocode GO111MODULE=off go build -o /tmp/yaml_v3 . && cd ../.. &&
//	python3 -c 'import json; print(json.dumps([r["yaml"] for r in json.load(open("tests/hostile/fixtures/yaml_v3_scalars.json"))]))' |
//	/tmp/yaml_v3 > /tmp/scalars.json && mv /tmp/scalars.json tests/hostile/fixtures/yaml_v3_scalars.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// As Pulumi's config.object does (sdk/go/common/resource/config/object.go unmarshalObject): a YAML timestamp
// becomes its Go String(), maps and lists recurse.
func pulumiValue(v interface{}) interface{} {
	switch v := v.(type) {
	case time.Time:
		return v.String()
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, x := range v {
			out[k] = pulumiValue(x)
		}
		return out
	case []interface{}:
		out := []interface{}{}
		for _, x := range v {
			out = append(out, pulumiValue(x))
		}
		return out
	}
	return v
}

func main() {
	var scalars []string
	if err := json.NewDecoder(os.Stdin).Decode(&scalars); err != nil {
		panic(err)
	}
	results := []map[string]interface{}{}
	for _, s := range scalars {
		doc := []byte("v: " + s + "\n")
		result := map[string]interface{}{"yaml": s}
		// Pulumi's LoadProjectStackBytes: unmarshal, marshal again, unmarshal into the config.
		var raw map[string]interface{}
		if err := yaml.Unmarshal(doc, &raw); err != nil {
			result["error"] = err.Error()
			results = append(results, result)
			continue
		}
		again, err := yaml.Marshal(raw)
		if err != nil {
			result["error"] = err.Error()
			results = append(results, result)
			continue
		}
		var final map[string]interface{}
		if err := yaml.Unmarshal(again, &final); err != nil {
			result["error"] = err.Error()
			results = append(results, result)
			continue
		}
		text, err := json.Marshal(pulumiValue(final["v"]))
		if err != nil {
			result["error"] = err.Error()
		} else {
			result["json"] = string(text)
		}
		results = append(results, result)
	}
	out, _ := json.MarshalIndent(results, "", "  ")
	fmt.Println(string(out))
}
