"""Time to ready: how long `pulumi up` takes, as the critical path of the recorded dependency graph.

Every recorded resource gets a typical creation time (a range in minutes, with its source) by type; the
engine creates a resource once everything it depends on exists, so the wall-clock time of a deployment is the
longest path through the graph. A component has no time of its own: depending on one means waiting for all of
its children (that is what Pulumi does with `depends_on=[component]`).

For a diff the same walk runs over the change: unchanged resources take no time, added and replaced ones
their creation time, updated ones their update time; a managed node group whose launch template or AMI
changes rolls its nodes `maxUnavailable` at a time, so its time is batches x the time to bring up a node.

The times are typical, not promises: capacity, quotas and `ImportPath` sizes move them. Each row says where
the figure comes from; where we found no public figure, the row says it is an assumption.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainstack import tokens
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import PlanDiff, ResourceChange
from trainstack.model.graph import Index, as_int, get
from trainstack.model.summary import node_group_summary


@dataclass(frozen=True)
class Typical:
    """A typical duration in minutes, as a range, and where the figure comes from."""

    what: str
    low: float
    high: float
    source: str


# Public apply logs quoted below are Terraform (terraform-aws-modules/vpc and /eks) runs published on GitHub,
# 2023-2025: the same AWS APIs the pulumi-aws provider calls, timed by the tool that waits on them.
_APPLY_LOGS = "public terraform-aws-modules apply logs on GitHub"
API_CALL = Typical(
    "API call", 0.0, 0.5, f"{_APPLY_LOGS}: subnets 0-10 s, routes and launch templates 1 s, KMS keys 12-29 s"
)
EKS_CLUSTER = Typical(
    "EKS control plane",
    10.0,
    16.0,
    "EKS API Reference, CreateCluster: 'typically takes between 10 and 15 minutes'; easontechtalk.com "
    "'Unofficial EKS Cluster Creation Performance' measured 13-16 min in 21 regions; apply logs 8m21s-12m18s",
)
CPU_NODE_GROUP = Typical(
    "managed node group (CPU)",
    2.0,
    6.0,
    f"{_APPLY_LOGS}: 1m58s-2m0s for a managed node group; awslabs/amazon-eks-ami#1099: a node registers "
    "about 40 s after the instance request",
)
GPU_NODE_GROUP = Typical(
    "managed node group (GPU)",
    6.0,
    15.0,
    "awslabs/amazon-eks-ami#1099: 'GPU instance types often take much longer to boot'; aws-parallelcluster#5085: "
    "'over 10 minutes for my GPU node to initialize'; the EKS waiter also holds until nodes are healthy",
)
FSX_LUSTRE = Typical(
    "FSx for Lustre file system",
    10.0,
    30.0,
    "aws-samples/aws-hpc-tutorials PR 289: 'around 10 mins'; aws-parallelcluster#4211: under 20 min with a "
    "small import; large capacities sit at the top of the range (no public figure for >100 TiB found)",
)
FSX_REPOSITORY = Typical(
    "FSx data repository association",
    5.0,
    15.0,
    "aws-samples/amazon-eks-machine-learning-with-terraform-and-kubeflow#112: Terraform's 10 min default "
    "sometimes timed out (raised to 30 min); the import of a large bucket runs longer",
)
NAT_GATEWAY = Typical("NAT gateway", 1.5, 2.5, f"{_APPLY_LOGS}: 1m25s-2m5s per gateway")
INTERFACE_ENDPOINT = Typical(
    "interface endpoint",
    1.0,
    3.0,
    f"assumption: ENIs in each subnet, like a NAT gateway ({_APPLY_LOGS}); no public timing found",
)
EKS_ADDON = Typical("EKS add-on", 0.25, 1.0, f"{_APPLY_LOGS}: coredns 14-56 s, kube-proxy 24 s")
HELM_RELEASE = Typical(
    "Helm release",
    1.0,
    5.0,
    "pulumi-kubernetes Release waits until every resource is ready (skip_await docstring); Helm's default "
    "--timeout is 5m0s",
)
K8S_JOB = Typical(
    "Kubernetes Job",
    1.0,
    10.0,
    "pulumi-kubernetes batch/v1 Job docstring: waits for the Complete condition, fails after 10 minutes",
)
HYPERPOD = Typical(
    "SageMaker HyperPod cluster",
    10.0,
    25.0,
    "assumption: GPU instances boot (as a GPU node group) and then run the lifecycle scripts; no public timing",
)
NODE_UPDATE_SOURCE = (
    "EKS User Guide, 'Managed node update behavior': nodes are replaced at most maxUnavailable at a time "
    "(capped at 100); pods that do not leave a node within 15 minutes fail the update"
)
MAX_PARALLEL_NODE_UPDATES = 100  # same page: "The maximum concurrency (unavailable) is capped at 100 nodes"

_BY_TYPE: Mapping[str, Typical] = {
    tokens.EKS_CLUSTER: EKS_CLUSTER,
    tokens.FSX_LUSTRE: FSX_LUSTRE,
    tokens.FSX_DATA_REPOSITORY_ASSOCIATION: FSX_REPOSITORY,
    tokens.NAT_GATEWAY: NAT_GATEWAY,
    tokens.EKS_ADDON: EKS_ADDON,
    tokens.HELM_RELEASE: HELM_RELEASE,
    tokens.HELM_CHART: HELM_RELEASE,
    tokens.K8S_JOB: K8S_JOB,
    tokens.HYPERPOD_CLUSTER: HYPERPOD,
}
NONE = Typical("no time of its own", 0.0, 0.0, "")


def _is_gpu_group(index: Index, node_group: RecordedResource) -> bool:
    return node_group_summary(index, node_group).gpu


def creation_time(index: Index, resource: RecordedResource) -> Typical:
    """The typical time to create one recorded resource."""
    if not resource.custom or resource.type.startswith("pulumi:providers:"):
        return NONE
    if resource.type == tokens.NODE_GROUP:
        return GPU_NODE_GROUP if _is_gpu_group(index, resource) else CPU_NODE_GROUP
    if resource.type == tokens.VPC_ENDPOINT:
        return INTERFACE_ENDPOINT if get(resource.inputs, "vpcEndpointType") == "Interface" else API_CALL
    return _BY_TYPE.get(resource.type, API_CALL)


# ------------------------------------------------------------------------------------------ the graph walk


@dataclass(frozen=True)
class Step:
    """One resource on the critical path and the time it adds."""

    urn: str
    name: str
    type: str
    time: Typical

    @property
    def what(self) -> str:
        return self.time.what


@dataclass(frozen=True)
class Estimate:
    """The critical path: its total (a range in minutes) and the steps on it, first to last."""

    low: float
    high: float
    path: tuple[Step, ...]  # steps that take time, under the high figures
    notes: tuple[str, ...] = ()

    @property
    def long_pole(self) -> Step | None:
        """The step on the path that takes longest (by its high figure)."""
        return max(self.path, key=lambda s: (s.time.high, s.time.low), default=None)

    @property
    def sources(self) -> tuple[Typical, ...]:
        """The distinct figures the path uses, in path order."""
        seen: dict[str, Typical] = {}
        for step in self.path:
            seen.setdefault(step.time.what, step.time)
        return tuple(seen.values())

    def to_dict(self) -> dict[str, object]:
        pole = self.long_pole
        return {
            "minutesLow": round(self.low, 1),
            "minutesHigh": round(self.high, 1),
            "longPole": pole.urn if pole else None,
            "path": [
                {
                    "urn": s.urn,
                    "type": s.type,
                    "what": s.what,
                    "minutesLow": s.time.low,
                    "minutesHigh": s.time.high,
                    "source": s.time.source,
                }
                for s in self.path
            ],
            "notes": list(self.notes),
        }


def critical_path(
    durations: Mapping[str, tuple[float, float]], after: Mapping[str, Iterable[str]]
) -> tuple[float, float, tuple[str, ...]]:
    """The longest path through a dependency graph: (low total, high total, path under the high figures).

    `durations[node]` is (low, high); `after[node]` are the nodes it must wait for. The low and the high
    totals are each the longest path under their own figures (they may run through different nodes). Edges to
    unknown nodes are ignored; an edge that would close a cycle (none exist in a real program) is ignored too.
    The path's ties break by node name, so the result is deterministic.
    """
    waits = {node: sorted({d for d in after.get(node, ()) if d in durations and d != node}) for node in durations}
    order: list[str] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done
    for root in sorted(waits):
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, i = stack.pop()
            if i < len(waits[node]):
                stack.append((node, i + 1))
                nxt = waits[node][i]
                if not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, 0))
                elif state[nxt] == 1:
                    waits[node] = [w for w in waits[node] if w != nxt]  # a back edge: drop it
                    stack[-1] = (node, i)
            else:
                state[node] = 2
                order.append(node)
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    best: dict[str, str | None] = {}
    for node in order:  # every node comes after what it waits for
        d_low, d_high = durations[node]
        prior = waits[node]
        low[node] = d_low + max((low[p] for p in prior), default=0.0)
        pick = max(prior, key=lambda p: (high[p], low[p], p), default=None)
        best[node] = pick
        high[node] = d_high + (high[pick] if pick is not None else 0.0)
    if not order:
        return 0.0, 0.0, ()
    end = max(order, key=lambda n: (high[n], low[n], n))
    path: list[str] = []
    node: str | None = end
    while node is not None:
        path.append(node)
        node = best[node]
    return max(low.values()), high[end], tuple(reversed(path))


def _waits(recording: Recording) -> dict[str, set[str]]:
    """What each resource waits for: dependencies, property dependencies, its provider; a component waits for
    its children (so depending on a component means waiting for everything in it)."""
    waits: dict[str, set[str]] = {}
    for r in recording.resources:
        deps = {*r.dependencies, r.provider_urn}
        for urns in r.property_dependencies.values():
            deps.update(urns)
        deps.discard(r.parent)  # a child never waits for its own component (that would be a cycle)
        waits.setdefault(r.urn, set()).update(d for d in deps if d)
        if r.parent:
            waits.setdefault(r.parent, set()).add(r.urn)
    return waits


def _estimate(recording: Recording, times: Mapping[str, Typical], notes: tuple[str, ...] = ()) -> Estimate:
    by_urn = recording.by_urn()
    durations = {urn: (times[urn].low, times[urn].high) for urn in by_urn}
    low, high, path = critical_path(durations, _waits(recording))
    steps = tuple(Step(urn, by_urn[urn].name, by_urn[urn].type, times[urn]) for urn in path if times[urn].high > 0)
    return Estimate(low=low, high=high, path=steps, notes=notes)


def deploy_estimate(recording: Recording) -> Estimate:
    """Time to a ready stack from nothing: the critical path of every recorded resource's creation."""
    index = Index(recording)
    return _estimate(recording, {r.urn: creation_time(index, r) for r in recording.resources})


# ---------------------------------------------------------------------------------------------- changes

_ROLLING_PATHS = ("launchTemplate", "releaseVersion", "version", "amiType")


def rolling_update(node_group: RecordedResource, per_node: Typical) -> Typical:
    """A managed node group replacing its nodes maxUnavailable at a time: batches x the time to bring up one."""
    desired = as_int(get(node_group.inputs, "scalingConfig", "desiredSize")) or 0
    unavailable = as_int(get(node_group.inputs, "updateConfig", "maxUnavailable"))
    percent = as_int(get(node_group.inputs, "updateConfig", "maxUnavailablePercentage"))
    if unavailable is None and percent is not None:
        unavailable = max(1, math.floor(desired * percent / 100))
    unavailable = min(max(unavailable or 1, 1), MAX_PARALLEL_NODE_UPDATES)
    batches = max(1, math.ceil(desired / unavailable)) if desired else 1
    return Typical(
        f"rolling update: {desired} node(s), {unavailable} at a time ({batches} batch{'es' if batches != 1 else ''})",
        batches * per_node.low,
        batches * per_node.high,
        f"{NODE_UPDATE_SOURCE}; per batch: {per_node.what} {per_node.low:g}-{per_node.high:g} min ({per_node.source})",
    )


def _update_time(index: Index, resource: RecordedResource, change: ResourceChange, rolled: bool) -> Typical:
    if change.op == "replace":
        return creation_time(index, resource)
    if resource.type == tokens.NODE_GROUP:
        per_node = GPU_NODE_GROUP if _is_gpu_group(index, resource) else CPU_NODE_GROUP
        if rolled or any(c.path.startswith(_ROLLING_PATHS) for c in change.changes):
            return rolling_update(resource, per_node)
        grows = any(
            c.path == "scalingConfig.desiredSize" and (as_int(c.new) or 0) > (as_int(c.old) or 0)
            for c in change.changes
        )
        if grows:  # new nodes boot in parallel; shrinking only terminates
            return Typical(f"scaling: new nodes join ({per_node.what})", per_node.low, per_node.high, per_node.source)
        return API_CALL
    if resource.type == tokens.EKS_CLUSTER and any(c.path == "version" for c in change.changes):
        return Typical(
            "EKS control-plane version update",
            EKS_CLUSTER.low,
            EKS_CLUSTER.high,
            "no AWS figure for an update found; the creation time is used as a stand-in",
        )
    if resource.type in (tokens.HELM_RELEASE, tokens.HELM_CHART, tokens.EKS_ADDON, tokens.K8S_JOB):
        return _BY_TYPE[resource.type]
    return API_CALL


def change_estimate(recording: Recording, diff: PlanDiff) -> Estimate:
    """Time to apply a diff: the critical path over the resources it creates, replaces or updates."""
    index = Index(recording)
    added = {urn for urn, _ in diff.added}
    changed = {c.urn: c for c in diff.changed}
    changed_templates = {urn for urn, c in changed.items() if c.type == tokens.LAUNCH_TEMPLATE}
    times: dict[str, Typical] = {}
    for r in recording.resources:
        if r.urn in added:
            times[r.urn] = creation_time(index, r)
        elif r.urn in changed:
            rolled = r.type == tokens.NODE_GROUP and any(
                t.urn in changed_templates for t in index.refs(r, "launchTemplate", tokens.LAUNCH_TEMPLATE)
            )
            times[r.urn] = _update_time(index, r, changed[r.urn], rolled)
        elif r.type == tokens.NODE_GROUP and any(
            t.urn in changed_templates for t in index.refs(r, "launchTemplate", tokens.LAUNCH_TEMPLATE)
        ):
            # A new launch template version reaches an unchanged node group through its latest version.
            per_node = GPU_NODE_GROUP if _is_gpu_group(index, r) else CPU_NODE_GROUP
            times[r.urn] = rolling_update(r, per_node)
        else:
            times[r.urn] = NONE
    notes = ()
    if diff.removed:
        notes = (f"{len(diff.removed)} removal(s) run after the changes and are not timed",)
    return _estimate(recording, times, notes)


def minutes(low: float, high: float) -> str:
    """A range of minutes as a reviewer reads it: '35-50 min', 'under 1 min', '2-3 h'."""
    if high < 1:
        return "under 1 min"
    if low >= 120:
        return f"{low / 60:.1f}-{high / 60:.1f} h"
    lo, hi = math.floor(low), math.ceil(high)
    return f"{lo} min" if lo == hi else f"{lo}-{hi} min"
