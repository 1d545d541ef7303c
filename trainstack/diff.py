"""`plan --config proposed.yaml --against stacks/Pulumi.prod.yaml`: what a config change does.

Both configs run through the same program under the same mock engine and the same stack name, so a
resource keeps its URN unless the change renames or re-parents it. Resources are matched by URN: added,
removed, or changed (with each changed input by its engine path, the old and the new value). The totals
that matter for review (GPUs, EFA fabric bandwidth, cost) are compared too.

The diff follows what `pulumi up` would do, not what the config says: an input under a resource's
`ignoreChanges` keeps its old value (the change is listed as ignored, and not priced), and what Pulumi
refuses is a mandatory violation (`diff_violations`): deleting or replacing a protected resource, and an
EKS control plane moved by more than one minor version or downgraded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stacks.compatibility import kubelet_problem
from trainstack.create_only import replaces
from trainstack.engine import RecordedResource, Recording
from trainstack.report.model import Report
from trainstack.review import Violation

_MISSING = "<absent>"

PROVIDER_DIFF_NOTE = (
    "offline diff: replacements are predicted from create-only inputs (trainstack/create_only.py); the provider's "
    "own diff is not run, so an 'update' may still be a replace in `pulumi preview`"
)

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
    if type_token == "aws-native:sagemaker:Cluster" and any(LIFECYCLE_PATH.match(c.path) for c in changes):
        return (LIFECYCLE_ROLLOUT.format(cluster=cluster_name),)
    return ()


@dataclass(frozen=True)
class InputChange:
    path: str  # engine names in Pulumi's property path syntax, e.g. scalingConfig.maxSize, tags["kubernetes.io/x"]
    old: Any  # ABSENT when the key is new
    new: Any  # ABSENT when the key is gone

    @property
    def kind(self) -> str:
        """Pulumi's name for this kind of change (`PropertyDiff.kind`, without the `-replace` suffix)."""
        return "add" if self.old == _MISSING else "delete" if self.new == _MISSING else "update"


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    changes: tuple[InputChange, ...]
    protected: bool = False  # protect=True before or after: a replacement would fail `up` or lose data
    notes: tuple[str, ...] = ()  # what applying the change to running machines takes (`rollout_notes`)

    @property
    def replace_reasons(self) -> tuple[str, ...]:
        """The changed paths that force a replacement (sorted, de-duplicated)."""
        return tuple(sorted({c.path for c in self.changes if replaces(self.type, c.path)}))

    @property
    def op(self) -> str:
        return "replace" if self.replace_reasons else "update"


@dataclass(frozen=True)
class Delta:
    """One number before and after."""

    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class PlanDiff:
    against: str  # where the baseline came from
    added: tuple[tuple[str, str], ...]  # (urn, type)
    removed: tuple[tuple[str, str], ...]
    changed: tuple[ResourceChange, ...]
    accelerators_desired: Delta  # node groups at desired size + SageMaker HyperPod
    accelerators_max: Delta  # node groups at max size + SageMaker HyperPod
    fabric_gbps_desired: Delta
    fabric_gbps_max: Delta
    usd_per_hour_desired: Delta
    usd_per_hour_max: Delta
    usd_per_month_desired: Delta
    usd_per_month_max: Delta
    protected_removals: tuple[str, ...] = ()  # URNs protected in the baseline that the change deletes
    # (urn, why) of node groups whose version, as `pulumi up` leaves it, the control plane cannot run with
    node_version_problems: tuple[tuple[str, str], ...] = ()
    ignored: tuple[ResourceChange, ...] = ()  # config changes `ignoreChanges` keeps `pulumi up` from applying

    @property
    def replaced(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changed if c.op == "replace")

    @property
    def protected_replacements(self) -> tuple[ResourceChange, ...]:
        """Replacements of protected resources: `pulumi up` refuses them, and forcing one loses the data."""
        return tuple(c for c in self.replaced if c.protected)

    def to_dict(self) -> dict[str, Any]:
        def delta(d: Delta) -> dict[str, float]:
            return {"before": round(d.before, 4), "after": round(d.after, 4), "change": round(d.change, 4)}

        return {
            "against": self.against,
            "added": [{"urn": urn, "type": typ} for urn, typ in self.added],
            "removed": [{"urn": urn, "type": typ} for urn, typ in self.removed],
            "changed": [
                {
                    "urn": c.urn,
                    "type": c.type,
                    "op": c.op,
                    "protect": c.protected,
                    "replaceReasons": list(c.replace_reasons),
                    "notes": list(c.notes),
                    "changes": [{"path": i.path, "old": i.old, "new": i.new} for i in c.changes],
                }
                for c in self.changed
            ],
            "protectedReplacements": [c.urn for c in self.protected_replacements],
            "protectedDeletions": list(self.protected_removals),
            "ignored": [
                {
                    "urn": c.urn,
                    "type": c.type,
                    "changes": [{"path": i.path, "old": i.old, "new": i.new} for i in c.changes],
                }
                for c in self.ignored
            ],
            "note": PROVIDER_DIFF_NOTE,
            "acceleratorsDesired": delta(self.accelerators_desired),
            "acceleratorsMax": delta(self.accelerators_max),
            "fabricGbpsDesired": delta(self.fabric_gbps_desired),
            "fabricGbpsMax": delta(self.fabric_gbps_max),
            "usdPerHourDesired": delta(self.usd_per_hour_desired),
            "usdPerHourMax": delta(self.usd_per_hour_max),
            "usdPerMonthDesired": delta(self.usd_per_month_desired),
            "usdPerMonthMax": delta(self.usd_per_month_max),
        }


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
            found += input_changes(old.get(key, _MISSING), new.get(key, _MISSING), child)
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


# Pulumi's parser (parsePropertyPath) reads `\"` inside a quoted key as `"` and any other backslash as itself.
_PATH_PART = re.compile(r'\["((?:\\"|[^"])*)"\]|([^.\[\]]+)|\[(\d+)\]')


def path_parts(path: str) -> list[str | int]:
    """`scalingConfig.desiredSize` -> ['scalingConfig', 'desiredSize']; `subnetIds[0]` -> ['subnetIds', 0];
    `tags["kubernetes.io/role"]` -> ['tags', 'kubernetes.io/role'] (Pulumi's property path syntax)."""
    return [
        quoted.replace('\\"', '"') if quoted else int(index) if index else key
        for quoted, key, index in _PATH_PART.findall(path)
    ]


def _lookup(tree: Any, parts: list[str | int]) -> Any:
    for part in parts:
        if isinstance(part, int):
            if not isinstance(tree, list) or part >= len(tree):
                return _MISSING
            tree = tree[part]
        elif isinstance(tree, dict) and part in tree:
            tree = tree[part]
        else:
            return _MISSING
    return tree


def _with_value(tree: Any, parts: list[str | int], value: Any) -> Any:
    """A copy of `tree` with `value` at `parts` (containers along the path copied, the rest shared)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(head, int) and isinstance(tree, list) and head < len(tree):
        return [*tree[:head], _with_value(tree[head], rest, value), *tree[head + 1 :]]
    if isinstance(head, str) and isinstance(tree, dict):
        return {**tree, head: _with_value(tree.get(head, {}), rest, value)}
    return tree


def apply_ignore_changes(baseline: Recording, proposed: Recording) -> tuple[Recording, tuple[ResourceChange, ...]]:
    """`proposed` as `pulumi up` would leave it over `baseline`, and the config changes it would not apply.

    For a resource that exists in both, every input under its `ignoreChanges` keeps the baseline's value, as the
    engine does (a new resource takes its inputs as they are). Sizes the cluster autoscaler owns
    (`scalingConfig.desiredSize`) are the usual case: editing them in the stack file changes nothing in AWS.
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
            was, now = _lookup(before.inputs, parts), _lookup(inputs, parts)
            if was is _MISSING or was == now:
                continue
            skipped.append(InputChange(path, was, now))
            inputs = _with_value(inputs, parts, was)
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
    changed = tuple(
        ResourceChange(
            r.urn,
            r.type,
            changes,
            protected=old[r.urn].protect or r.protect,
            notes=rollout_notes(r.type, changes, str(r.inputs.get("clusterName", r.name))),
        )
        for r in after.resources
        if r.urn in old and (changes := resource_changes(old[r.urn], r, moved))
    )
    return added, removed, changed


def diff_reports(before: Report, after: Report, against: str, ignored: tuple[ResourceChange, ...] = ()) -> PlanDiff:
    """What `after` changes over `before`. `after` should already be `apply_ignore_changes`'s result, whose
    skipped changes come in as `ignored`."""
    added, removed, changed = diff_recordings(before.recording, after.recording)
    was_protected = {r.urn for r in before.recording.resources if r.protect}
    b, a = before.summary, after.summary
    return PlanDiff(
        against=against,
        added=added,
        removed=removed,
        changed=changed,
        protected_removals=tuple(urn for urn, _ in removed if urn in was_protected),
        ignored=ignored,
        node_version_problems=node_version_problems(after.recording),
        accelerators_desired=Delta(b.accelerators_desired, a.accelerators_desired),
        accelerators_max=Delta(b.accelerators_max, a.accelerators_max),
        fabric_gbps_desired=Delta(b.fabric_gbps_desired, a.fabric_gbps_desired),
        fabric_gbps_max=Delta(b.fabric_gbps_max, a.fabric_gbps_max),
        usd_per_hour_desired=Delta(before.cost.usd_per_hour_desired, after.cost.usd_per_hour_desired),
        usd_per_hour_max=Delta(before.cost.usd_per_hour_max, after.cost.usd_per_hour_max),
        usd_per_month_desired=Delta(before.cost.usd_per_month_desired, after.cost.usd_per_month_desired),
        usd_per_month_max=Delta(before.cost.usd_per_month_max, after.cost.usd_per_month_max),
    )


# Rules Pulumi or AWS apply to a change, not to a single plan: each is a mandatory violation of the diff.
PROTECTED_DELETE = "protected-resource-delete"
PROTECTED_REPLACE = "protected-resource-replace"
EKS_UPGRADE = "eks-upgrade-one-minor-version"
NODE_VERSION_SKEW = "eks-node-version-skew"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _minor(version: Any) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)\.(\d+)", str(version))
    return (int(match[1]), int(match[2])) if match else None


def _violation(policy: str, change_urn: str, type_: str, message: str) -> Violation:
    return Violation(
        policy=policy,
        level="mandatory",
        severity="critical",
        urn=change_urn,
        type=type_,
        name=change_urn.rsplit("::", 1)[-1],
        message=message,
    )


def node_version_problems(recording: Recording) -> tuple[tuple[str, str], ...]:
    """Node groups whose Kubernetes version the cluster's control plane cannot run with (stacks/compatibility.py
    `kubelet_problem`), judged on `recording` as `pulumi up` leaves it: a group that keeps its version when
    eks.version moves (ignoreChanges) is judged at the version it keeps."""
    clusters = [r.inputs.get("version") for r in recording.by_type(EKS_CLUSTER)]
    cluster_version = clusters[0] if len(clusters) == 1 and isinstance(clusters[0], str) else None
    if cluster_version is None or _minor(cluster_version) is None:
        return ()
    found: list[tuple[str, str]] = []
    for group in recording.by_type(NODE_GROUP):
        version = group.inputs.get("version")
        if (
            isinstance(version, str)
            and _minor(version) is not None
            and (why := kubelet_problem(cluster_version, version))
        ):
            found.append((group.urn, f"node group {group.name}: {why}"))
    return tuple(found)


def diff_violations(diff: PlanDiff) -> tuple[Violation, ...]:
    """What `pulumi up` or AWS would refuse in this change, as mandatory violations (the plan exits 1).

    - A protected resource deleted or replaced: `pulumi up` stops with "cannot be deleted because it is
      protected" (Pulumi docs, resource option `protect`); forcing it past that destroys the data.
    - EKS moves one minor version per update and never down (Amazon EKS User Guide, "Update existing cluster
      to new Kubernetes version": update to the next minor only; clusters cannot be downgraded).
    - A node group's kubelet is never newer than the control plane and at most three minors older (Kubernetes
      version skew policy): a group ahead of the control plane, or left too far behind, is refused.
    """
    found: list[Violation] = []
    types = dict(diff.removed)
    for urn in diff.protected_removals:
        found.append(
            _violation(
                PROTECTED_DELETE,
                urn,
                types.get(urn, ""),
                "the change deletes a protected resource (or moves it to a new logical name without an alias); "
                "`pulumi up` refuses, and forcing it destroys what it holds",
            )
        )
    for change in diff.protected_replacements:
        found.append(
            _violation(
                PROTECTED_REPLACE,
                change.urn,
                change.type,
                f"the change replaces a protected resource (create-only input(s) {', '.join(change.replace_reasons)} "
                "changed); `pulumi up` refuses, and forcing it destroys what it holds",
            )
        )
    for change in diff.changed:
        if change.type != EKS_CLUSTER:
            continue
        for item in change.changes:
            old, new = _minor(item.old), _minor(item.new)
            if item.path != "version" or old is None or new is None:
                continue
            if new < old:
                message = f"EKS version {item.old} -> {item.new}: a cluster cannot be downgraded"
            elif new[0] != old[0] or new[1] - old[1] > 1:
                message = (
                    f"EKS version {item.old} -> {item.new}: EKS updates one minor version at a time; "
                    f"go to {old[0]}.{old[1] + 1} first (then its add-ons and nodes), then on"
                )
            else:
                continue
            found.append(_violation(EKS_UPGRADE, change.urn, change.type, message))
    found += [_violation(NODE_VERSION_SKEW, urn, NODE_GROUP, why) for urn, why in diff.node_version_problems]
    return tuple(found)
