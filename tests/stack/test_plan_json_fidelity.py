"""`--format json` against what `pulumi preview --json` writes (pulumi/pulumi pkg/display/json.go): whole numbers
as integers, the root stack step, `detailedDiff` on updates and replaces, `diagnostics`, `changeSummary`."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests import tiers
from tests.conftest import recording, stack_config
from tests.report.helpers import report
from trainstack.contracts import ContractViolation
from trainstack.create_only import replaces
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import (
    PROVIDER_DIFF_NOTE,
    InputChange,
    ResourceChange,
    diff_reports,
    path_parts,
    property_path,
)
from trainstack.model.report import Report, build_report
from trainstack.report import json_report
from trainstack.review import review

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
KINDS = {"add", "add-replace", "delete", "delete-replace", "update", "update-replace"}
# Keys whose values may be fractional: money, rates, ratios, durations and priced quantities. Counts, sizes in
# GiB, sizes of groups and the like are integers.
FRACTIONAL_KEY = re.compile(r"usd|Usd|Share|coverage|MbS|Gbps|minutes|hours|quantity")


def edited(rec: Recording, type_: str, edit: Callable[[RecordedResource], RecordedResource]) -> Recording:
    """`rec` with the first resource of `type_` edited (no program run: the recording is plain data)."""
    target = rec.by_type(type_)[0]
    return dataclasses.replace(rec, resources=tuple(edit(r) if r is target else r for r in rec.resources))


def with_inputs(resource: RecordedResource, **changes: Any) -> RecordedResource:
    return dataclasses.replace(resource, inputs={**resource.inputs, **changes})


@tiers.cache
def changed_prod() -> tuple[dict[str, Any], Report, Report]:
    """(document, after, before): prod with its file system's deployment type (create-only) and capacity changed,
    a GPU node group's max size raised, a tag with a dotted key added and its labels removed, and one resource
    whose only change is `protect`."""
    before = report("prod")
    rec = edited(before.recording, FSX, lambda r: with_inputs(r, deploymentType="PERSISTENT_1", storageCapacity=1))
    gpu_group = next(r for r in rec.by_type(NODE_GROUP) if "labels" in r.inputs and "tags" in r.inputs)

    def grow(r: RecordedResource) -> RecordedResource:
        inputs = {**r.inputs, "tags": {**r.inputs["tags"], "kubernetes.io/cluster/x": "owned"}}
        inputs["scalingConfig"] = {**inputs["scalingConfig"], "maxSize": inputs["scalingConfig"]["maxSize"] + 1}
        del inputs["labels"]
        return dataclasses.replace(r, inputs=inputs)

    rec = dataclasses.replace(rec, resources=tuple(grow(r) if r is gpu_group else r for r in rec.resources))
    vpc = rec.one("aws:ec2/vpc:Vpc")
    rec = edited(rec, vpc.type, lambda r: dataclasses.replace(r, protect=not r.protect))
    after = build_report(stack_config("prod"), rec, review(rec, "prod"))
    diff = diff_reports(before, after, "stacks/Pulumi.prod.yaml")
    return json.loads(json_report.render(after, before.recording, diff, before)), after, before


def step_of(document: dict[str, Any], type_: str, name_part: str = "") -> dict[str, Any]:
    return next(s for s in document["steps"] if s["type"] == type_ and name_part in s["urn"])


# ------------------------------------------------------------------------------------------ numbers


def float_tokens(raw: str) -> list[float]:
    found: list[float] = []
    json.loads(raw, parse_float=lambda text: found.append(float(text)) or float(text))
    return found


def fractional_paths(value: Any, path: str = "$") -> list[str]:
    """Where the document holds a fractional number, outside the engine's free-form inputs and outputs."""
    if isinstance(value, dict):
        return [
            p for k, v in value.items() if k not in ("inputs", "outputs") for p in fractional_paths(v, f"{path}.{k}")
        ]
    if isinstance(value, list):
        return [p for v in value for p in fractional_paths(v, f"{path}[]")]
    return [path] if isinstance(value, float) else []


def test_every_whole_number_is_written_as_an_integer(stack_name: str) -> None:
    raw = json_report.render(report(stack_name))
    assert float_tokens(raw), "the cost section has fractional dollars: the check must see some floats"
    assert [f for f in float_tokens(raw) if f.is_integer()] == []
    assert not re.search(r"[:\[,]\s*-?\d+\.0[,\s\]}]", raw)


def test_a_diff_document_writes_whole_numbers_as_integers_too() -> None:
    document, _, _ = changed_prod()
    raw = json.dumps(document)
    assert [f for f in float_tokens(raw) if f.is_integer()] == []
    delta = document["trainstack"]["diff"]["acceleratorsMax"]
    assert all(type(delta[k]) is int for k in ("before", "after", "change"))


def test_only_money_rates_and_durations_are_fractional(stack_name: str) -> None:
    paths = fractional_paths(json.loads(json_report.render(report(stack_name))))
    assert paths and [p for p in paths if not FRACTIONAL_KEY.search(p)] == []


def test_the_schema_types_counts_and_sizes_as_integers() -> None:
    schema = json.loads(json_report.SCHEMA_PATH.read_text())
    numbers: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            types = node.get("type")
            if types == "number" or (isinstance(types, list) and "number" in types):
                numbers.append(path)
            for key, child in node.items():
                walk(child, f"{path}/{key}")
        elif isinstance(node, list):
            for child in node:
                walk(child, path)

    walk(schema, "")
    delta_users = re.findall(r'"(\w+)": \{\s*"\$ref": "#/\$defs/delta"', json.dumps(schema, indent=1))
    assert delta_users and all(FRACTIONAL_KEY.search(name) for name in delta_users)
    assert [p for p in numbers if not FRACTIONAL_KEY.search(p) and not p.startswith("/$defs/delta/")] == []


# --------------------------------------------------------------------------------------- root stack


def test_the_root_stack_is_the_first_step_and_every_top_level_resource_s_parent(stack_name: str) -> None:
    document = json.loads(json_report.render(report(stack_name)))
    root = document["steps"][0]
    urn = f"urn:pulumi:{stack_name}::trainstack::pulumi:pulumi:Stack::trainstack-{stack_name}"
    assert (root["op"], root["urn"], root["type"], root["detailedDiff"]) == ("create", urn, "pulumi:pulumi:Stack", None)
    state = root["newState"]
    assert (state["custom"], state["parent"], state["inputs"]) == (False, "", {})
    assert state["outputs"] == json_report.whole_numbers(recording(stack_name).outputs) and state["outputs"]
    resources = recording(stack_name).resources
    urns = {r.urn for r in resources}
    top = {r.parent for r in resources if r.parent not in urns}
    assert top == {urn}  # the SDK's own root stack URN, the parent of everything at the top


def test_the_root_stack_is_a_same_step_in_a_diff() -> None:
    document, _, before = changed_prod()
    root = document["steps"][0]
    assert root["op"] == "same" and root["oldState"]["outputs"] == json_report.whole_numbers(before.recording.outputs)


# -------------------------------------------------------------------------------------- detailedDiff


def test_detailed_diff_names_each_changed_input_with_pulumi_s_kind() -> None:
    document, _, _ = changed_prod()
    fs = step_of(document, FSX)
    assert fs["op"] == "replace" and fs["replaceReasons"] == ["deploymentType"]
    assert fs["detailedDiff"]["deploymentType"] == {"kind": "update-replace", "inputDiff": True}
    assert fs["detailedDiff"]["storageCapacity"] == {"kind": "update", "inputDiff": True}
    group = next(s for s in document["steps"] if s["type"] == NODE_GROUP and s["op"] == "update")
    assert group["detailedDiff"] == {
        "labels": {"kind": "delete", "inputDiff": True},
        "scalingConfig.maxSize": {"kind": "update", "inputDiff": True},
        'tags["kubernetes.io/cluster/x"]': {"kind": "add", "inputDiff": True},
    }
    assert group["diffReasons"] == ["labels", "scalingConfig", "tags"]


def test_detailed_diff_agrees_with_the_create_only_inputs_of_the_diff() -> None:
    document, _, before = changed_prod()
    old = before.recording.by_urn()
    checked = 0
    for step in document["steps"]:
        if step["op"] not in ("update", "replace"):
            assert step["detailedDiff"] is None
            continue
        forcing = set()
        for path, entry in step["detailedDiff"].items():
            assert entry["kind"] in KINDS and entry["inputDiff"] is True
            assert entry["kind"].endswith("-replace") == replaces(step["type"], path)
            if entry["kind"].endswith("-replace"):
                forcing.add(str(path_parts(path)[0]))
            parts = path_parts(path)
            assert lookup(old[step["urn"]].inputs, parts) or lookup(step["newState"]["inputs"], parts)
            checked += 1
        assert (step["op"] == "replace") == bool(forcing)
        assert sorted(forcing) == step.get("replaceReasons", [])
    assert checked >= 4


def lookup(tree: Any, parts: list[str | int]) -> bool:
    """True when `parts` leads somewhere in `tree`."""
    for part in parts:
        found = isinstance(tree, list) and isinstance(part, int) and part < len(tree)
        found = found or (isinstance(tree, dict) and part in tree)
        if not found:
            return False
        tree = tree[part]
    return True


def test_a_change_of_protect_alone_is_a_same_step() -> None:
    document, _, _ = changed_prod()
    vpc = step_of(document, "aws:ec2/vpc:Vpc")
    assert vpc["op"] == "same" and vpc["detailedDiff"] is None
    assert vpc["oldState"]["protect"] != vpc["newState"]["protect"]


# Any key but one with a backslash before a quote or at its end, which Pulumi's own syntax cannot tell apart.
@given(st.lists(st.text(st.characters(exclude_characters="\\"), min_size=1, max_size=12), min_size=1, max_size=4))
def test_property_paths_round_trip_through_pulumi_s_syntax(keys: list[str]) -> None:
    path = ""
    for key in keys:
        path = property_path(path, key)
    assert path_parts(path) == keys
    assert all(re.fullmatch(r"\w+", k, re.ASCII) or f'["{k}' in path.replace('\\"', '"') for k in keys)


# -------------------------------------------------------------------------------- diagnostics, summary


def test_change_summary_counts_every_step_by_op() -> None:
    document, _, _ = changed_prod()
    assert document["changeSummary"] == dict(sorted(Counter(s["op"] for s in document["steps"]).items()))
    assert document["changeSummary"]["replace"] == 1 and document["changeSummary"]["update"] == 1


def test_every_policy_violation_and_waiver_is_a_diagnostic(stack_name: str) -> None:
    r = report(stack_name)
    document = json.loads(json_report.render(r))
    root = document["steps"][0]["urn"]
    assert r.policy is not None
    expected = [
        (v.urn or root, "error" if v.level == "mandatory" else "warning", v.policy) for v in r.policy.violations
    ] + [(w.violation.urn or root, "info", w.violation.policy) for w in r.policy.waived]
    found = [(d["urn"], d["severity"], d["message"]) for d in document["diagnostics"]]
    assert len(found) == len(expected)
    for (urn, severity, policy), (d_urn, d_severity, message) in zip(expected, found, strict=True):
        assert (d_urn, d_severity) == (urn, severity) and policy in message


def test_a_contract_violation_is_an_error_diagnostic_on_its_resource() -> None:
    r = report("dev")
    target = r.recording.resources[3]
    refused = ContractViolation(target.urn, "cidrBlock", '"x"', "not a CIDR", "botocore ec2 CreateVpc")
    document = json.loads(json_report.render(dataclasses.replace(r, contracts=(refused,))))
    first = document["diagnostics"][0]
    assert first["urn"] == target.urn and first["severity"] == "error"
    assert "cidrBlock" in first["message"] and "not a CIDR" in first["message"]


def test_a_diff_adds_its_notes_and_ignored_changes_as_diagnostics() -> None:
    _, after, before = changed_prod()
    diff = diff_reports(before, after, "stacks/Pulumi.prod.yaml")
    group = after.recording.by_type(NODE_GROUP)[0]
    kept = ResourceChange(group.urn, group.type, (InputChange("scalingConfig.desiredSize", 2, 5),))
    noted = dataclasses.replace(diff.changed[0], notes=("re-run the lifecycle scripts",))
    diff = dataclasses.replace(diff, ignored=(kept,), changed=(noted, *diff.changed[1:]))
    found = {(d["urn"], d["severity"], d["message"]) for d in json_report.diagnostics(after, diff)}
    root = json_report.root_stack_urn("prod")
    assert (group.urn, "info", "ignoreChanges: scalingConfig.desiredSize stays 2 (config: 5)") in found
    assert (noted.urn, "warning", "re-run the lifecycle scripts") in found
    assert (root, "info", PROVIDER_DIFF_NOTE) in found
    assert not any(d["message"] == PROVIDER_DIFF_NOTE for d in json_report.diagnostics(after))


def test_diagnostics_and_detailed_diffs_validate_against_the_schema() -> None:
    import jsonschema

    document, _, _ = changed_prod()
    schema = json.loads(json_report.SCHEMA_PATH.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert not errors, errors[0].message
    broken = json.loads(json.dumps(document))
    step = next(s for s in broken["steps"] if s["op"] == "update")
    next(iter(step["detailedDiff"].values()))["kind"] = "change"
    broken["diagnostics"].append({"urn": step["urn"], "message": "x", "severity": "fatal"})
    assert len(list(jsonschema.Draft202012Validator(schema).iter_errors(broken))) == 2


def test_only_the_protected_resources_a_change_removes_are_named_as_protected_removals() -> None:
    before = report("prod")
    resources = before.recording.resources
    protected = next(r for r in resources if r.protect and r.custom)
    plain = next(r for r in resources if not r.protect and r.custom and r.parent == protected.parent)
    gone = {protected.urn, plain.urn}
    rec = dataclasses.replace(before.recording, resources=tuple(r for r in resources if r.urn not in gone))
    diff = diff_reports(before, build_report(stack_config("prod"), rec), "stacks/Pulumi.prod.yaml")
    assert {urn for urn, _ in diff.removed} >= gone
    assert diff.protected_removals == (protected.urn,)
