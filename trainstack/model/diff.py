"""`plan --config proposed.yaml --against stacks/Pulumi.prod.yaml`: what a config change does.

Both configs run through the same program under the same mock engine and the same stack name, so a
resource keeps its URN unless the change renames or re-parents it. Resources are matched by URN: added,
removed, or changed (with each changed input by its engine path, the old and the new value). The totals
that matter for review (GPUs, EFA fabric bandwidth, cost) are compared too.

The diff follows what `pulumi up` would do, not what the config says: an input under a resource's
`ignoreChanges` keeps its old value (the change is listed as ignored, and not priced), and what Pulumi
refuses is a mandatory violation (`diff_violations`): deleting or replacing a protected resource, an EKS
control plane moved by more than one minor version or downgraded, and a node group that `pulumi up` would leave
newer than the control plane or more than three minors behind it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stacks.compatibility import kubelet_problem
from trainstack.engine import Recording
from trainstack.model.report import Report
from trainstack.recording_diff import (
    MISSING,
    InputChange,
    ResourceChange,
    apply_ignore_changes,
    diff_recordings,
    input_changes,
    matched_baseline,
    path_contains,
    path_parts,
    property_path,
    replacement_notes,
    resource_changes,
    rollout_notes,
)
from trainstack.review import Violation
from trainstack.tokens import EKS_CLUSTER, NODE_GROUP

# The recording-level diff lives in trainstack/recording_diff.py; its names stay importable from here.
__all__ = [
    "MISSING",
    "PROVIDER_DIFF_NOTE",
    "Delta",
    "InputChange",
    "PlanDiff",
    "ResourceChange",
    "apply_ignore_changes",
    "diff_recordings",
    "diff_reports",
    "diff_violations",
    "input_changes",
    "matched_baseline",
    "path_contains",
    "path_parts",
    "property_path",
    "replacement_notes",
    "resource_changes",
    "rollout_notes",
]

PROVIDER_DIFF_NOTE = (
    "offline diff: replacements are predicted from create-only inputs (trainstack/create_only.py) and each "
    "resource's replace_on_changes; the provider's own diff is not run, so an 'update' may still be a replace in "
    "`pulumi preview`"
)


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
                    "deleteBeforeReplace": c.op == "replace" and bool(c.delete_before_replace),
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
