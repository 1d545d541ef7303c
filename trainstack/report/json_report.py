"""`--format json`: the document `pulumi preview --json` writes (its `PreviewDigest`), plus a `trainstack` section.

The Pulumi part follows pulumi/pulumi's `pkg/display/json.go` (PreviewDigest, PreviewStep, PropertyDiff,
PreviewDiagnostic), `pkg/backend/display/json.go` (how the CLI fills them) and `sdk/go/common/apitype/core.go`
(ResourceV3, the step states), read at v3.259.0, the newest tag in our mirror (the SDK pinned in uv.lock is
3.272.0; these structs have not changed shape across 3.2xx):
- `steps`: the root stack `pulumi:pulumi:Stack` `<project>-<stack>` first (the CLI always shows it), then one
  step per recorded resource: {op, urn, type, provider, newState, oldState, diffReasons, replaceReasons,
  detailedDiff}. `detailedDiff` is null except on update and replace steps, where its keys are property paths
  in Pulumi's syntax and its values {kind, inputDiff: true} (old inputs against new inputs).
- `diagnostics`: [{urn, message, severity}] for contract violations and policy violations (error or warning),
  waivers, rollout notes and ignored changes; a stack-wide one names the root stack, as the engine does.
- `changeSummary`: steps per op, the root stack included, as the engine counts them.
Numbers: whole values are integers everywhere, as Go's encoding/json writes a float64 (`100`, never `100.0`).
The fields are documented in docs/plan-json.md (generated from `FIELDS` here, checked by a test) and pinned
by `plan.schema.json`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from trainstack.diff import PROVIDER_DIFF_NOTE, PlanDiff, ResourceChange, path_parts, replaces
from trainstack.engine import PROJECT, RecordedResource, Recording
from trainstack.report import verdict
from trainstack.report.model import Report
from trainstack.review import Review

SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")
FORMAT_VERSION = 2  # 2: root stack step, Pulumi property paths, detailedDiff, diagnostics
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"  # resource.RootStackType in the Pulumi SDK
PSEUDO_PATHS = ("(protect)", "(provider)")  # resource options trainstack.diff reports beside the inputs


def root_stack_urn(stack: str, project: str = PROJECT) -> str:
    """The root stack resource's URN: type `pulumi:pulumi:Stack`, name `<project>-<stack>`
    (resource.DefaultRootStackURN)."""
    return f"urn:pulumi:{stack}::{project}::{ROOT_STACK_TYPE}::{project}-{stack}"


def _state(resource: RecordedResource) -> dict[str, Any]:
    return {
        "type": resource.type,
        "urn": resource.urn,
        "custom": resource.custom,
        "id": resource.id,
        "parent": resource.parent,
        "protect": resource.protect,
        "retainOnDelete": resource.retain_on_delete,
        "provider": resource.provider,
        "inputs": resource.inputs,
        "outputs": resource.outputs,
        "dependencies": list(resource.dependencies),
        "propertyDependencies": {k: list(v) for k, v in resource.property_dependencies.items()},
    }


def _root_state(recording: Recording) -> dict[str, Any]:
    """The root stack as a resource: no inputs; its outputs are the stack's exports."""
    urn = root_stack_urn(recording.stack)
    return {
        "type": ROOT_STACK_TYPE,
        "urn": urn,
        "custom": False,
        "id": "",
        "parent": "",
        "protect": False,
        "retainOnDelete": False,
        "provider": "",
        "inputs": {},
        "outputs": recording.outputs,
        "dependencies": [],
        "propertyDependencies": {},
    }


def whole_numbers(value: Any) -> Any:
    """Whole floats as integers: the engine's wire format has only doubles, and `desiredSize: 16.0` is noise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def _top(path: str) -> str:
    """The top-level property of an engine path, as Pulumi's diffReasons name it."""
    return str(path_parts(path)[0])


def detailed_diff(change: ResourceChange) -> dict[str, dict[str, Any]]:
    """Pulumi's `detailedDiff` of one update or replace: property path -> {kind, inputDiff}. A create-only
    input (trainstack.diff.replaces) gets the `-replace` kind, as the provider marks the keys that force it."""
    out = {}
    for c in change.changes:
        if c.path in PSEUDO_PATHS:
            continue
        kind = c.kind + ("-replace" if replaces(change.type, c.path) else "")
        out[c.path] = {"kind": kind, "inputDiff": True}
    return dict(sorted(out.items()))


def steps(
    recording: Recording, baseline: Recording | None = None, diff: PlanDiff | None = None
) -> list[dict[str, Any]]:
    """The root stack, then one step per resource: all `create`, or the ops of the diff against a baseline."""
    old = baseline.by_urn() if baseline is not None else {}
    changed = {c.urn: c for c in diff.changed} if diff is not None else {}
    root: dict[str, Any] = {"op": "create", "urn": root_stack_urn(recording.stack), "type": ROOT_STACK_TYPE}
    root |= {"provider": "", "newState": _root_state(recording), "detailedDiff": None}
    if baseline is not None:
        root |= {"op": "same", "oldState": _root_state(baseline)}
    out = [root]
    for resource in recording.resources:
        step: dict[str, Any] = {
            "op": "create",
            "urn": resource.urn,
            "type": resource.type,
            "provider": resource.provider,
            "newState": _state(resource),
            "detailedDiff": None,
        }
        if baseline is not None and resource.urn in old:
            step["oldState"] = _state(old[resource.urn])
            change = changed.get(resource.urn)
            # A change of `protect` alone is a `same` step with both states, as the CLI shows it.
            if change is None or all(c.path == "(protect)" for c in change.changes):
                step["op"] = "same"
            else:
                step["op"] = change.op
                step["diffReasons"] = sorted({_top(c.path) for c in change.changes if c.path not in PSEUDO_PATHS})
                if change.op == "replace":
                    step["replaceReasons"] = sorted({_top(path) for path in change.replace_reasons})
                step["detailedDiff"] = detailed_diff(change)
        out.append(step)
    if baseline is not None:
        current = recording.by_urn()
        out += [
            {
                "op": "delete",
                "urn": r.urn,
                "type": r.type,
                "provider": r.provider,
                "oldState": _state(r),
                "detailedDiff": None,
            }
            for r in baseline.resources
            if r.urn not in current
        ]
    return out


ERROR, WARNING, INFO = "error", "warning", "info"  # diag.Severity in the Pulumi SDK (sdk/go/common/diag/sink.go)


def diagnostics(report: Report, diff: PlanDiff | None = None) -> list[dict[str, str]]:
    """What the plan found, as Pulumi's PreviewDiagnostic {urn, message, severity}: contract and mandatory policy
    violations are errors, advisories and rollout notes warnings, waivers and ignored changes information. A
    stack-wide finding names the root stack (as the engine resolves a stack policy's violation)."""
    root = root_stack_urn(report.stack)

    def diagnostic(urn: str, message: str, severity: str) -> dict[str, str]:
        return {"urn": urn or root, "message": message, "severity": severity}

    out = [
        diagnostic(c.urn, f"contract: {c.path or '(resource)'} = {c.value}: {c.rule} (source: {c.source})", ERROR)
        for c in report.contracts
    ]
    if report.policy is not None:
        out += [
            diagnostic(v.urn, f"[{v.level}] {v.policy}: {v.message}", ERROR if v.level == "mandatory" else WARNING)
            for v in report.policy.violations
        ]
        out += [
            diagnostic(
                w.violation.urn,
                f"[waived {w.violation.level}] {w.violation.policy}: {w.violation.message} (waived: {w.reason})",
                INFO,
            )
            for w in report.policy.waived
        ]
    if diff is not None:
        out += [diagnostic(c.urn, note, WARNING) for c in diff.changed for note in c.notes]
        out += [
            diagnostic(c.urn, f"ignoreChanges: {i.path} stays {json.dumps(i.old)} (config: {json.dumps(i.new)})", INFO)
            for c in diff.ignored
            for i in c.changes
        ]
        out.append(diagnostic(root, PROVIDER_DIFF_NOTE, INFO))
    return out


def _camel(values: dict[str, Any]) -> dict[str, Any]:
    """snake_case dataclass fields as the camelCase names the rest of the document uses."""
    out = {}
    for key, value in values.items():
        head, *rest = key.split("_")
        out[head + "".join(part.title() for part in rest)] = value
    return out


def summary_dict(report: Report) -> dict[str, Any]:
    s = report.summary
    return {
        "stack": s.stack,
        "environment": s.environment,
        "region": s.region,
        "name": s.name,
        "mode": s.mode,
        "preview": s.preview,
        "resourceCount": s.resource_count,
        "customCount": s.custom_count,
        "componentCount": s.component_count,
        "typeCounts": s.type_counts,
        "nodeGroups": [
            _camel(
                {
                    **asdict(g),
                    "availability_zones": list(g.availability_zones),
                    "taints": list(g.taints),
                    "gpus_desired": g.gpus_desired,
                    "gpus_max": g.gpus_max,
                    "fabric_gbps_desired": g.fabric_gbps_desired,
                    "fabric_gbps_max": g.fabric_gbps_max,
                }
            )
            for g in s.node_groups
        ],
        "gpusDesired": s.gpus_desired,
        "gpusMax": s.gpus_max,
        "acceleratorsDesired": s.accelerators_desired,
        "acceleratorsMax": s.accelerators_max,
        "gpuBudget": s.gpu_budget,
        "fabricGbpsDesired": s.fabric_gbps_desired,
        "fabricGbpsMax": s.fabric_gbps_max,
        "fileSystems": [_camel({**asdict(fs), "coverage": fs.coverage}) for fs in s.file_systems],
        "bucketCount": s.bucket_count,
        "natGateways": s.nat_gateways,
        "interfaceEndpoints": s.interface_endpoints,
        "eksClusters": [{"name": n, "version": v, "supportType": t} for n, v, t in s.eks_clusters],
        "addons": [_camel(asdict(a)) for a in s.addons],
        "hyperpod": [_camel(asdict(h)) for h in s.hyperpod],
        "hyperpodGpus": s.hyperpod_gpus,
    }


def policy_dict(review: Review) -> dict[str, Any]:
    """The policy review in the document's camelCase shape (plan.schema.json's `policy`)."""
    return {
        "mandatory": len(review.mandatory),
        "advisory": len(review.advisory),
        "policies": review.policies_run,
        "notApplicable": len(review.not_applicable),
        "violations": [
            {"level": v.level, "policy": v.policy, "severity": v.severity, "urn": v.urn, "message": v.message}
            for v in review.violations
        ],
        "waived": [
            {
                "level": w.violation.level,
                "policy": w.violation.policy,
                "severity": w.violation.severity,
                "urn": w.violation.urn,
                "message": w.violation.message,
                "reason": w.reason,
            }
            for w in review.waived
        ],
    }


def verdict_dict(v: verdict.Verdict) -> dict[str, Any]:
    return {**v.to_dict(), "headline": v.headline}


def document(
    report: Report, baseline: Recording | None = None, diff: PlanDiff | None = None, before: Report | None = None
) -> dict[str, Any]:
    all_steps = steps(report.recording, baseline, diff)
    v = verdict.assess(report, diff, before)
    document = {
        "steps": all_steps,
        "diagnostics": diagnostics(report, diff),
        "changeSummary": dict(sorted(Counter(step["op"] for step in all_steps).items())),  # Go sorts map keys
        "trainstack": {
            "formatVersion": FORMAT_VERSION,
            "verdict": verdict_dict(v),
            "risks": [r.to_dict() for r in v.risks],
            "timeToReady": v.time.to_dict(),
            "changeTime": v.change.to_dict() if v.change is not None else None,
            "summary": summary_dict(report),
            "cost": report.cost.to_dict(),
            "health": report.health.to_dict() if report.health is not None else None,
            "policy": policy_dict(report.policy) if report.policy is not None else None,
            "contracts": [c.to_dict() for c in report.contracts],
            "diff": diff.to_dict() if diff is not None else None,
        },
    }
    return whole_numbers(document)


def render(
    report: Report, baseline: Recording | None = None, diff: PlanDiff | None = None, before: Report | None = None
) -> str:
    return json.dumps(document(report, baseline, diff, before), indent=2, sort_keys=False, default=str) + "\n"
