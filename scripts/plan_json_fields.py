"""docs/plan-json.md, generated: every field of `plan --format json` with its type (read from plan.schema.json)
and what it means (`FIELDS`). A test regenerates the page and compares, and checks that `FIELDS` and the schema
name the same fields, so neither the page nor the schema can drift from the other.

    make docs   (or: python scripts/plan_json_fields.py > docs/plan-json.md)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from trainstack.report.json_report import SCHEMA_PATH

# Fields shown in one row, their own fields listed from the schema rather than described one by one.
SUMMARISED = {
    "steps[].oldState": "Its fields are those of `newState`.",
    "trainstack.verdict.figures": "",
    "trainstack.verdict.reason": "Its fields are those of `risks[]`.",
    "trainstack.header.changes": "",
    "trainstack.summary.teams": "",
    "trainstack.verdict.counts": "",
    "trainstack.risks": "",
    "trainstack.timeToReady.path": "",
    "trainstack.changeTime": "Its fields are those of `timeToReady`.",
    "trainstack.summary.nodeGroups": "",
    "trainstack.summary.fileSystems": "",
    "trainstack.summary.eksClusters": "",
    "trainstack.summary.addons": "",
    "trainstack.summary.hyperpod": "",
    "trainstack.cost.items": "",
    "trainstack.policy.violations": "",
    "trainstack.policy.waived": "",
    "trainstack.contracts": "",
    "trainstack.journeys[].steps": "",
    "trainstack.journeys[].broken_step": "Its fields are those of `steps[]`.",
    "trainstack.diff.added": "",
    "trainstack.diff.removed": "",
    "trainstack.diff.changed": "",
    "trainstack.diff.ignored": "",
    **{
        f"trainstack.diff.{name}": ""
        for name in (
            "acceleratorsDesired",
            "acceleratorsMax",
            "fabricGbpsDesired",
            "fabricGbpsMax",
            "usdPerHourDesired",
            "usdPerHourMax",
            "usdPerMonthDesired",
            "usdPerMonthMax",
        )
    },
}

FIELDS: dict[str, str] = {
    "steps": "The root stack first, then one step per recorded resource, parents, providers and dependencies "
    "before what needs them; with `--against`, then one `delete` step per resource the change removes.",
    "steps[].op": "`create`; with `--against` also `same`, `update`, `replace`, `delete` (`same` steps are listed, "
    "as `pulumi preview --json --show-sames` does; a change of `protect` alone is `same`, as Pulumi shows it).",
    "steps[].urn": "The resource's URN; the root stack's is `urn:pulumi:<stack>::trainstack::pulumi:pulumi:Stack::"
    "trainstack-<stack>`.",
    "steps[].type": "The resource's type token (trainstack's addition: Pulumi's step has it only in the states).",
    "steps[].provider": "The provider reference `<provider urn>::<id>`; empty for components, providers and the "
    "root stack.",
    "steps[].newState": "The resource after the step (absent on `delete`).",
    "steps[].newState.type": "Type token.",
    "steps[].newState.urn": "URN.",
    "steps[].newState.custom": "`true` for a cloud resource or provider, `false` for a component and the root stack.",
    "steps[].newState.id": "The id the mocks gave (empty for components and in `--preview` where unknown).",
    "steps[].newState.parent": "The parent's URN; the root stack's for top-level resources; empty for the root stack.",
    "steps[].newState.protect": "Protected against deletion (`protect=True`).",
    "steps[].newState.retainOnDelete": "Left in AWS when deleted from the stack.",
    "steps[].newState.provider": "As the step's `provider`.",
    "steps[].newState.inputs": "The inputs in the engine's camelCase names; `04da6b54-80e4-46f7-96ec-b56ff0331ba9` "
    "marks a value unknown in `--preview`. Empty for the root stack.",
    "steps[].newState.outputs": "What the mocks answered (as after `pulumi up`); the root stack's are the stack's "
    "exports.",
    "steps[].newState.dependencies": "URNs this resource depends on.",
    "steps[].newState.propertyDependencies": "Input name to the URNs its value came from.",
    "steps[].oldState": "The resource before the step (on `same`, `update`, `replace`, `delete`).",
    "steps[].diffReasons": "On `update` and `replace`: the top-level inputs that changed.",
    "steps[].replaceReasons": "On `replace`: the top-level inputs that force it (create-only inputs, "
    "`trainstack.create_only.REPLACE_ON_CHANGE`).",
    "steps[].detailedDiff": "On `update` and `replace`: property path (Pulumi's syntax: `scalingConfig.maxSize`, "
    '`subnetIds[0]`, `tags["kubernetes.io/role/elb"]`) to `{kind, inputDiff}`; `kind` is `add`, `delete` or '
    "`update`, with `-replace` when that input forces the replacement; `inputDiff` is `true` (old inputs against "
    "new). `null` on every other step, as Pulumi writes it.",
    "diagnostics": "What the plan found, as Pulumi's diagnostics: contract violations and mandatory policy "
    "violations (`error`), advisory violations and rollout notes (`warning`), waivers, ignored changes and the "
    "offline diff's caveat (`info`). Pulumi's own `--json` leaves policy events out; here they are in.",
    "diagnostics[].urn": "The resource; the root stack's URN for a stack-wide finding, as the engine reports a "
    "stack policy's violation.",
    "diagnostics[].message": "One line: `[mandatory] <policy>: <message>`, `contract: <path> = <value>: <rule> "
    "(source: ...)`, `ignoreChanges: <path> stays <old> (config: <new>)`, or a note.",
    "diagnostics[].severity": "`error`, `warning` or `info` (Pulumi's diag severities).",
    "changeSummary": "Steps per op, the root stack and `same` steps included (as the engine counts), keys sorted.",
    "trainstack": "trainstack's own section.",
    "trainstack.formatVersion": "`2`; raised when a field changes meaning or goes away (2: the root stack step, "
    "Pulumi property paths, `detailedDiff`, `diagnostics`).",
    "trainstack.header": "The lines every format opens with, for a bot to post as they are: the verdict and the one "
    "risk that decides it; in a diff what changed in the stack's terms, the headline figures that moved (before → "
    "after) and those that did not with the change's size and time; in a plan the figures and the time to ready; on "
    "a refusal the fix. Two to five lines.",
    "trainstack.header.lines": "The header as plain lines (the text report wraps them, the comment bolds labels).",
    "trainstack.header.changes": "In a diff: what changed in GPU groups (type, min, desired, max, capacity, EFA), "
    "teams (added, removed, accelerator quota), file systems, the EKS version, add-on versions, HyperPod groups and "
    "the base name, most consequential first; `null` for a plan.",
    "trainstack.header.fix": "On a refusal: what to do about each refused risk (the next step instead of `pulumi up`).",
    "trainstack.verdict": "The verdict every format opens with.",
    "trainstack.verdict.reason": "The risk that decides the status (the most serious one); `null` when only low risks "
    "stand.",
    "trainstack.verdict.fix": "As `header.fix`.",
    "trainstack.verdict.status": "`ok`, `needs attention` or `refused`.",
    "trainstack.verdict.headline": "The status with its count of serious risks.",
    "trainstack.verdict.figures": "The headline figures (accelerators, EFA fabric, storage coverage, cost at desired "
    "and at max, policy, contracts, journeys); in a diff `before` is every figure's value before the change and "
    "`change` the signed difference of the numbers that moved.",
    "trainstack.verdict.counts": "In a diff: resources to add, change, replace and delete; `null` otherwise.",
    "trainstack.risks": "What a reviewer should know, most serious first.",
    "trainstack.timeToReady": "From nothing to a ready stack: the critical path of the recorded dependency graph.",
    "trainstack.timeToReady.minutesLow": "Typical low end, minutes.",
    "trainstack.timeToReady.minutesHigh": "Typical high end, minutes.",
    "trainstack.timeToReady.longPole": "URN of the slowest step on the path.",
    "trainstack.timeToReady.path": "The steps of the critical path, each with its source.",
    "trainstack.timeToReady.notes": "What the estimate leaves out.",
    "trainstack.changeTime": "With `--against`: how long applying the change takes; `null` otherwise.",
    "trainstack.summary": "What the stack holds.",
    "trainstack.summary.stack": "Stack name.",
    "trainstack.summary.environment": "`dev`, `staging` or `prod`.",
    "trainstack.summary.region": "AWS region.",
    "trainstack.summary.name": "The physical base name.",
    "trainstack.summary.mode": "How outputs were produced (mocked as after `pulumi up`, or unknown as in preview).",
    "trainstack.summary.preview": "`--preview` given.",
    "trainstack.summary.resourceCount": "Resources recorded (the root stack not counted).",
    "trainstack.summary.customCount": "Cloud resources and providers.",
    "trainstack.summary.componentCount": "Components.",
    "trainstack.summary.typeCounts": "Resources per type token.",
    "trainstack.summary.nodeGroups": "Every managed node group.",
    "trainstack.summary.gpusDesired": "GPUs in node groups at desired size.",
    "trainstack.summary.gpusMax": "GPUs in node groups at max size.",
    "trainstack.summary.acceleratorsDesired": "Accelerators at desired size, SageMaker HyperPod included.",
    "trainstack.summary.acceleratorsMax": "Accelerators at max size, SageMaker HyperPod included.",
    "trainstack.summary.gpuBudget": "`cost.max_gpus` from the stack file.",
    "trainstack.summary.fabricGbpsDesired": "EFA fabric bandwidth at desired size, Gbit/s.",
    "trainstack.summary.fabricGbpsMax": "EFA fabric bandwidth at max size, Gbit/s.",
    "trainstack.summary.fileSystems": "FSx for Lustre file systems with throughput against demand.",
    "trainstack.summary.bucketCount": "S3 buckets.",
    "trainstack.summary.natGateways": "NAT gateways.",
    "trainstack.summary.interfaceEndpoints": "VPC interface endpoints.",
    "trainstack.summary.eksClusters": "EKS clusters.",
    "trainstack.summary.addons": "EKS add-ons and Helm releases with their versions.",
    "trainstack.summary.hyperpodGpus": "Accelerators in SageMaker HyperPod.",
    "trainstack.summary.hyperpod": "SageMaker HyperPod instance groups.",
    "trainstack.summary.teams": "Team namespaces with the accelerators their ResourceQuota lets them request.",
    "trainstack.cost": "The cost estimate.",
    "trainstack.cost.region": "Region priced.",
    "trainstack.cost.hoursPerMonth": "Hours a month (`cost.hours_per_month`).",
    "trainstack.cost.usdPerHourDesired": "US$ an hour at desired size.",
    "trainstack.cost.usdPerHourMax": "US$ an hour at max size.",
    "trainstack.cost.usdPerMonthDesired": "US$ a month at desired size.",
    "trainstack.cost.usdPerMonthMax": "US$ a month at max size.",
    "trainstack.cost.gpuShareDesired": "Share of the cost that is accelerators, at desired size (0 to 1).",
    "trainstack.cost.gpuShareMax": "Share of the cost that is accelerators, at max size (0 to 1).",
    "trainstack.cost.items": "One line per priced thing, each with its price source and date.",
    "trainstack.cost.notes": "What the estimate leaves out.",
    "trainstack.health": "Monitoring, repair and alerts (`trainstack/model/health.py`); `null` when absent.",
    "trainstack.hyperpodBringUp": "How each SageMaker HyperPod instance group comes up (`trainstack/report/"
    "bringup.py`): one entry per group; empty without HyperPod.",
    "trainstack.hyperpodBringUp[].cluster": "The HyperPod cluster's name.",
    "trainstack.hyperpodBringUp[].group": "The instance group's name.",
    "trainstack.hyperpodBringUp[].role": "`controller`, `login` or `compute` (Slurm); `compute` on EKS.",
    "trainstack.hyperpodBringUp[].steps": "The lifecycle steps its nodes run, in order, as `<step>: <what it "
    "does>` (the step names of the lifecycle log).",
    "trainstack.hyperpodBringUp[].needs": "What those steps need from outside the node.",
    "trainstack.policy": "The policy pack's review; `null` when it did not run.",
    "trainstack.policy.mandatory": "Mandatory violations (any one: exit 1).",
    "trainstack.policy.advisory": "Advisory violations.",
    "trainstack.policy.policies": "Policies run.",
    "trainstack.policy.notApplicable": "Policies that did not apply to a resource.",
    "trainstack.policy.violations": "Every violation; the diff's own (protected delete or replace, EKS version "
    "skip) and the example values' are among them.",
    "trainstack.policy.waived": "Violations the stack file waives, with the written reason, the owner, the last day "
    "the waiver applies, and whether the waived rule is a floor (dev and staging only: prod waives no floor).",
    "trainstack.contracts": "Inputs AWS or Kubernetes would refuse (any one: exit 4), each with its source.",
    "trainstack.journeys": "Users' paths through the objects together (docs/journeys.md): deploy, a team's job, "
    "alerts, day 2, destroy, writers and keys. Any broken one: exit 6.",
    "trainstack.capacity": "Per GPU group, how capacity follows the work (docs/capacity.md): who scales it, from "
    "and to, what a scale-up needs, the worst-case wait of a job of the group's whole size, cost at min and max.",
    "trainstack.capacity[].name": "The GPU group.",
    "trainstack.capacity[].scaler": "`cluster-autoscaler`, `fixed` or `Capacity Block window`.",
    "trainstack.capacity[].admission": "How Kueue admits a gang job: `nodes-exist` (no admission check), or the "
    "ProvisioningRequest class its check asks the autoscaler for.",
    "trainstack.capacity[].minSize": "Nodes at least.",
    "trainstack.capacity[].maxSize": "Nodes at most.",
    "trainstack.capacity[].scaleUpNeeds": "What a scale-up needs (capacity in the AZ, the block's window, ...).",
    "trainstack.capacity[].worstCaseWaitS": "Worst-case seconds a job of the group's whole size waits for capacity "
    "when it is there; `null` until a window starts.",
    "trainstack.capacity[].givesUpAfterS": "Seconds after which Kueue deactivates a job whose nodes never come; "
    "`null` when no admission check asks.",
    "trainstack.capacity[].window": "A Capacity Block's window and whether it has started, or empty.",
    "trainstack.capacity[].usdPerHourMin": "Cost of the group at min size, $/h.",
    "trainstack.capacity[].usdPerHourMax": "Cost of the group at max size, $/h.",
    "trainstack.journeys[].kind": "`deploy`, `team job`, `alerts`, `day 2`, `destroy` or `writers and keys`.",
    "trainstack.journeys[].subject": "Whose path and through what: `team ml-research: torch TrainJob on p5-train`.",
    "trainstack.journeys[].holds": "Every step holds.",
    "trainstack.journeys[].broken_step": "The first step that fails, or `null`.",
    "trainstack.journeys[].steps": "Every step in the order the user meets it: `name`, `holds`, `detail` (what "
    "the plan found) and `source` (the upstream file at the pinned tag, or the guide, the rule comes from).",
    "trainstack.journeys[].figures": "What the user gets, by name (per rank: CPU, memory, /dev/shm).",
    "trainstack.diff": "With `--against`: the change; `null` otherwise.",
    "trainstack.diff.against": "The baseline stack file.",
    "trainstack.diff.added": "Resources the change adds.",
    "trainstack.diff.removed": "Resources the change deletes.",
    "trainstack.diff.changed": "Resources the change updates or replaces, each changed input with its old and new "
    "value (`changes[].path` in Pulumi's path syntax; `(protect)` and `(provider)` for those options), and "
    "`notes` on what applying it to running machines takes; `deleteBeforeReplace` is true for a replacement that "
    "deletes the old resource before creating the new one (its `delete_before_replace` option: a Kubernetes "
    "object that keeps its name).",
    "trainstack.diff.protectedReplacements": "URNs of protected resources the change replaces (refused).",
    "trainstack.diff.protectedDeletions": "URNs of protected resources the change deletes (refused).",
    "trainstack.diff.ignored": "Config changes `ignoreChanges` keeps `pulumi up` from applying (not priced).",
    "trainstack.diff.note": "What the offline diff cannot know.",
    "trainstack.diff.acceleratorsDesired": "Accelerators at desired size, before and after (integers).",
    "trainstack.diff.acceleratorsMax": "Accelerators at max size, before and after (integers).",
    "trainstack.diff.fabricGbpsDesired": "EFA fabric at desired size, Gbit/s.",
    "trainstack.diff.fabricGbpsMax": "EFA fabric at max size, Gbit/s.",
    "trainstack.diff.usdPerHourDesired": "US$ an hour at desired size.",
    "trainstack.diff.usdPerHourMax": "US$ an hour at max size.",
    "trainstack.diff.usdPerMonthDesired": "US$ a month at desired size.",
    "trainstack.diff.usdPerMonthMax": "US$ a month at max size.",
}


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _objects(node: dict[str, Any], defs: dict[str, Any], suffix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """The object schemas a field holds (through oneOf and array items), with `[]` for each array level."""
    node = _resolve(node, defs)
    if "properties" in node:
        yield suffix, node
    for alternative in node.get("oneOf", []):
        yield from _objects(alternative, defs, suffix)
    if isinstance(node.get("items"), dict):
        yield from _objects(node["items"], defs, suffix + "[]")


def type_of(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type for the page: `integer`, `string | null`, `"a" | "b"`, `array of object`, ..."""
    node = _resolve(node, defs)
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " \\| ".join(json.dumps(v) for v in node["enum"])
    if "oneOf" in node:
        return " \\| ".join(type_of(alternative, defs) for alternative in node["oneOf"])
    types = node.get("type", "any")
    if types == "array":
        return "array of " + (type_of(node["items"], defs) if isinstance(node.get("items"), dict) else "any")
    return " \\| ".join(types) if isinstance(types, list) else str(types)


def rows(
    document: dict[str, Any] | None = None,
    fields: dict[str, str] | None = None,
    summarised: dict[str, str] | None = None,
) -> list[tuple[str, str, str]]:
    """(path, type, description) for every field the schema names, summarised where `SUMMARISED` says; another
    document's schema and descriptions can be given (preflight's JSON, scripts/preflight_json_fields.py)."""
    document = document if document is not None else schema()
    described = FIELDS if fields is None else fields
    folded = SUMMARISED if summarised is None else summarised
    defs = document["$defs"]
    out: list[tuple[str, str, str]] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for suffix, obj in _objects(node, defs):
            for name, child in obj["properties"].items():
                path = f"{prefix}{suffix}.{name}" if prefix or suffix else name
                description = described.get(path, "")
                if path in folded:
                    names = sorted({f for _, o in _objects(child, defs) for f in o["properties"]})
                    extra = folded[path] or "Fields: " + ", ".join(f"`{f}`" for f in names) + "."
                    out.append((path, type_of(child, defs), f"{description} {extra}"))
                    continue
                out.append((path, type_of(child, defs), description))
                walk(child, path)

    walk(document, "")
    return out


INTRO = """# `plan --format json`

<!-- Generated by `make docs` from scripts/plan_json_fields.py and trainstack/report/plan.schema.json;
tests/report/test_plan_json_doc.py fails when this page is stale. -->

The document `pulumi preview --json` writes (Pulumi's `PreviewDigest`: `steps`, `diagnostics`,
`changeSummary`; pulumi/pulumi `pkg/display/json.go`), so tools written for it read the offline plan, plus a
`trainstack` section. `trainstack/report/plan.schema.json` pins every field; every committed stack's
document is validated against it in the tests.

Where it follows Pulumi, and where not:

- The root stack resource (`pulumi:pulumi:Stack`, named `trainstack-<stack>`) is the first step, as the CLI
  always shows it; its outputs are the stack's exports. It counts in `changeSummary`.
- `detailedDiff` on `update` and `replace` steps: keys in Pulumi's property path syntax, kinds `add`,
  `delete`, `update` and their `-replace` forms for the create-only inputs `trainstack/model/diff.py` knows
  (the provider's own diff is not run offline: an `update` here may be a `replace` in `pulumi preview`).
- Numbers: a whole number is an integer everywhere (`16`, never `16.0`), as Go writes a float64; fractions
  appear only in money, rates, ratios, durations and priced quantities.
- trainstack writes every state field, also the empty ones Pulumi leaves out (`"id": ""`, `"protect": false`),
  lists `same` steps (as `--show-sames` does), adds `type` to each step, and puts policy findings in
  `diagnostics` (Pulumi's `--json` leaves policy events out).
- Changed in format 2 (update a consumer that read them): `steps[0]` is now the root stack (resources start at
  `steps[1]`) and `changeSummary` counts it; diff paths quote keys that are not plain words
  (`tags["kubernetes.io/role/elb"]`, was `tags.kubernetes.io/role/elb`); every step has `detailedDiff`; the
  document has `diagnostics`.

`--format markdown` (the pull-request comment) is cut to `--max-chars` (default 65,536, GitHub's comment
limit; measured in UTF-8 bytes, never fewer than characters): sections give way in a fixed order, resource
list first and the verdict never, each only as far as needed, and a line says what was cut and how to see all
of it (`--max-chars 0`, or `--format json`). Long policy and contract tables fold under `<details>`.
`.github/workflows/plan.yml` gives each stack an equal share of the one comment.

## Fields
"""


def render() -> str:
    lines = [INTRO, "| Field | Type | Meaning |", "|---|---|---|"]
    lines += [f"| `{path}` | {type_} | {description} |" for path, type_, description in rows()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
