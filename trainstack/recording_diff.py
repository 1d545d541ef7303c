"""What changes between two recordings of the program, as `pulumi up` would see it.

Resources are matched by URN, or by an alias as the engine matches state (`matched_baseline`); each changed input
is named by its engine path in Pulumi's property path syntax (`property_path`, `path_parts`), and a change is a
replacement when it touches a create-only input (`trainstack.create_only`) or a path under the resource's own
`replace_on_changes`. Inputs under `ignoreChanges` keep their deployed value (`apply_ignore_changes`). No report,
cost or policy here: `trainstack.model.diff` builds the reviewed diff on top, and the day-2 journey
(`trainstack.journeys.day2`) reads these changes directly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from trainstack.create_only import replaces
from trainstack.engine import RecordedResource, Recording
from trainstack.tokens import CLUSTER_TRAINING_RUNTIME, HYPERPOD_CLUSTER

MISSING = "<absent>"  # the old value of an added input, the new value of a deleted one

# Changes `pulumi up` applies to AWS but not to what already runs, and what it takes to apply them there.
# HyperPod runs lifecycle scripts only on the nodes it creates: UpdateCluster runs them for new instance groups
# only; UpdateClusterSoftware re-runs them on whole instance groups (SageMaker Developer Guide, "Updating a
# cluster with new or updated lifecycle scripts"). It also replaces each node's root volume with the current
# AMI ("Update the SageMaker HyperPod platform software"): data on the root volume is lost.
LIFECYCLE_PATH = re.compile(r"^instanceGroups\[\d+\]\.lifeCycleConfig\.")
LIFECYCLE_ROLLOUT = (
    "lifecycle scripts changed: running HyperPod nodes keep the old ones until "
    "`aws sagemaker update-cluster-software --cluster-name {cluster}` re-runs the new scripts on every instance "
    "group (root volumes are replaced: keep data on /fsx or S3); nodes created later run the new scripts"
)


def rollout_notes(type_token: str, changes: tuple[InputChange, ...], cluster_name: str) -> tuple[str, ...]:
    """What applying these changes to running machines takes, beyond `pulumi up` (empty for most changes)."""
    if type_token == HYPERPOD_CLUSTER and any(LIFECYCLE_PATH.match(c.path) for c in changes):
        return (LIFECYCLE_ROLLOUT.format(cluster=cluster_name),)
    return ()


# Trainer holds a ClusterTrainingRuntime's deletion while any TrainJob names it, finished ones too (finalizer
# trainer.kubeflow.org/resource-in-use: kubeflow/trainer v2.1.0 pkg/controller/clustertrainingruntime_controller.go),
# and pulumi-kubernetes waits for a deletion 10 minutes by default before it fails (pulumi-kubernetes
# provider/pkg/await/await.go, Deletion).
RUNTIME_REPLACEMENT = (
    "ClusterTrainingRuntime {runtime} is deleted and created again ({reasons} cannot change in place): Trainer "
    "holds the deletion while any TrainJob names the runtime, finished ones too, and `pulumi up` fails after "
    "waiting 10 minutes; first let running jobs finish, then delete every TrainJob that uses it "
    "(`kubectl get trainjobs -A` shows each one's runtime); jobs submitted after `pulumi up` run on the new one"
)


def replacement_notes(change: ResourceChange, resource: RecordedResource) -> tuple[str, ...]:
    """What a replacement of a running object needs from its users before `pulumi up` (empty for most)."""
    if change.type != CLUSTER_TRAINING_RUNTIME or change.op != "replace":
        return ()
    runtime = (resource.inputs.get("metadata") or {}).get("name", resource.name)
    return (RUNTIME_REPLACEMENT.format(runtime=runtime, reasons=", ".join(change.replace_reasons)),)


@dataclass(frozen=True)
class InputChange:
    path: str  # engine names in Pulumi's property path syntax, e.g. scalingConfig.maxSize, tags["kubernetes.io/x"]
    old: Any  # ABSENT when the key is new
    new: Any  # ABSENT when the key is gone

    @property
    def kind(self) -> str:
        """Pulumi's name for this kind of change (`PropertyDiff.kind`, without the `-replace` suffix)."""
        return "add" if self.old == MISSING else "delete" if self.new == MISSING else "update"


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    changes: tuple[InputChange, ...]
    protected: bool = False  # protect=True before or after: a replacement would fail `up` or lose data
    notes: tuple[str, ...] = ()  # what applying the change to running machines takes (`rollout_notes`)
    replace_on_changes: tuple[str, ...] = ()  # the resource's own `replace_on_changes` option (RecordedResource)
    delete_before_replace: bool | None = None  # its `delete_before_replace` option (None: the provider decides)

    def replaces_path(self, path: str) -> bool:
        """Whether a change at `path` replaces the resource: a create-only input (`trainstack.create_only`), or a
        path under one of its `replace_on_changes` (the engine's `applyReplaceOnChanges`, pulumi/pulumi
        pkg/resource/deploy/step_generator.go, turns every such update into a replacement)."""
        return replaces(self.type, path) or any(path_contains(p, path) for p in self.replace_on_changes)

    @property
    def replace_reasons(self) -> tuple[str, ...]:
        """The changed paths that force a replacement (sorted, de-duplicated)."""
        return tuple(sorted({c.path for c in self.changes if self.replaces_path(c.path)}))

    @property
    def op(self) -> str:
        return "replace" if self.replace_reasons else "update"


def property_path(parent: str, key: str) -> str:
    """`parent` extended by `key` as Pulumi writes property paths (`PropertyPath.String` in
    sdk/go/common/resource/properties_path.go): `a.b` when the key is only letters, digits and `_`, else
    `a["kubernetes.io/role"]` with `"` escaped."""
    if re.fullmatch(r"[A-Za-z0-9_]+", key):
        return f"{parent}.{key}" if parent else key
    escaped = key.replace('"', '\\"')
    return f'{parent}["{escaped}"]'


def input_changes(old: Any, new: Any, path: str = "") -> list[InputChange]:
    """Every leaf that differs between two input trees (dicts by key; lists of equal length by index)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[InputChange] = []
        for key in sorted(set(old) | set(new)):
            child = property_path(path, str(key))
            found += input_changes(old.get(key, MISSING), new.get(key, MISSING), child)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found += input_changes(a, b, f"{path}[{i}]")
        return found
    return [] if old == new else [InputChange(path, old, new)]


def matched_baseline(before: Recording, after: Recording) -> dict[str, RecordedResource]:
    """Each resource of `after` (by its URN) and the `before` resource whose state it takes over: the one with the
    same URN, else the one at one of its aliases, as `pulumi up` matches state (an aliased move is no change)."""
    old = before.by_urn()
    matched: dict[str, RecordedResource] = {}
    for resource in after.resources:
        found = next((old[u] for u in (resource.urn, *resource.aliases) if u in old), None)
        if found is not None:
            matched[resource.urn] = found
    return matched


def resource_changes(
    before: RecordedResource, after: RecordedResource, moved: Mapping[str, str] | None = None
) -> tuple[InputChange, ...]:
    """What changed; `moved` maps a baseline URN to the URN that took it over by an alias (a renamed provider)."""
    changes = input_changes(before.inputs, after.inputs)
    if before.protect != after.protect:
        changes.append(InputChange("(protect)", before.protect, after.protect))
    old_provider = (moved or {}).get(before.provider_urn, before.provider_urn)
    if old_provider != after.provider_urn:
        changes.append(InputChange("(provider)", before.provider_urn, after.provider_urn))
    return tuple(changes)


# Pulumi's parser (parsePropertyPath) reads `\"` inside a quoted key as `"` and any other backslash as itself;
# `[*]` is the wildcard `*`, as `.*` is.
_PATH_PART = re.compile(r'\["((?:\\"|[^"])*)"\]|([^.\[\]]+)|\[(\d+)\]|\[(\*)\]')


def path_parts(path: str) -> list[str | int]:
    """`scalingConfig.desiredSize` -> ['scalingConfig', 'desiredSize']; `subnetIds[0]` -> ['subnetIds', 0];
    `tags["kubernetes.io/role"]` -> ['tags', 'kubernetes.io/role']; `jobs[*].name` -> ['jobs', '*', 'name']
    (Pulumi's property path syntax)."""
    return [
        quoted.replace('\\"', '"') if quoted else int(index) if index else key or star
        for quoted, key, index, star in _PATH_PART.findall(path)
    ]


def path_contains(outer: str, inner: str) -> bool:
    """Pulumi's `PropertyPath.Contains` (sdk/go/common/resource/properties_path.go): `inner` is `outer` or lies
    under it, a `*` in `outer` standing for any one key or index."""
    whole, part = path_parts(outer), path_parts(inner)
    return len(part) >= len(whole) and all(w == "*" or w == p for w, p in zip(whole, part, strict=False))


def _lookup(tree: Any, parts: list[str | int]) -> Any:
    for part in parts:
        if isinstance(part, int):
            if not isinstance(tree, list) or part >= len(tree):
                return MISSING
            tree = tree[part]
        elif isinstance(tree, dict) and part in tree:
            tree = tree[part]
        else:
            return MISSING
    return tree


def _reset(old: Any, new: Any, parts: list[str | int]) -> tuple[Any, bool]:
    """Pulumi's `PropertyPath.Reset` (sdk/go/common/resource/properties_path.go at v3.259.0), which `pulumi up` runs
    for each ignoreChanges path of a resource that exists: `new` with the value at `parts` put back to `old`'s,
    and deleted where `old` has none (absent is a deployed value too). False, with `new` as it was, when only one
    side has a container on the path: the engine then says "cannot ignore changes in added or removed elements
    of the path" and sends the program's value. Containers along the path are copied, the rest shared."""
    head, rest = parts[0], parts[1:]
    if isinstance(head, int):
        if not isinstance(old, list) or not isinstance(new, list):
            return new, not isinstance(old, list) and not isinstance(new, list)
        in_old, in_new = head < len(old), head < len(new)
        if not rest and not in_old and not in_new:
            return new, True
        if not (in_old and in_new):
            return new, False  # an index one side lacks: the engine neither adds nor removes list items
        child, ok = (old[head], True) if not rest else _reset(old[head], new[head], rest)
        return ([*new[:head], child, *new[head + 1 :]], True) if ok else (new, False)
    if not rest:
        if isinstance(old, dict) and head in old:
            return ({**new, head: old[head]}, True) if isinstance(new, dict) else (new, False)
        return ({k: v for k, v in new.items() if k != head}, True) if isinstance(new, dict) else (new, True)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new, not isinstance(old, dict) and not isinstance(new, dict)
    if head not in new:
        return new, head not in old  # neither has it: nothing to do; only the deployment has it: a path error
    child, ok = _reset(old.get(head), new[head], rest)
    return ({**new, head: child}, True) if ok else (new, False)


def apply_ignore_changes(baseline: Recording, proposed: Recording) -> tuple[Recording, tuple[ResourceChange, ...]]:
    """`proposed` as `pulumi up` would leave it over `baseline`, and the config changes it would not apply.

    For a resource that exists in both, every input under its `ignoreChanges` keeps the baseline's value, absent
    included, as the engine does (`_reset`; a new resource takes its inputs as they are). Sizes the cluster
    autoscaler owns (`scalingConfig.desiredSize`) are the usual case: editing them in the stack file changes
    nothing in AWS.
    """
    old = matched_baseline(baseline, proposed)
    resources: list[RecordedResource] = []
    ignored: list[ResourceChange] = []
    for resource in proposed.resources:
        before = old.get(resource.urn)
        if before is None or not resource.ignore_changes:
            resources.append(resource)
            continue
        inputs = resource.inputs
        skipped: list[InputChange] = []
        for path in resource.ignore_changes:
            parts = path_parts(path)
            kept, ok = _reset(before.inputs, inputs, parts)
            if ok and kept != inputs:
                skipped.append(InputChange(path, _lookup(before.inputs, parts), _lookup(inputs, parts)))
                inputs = kept
        if skipped:
            ignored.append(ResourceChange(resource.urn, resource.type, tuple(skipped), protected=resource.protect))
            resource = replace(resource, inputs=inputs)
        resources.append(resource)
    return replace(proposed, resources=tuple(resources)), tuple(ignored)


def diff_recordings(
    before: Recording, after: Recording
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[ResourceChange, ...]]:
    """(added, removed, changed) between two recordings, matched by URN or alias (`matched_baseline`), in the
    recordings' stable order."""
    old = matched_baseline(before, after)
    moved = {was.urn: urn for urn, was in old.items()}
    added = tuple((r.urn, r.type) for r in after.resources if r.urn not in old)
    removed = tuple((r.urn, r.type) for r in before.resources if r.urn not in moved)
    changed: list[ResourceChange] = []
    for r in after.resources:
        if r.urn not in old or not (changes := resource_changes(old[r.urn], r, moved)):
            continue
        change = ResourceChange(
            r.urn,
            r.type,
            changes,
            protected=old[r.urn].protect or r.protect,
            replace_on_changes=r.replace_on_changes,
            delete_before_replace=r.delete_before_replace,
        )
        notes = rollout_notes(r.type, changes, str(r.inputs.get("clusterName", r.name))) + replacement_notes(change, r)
        changed.append(replace(change, notes=notes))
    return added, removed, tuple(changed)
