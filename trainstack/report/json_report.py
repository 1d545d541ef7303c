"""`--format json`: the shape of `pulumi preview --json`, plus a `trainstack` section.

`steps` lists every recorded resource as a step {op, urn, type, provider, newState}, where newState carries
{type, urn, custom, id, parent, protect, retainOnDelete, provider, inputs, outputs, dependencies,
propertyDependencies}; tools made for Pulumi's output read it. With `--against`, ops are `create`, `update`
(with oldState and diffReasons), `replace` (also replaceReasons: inputs trainstack's table says the provider
cannot change in place), `same` or `delete` (oldState only). `changeSummary` counts the ops.
`trainstack` holds the verdict (status, headline figures, counts of a diff), the ranked risks, the time to ready
(and to apply a diff) with the critical path and each step's source, the summary, cost and policy (null when
the policy evaluator is absent) and the diff.
The fields are documented in docs/plan.md (JSON) and pinned by `plan.schema.json`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from trainstack.diff import PlanDiff
from trainstack.engine import RecordedResource, Recording
from trainstack.report import verdict
from trainstack.report.model import Report
from trainstack.review import Review

SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")
FORMAT_VERSION = 1


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
        "inputs": whole_numbers(resource.inputs),
        "outputs": whole_numbers(resource.outputs),
        "dependencies": list(resource.dependencies),
        "propertyDependencies": {k: list(v) for k, v in resource.property_dependencies.items()},
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
    return path.split(".")[0].split("[")[0]


def steps(
    recording: Recording, baseline: Recording | None = None, diff: PlanDiff | None = None
) -> list[dict[str, Any]]:
    """One step per resource: all `create`, or the ops of the diff against a baseline recording."""
    old = baseline.by_urn() if baseline is not None else {}
    changed = {c.urn: c for c in diff.changed} if diff is not None else {}
    out: list[dict[str, Any]] = []
    for resource in recording.resources:
        step: dict[str, Any] = {
            "op": "create",
            "urn": resource.urn,
            "type": resource.type,
            "provider": resource.provider,
            "newState": _state(resource),
        }
        if baseline is not None and resource.urn in old:
            step["oldState"] = _state(old[resource.urn])
            if resource.urn in changed:
                change = changed[resource.urn]
                step["op"] = change.op
                step["diffReasons"] = sorted({_top(c.path) for c in change.changes})
                if change.op == "replace":
                    step["replaceReasons"] = sorted({_top(path) for path in change.replace_reasons})
            else:
                step["op"] = "same"
        out.append(step)
    if baseline is not None:
        current = recording.by_urn()
        out += [
            {"op": "delete", "urn": r.urn, "type": r.type, "provider": r.provider, "oldState": _state(r)}
            for r in baseline.resources
            if r.urn not in current
        ]
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
    return {
        "steps": all_steps,
        "changeSummary": dict(Counter(step["op"] for step in all_steps)),
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
            "diff": whole_numbers(diff.to_dict()) if diff is not None else None,
        },
    }


def render(
    report: Report, baseline: Recording | None = None, diff: PlanDiff | None = None, before: Report | None = None
) -> str:
    return json.dumps(document(report, baseline, diff, before), indent=2, sort_keys=False, default=str) + "\n"
