"""The team-job journey: the TrainJob docs/validate.md shows, submitted by every team on every GPU group with each
runtime (torch; MPI on NVIDIA groups), walked through what the plan built, in the order the cluster meets it.

1. Trainer v2.1.0 turns the TrainJob and the ClusterTrainingRuntime into the JobSet's pods (`trainer.py`); the
   ranks must still request every accelerator and, on EFA groups, every EFA device and the hugepages.
2. The namespace's LimitRange fills in what a container leaves out (`resources.py`); no rank may take its CPU
   or memory from that default.
3. Kueue admits the workload: every resource it counts covered by the ClusterQueue (or excluded in Kueue's
   configuration), the job within the nominal quota (a job of the group's whole size too), and the namespace's
   ResourceQuotas admit the pods (`kueue.py`, `resources.py`); then its nodes: they exist (a fixed group), or
   Kueue's ProvisioningRequest check has the autoscaler provision all of them first (`capacity.py`).
4. The namespace's Pod Security level admits every pod (`pod_security.py`).
5. The registry ValidatingAdmissionPolicy admits every image, evaluated with cel-python on the pod; a
   metadata-only update of a pod whose registry was since dropped from the list passes too.
6. Each rank's CPU, memory and /dev/shm against stated floors, and the pods against a node's allocatable
   (`figures`).
7. NetworkPolicies let the ranks meet on the ports the runtime uses and reach DNS and AWS (`network_policy.py`).
8. The paths the ranks write on Lustre are writable by the identity they reach it as, under root squash.
9. A fatal exit code of a rank reaches JobSet's rule that fails the TrainJob without a restart.

Values unknown in preview never break a step: the step says what it could not see.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import PurePosixPath
from typing import Any

from components.k8s.autoscaling import NODE_TEMPLATE
from components.k8s.tenancy import (
    DEVICE_POLICY_NAME,
    LAUNCHER_LABEL,
    POD_IDENTITY_AGENT_CIDR,
    POD_IDENTITY_AGENT_PORT,
    REGISTRY_POLICY_NAME,
    node_shape,
)
from components.k8s.training_runtimes import (
    CHECKPOINT_ENV,
    DAEMONSET_HEADROOM_MIB,
    DAEMONSET_HEADROOM_MILLICORES,
    LAUNCHER,
    NODE,
    SSH_PORT,
    TORCHRUN_COMMAND,
    runtime_names,
)
from components.k8s_common import EFA_RESOURCE, KUEUE_QUEUE_LABEL, NODE_GROUP_LABEL, taint_key
from components.namespaces import PSA_ENFORCE
from components.storage.lustre import LUSTRE_PORT_RANGES
from components.storage.lustre_volume import CLAIM_NAME, TEAM_DIRECTORY_MODE
from stacks.catalog import CATALOG
from stacks.schema import GpuNodeGroupSpec, StackConfig, TeamSpec
from trainstack import cel
from trainstack.contracts.crds import _ints
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import (
    TEAM_JOB,
    Journey,
    Step,
    Trip,
    examples,
    kueue,
    placement,
    pod_security,
    quantity,
    trainer,
)
from trainstack.journeys import capacity as cap
from trainstack.journeys import network_policy as netpol
from trainstack.journeys import resources as res
from trainstack.journeys.quantity import GIB, Resources
from trainstack.journeys.trainer import PodSet
from trainstack.tokens import (
    AUTOSCALING_TAG,
    CONFIG_FILE,
    FSX_LUSTRE,
    HELM_RELEASE,
    LIMIT_RANGE,
    NAMESPACE,
    NETWORK_POLICY,
    NODE_GROUP,
    PERSISTENT_VOLUME_CLAIM,
    RESOURCE_QUOTA,
    VPC,
)

# A rank's floors (docs/journeys.md, "Team job"): below them a job runs but starves.
# - CPU: the rank's training loop plus at least one DataLoader worker process (PyTorch `DataLoader`,
#   num_workers=0 loads batches in the training process and stalls the GPU between steps).
# - Memory: CUDA context, NCCL and EFA buffers, pinned host buffers and the DataLoader workers' batches; 8 GiB is
#   below what every catalog type gives a rank (g6e.xlarge: about 26 GiB), far above the LimitRange default's
#   1 GiB per pod that starved eight ranks of a p5.
# - /dev/shm: NCCL's intra-node transports and the DataLoader workers pass tensors through it; NVIDIA's and
#   PyTorch's container guidance asks for at least 1 GB (`--shm-size=1g`, NCCL troubleshooting "Docker";
#   Docker's 64 MB default crashes NCCL in `ncclShmOpen`).
FLOOR_CPU = Fraction(2)
FLOOR_MEMORY = 8 * GIB
FLOOR_SHM = 1 * GIB

# The ports a job's pods use among themselves. Static rendezvous and the c10d store: the master's 29500
# (kubeflow/trainer v2.1.0 pkg/constants ContainerTrainerPort). NCCL's bootstrap and socket transport, Gloo, and
# Open MPI's out-of-band channel and TCP BTL listen on ports the kernel picks: Linux's default
# net.ipv4.ip_local_port_range, 32768-60999 (kernel Documentation/networking/ip-sysctl.rst).
EPHEMERAL_PORTS = (32768, 60999)
DNS_PORT = 53
HTTPS_PORT = 443
KUBE_SYSTEM = "kube-system"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server (1.22+)
S3_EXAMPLE_ADDRESS = "52.216.0.10"  # an S3 address in us-east-1 (AWS ip-ranges.json, S3 52.216.0.0/15)

# Open MPI's mpirun returns the exit status of the lowest rank that exited non-zero (Open MPI 4.1 mpirun(1),
# "Exit status"); the MPI runtime's image ships Open MPI from the EFA installer.
MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun"})
# The Job controller's message when a FailJob rule on exit codes fires (kubernetes v1.36
# pkg/controller/job/pod_failure_policy.go); JobSet matches its rules' patterns against it.
EXIT_CODE_MESSAGE = (
    "Container {container} for pod {pod} failed with exit code {code} matching FailJob rule at index {i}"
)

SOURCES = {
    "placement": "kubernetes-sigs/kueue v0.14.8 pkg/podset/podset.go (FromAssignment, Merge); k8s.io/api core/v1 "
    "toleration.go (ToleratesTaint)",
    "trainer": trainer.SOURCE,
    "limits": "kubernetes v1.36 plugin/pkg/admission/limitranger/admission.go (mergeContainerResources)",
    "coverage": kueue.SOURCE + " (findFlavorForPodSets: 'resource %s unavailable in ClusterQueue')",
    "nominal": "kubernetes-sigs/kueue v0.14.8 pkg/scheduler/flavorassigner/flavorassigner.go (nominalQuota)",
    "quota": "kubernetes v1.36 pkg/quota/v1/evaluator/core/pods.go (Constraints, PodUsageFunc, podMatchesScopeFunc)",
    "psa": pod_security.SOURCE,
    "registry": "Kubernetes ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1), evaluated with cel-python",
    "devices": "Kubernetes ValidatingAdmissionPolicy, evaluated with cel-python; kubernetes-sigs/jobset v0.10.1 "
    "pkg/controllers/jobset_controller.go (pods carry jobset.sigs.k8s.io/replicatedjob-name)",
    "ranks": "kubernetes v1.36 pkg/volume/emptydir/empty_dir.go (calculateEmptyDirMemorySize); "
    "awslabs/amazon-eks-ami kube-reserved formula (components/k8s/tenancy.py node_shape)",
    "network": netpol.SOURCE,
    "lustre": "FSx for Lustre User Guide, 'Lustre root squash'; POSIX directory permissions (write and search)",
    "exit": "pytorch v2.7.1 torch/distributed/elastic/multiprocessing/errors/__init__.py (record re-raises "
    "ChildFailedError: torchrun exits 1); kubernetes v1.36 pkg/controller/job/pod_failure_policy.go; "
    "kubernetes-sigs/jobset v0.10.1 pkg/controllers/failure_policy.go (ruleIsApplicable)",
}


# ----------------------------------------------------------------------------------------- what was built


def _known(value: Any) -> bool:
    if value == UNKNOWN:
        return False
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    if isinstance(value, list):
        return all(_known(v) for v in value)
    return True


def _spec(resource: RecordedResource) -> dict[str, Any]:
    return _ints(resource.inputs.get("spec") or {})


def _meta(resource: RecordedResource) -> dict[str, Any]:
    return resource.inputs.get("metadata") or {}


@dataclass
class Cluster:
    """The recorded Kubernetes objects the journey reads, indexed once per plan."""

    runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    limit_ranges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    quotas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # namespace -> ResourceQuota specs
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> ClusterQueue name
    cluster_queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    network_policies: list[netpol.Policy] = field(default_factory=list)
    claims: set[tuple[str, str]] = field(default_factory=set)  # (namespace, claim)
    kueue_excluded: tuple[str, ...] = ()
    registry_policy: dict[str, Any] | None = None
    registry_binding: dict[str, Any] | None = None
    device_policy: dict[str, Any] | None = None
    device_binding: dict[str, Any] | None = None
    root_squash: tuple[int, int] | None = None
    lustre: bool = False
    vpc_cidr: str = ""
    flavors: dict[str, dict[str, Any]] = field(default_factory=dict)  # ResourceFlavor name -> spec
    # (group name, node labels, node taints): the recorded node groups, or an existing cluster's described ones
    node_groups: list[tuple[str, dict[str, str], list[dict[str, str]]]] = field(default_factory=list)
    capacity: cap.Capacity = field(default_factory=cap.Capacity)

    @classmethod
    def of(cls, recording: Recording) -> Cluster:
        cluster = cls()
        asg_tags: dict[str, dict[str, str]] = {}  # Auto Scaling group name -> its node-template tags
        for r in recording.resources:
            kind = r.type.rsplit(":", 1)[-1]
            meta = _meta(r)
            namespace = meta.get("namespace", "")
            if kind == "ClusterTrainingRuntime":
                cluster.runtimes[meta.get("name", "")] = _spec(r)
            elif r.type == NAMESPACE:
                cluster.namespaces[meta.get("name", "")] = dict(meta.get("labels") or {})
            elif r.type == LIMIT_RANGE:
                cluster.limit_ranges.setdefault(namespace, []).append({"spec": _spec(r)})
            elif r.type == RESOURCE_QUOTA:
                cluster.quotas.setdefault(namespace, []).append(_spec(r))
            elif kind == "LocalQueue":
                cluster.local_queues[(namespace, meta.get("name", ""))] = _spec(r).get("clusterQueue", "")
            elif kind == "ClusterQueue":
                cluster.cluster_queues[meta.get("name", "")] = _spec(r)
            elif kind == "ResourceFlavor":
                cluster.flavors[meta.get("name", "")] = _spec(r)
            elif r.type == NODE_GROUP:
                labels = {str(k): str(v) for k, v in (r.inputs.get("labels") or {}).items()}
                taints = placement.node_taints(r.inputs.get("taints") or [])
                cluster.node_groups.append((labels.get(NODE_GROUP_LABEL, r.name), labels, taints))
            elif r.type == NETWORK_POLICY:
                cluster.network_policies.append(netpol.Policy(namespace, meta.get("name", ""), _spec(r)))
            elif r.type == PERSISTENT_VOLUME_CLAIM:
                cluster.claims.add((namespace, meta.get("name", "")))
            elif r.type == HELM_RELEASE and str(r.inputs.get("chart", "")).endswith("/kueue"):
                config = (r.inputs.get("values") or {}).get("managerConfig", {}).get("controllerManagerConfigYaml")
                cluster.kueue_excluded = kueue.excluded_prefixes(config) if isinstance(config, str) else ()
            elif kind == "ValidatingAdmissionPolicy" and meta.get("name") == REGISTRY_POLICY_NAME:
                cluster.registry_policy = r.inputs.get("spec")
            elif kind == "ValidatingAdmissionPolicyBinding" and meta.get("name") == REGISTRY_POLICY_NAME:
                cluster.registry_binding = r.inputs.get("spec")
            elif kind == "ValidatingAdmissionPolicy" and meta.get("name") == DEVICE_POLICY_NAME:
                cluster.device_policy = r.inputs.get("spec")
            elif kind == "ValidatingAdmissionPolicyBinding" and meta.get("name") == DEVICE_POLICY_NAME:
                cluster.device_binding = r.inputs.get("spec")
            elif r.type == FSX_LUSTRE:
                cluster.lustre = True
                squash = (r.inputs.get("rootSquashConfiguration") or {}).get("rootSquash")
                if isinstance(squash, str) and squash != UNKNOWN:
                    uid, gid = squash.split(":")
                    cluster.root_squash = (int(uid), int(gid))
            elif r.type == VPC:
                cluster.vpc_cidr = str(r.inputs.get("cidrBlock", ""))
            elif kind == "AdmissionCheck":
                cluster.capacity.admission_checks[meta.get("name", "")] = _spec(r)
            elif kind == "ProvisioningRequestConfig":
                cluster.capacity.provisioning_configs[meta.get("name", "")] = _spec(r)
            elif r.type == HELM_RELEASE and r.inputs.get("chart") == "cluster-autoscaler":
                cluster.capacity.autoscaler_args = dict((r.inputs.get("values") or {}).get("extraArgs") or {})
            elif r.type == CONFIG_FILE and str(r.inputs.get("file", "")).endswith(
                "autoscaling.x-k8s.io_provisioningrequests.yaml"
            ):
                cluster.capacity.provisioning_crd = True
            elif r.type == AUTOSCALING_TAG:
                tag = r.inputs.get("tag") or {}
                asg_tags.setdefault(str(r.inputs.get("autoscalingGroupName")), {})[str(tag.get("key"))] = str(
                    tag.get("value")
                )
        # Each group's tags, found by the node-group label tag on its Auto Scaling group.
        for tags in asg_tags.values():
            if group := tags.get(f"{NODE_TEMPLATE}/label/{NODE_GROUP_LABEL}"):
                cluster.capacity.asg_tags[group] = tags
        return cluster


# -------------------------------------------------------------------------------------------- the journey


@dataclass(frozen=True)
class Submission:
    """One team's TrainJob of one kind on one group, as the cluster receives it."""

    team: TeamSpec
    group: GpuNodeGroupSpec
    kind: str
    runtime: str
    nodes: int  # the most whole nodes the team's accelerator quota and the group allow (at least 1)
    trainjob: dict[str, Any]

    @property
    def namespace(self) -> str:
        return self.team.name


def walk(trip: Trip) -> Iterator[Journey]:
    stack = trip.stack
    operator = stack.kubernetes.training_operator
    if operator.kind != "kubeflow_trainer":
        return  # no TrainJob API: teams submit MPIJobs (docs/journeys.md says what is not walked)
    cluster = Cluster.of(trip.recording)
    if stack.existing_cluster is not None:
        # Platform-only mode: the groups are the cluster owner's, as the stack file describes them (their labels
        # and taints); the plan creates none.
        cluster.node_groups += [
            (g.name, g.node_selector, [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in g.taints])
            for g in stack.gpu_node_groups
        ]
    for team in stack.kubernetes.teams:
        for group in stack.gpu_node_groups:
            for kind, runtime in runtime_names(group, operator.runtimes.mpi).items():
                yield team_job(cluster, stack, submission(team, group, kind, runtime))


def submission(team: TeamSpec, group: GpuNodeGroupSpec, kind: str, runtime: str) -> Submission:
    per_node = CATALOG[group.instance_type].accelerator_count
    nodes = max(1, min(group.max_size, team.gpu_quota // per_node))
    return Submission(team, group, kind, runtime, nodes, examples.for_team(kind, team.name, group.name, runtime, nodes))


def team_job(cluster: Cluster, stack: StackConfig, job: Submission) -> Journey:
    """Every step of one submission, in the order the cluster meets it."""
    runtime = cluster.runtimes.get(job.runtime)
    subject = f"team {job.namespace}: {job.kind} TrainJob on {job.group.name}"
    if runtime is None or not _known(runtime):
        why = "not in the plan" if runtime is None else "unknown in preview"
        step = Step(
            "Trainer builds the JobSet", False, f"ClusterTrainingRuntime {job.runtime} is {why}", SOURCES["trainer"]
        )
        return Journey(TEAM_JOB, subject, (step,))
    sets = trainer.pod_sets(job.trainjob, runtime)
    whole_group = trainer.pod_sets(
        examples.for_team(job.kind, job.namespace, job.group.name, job.runtime, job.group.max_size), runtime
    )
    ranks = Ranks.of(cluster, job, sets)
    steps = (
        trainer_step(job, sets, runtime),
        limit_range_step(cluster, job, sets),
        coverage_step(cluster, job, sets),
        placement_step(cluster, job, sets),
        nominal_step(cluster, job, sets, whole_group),
        quota_step(cluster, job, sets),
        capacity_step(cluster, job, sets),
        pod_security_step(cluster, job, sets),
        registry_step(cluster, job, sets),
        device_step(cluster, job, sets),
        ranks.step(),
        network_step(cluster, stack, job, sets),
        lustre_client_step(cluster, stack, job, sets),
        internet_step(cluster, stack, job, sets),
        lustre_step(cluster, stack, job, sets),
        exit_code_step(job, sets, runtime),
    )
    return Journey(TEAM_JOB, subject, steps, ranks.figures)


# ------------------------------------------------------------------------------------------------- steps


def _rank(sets: Sequence[PodSet]) -> PodSet:
    return trainer.rank_pod_set(tuple(sets))


def _limit_ranges(cluster: Cluster, job: Submission) -> list[dict[str, Any]]:
    return cluster.limit_ranges.get(job.namespace, [])


def _admitted_pods(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> list[tuple[int, res.Pod]]:
    """(count, pod) of each pod set as the API server stores it: LimitRange defaults applied."""
    return [(s.count, res.apply_limit_range(s.pod, _limit_ranges(cluster, job))[0]) for s in sets]


def trainer_step(job: Submission, sets: Sequence[PodSet], runtime: Mapping[str, Any]) -> Step:
    row = CATALOG[job.group.instance_type]
    rank = _rank(sets)
    requests = quantity.resources(rank.container().get("resources", {}).get("requests"))
    needed = {row.device_resource: Fraction(row.accelerator_count)}
    if job.group.efa_enabled:
        needed[EFA_RESOURCE] = Fraction(row.max_efa_interfaces)
        if job.group.hugepages_2mi:
            needed["hugepages-2Mi"] = Fraction(job.group.hugepages_2mi * 2 * 2**20)
    short = {n: v for n, v in needed.items() if requests.get(n, Fraction(0)) < v}
    shape = ", ".join(f"{s.count} {s.name}" for s in sets)
    procs = trainer.procs_per_node(runtime, job.trainjob)
    detail = f"JobSet of {shape} pod(s), {procs} processes per {NODE} pod"
    if short:
        lost = ", ".join(f"{n} (wants {quantity.text(n, v)})" for n, v in short.items())
        return Step(
            "Trainer builds the JobSet",
            False,
            f"{detail}; the ranks no longer request {lost}: a TrainJob's resourcesPerNode replaces the runtime's "
            "whole resources block, and without the EFA request NCCL falls back to TCP sockets",
            SOURCES["trainer"],
        )
    return Step(
        "Trainer builds the JobSet", True, f"{detail}; each {NODE} pod requests a whole node", SOURCES["trainer"]
    )


def limit_range_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    ranges = _limit_ranges(cluster, job)
    filled: list[str] = []
    starved: list[str] = []
    for s in sets:
        _, defaulted = res.apply_limit_range(s.pod, ranges)
        filled += [f"{s.name}/{d.container} {d.field}.{d.resource}" for d in defaulted]
        starved += [
            f"{s.name}/{d.container} {d.field}.{d.resource}"
            for d in defaulted
            if s.name == NODE and d.container == NODE and d.resource in ("cpu", "memory")
        ]
    name = "the namespace's LimitRange defaults the pods"
    if not ranges:
        return Step(name, True, f"namespace {job.namespace} has no LimitRange: nothing defaulted", SOURCES["limits"])
    if starved:
        return Step(
            name,
            False,
            f"the ranks take their CPU or memory from the namespace default ({', '.join(starved)}): the default "
            "is sized for a forgotten sidecar, not for the processes of a node",
            SOURCES["limits"],
        )
    return Step(name, True, "defaulted: " + (", ".join(filled) or "nothing"), SOURCES["limits"])


def _queue(cluster: Cluster, job: Submission) -> tuple[str, dict[str, Any] | None, str]:
    """(ClusterQueue name, its spec, why it is missing) for the queue the TrainJob names."""
    local = job.trainjob["metadata"]["labels"].get(KUEUE_QUEUE_LABEL, "")
    queue = cluster.local_queues.get((job.namespace, local))
    if queue is None:
        return "", None, f"no LocalQueue {local!r} in namespace {job.namespace}"
    spec = cluster.cluster_queues.get(queue)
    return (
        queue,
        spec,
        "" if spec is not None else f"LocalQueue {local} points at ClusterQueue {queue}, not in the plan",
    )


def _workload(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> list[tuple[PodSet, Resources]]:
    ranges = _limit_ranges(cluster, job)
    return [(s, kueue.pod_requests(s.pod, ranges, cluster.kueue_excluded)) for s in sets]


def coverage_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    name = "Kueue's ClusterQueue covers every resource the workload requests"
    queue, spec, missing = _queue(cluster, job)
    if spec is None:
        return Step(name, False, missing, SOURCES["coverage"])
    labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    if not kueue.selects_namespace(spec, labels):
        return Step(
            name,
            False,
            f"ClusterQueue {queue}'s namespaceSelector does not select {job.namespace}",
            SOURCES["coverage"],
        )
    requested = sorted({n for _, requests in _workload(cluster, job, sets) for n in requests})
    left = kueue.uncovered(dict.fromkeys(requested, Fraction(1)), spec)
    excluded = (
        f"; excluded by Kueue's configuration: {', '.join(cluster.kueue_excluded)}" if cluster.kueue_excluded else ""
    )
    if left:
        return Step(
            name,
            False,
            f"resource {left[0]} unavailable in ClusterQueue {queue}: the workload requests {', '.join(left)}, which "
            f"no resource group covers (covered: {', '.join(sorted(kueue.covered(spec)))}){excluded}",
            SOURCES["coverage"],
        )
    return Step(name, True, f"ClusterQueue {queue} covers {', '.join(requested)}{excluded}", SOURCES["coverage"])


def _flavor_names(cluster_queue: Mapping[str, Any]) -> list[str]:
    return [f.get("name", "") for g in cluster_queue.get("resourceGroups") or [] for f in g.get("flavors") or []]


def placement_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    """Every flavor the ClusterQueue may assign puts every pod on the job's own group, past the group's taints (a
    flavor that reached two groups, in two AZs, could split a job's ranks across them)."""
    name = f"Kueue's flavor puts every pod on group {job.group.name}'s nodes, past their taints"
    queue, spec, missing = _queue(cluster, job)
    if spec is None:
        return Step(name, False, missing, SOURCES["placement"])
    flavors = _flavor_names(spec)
    for flavor_name in flavors:
        flavor = cluster.flavors.get(flavor_name)
        if flavor is None:
            return Step(name, False, f"ResourceFlavor {flavor_name} is not in the plan", SOURCES["placement"])
        for s in sets:
            selector, tolerations, conflict = placement.admitted(s.pod, flavor)
            if conflict:
                return Step(
                    name, False, f"{s.name} pods conflict with flavor {flavor_name}: {conflict}", SOURCES["placement"]
                )
            groups = [(n, taints) for n, labels, taints in cluster.node_groups if placement.selects(selector, labels)]
            names = sorted({n for n, _ in groups})
            if names != [job.group.name]:
                where = ", ".join(names) if names else "no node group"
                return Step(
                    name,
                    False,
                    f"{s.name} pods admitted to flavor {flavor_name} select {where}, not only {job.group.name}",
                    SOURCES["placement"],
                )
            for _, taints in groups:
                if left := placement.untolerated(tolerations, taints):
                    return Step(
                        name,
                        False,
                        f"{s.name} pods do not tolerate {', '.join(left)} on {job.group.name}'s nodes",
                        SOURCES["placement"],
                    )
    return Step(
        name,
        bool(flavors),
        f"ClusterQueue {queue}'s flavor(s) {', '.join(flavors)} reach only {job.group.name} and tolerate its taints"
        if flavors
        else f"ClusterQueue {queue} names no flavor",
        SOURCES["placement"],
    )


def nominal_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet], whole_group: Sequence[PodSet]) -> Step:
    name = "the job fits the ClusterQueue's nominal quota (a job of the whole group too)"
    queue, spec, missing = _queue(cluster, job)
    if spec is None:
        return Step(name, False, missing, SOURCES["nominal"])
    quota = kueue.nominal(spec)
    for label, pods in (
        (f"{job.nodes} node(s)", sets),
        (f"the whole group, {job.group.max_size} node(s)", whole_group),
    ):
        total = quantity.add(*(quantity.scale(r, s.count) for s, r in _workload(cluster, job, pods)))
        total = {n: v for n, v in total.items() if n in quota}
        if over := quantity.over(total, quota):
            text = ", ".join(f"{n} {quantity.text(n, u)} > {quantity.text(n, c)}" for n, (u, c) in over.items())
            return Step(
                name, False, f"a job of {label} needs more than ClusterQueue {queue} holds: {text}", SOURCES["nominal"]
            )
    return Step(
        name,
        True,
        f"a job of {job.group.max_size} node(s) fits ClusterQueue {queue}'s nominal quota",
        SOURCES["nominal"],
    )


def capacity_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    """Quota reserved, the job's nodes must exist or be provisioned all at once (`capacity.py`)."""
    _, spec, _ = _queue(cluster, job)
    requests = {n for _, r in _workload(cluster, job, [_rank(sets)]) for n in r}
    return cap.admission_step(
        cluster.capacity,
        job.group,
        spec,
        job.nodes,
        dict.fromkeys(requests),
        {NODE_GROUP_LABEL: job.group.name},
        taint_key(job.group.instance_type),
    )


def quota_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    name = "the namespace's ResourceQuotas admit the pods"
    quotas = cluster.quotas.get(job.namespace, [])
    pods = _admitted_pods(cluster, job, sets)
    for spec in quotas:
        hard = spec.get("hard") or {}
        if not _known(hard):
            continue
        counted = [(p, s) for p, s in zip(pods, sets, strict=True) if res.quota_applies(p[1], spec)]
        for (_, pod), s in counted:
            if missing := res.quota_missing(pod, hard):
                return Step(
                    name,
                    False,
                    f"{s.name} pods must specify {', '.join(missing)} (the quota names them)",
                    SOURCES["quota"],
                )
        if over := res.quota_over([p for p, _ in counted], hard):
            text = ", ".join(
                f"{n} {quantity.text(n.split('.', 1)[-1], u)} > {quantity.text(n.split('.', 1)[-1], c)}"
                for n, (u, c) in over.items()
            )
            per_node = CATALOG[job.group.instance_type].accelerator_count
            hint = (
                f"; gpu_quota {job.team.gpu_quota} holds no whole {job.group.instance_type} node ({per_node} per node)"
                if job.team.gpu_quota < per_node
                else ""
            )
            return Step(name, False, f"a job of {job.nodes} node(s) exceeds the quota: {text}{hint}", SOURCES["quota"])
    return Step(name, True, f"{len(quotas)} quota(s) admit a job of {job.nodes} node(s)", SOURCES["quota"])


def pod_security_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    level = cluster.namespaces.get(job.namespace, {}).get(PSA_ENFORCE, "privileged")
    name = f"Pod Security '{level}' admits the pods"
    for s in sets:
        if reasons := pod_security.violations(s.pod, level):
            return Step(name, False, f"{s.name} pods: {'; '.join(reasons)}", SOURCES["psa"])
    return Step(name, True, f"namespace {job.namespace} enforces {level}; every pod passes", SOURCES["psa"])


UNAPPROVED_IMAGE_VOLUME = {"name": "payload", "image": {"reference": "unapproved.invalid/payload:1"}}


def registry_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    name = "the registry admission policy admits every image"
    policy, binding = cluster.registry_policy, cluster.registry_binding
    if policy is None or binding is None:
        return Step(name, True, "no registry policy in the plan", SOURCES["registry"])
    if not _known(policy) or not _known(binding):
        return Step(
            name, True, "the policy's approved registries are unknown in preview: not evaluated", SOURCES["registry"]
        )
    labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    if not netpol.selects((binding.get("matchResources") or {}).get("namespaceSelector"), labels):
        return Step(name, True, f"the policy is not bound to namespace {job.namespace}", SOURCES["registry"])
    images: list[str] = []
    for s in sets:
        pod = {"metadata": {"name": f"{s.name}-0", "namespace": job.namespace}, "spec": s.pod}
        images += [c["image"] for c in res.containers(s.pod)]
        if (refusal := registry_refusal(policy, pod, None)) is not None:
            return Step(name, False, f"{s.name} pods refused on CREATE: {refusal}", SOURCES["registry"])
    # The ranks' pod with an image volume from nowhere approved (Kubernetes 1.31+ `volumes[].image`): the kubelet
    # pulls it like a container image, so it must be judged like one.
    rank = sets[0]
    mounted = {
        "metadata": {"name": f"{rank.name}-volume", "namespace": job.namespace},
        "spec": {**rank.pod, "volumes": [*(rank.pod.get("volumes") or []), UNAPPROVED_IMAGE_VOLUME]},
    }
    if registry_refusal(policy, mounted, None) is None:
        return Step(
            name,
            False,
            f"a {rank.name} pod mounting the image volume {UNAPPROVED_IMAGE_VOLUME['image']['reference']} is admitted: "
            "image volumes are not judged",
            SOURCES["registry"],
        )
    # A controller removing its finalizer from a pod whose registry has since left the list: must pass.
    stale = {
        "metadata": {"name": "stale", "namespace": job.namespace},
        "spec": {"containers": [{"name": NODE, "image": "retired.example/old:1"}]},
    }
    no_finalizers: list[str] = []
    patched = {**stale, "metadata": {**stale["metadata"], "finalizers": no_finalizers}}
    if (refusal := registry_refusal(policy, patched, stale)) is not None:
        return Step(
            name,
            False,
            "a metadata-only UPDATE (a finalizer removed) of a pod whose image's registry left the list is "
            f"refused: {refusal}; the pod would never finish terminating",
            SOURCES["registry"],
        )
    return Step(
        name,
        True,
        f"{len(set(images))} image(s) approved; an unapproved image volume is refused; metadata-only updates pass",
        SOURCES["registry"],
    )


def device_step(cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Step:
    """Every rank pod (and the MPI launcher) passes the device access policy: accelerators only by request."""
    name = "the device access policy admits every pod"
    policy, binding = cluster.device_policy, cluster.device_binding
    if policy is None or binding is None:
        return Step(name, True, "no device access policy in the plan", SOURCES["devices"])
    labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    if not netpol.selects((binding.get("matchResources") or {}).get("namespaceSelector"), labels):
        return Step(name, False, f"the policy is not bound to namespace {job.namespace}", SOURCES["devices"])
    for s in sets:
        pod = {
            "metadata": {"name": f"{s.name}-0", "namespace": job.namespace, "labels": {LAUNCHER_LABEL: s.name}},
            "spec": s.pod,
        }
        if (refusal := registry_refusal(policy, pod, None)) is not None:
            return Step(name, False, f"{s.name} pods refused on CREATE: {refusal}", SOURCES["devices"])
    # The review's GPU thief: a rank pod's placement with the GPU request dropped and every GPU named instead.
    trainer_set = next((s for s in sets if s.trainer), sets[0])
    thief = {
        "metadata": {"name": "thief", "namespace": job.namespace},
        "spec": {
            **trainer_set.pod,
            "containers": [
                {"name": "thief", "image": "x", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
            ],
        },
    }
    if registry_refusal(policy, thief, None) is None:
        return Step(
            name,
            False,
            "a pod with the ranks' tolerations and NVIDIA_VISIBLE_DEVICES=all and no accelerator request is "
            "admitted: it would use the node's accelerators outside every quota",
            SOURCES["devices"],
        )
    return Step(
        name,
        True,
        f"{', '.join(s.name for s in sets)} pods admitted; a pod naming every GPU without a request is refused",
        SOURCES["devices"],
    )


def registry_refusal(policy: Mapping[str, Any], pod: Mapping[str, Any], old: Mapping[str, Any] | None) -> str | None:
    """The policy's message when it refuses `pod` (an UPDATE from `old`, or a CREATE), None when it admits it.
    An expression cel-python cannot evaluate refuses: the policy's failurePolicy is Fail."""
    import celpy

    operation = "CREATE" if old is None else "UPDATE"
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(dict(pod)),
        "oldObject": celpy.json_to_cel(dict(old) if old is not None else None),
        "request": celpy.json_to_cel({"operation": operation}),
    }
    variables: dict[str, Any] = {}
    try:
        for variable in policy.get("variables") or []:
            activation["variables"] = celpy.celtypes.MapType(
                {celpy.celtypes.StringType(k): v for k, v in variables.items()}
            )
            variables[variable["name"]] = cel.program(variable["expression"]).evaluate(activation)
        activation["variables"] = celpy.celtypes.MapType(
            {celpy.celtypes.StringType(k): v for k, v in variables.items()}
        )
        for validation in policy.get("validations") or []:
            result = cel.program(validation["expression"]).evaluate(activation)
            if not isinstance(result, bool | celpy.celtypes.BoolType) or not bool(result):
                return str(validation.get("message") or validation["expression"])
    except Exception as error:
        return f"the expression failed to evaluate ({type(error).__name__})"
    return None


# ------------------------------------------------------------------------------------------ rank figures


@dataclass(frozen=True)
class Ranks:
    """What each rank of a job gets and whether its pods fit a node."""

    job: Submission
    procs: int
    cpu: Fraction
    memory: Fraction
    shm: Fraction
    node_requests: Resources  # the rank pod's requests (LimitRange applied)
    beside: Resources  # requests of the other pods on the node (the MPI launcher)
    allocatable: Resources

    @classmethod
    def of(cls, cluster: Cluster, job: Submission, sets: Sequence[PodSet]) -> Ranks:
        row = CATALOG[job.group.instance_type]
        hugepages_mib = job.group.hugepages_2mi * 2 if job.group.efa_enabled else 0
        shape = node_shape(row, job.group.max_size, hugepages_mib, job.group.root_volume_size_gib)
        allocatable = {
            "cpu": Fraction(shape.cpu_millicores, 1000),
            "memory": Fraction(shape.memory_mib) * 2**20,
            "ephemeral-storage": Fraction(shape.ephemeral_gib) * GIB,
            row.device_resource: Fraction(row.accelerator_count),
        }
        if job.group.efa_enabled:
            allocatable[EFA_RESOURCE] = Fraction(row.max_efa_interfaces)
            allocatable["hugepages-2Mi"] = Fraction(hugepages_mib) * 2**20
        ranges = _limit_ranges(cluster, job)
        rank = _rank(sets)
        pod, _ = res.apply_limit_range(rank.pod, ranges)
        limits = res.pod_total(pod, "limits")
        procs = max(1, trainer.procs_per_node(cluster.runtimes[job.runtime], job.trainjob))
        # Without a memory-backed /dev/shm the container runtime's 64 MiB default applies (containerd's shm size).
        dshm = _shm_volume(pod)
        shm = res.memory_volume_bytes(pod, dshm, allocatable["memory"]) if dshm else Fraction(64 * 2**20)
        beside = quantity.add(
            *(res.pod_total(res.apply_limit_range(s.pod, ranges)[0]) for s in sets if s.name == LAUNCHER)
        )
        return cls(
            job=job,
            procs=procs,
            cpu=limits.get("cpu", Fraction(0)) / procs,
            memory=limits.get("memory", Fraction(0)) / procs,
            shm=min(shm, limits.get("memory", shm)) / procs,
            node_requests=res.pod_total(pod),
            beside=beside,
            allocatable=allocatable,
        )

    @property
    def figures(self) -> dict[str, str]:
        return {
            "ranks per node": str(self.procs),
            "CPU per rank": f"{quantity.cpu_text(self.cpu)} vCPU",
            "memory per rank": quantity.gib_text(self.memory),
            "/dev/shm per rank": f"{quantity.gib_text(self.shm)} (within the rank's memory)",
        }

    def step(self) -> Step:
        name = "each rank gets enough CPU, memory and /dev/shm, and the pods fit a node"
        short = [
            f"{what} {shown} < floor {floor}"
            for what, value, floor_value, shown, floor in (
                ("CPU", self.cpu, FLOOR_CPU, f"{quantity.cpu_text(self.cpu)} vCPU", "2 vCPU"),
                ("memory", self.memory, FLOOR_MEMORY, quantity.gib_text(self.memory), "8 GiB"),
                ("/dev/shm", self.shm, FLOOR_SHM, quantity.gib_text(self.shm), "1 GiB"),
            )
            if value < floor_value
        ]
        if short:
            return Step(name, False, f"each of {self.procs} ranks per node gets " + "; ".join(short), SOURCES["ranks"])
        headroom = {
            "cpu": Fraction(DAEMONSET_HEADROOM_MILLICORES, 1000),
            "memory": Fraction(DAEMONSET_HEADROOM_MIB) * 2**20,
        }
        used = quantity.add(self.node_requests, self.beside, headroom)
        if over := quantity.over({n: v for n, v in used.items() if n in self.allocatable}, self.allocatable):
            text = ", ".join(f"{n} {quantity.text(n, u)} > {quantity.text(n, c)}" for n, (u, c) in over.items())
            return Step(
                name,
                False,
                f"a {self.job.group.instance_type} node cannot hold the rank pod, the DaemonSets' headroom"
                f"{' and the launcher' if self.beside else ''}: {text} (allocatable after kube-reserved and hugepages)",
                SOURCES["ranks"],
            )
        return Step(
            name,
            True,
            f"{self.procs} ranks per node, each {quantity.cpu_text(self.cpu)} vCPU, {quantity.gib_text(self.memory)} "
            f"memory, {quantity.gib_text(self.shm)} /dev/shm; the pod fits a {self.job.group.instance_type} node",
            SOURCES["ranks"],
        )


def _shm_volume(pod: res.Pod) -> str | None:
    """The memory-backed emptyDir mounted at /dev/shm in the pod's containers, if any."""
    mounted = {
        m["name"] for c in pod["containers"] for m in c.get("volumeMounts", []) if m.get("mountPath") == "/dev/shm"
    }
    return next(
        (
            v["name"]
            for v in pod.get("volumes", [])
            if v["name"] in mounted and v.get("emptyDir", {}).get("medium") == "Memory"
        ),
        None,
    )


# ------------------------------------------------------------------------------------------------ network


def network_step(cluster: Cluster, stack: StackConfig, job: Submission, sets: Sequence[PodSet]) -> Step:
    name = "NetworkPolicies let the ranks meet and reach DNS and AWS"
    ns_labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    jobset = job.trainjob["metadata"]["name"]

    def pod(s: PodSet) -> netpol.Endpoint:
        labels = {"jobset.sigs.k8s.io/jobset-name": jobset, "jobset.sigs.k8s.io/replicatedjob-name": s.name}
        return netpol.Endpoint(job.namespace, ns_labels, labels)

    ranks = pod(_rank(sets))
    dns = netpol.Endpoint(KUBE_SYSTEM, {NAMESPACE_NAME_LABEL: KUBE_SYSTEM}, {"k8s-app": "kube-dns"})
    inside_vpc = next(iter(_hosts(cluster.vpc_cidr or stack.network.vpc_cidr)))
    flows: list[tuple[str, netpol.Endpoint, netpol.Endpoint, str, tuple[int, int]]] = []
    if job.kind == "torch":
        flows += [
            ("rank to the c10d store (static rendezvous)", ranks, ranks, "TCP", (trainer.TORCH_MASTER_PORT,) * 2),
            ("rank to rank, NCCL bootstrap and sockets", ranks, ranks, "TCP", EPHEMERAL_PORTS),
        ]
    else:
        launcher = pod(next(s for s in sets if s.name == LAUNCHER))
        flows += [
            ("launcher to worker ssh", launcher, ranks, "TCP", (SSH_PORT, SSH_PORT)),
            ("worker to launcher, Open MPI out-of-band", ranks, launcher, "TCP", EPHEMERAL_PORTS),
            ("worker to worker, NCCL and Open MPI", ranks, ranks, "TCP", EPHEMERAL_PORTS),
        ]
    everyone = [pod(s) for s in sets]
    for source in everyone:
        flows += [
            ("DNS over UDP", source, dns, "UDP", (DNS_PORT, DNS_PORT)),
            ("DNS over TCP", source, dns, "TCP", (DNS_PORT, DNS_PORT)),
            (
                "the Pod Identity agent",
                source,
                netpol.Endpoint(address=POD_IDENTITY_AGENT_CIDR.split("/")[0]),
                "TCP",
                (POD_IDENTITY_AGENT_PORT,) * 2,
            ),
            (
                "S3 over HTTPS (the gateway endpoint's public prefixes)",
                source,
                netpol.Endpoint(address=S3_EXAMPLE_ADDRESS),
                "TCP",
                (HTTPS_PORT,) * 2,
            ),
            (
                "STS and interface endpoints over HTTPS (the VPC)",
                source,
                netpol.Endpoint(address=inside_vpc),
                "TCP",
                (HTTPS_PORT,) * 2,
            ),
        ]
    for what, source, destination, protocol, ports in flows:
        verdict = netpol.connection(cluster.network_policies, source, destination, protocol, ports)
        if not verdict.allowed:
            span = f"{ports[0]}" if ports[0] == ports[1] else f"{ports[0]}-{ports[1]}"
            return Step(
                name,
                False,
                f"{what}: {protocol} {span} is not allowed (source's egress allowed by {verdict.egress or 'nothing'}, "
                f"destination's ingress by {verdict.ingress or 'nothing'})",
                SOURCES["network"],
            )
    return Step(
        name,
        True,
        f"{len(flows)} flows allowed ({'c10d 29500 and NCCL' if job.kind == 'torch' else 'ssh 22, Open MPI and NCCL'} "
        f"{EPHEMERAL_PORTS[0]}-{EPHEMERAL_PORTS[1]}, DNS, Pod Identity, HTTPS); neither runtime calls the API server",
        SOURCES["network"],
    )


def lustre_client_step(cluster: Cluster, stack: StackConfig, job: Submission, sets: Sequence[PodSet]) -> Step:
    """Lustre trusts the UID a client asserts, and squashes only root: a pod that spoke Lustre itself (a user-space
    client from the pod's own address) could claim any team's UID. The node's kernel client is the only client;
    the team's NetworkPolicies must keep every pod off the servers' ports."""
    name = "no pod reaches the file system's Lustre ports"
    ns_labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    server = netpol.Endpoint(address=next(iter(_hosts(cluster.vpc_cidr or stack.network.vpc_cidr))))
    for s in sets:
        labels = {"jobset.sigs.k8s.io/replicatedjob-name": s.name}
        for ports in LUSTRE_PORT_RANGES:  # the kernel client on the node uses them; a pod never needs to
            verdict = netpol.connection(
                cluster.network_policies, netpol.Endpoint(job.namespace, ns_labels, labels), server, "TCP", ports
            )
            if verdict.allowed:
                return Step(
                    name,
                    False,
                    f"{s.name} pods reach TCP {ports[0]}-{ports[1]} in the VPC (egress allowed by {verdict.egress}): a "
                    "pod speaking Lustre could claim any team's UID",
                    f"{SOURCES['network']}; {SOURCES['lustre']}",
                )
    return Step(
        name,
        True,
        "TCP 988 and 1018-1023 to the VPC are refused for every pod: only the node's kernel client speaks Lustre",
        f"{SOURCES['network']}; {SOURCES['lustre']}",
    )


INTERNET_ADDRESS = "203.0.113.10"  # RFC 5737 TEST-NET-3: an address outside AWS and the VPC


def internet_step(cluster: Cluster, stack: StackConfig, job: Submission, sets: Sequence[PodSet]) -> Step:
    """Without internet egress (prod by default), no pod opens HTTPS beyond the VPC and S3: a pod holding the team's
    credentials and data cannot send them anywhere."""
    name = "no pod reaches the internet"
    source = f"{SOURCES['network']}; docs/security.md, threat model"
    if stack.team_internet_egress:
        return Step(name, True, "not asked: security.team_internet_egress is on (outside prod by default)", source)
    ns_labels = {**cluster.namespaces.get(job.namespace, {}), NAMESPACE_NAME_LABEL: job.namespace}
    outside = netpol.Endpoint(address=INTERNET_ADDRESS)
    for s in sets:
        pod = netpol.Endpoint(job.namespace, ns_labels, {"jobset.sigs.k8s.io/replicatedjob-name": s.name})
        verdict = netpol.connection(cluster.network_policies, pod, outside, "TCP", (HTTPS_PORT, HTTPS_PORT))
        if verdict.allowed:
            return Step(
                name,
                False,
                f"{s.name} pods open HTTPS to {INTERNET_ADDRESS} (egress allowed by {verdict.egress}): through NAT, "
                "anywhere",
                source,
            )
    return Step(name, True, f"HTTPS to {INTERNET_ADDRESS} is refused for every pod; the VPC and S3 stay open", source)


def _hosts(cidr: str) -> Iterable[str]:
    network = ipaddress.ip_network(cidr, strict=False)
    return (str(network.network_address + 10),)


# -------------------------------------------------------------------------------------------------- Lustre


def _identity(pod: res.Pod, container: Mapping[str, Any]) -> tuple[int, int]:
    """The UID and GID a container runs as: its securityContext, the pod's, else root (the runtimes' images
    run as root; an image's USER is not known to the plan)."""
    ctx, pod_ctx = container.get("securityContext") or {}, pod.get("securityContext") or {}
    return int(ctx.get("runAsUser", pod_ctx.get("runAsUser", 0))), int(
        ctx.get("runAsGroup", pod_ctx.get("runAsGroup", 0))
    )


def writable(uid: int, gid: int, owner: tuple[int, int], mode: int) -> bool:
    """POSIX: creating an entry in a directory needs write and search permission of the class the process is in
    (owner, else group, else others); root (not squashed) passes."""
    if uid == 0:
        return True
    bits = 0o300 if uid == owner[0] else 0o030 if gid == owner[1] else 0o003
    return mode & bits == bits


def lustre_step(cluster: Cluster, stack: StackConfig, job: Submission, sets: Sequence[PodSet]) -> Step:
    name = "the ranks can write their Lustre paths under root squash"
    if not cluster.lustre:
        return Step(name, True, "no FSx for Lustre in this stack", SOURCES["lustre"])
    rank = _rank(sets)
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in rank.pod.get("volumes", []) if "persistentVolumeClaim" in v
    ]
    if CLAIM_NAME not in claims:
        return Step(name, False, f"the {NODE} pods do not mount the team claim {CLAIM_NAME}", SOURCES["lustre"])
    if (job.namespace, CLAIM_NAME) not in cluster.claims:
        return Step(name, False, f"no claim {CLAIM_NAME} in namespace {job.namespace}", SOURCES["lustre"])
    owner = stack.storage.fsx.squash_identity
    squash = cluster.root_squash
    for s in sets:
        for container in s.pod["containers"]:
            if not any(m.get("mountPath", "").startswith("/fsx") for m in container.get("volumeMounts", [])):
                continue
            uid, gid = _identity(s.pod, container)
            lustre_uid, lustre_gid = squash if (uid == 0 and squash) else (uid, gid)
            if not writable(lustre_uid, lustre_gid, owner, TEAM_DIRECTORY_MODE):
                seen = f"{uid}:{gid}" + (
                    f", squashed to {lustre_uid}:{lustre_gid}" if (uid, gid) != (lustre_uid, lustre_gid) else ""
                )
                return Step(
                    name,
                    False,
                    f"{s.name}/{container['name']} runs as {seen} and cannot write the team directory "
                    f"{stack.storage.fsx.team_directory}/{job.namespace} (owner {owner[0]}:{owner[1]}, mode "
                    f"{TEAM_DIRECTORY_MODE:o}, as docs/security.md creates it)",
                    SOURCES["lustre"],
                )
    creator = "the torchrun entrypoint" if job.kind == "torch" else "the workers' command"
    who = f"{squash[0]}:{squash[1]}" if squash else "its own UID (no root squash)"
    return Step(
        name,
        True,
        f"the ranks reach Lustre as {who}, the owner of {stack.storage.fsx.team_directory}/{job.namespace} "
        f"(mode {TEAM_DIRECTORY_MODE:o}); {creator} creates ${CHECKPOINT_ENV} under /fsx/checkpoints",
        SOURCES["lustre"],
    )


# ------------------------------------------------------------------------------------------------ exit codes


def rank_exit_code(command: Sequence[str], code: int) -> int | None:
    """What the container exits with when one rank exits with `code`, or None when trainstack cannot tell."""
    if list(command) == TORCHRUN_COMMAND:
        return code  # the entrypoint exits with the first failed rank's code
    program = PurePosixPath(command[0]).name if command else ""
    launched = shlex.join(command)
    if program == "torchrun" or re.search(r"-m\s+torch\.distributed\.(run|launch)\b", launched):
        return 1  # ChildFailedError re-raised by errors.record: Python's exit 1
    if program in MPI_LAUNCHERS:
        return code
    return None


def exit_code_step(job: Submission, sets: Sequence[PodSet], runtime: Mapping[str, Any]) -> Step:
    """The pod that reports the job's outcome (torch: the trainer nodes; MPI: the launcher running mpirun) must exit
    with a failed rank's code, its Job's podFailurePolicy must fail the Job on it, and JobSet's first matching rule
    must fail the JobSet rather than restart it."""
    name = "a rank's fatal exit code fails the TrainJob without a restart"
    launcher = next((s for s in sets if s.trainer), _rank(sets))
    container = launcher.container()
    replicated = {r["name"]: r["template"]["spec"] for r in runtime["template"]["spec"]["replicatedJobs"]}
    policy = replicated[launcher.name].get("podFailurePolicy", {}).get("rules", [])
    codes = sorted({int(v) for r in policy for v in (r.get("onExitCodes") or {}).get("values", [])})
    if not codes:
        return Step(name, True, "no fatal exit codes are configured", SOURCES["exit"])
    code = codes[0]
    command = container.get("command") or []
    exits = rank_exit_code(command, code)
    program = shlex.join(command[:2]) if command else "the image's entrypoint"
    if exits is None:
        return Step(
            name,
            False,
            f"{launcher.name}/{NODE} runs {program}: trainstack cannot tell whether it passes a rank's exit code on",
            SOURCES["exit"],
        )
    index = pod_failure_rule(policy, NODE, exits)
    if index is None or policy[index].get("action") != "FailJob":
        return Step(
            name,
            False,
            f"a rank exiting {code} makes {launcher.name}/{NODE} exit {exits} ({program}), which no FailJob rule "
            f"matches: the Job fails with BackoffLimitExceeded and the JobSet restarts it, burning every restart",
            SOURCES["exit"],
        )
    pod_name = f"{job.namespace}/{job.trainjob['metadata']['name']}-{launcher.name}-0-0"
    message = EXIT_CODE_MESSAGE.format(container=NODE, pod=pod_name, code=exits, i=index)
    action = jobset_action(runtime, "PodFailurePolicy", message)
    if action != "FailJobSet":
        return Step(
            name,
            False,
            f"the Job fails with PodFailurePolicy ({message!r}) but JobSet's first matching rule does {action}",
            SOURCES["exit"],
        )
    return Step(
        name,
        True,
        f"a rank exiting {code}: {program} exits {exits}, FailJob rule {index}, JobSet FailJobSet",
        SOURCES["exit"],
    )


def pod_failure_rule(rules: Sequence[Mapping[str, Any]], container: str, code: int) -> int | None:
    """The index of the first podFailurePolicy rule a pod whose `container` exited with `code` (and that carries
    no pod condition) matches (kubernetes v1.36 pkg/controller/job/pod_failure_policy.go: rules in order; an
    `onExitCodes` rule matches a container it names, or any, by `In` or `NotIn` its values)."""
    for i, rule in enumerate(rules):
        on_codes = rule.get("onExitCodes")
        if not on_codes or on_codes.get("containerName", container) != container:
            continue
        listed = code in [int(v) for v in on_codes.get("values", [])]
        if listed == (on_codes.get("operator") == "In"):
            return i
    return None


def jobset_action(runtime: Mapping[str, Any], reason: str, message: str) -> str:
    """The action of the first JobSet failure rule that applies to a Job failed with `reason` and `message`
    (jobset v0.10.1 ruleIsApplicable: the reason listed, any message pattern matching)."""
    rules = runtime["template"]["spec"].get("failurePolicy", {}).get("rules", [])
    for rule in rules:
        reasons, patterns = rule.get("onJobFailureReasons") or [], rule.get("onJobFailureMessagePatterns") or []
        if reasons and reason not in reasons:
            continue
        if patterns and not any(re.search(p, message) for p in patterns):
            continue
        return str(rule["action"])
    return "RestartJobSet (no rule: counted against maxRestarts)"
