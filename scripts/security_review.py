"""The security review's tool run (docs/security.md, "Review"): every committed stack and example, planned offline,
exported for checkov, and every IAM policy document through parliament.

    .venv/bin/python scripts/security_review.py OUT                 # export + parliament, counts to stdout
    .venv/bin/python scripts/security_review.py OUT --checkov BIN   # and checkov on the exports

What is exported per stack (OUT/<stack>/):
- `kubernetes/*.yaml`: every Kubernetes object the program registers as itself (apiVersion, kind, metadata, spec
  and the other top-level fields of its inputs). Helm releases are one resource offline: what a chart renders is
  not exported (their values are judged by the policy pack).
- `aws/main.tf.json`: every pulumi-aws resource as the Terraform resource it is bridged from (pulumi-aws wraps
  hashicorp/terraform-provider-aws: type `aws:<module>/<name>:<Name>` is `aws_<module>_<name>`, or `aws_<name>` for
  ec2, inputs camelCase are arguments snake_case). checkov's Terraform checks read it as they read HCL.
- `parliament.json`: parliament 1.6.4's findings on every policy document (trust, inline, managed, key, bucket).

checkov is not a dependency of the project (its own pins conflict with the program's): run it from its own
environment, e.g. `uv tool run --from checkov==3.3.30 checkov`, or pass its binary with `--checkov`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from stacks.load import load_file  # noqa: E402
from trainstack.contracts.iam import DOCUMENTS, linter_for  # noqa: E402
from trainstack.engine import Recording, run_program  # noqa: E402

# Modules whose Terraform names carry no module prefix, or another one (terraform-provider-aws names).
TF_PREFIX = {"ec2": "", "amp": "prometheus_", "cloudwatch": "cloudwatch_"}
SKIP_KEYS = {"__defaults"}
MAP_KEYS = {"tags", "tagsAll", "labels", "annotations"}  # data, not arguments: their keys stay as written


def stack_files() -> dict[str, Path]:
    found = {p.name.split(".")[1]: p for p in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))}
    found |= {f"example-{p.stem}": p for p in sorted((ROOT / "stacks" / "examples").glob("*.yaml"))}
    return found


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def terraform_type(token: str) -> str | None:
    """`aws:s3/bucketPolicy:BucketPolicy` -> `aws_s3_bucket_policy`; None for other providers."""
    provider, path, _ = token.split(":")
    if provider != "aws" or "/" not in path:
        return None
    module, name = path.split("/")
    prefix = TF_PREFIX.get(module, f"{module}_")
    body = snake(name)
    return f"aws_{body}" if body.startswith(prefix) else f"aws_{prefix}{body}"


def snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {snake(k): (v if k in MAP_KEYS else snake_keys(v)) for k, v in value.items() if k not in SKIP_KEYS}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the engine's JSON numbers are floats; Terraform's whole numbers are not
    return value


def export(recording: Recording, out: Path) -> dict[str, int]:
    kube, aws = out / "kubernetes", out / "aws"
    kube.mkdir(parents=True, exist_ok=True)
    aws.mkdir(parents=True, exist_ok=True)
    resources: dict[str, dict[str, Any]] = {}
    counts: Counter[str] = Counter()
    for r in recording.resources:
        if r.type.startswith("kubernetes:") and "kind" in r.inputs and "helm.sh" not in r.type:
            (kube / f"{r.name}.yaml").write_text(yaml.safe_dump(r.inputs, sort_keys=False))
            counts["kubernetes"] += 1
        elif r.custom and (tf := terraform_type(r.type)) is not None:
            resources.setdefault(tf, {})[re.sub(r"\W", "_", r.name)] = snake_keys(r.inputs)
            counts["aws"] += 1
    (aws / "main.tf.json").write_text(json.dumps({"resource": resources}, indent=1, sort_keys=True))
    return dict(counts)


def parliament_findings(recording: Recording) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for r in recording.resources:
        entry = DOCUMENTS.get(r.type)
        if entry is None or not isinstance(document := r.inputs.get(entry[0]), str):
            continue
        kind = entry[1].value
        # The contract's parliament (its recorded definitions, or every service's when the document needs them).
        for finding in linter_for(document).analyze_policy_string(document, ignore_private_auditors=True).findings:
            found.append({"resource": r.name, "kind": kind, "issue": finding.issue, "detail": str(finding.detail)})
    return found


def checkov(binary: str, directory: Path, framework: str) -> list[dict[str, str]]:
    done = subprocess.run(
        [binary, "-d", str(directory), "--framework", framework, "-o", "json", "--compact", "--skip-download"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CKV_NO_ANALYTICS": "TRUE"},  # offline: no guideline fetch
    )
    report = json.loads(done.stdout or "{}")
    reports = report if isinstance(report, list) else [report]
    return [
        {"check": c["check_id"], "name": c["check_name"], "resource": c["resource"], "file": c["file_path"]}
        for rep in reports
        for c in rep.get("results", {}).get("failed_checks", [])
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--checkov", help="checkov binary (its own environment)")
    parser.add_argument("--stacks", nargs="*", help="stack names (default: every stack and example)")
    args = parser.parse_args()
    summary: dict[str, Any] = {}
    for name, path in stack_files().items():
        if args.stacks and name not in args.stacks:
            continue
        config = load_file(path)
        recording = run_program(config, stack_name=config.environment.value if name.startswith("example-") else name)
        out = args.out / name
        counts = export(recording, out)
        findings = parliament_findings(recording)
        (out / "parliament.json").write_text(json.dumps(findings, indent=1))
        entry: dict[str, Any] = {"exported": counts, "parliament": dict(Counter(f["issue"] for f in findings))}
        if args.checkov:
            for framework, directory in (("kubernetes", out / "kubernetes"), ("terraform_json", out / "aws")):
                failed = checkov(args.checkov, directory, framework)
                (out / f"checkov-{framework}.json").write_text(json.dumps(failed, indent=1))
                entry[f"checkov {framework}"] = dict(Counter(f["check"] for f in failed))
        summary[name] = entry
    print(json.dumps(summary, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
