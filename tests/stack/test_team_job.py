"""The team-job journey over the whole program: it holds on every committed stack and example, and one edit of the
recording (or of the docs' TrainJob) breaks the named step, with its neighbours still holding."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
import yaml

from stacks.load import load_file
from tests.conftest import ROOT, STACKS, edited_config, program_recording, recording, stack_config
from trainstack.engine import UNKNOWN, Recording
from trainstack.journeys import Journey, examples, team_job, trainer

pytestmark = pytest.mark.usefixtures("shared_recordings")

TRAINER = "Trainer builds the JobSet"
LIMITS = "the namespace's LimitRange defaults the pods"
COVERAGE = "Kueue's ClusterQueue covers every resource the workload requests"
PLACEMENT = "Kueue's flavor puts every pod on group p5-train's nodes, past their taints"
NOMINAL = "the job fits the ClusterQueue's nominal quota (a job of the whole group too)"
QUOTA = "the namespace's ResourceQuotas admit the pods"
REGISTRY = "the registry admission policy admits every image"
RANKS = "each rank gets enough CPU, memory and /dev/shm, and the pods fit a node"
NETWORK = "NetworkPolicies let the ranks meet and reach DNS and AWS"
LUSTRE = "the ranks can write their Lustre paths under root squash"
EXIT = "a rank's fatal exit code fails the TrainJob without a restart"


def journeys(rec: Recording, stack: str = "prod") -> list[Journey]:
    return list(team_job.walk(team_job.Trip(recording=rec, stack=stack_config(stack))))


def one(found: list[Journey], subject: str) -> Journey:
    return next(j for j in found if j.subject == subject)


def edited(rec: Recording, match: Callable[[Any], bool], edit: Callable[[dict[str, Any]], None]) -> Recording:
    """`rec` with the inputs of every resource `match` picks edited in place (exactly one or more must match)."""
    changed, resources = 0, []
    for r in rec.resources:
        if match(r):
            inputs = copy.deepcopy(r.inputs)
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
            changed += 1
        resources.append(r)
    assert changed, "the edit matched no resource"
    return dataclasses.replace(rec, resources=tuple(resources))


def runtime(name: str) -> Callable[[Any], bool]:
    return lambda r: r.type.endswith(":ClusterTrainingRuntime") and r.inputs["metadata"]["name"] == name


def node_container(inputs: dict[str, Any], job: str = "node") -> dict[str, Any]:
    jobs = inputs["spec"]["template"]["spec"]["replicatedJobs"]
    pod = next(j for j in jobs if j["name"] == job)["template"]["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == "node")


TORCH = "team pretraining: torch TrainJob on p5-train"
MPI = "team pretraining: mpi TrainJob on p5-train"


def broken_at(rec: Recording, subject: str) -> str | None:
    step = one(journeys(rec), subject).broken_step
    return step.name if step else None


# ------------------------------------------------------------------------------------------------- holds


@pytest.mark.parametrize("stack", STACKS)
def test_every_team_runs_the_docs_jobs_on_every_group(stack: str) -> None:
    cluster = stack_config(stack)
    found = journeys(recording(stack), stack)
    expected = sum(
        len(team_job.runtime_names(g, cluster.kubernetes.training_operator.runtimes.mpi))
        for g in cluster.gpu_node_groups
    ) * len(cluster.kubernetes.teams)
    assert len(found) == expected > 0
    for journey in found:
        assert journey.holds, (journey.subject, journey.broken_step)
        assert set(journey.figures) == {"ranks per node", "CPU per rank", "memory per rank", "/dev/shm per rank"}


@pytest.mark.e2e
@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "stacks" / "examples").glob("*.yaml")))
def test_every_example_holds(example: str) -> None:
    path = ROOT / "stacks" / "examples" / example
    cluster = load_file(path)
    rec = program_recording(cluster, cluster.environment.value)
    for journey in team_job.walk(team_job.Trip(recording=rec, stack=cluster)):
        assert journey.holds, (journey.subject, journey.broken_step)


def test_a_p5_rank_gets_a_whole_eighth_of_the_node() -> None:
    figures = one(journeys(recording("prod")), TORCH).figures
    assert figures["ranks per node"] == "8"
    assert figures["CPU per rank"] == "23.9 vCPU"  # (192 - 0.55 reserved - 0.5 headroom) / 8
    assert figures["memory per rank"].startswith("254.")


# ------------------------------------------------------------------------------------------------ breaks


def test_resources_per_node_in_the_trainjob_drops_efa_and_breaks_the_trainer_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = copy.deepcopy(examples.TORCH)
    torch["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": 8}}
    monkeypatch.setitem(examples.EXAMPLES, "torch", torch)
    found = journeys(recording("prod"))
    step = one(found, TORCH).broken_step
    assert step is not None and step.name == TRAINER and "vpc.amazonaws.com/efa" in step.detail
    # MPI: the TrainJob's resources reach only the launcher; the workers keep theirs.
    assert one(found, MPI).holds


def test_a_runtime_without_cpu_and_memory_takes_the_limitrange_default() -> None:
    def strip(inputs: dict[str, Any]) -> None:
        for field in ("requests", "limits"):
            for name in ("cpu", "memory"):
                del node_container(inputs)["resources"][field][name]

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), strip)
    assert broken_at(rec, TORCH) == LIMITS
    assert one(journeys(rec), MPI).holds


def test_kueue_without_the_exclusion_refuses_ephemeral_storage() -> None:
    def include(inputs: dict[str, Any]) -> None:
        config = yaml.safe_load(inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
        del config["resources"]
        inputs["values"]["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(config)

    rec = edited(recording("prod"), lambda r: str(r.inputs.get("chart", "")).endswith("/kueue"), include)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == COVERAGE
    assert "resource ephemeral-storage unavailable in ClusterQueue p5-train" in step.detail


def test_a_node_group_taint_nothing_tolerates_breaks_the_placement_step() -> None:
    def taint(inputs: dict[str, Any]) -> None:
        inputs["taints"].append({"key": "example.com/dedicated", "value": "llm", "effect": "NO_EXECUTE"})

    rec = edited(recording("prod"), lambda r: r.type == "aws:eks/nodeGroup:NodeGroup" and "gpu" in r.name, taint)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == PLACEMENT
    assert "do not tolerate example.com/dedicated=llm:NoExecute" in step.detail


def test_a_flavor_without_node_labels_reaches_other_groups_and_breaks_the_placement_step() -> None:
    def unpin(inputs: dict[str, Any]) -> None:
        inputs["spec"]["nodeLabels"] = {}

    rec = edited(recording("prod"), lambda r: r.type.endswith(":ResourceFlavor"), unpin)
    trainjob = one(journeys(rec), TORCH)
    # The runtime's own nodeSelector still pins the pods, so only a flavor and runtime that both let go fail.
    assert trainjob.holds

    def unpin_runtime(inputs: dict[str, Any]) -> None:
        for job in inputs["spec"]["template"]["spec"]["replicatedJobs"]:
            job["template"]["spec"]["template"]["spec"].pop("nodeSelector", None)

    rec = edited(rec, runtime("trainstack-torch-p5-train"), unpin_runtime)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == PLACEMENT and "not only p5-train" in step.detail


@pytest.mark.e2e
def test_a_group_with_its_own_taints_still_runs_every_team_job() -> None:
    def taint(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["taints"] = [
            {"key": "example.com/dedicated", "value": "llm", "effect": "NoSchedule"},
            {"key": "example.com/drain", "effect": "NoExecute"},
        ]

    cluster = edited_config("prod", taint)
    rec = program_recording(cluster, "prod")
    (node_group,) = [r for r in rec.by_type("aws:eks/nodeGroup:NodeGroup") if r.name.startswith("gpu-")]
    assert [t["key"] for t in node_group.inputs["taints"]] == [
        "nvidia.com/gpu",
        "example.com/dedicated",
        "example.com/drain",
    ]
    found = list(team_job.walk(team_job.Trip(recording=rec, stack=cluster)))
    assert found and all(j.holds for j in found), [(j.subject, j.broken_step) for j in found if not j.holds]
    # The device daemons run on those nodes too.
    releases = {r.inputs["chart"]: r.inputs.get("values", {}) for r in rec.by_type("kubernetes:helm.sh/v3:Release")}
    assert {"key": "example.com/drain", "operator": "Equal", "value": "", "effect": "NoExecute"} in releases[
        "aws-efa-k8s-device-plugin"
    ]["tolerations"]
    assert {"key": "example.com/dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"} in releases[
        "gpu-operator"
    ]["daemonsets"]["tolerations"]


def test_a_queue_smaller_than_its_group_breaks_the_nominal_step() -> None:
    def shrink(inputs: dict[str, Any]) -> None:
        for resource in inputs["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
            if resource["name"] == "cpu":
                resource["nominalQuota"] = "3000"

    rec = edited(recording("prod"), lambda r: r.type.endswith(":ClusterQueue"), shrink)
    assert broken_at(rec, TORCH) == NOMINAL


def test_an_accelerator_quota_below_the_job_breaks_the_quota_step() -> None:
    def shrink(inputs: dict[str, Any]) -> None:
        if inputs["metadata"]["name"] == "accelerators":
            inputs["spec"]["hard"]["requests.nvidia.com/gpu"] = "64"

    rec = edited(
        recording("prod"),
        lambda r: r.type == "kubernetes:core/v1:ResourceQuota" and r.inputs["metadata"]["namespace"] == "pretraining",
        shrink,
    )
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == QUOTA and "requests.nvidia.com/gpu" in step.detail


def _pretraining_quota(name: str, edit: Callable[[dict[str, Any]], None]) -> Recording:
    def apply(inputs: dict[str, Any]) -> None:
        if inputs["metadata"]["name"] == name:
            edit(inputs["spec"])

    return edited(
        recording("prod"),
        lambda r: r.type == "kubernetes:core/v1:ResourceQuota" and r.inputs["metadata"]["namespace"] == "pretraining",
        apply,
    )


@pytest.mark.slow
def test_the_compute_quota_counts_efa_devices_and_hugepages() -> None:
    """The team's quota holds exactly the EFA devices and hugepages of its nodes: one device fewer refuses the job."""
    for key in ("requests.vpc.amazonaws.com/efa", "requests.hugepages-2Mi"):

        def less(spec: dict[str, Any], key: str = key) -> None:
            value = spec["hard"][key]
            spec["hard"][key] = str(int(value.removesuffix("Mi")) - 1) + ("Mi" if value.endswith("Mi") else "")

        step = one(journeys(_pretraining_quota("compute", less)), TORCH).broken_step
        assert step is not None and step.name == QUOTA and key in step.detail, key


@pytest.mark.slow
def test_the_system_priority_quota_counts_only_pods_of_a_system_class() -> None:
    """The quota scoped to the system classes holds pods at 0 and the team's job (no class) still runs; scoped
    the other way (NotIn, which a pod without a class matches) it would refuse every pod."""
    assert broken_at(recording("prod"), TORCH) is None

    def inverted(spec: dict[str, Any]) -> None:
        spec["scopeSelector"]["matchExpressions"][0]["operator"] = "NotIn"

    step = one(journeys(_pretraining_quota("system-priority", inverted)), TORCH).broken_step
    assert step is not None and step.name == QUOTA and "pods" in step.detail


def test_a_restricted_namespace_admits_torch_and_refuses_the_mpi_runtime() -> None:
    def restrict(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "restricted"

    rec = edited(
        recording("prod"),
        lambda r: r.type == "kubernetes:core/v1:Namespace" and r.inputs["metadata"]["name"] == "pretraining",
        restrict,
    )
    found = journeys(rec)
    assert one(found, TORCH).holds  # the torch runtime runs restricted
    step = one(found, MPI).broken_step
    assert step is not None and step.name == "Pod Security 'restricted' admits the pods"
    assert "runAsNonRoot" in step.detail


def test_the_old_registry_expression_blocks_a_finalizer_patch() -> None:
    def old(inputs: dict[str, Any]) -> None:
        validation = inputs["spec"]["validations"][0]
        validation["expression"] = validation["expression"].replace("image in variables.previousImages || ", "")

    rec = edited(recording("prod"), lambda r: r.type.endswith(":ValidatingAdmissionPolicy"), old)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == REGISTRY and "metadata-only UPDATE" in step.detail


def test_a_policy_blind_to_image_volumes_breaks_the_registry_step() -> None:
    def blind(inputs: dict[str, Any]) -> None:
        images = inputs["spec"]["variables"][0]
        images["expression"] = images["expression"].split(" + (has(object.spec.volumes)")[0]

    rec = edited(
        recording("prod"),
        lambda r: (
            r.type.endswith(":ValidatingAdmissionPolicy") and "allowed-registries" in r.inputs["metadata"]["name"]
        ),
        blind,
    )
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == REGISTRY
    assert "image volume unapproved.invalid/payload:1 is admitted" in step.detail


def test_an_unapproved_runtime_image_breaks_the_registry_step() -> None:
    def swap(inputs: dict[str, Any]) -> None:
        node_container(inputs)["image"] = "docker.io/pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), swap)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == REGISTRY and "refused on CREATE" in step.detail


@pytest.mark.parametrize(
    ("cpu", "memory", "why"),
    [("15900m", "2000Gi", "CPU"), ("190", "63Gi", "memory"), ("191", "2030Gi", "cpu")],
    ids=["cpu-floor", "memory-floor", "node-fit"],
)
def test_rank_floors_and_the_node_fit(cpu: str, memory: str, why: str) -> None:
    def size(inputs: dict[str, Any]) -> None:
        resources = node_container(inputs)["resources"]
        for field in ("requests", "limits"):
            resources[field]["cpu"], resources[field]["memory"] = cpu, memory

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), size)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == RANKS and why in step.detail


def test_a_rank_exactly_at_the_floors_holds() -> None:
    def size(inputs: dict[str, Any]) -> None:
        resources = node_container(inputs)["resources"]
        for field in ("requests", "limits"):
            resources[field]["cpu"], resources[field]["memory"] = "16", "64Gi"  # 2 vCPU and 8 GiB for 8 ranks

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), size)
    assert one(journeys(rec), TORCH).holds


def test_without_the_same_namespace_policy_the_ranks_cannot_meet() -> None:
    rec = recording("prod")
    kept = tuple(r for r in rec.resources if not r.name.endswith("pretraining-np-allow-same-namespace"))
    assert len(kept) == len(rec.resources) - 1
    step = one(journeys(dataclasses.replace(rec, resources=kept)), TORCH).broken_step
    assert step is not None and step.name == NETWORK and "c10d" in step.detail


def test_without_the_dns_policy_no_pod_resolves_a_name() -> None:
    rec = recording("prod")
    kept = tuple(r for r in rec.resources if not r.name.endswith("pretraining-np-allow-dns"))
    step = one(journeys(dataclasses.replace(rec, resources=kept)), MPI).broken_step
    assert step is not None and step.name == NETWORK and "DNS over UDP" in step.detail


def test_a_rank_identity_other_than_the_squash_identity_cannot_write_the_team_directory() -> None:
    def other(inputs: dict[str, Any]) -> None:
        jobs = inputs["spec"]["template"]["spec"]["replicatedJobs"]
        context = jobs[0]["template"]["spec"]["template"]["spec"]["securityContext"]
        context["runAsUser"], context["runAsGroup"] = 1000, 1000

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), other)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == LUSTRE and "runs as 1000:1000" in step.detail


def test_the_team_group_alone_may_still_write() -> None:
    """POSIX: 1000 in group 65534 writes a 0770 directory owned by 65534:65534 (the group class)."""

    def other(inputs: dict[str, Any]) -> None:
        jobs = inputs["spec"]["template"]["spec"]["replicatedJobs"]
        jobs[0]["template"]["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 1000

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), other)
    assert one(journeys(rec), TORCH).holds


def test_mpi_root_squashed_elsewhere_cannot_write_the_team_directory() -> None:
    def squash(inputs: dict[str, Any]) -> None:
        inputs["rootSquashConfiguration"]["rootSquash"] = "4000:4000"

    rec = edited(recording("prod"), lambda r: r.type == "aws:fsx/lustreFileSystem:LustreFileSystem", squash)
    step = one(journeys(rec), MPI).broken_step
    assert step is not None and step.name == LUSTRE and "squashed to 4000:4000" in step.detail


def test_bare_torchrun_never_reaches_the_fatal_exit_code_rule() -> None:
    def bare(inputs: dict[str, Any]) -> None:
        node_container(inputs)["command"] = ["torchrun"]

    rec = edited(recording("prod"), runtime("trainstack-torch-p5-train"), bare)
    step = one(journeys(rec), TORCH).broken_step
    assert step is not None and step.name == EXIT and "exit 1" in step.detail


def test_a_missing_runtime_is_the_first_and_only_step() -> None:
    rec = recording("prod")
    kept = tuple(r for r in rec.resources if not r.name.endswith("p5-train-torch"))
    journey = one(journeys(dataclasses.replace(rec, resources=kept)), TORCH)
    assert [s.name for s in journey.steps] == [TRAINER] and not journey.holds


@pytest.mark.e2e
def test_a_team_of_exactly_one_node_runs_both_runtimes() -> None:
    """A team's compute quota is exactly its nodes' allocatable: the MPI launcher's limits must fit beside a
    worker's (a launcher limit above its request broke this, found by docs/day2.md's add-a-team recipe)."""
    from tests.conftest import edited_config

    cluster = edited_config("prod", lambda c: c["kubernetes"]["teams"].append({"name": "evaluation", "gpu_quota": 8}))
    rec = program_recording(cluster, "prod")
    for journey in team_job.walk(team_job.Trip(recording=rec, stack=cluster)):
        assert journey.holds, (journey.subject, journey.broken_step)


def test_a_team_egress_to_every_port_lets_pods_speak_lustre() -> None:
    def widen(inputs: dict[str, Any]) -> None:
        inputs["spec"]["egress"][0].pop("ports")

    rec = edited(
        recording("prod"),
        lambda r: (
            r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name.endswith("research-np-allow-https")
        ),
        widen,
    )
    found = journeys(rec)
    broken = [j for j in found if j.subject.startswith("team research") and not j.holds]
    assert broken and all(j.broken_step.name == "no pod reaches the file system's Lustre ports" for j in broken)
    assert "TCP 988-988 in the VPC" in broken[0].broken_step.detail
    assert all(j.holds for j in found if j.subject.startswith("team pretraining"))


def test_prod_team_https_to_anywhere_breaks_the_internet_step() -> None:
    def anywhere(inputs: dict[str, Any]) -> None:
        inputs["spec"]["egress"][0]["to"] = [{"ipBlock": {"cidr": "0.0.0.0/0"}}]

    rec = edited(
        recording("prod"),
        lambda r: (
            r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name.endswith("research-np-allow-https")
        ),
        anywhere,
    )
    broken = [j for j in journeys(rec) if j.subject.startswith("team research") and not j.holds]
    assert broken and all(j.broken_step.name == "no pod reaches the internet" for j in broken)
    assert "203.0.113.10" in broken[0].broken_step.detail


# ---------------------------------------------------------------- each step on its own, on the prod plan's index


def prod_job(
    kind: str = "torch", team: str = "pretraining"
) -> tuple[team_job.Cluster, Any, team_job.Submission, list[Any]]:
    """The prod plan's index (a fresh one: a test may edit it), the stack, a team's submission and its pod sets."""
    stack = stack_config("prod")
    cluster = team_job.Cluster.of(recording("prod"))
    found = next(t for t in stack.kubernetes.teams if t.name == team)
    group = stack.gpu_node_groups[0]
    runtime_name = team_job.runtime_names(group, stack.kubernetes.training_operator.runtimes.mpi)[kind]
    job = team_job.submission(found, group, kind, runtime_name)
    return cluster, stack, job, trainer.pod_sets(job.trainjob, cluster.runtimes[runtime_name])


def test_the_index_holds_each_kind_of_object_the_plan_built() -> None:
    from components.k8s.tenancy import DEVICE_POLICY_NAME, REGISTRY_POLICY_NAME

    cluster = team_job.Cluster.of(recording("prod"))
    assert set(cluster.runtimes) == {
        "trainstack-mpi-p5-train", "trainstack-torch-p5-train", "trainstack-nccl-all-reduce-p5-train"
    }  # fmt: skip
    assert cluster.namespaces["pretraining"]["trainstack.io/tenant"] == "team"
    assert set(cluster.limit_ranges) == {"pretraining", "research", "trainstack-validation"}
    assert [sorted(q["hard"]) for q in cluster.quotas["research"]][:2] == [["requests.nvidia.com/gpu"], ["pods"]]
    assert cluster.local_queues[("research", "p5-train")] == "p5-train" and set(cluster.cluster_queues) == {"p5-train"}
    assert cluster.flavors["p5-train"]["nodeLabels"] == {"trainstack.io/node-group": "p5-train"}
    assert [(name, taints) for name, _, taints in cluster.node_groups] == [
        ("eks-system", []),
        ("p5-train", [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
    ]
    assert sorted(p.name for p in cluster.network_policies if p.namespace == "research") == [
        "allow-dns", "allow-https", "allow-pod-identity", "allow-same-namespace", "default-deny"
    ]  # fmt: skip
    assert ("research", "fsx-lustre") in cluster.claims and cluster.kueue_excluded == ("ephemeral-storage",)
    assert cluster.registry_binding is not None and cluster.registry_binding["policyName"] == REGISTRY_POLICY_NAME
    assert cluster.device_binding is not None and cluster.device_binding["policyName"] == DEVICE_POLICY_NAME
    assert cluster.registry_policy is not None and cluster.device_policy is not None
    assert cluster.registry_policy != cluster.device_policy
    assert (cluster.lustre, cluster.root_squash, cluster.vpc_cidr) == (True, (65534, 65534), "10.0.0.0/16")


def test_the_index_holds_what_provisions_a_groups_nodes() -> None:
    capacity = team_job.Cluster.of(recording("staging")).capacity
    assert set(capacity.admission_checks) == {"p5-capacity"} and set(capacity.provisioning_configs) == {"p5-capacity"}
    assert capacity.autoscaler_args is not None and capacity.autoscaler_args["enable-provisioning-requests"] == "true"
    assert capacity.provisioning_crd and set(capacity.asg_tags) == {"p5"}
    assert capacity.asg_tags["p5"]["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "8"
    assert team_job.Cluster.of(recording("prod")).capacity == team_job.cap.Capacity()  # a fixed group: none


def test_a_runtime_unknown_in_preview_is_the_only_step() -> None:
    cluster, stack, job, _ = prod_job()
    cluster.runtimes[job.runtime] = {"template": {"spec": {"replicatedJobs": [UNKNOWN]}}}
    journey = team_job.team_job(cluster, stack, job)
    assert [(s.name, s.holds) for s in journey.steps] == [(TRAINER, False)]
    assert journey.steps[0].detail == f"ClusterTrainingRuntime {job.runtime} is unknown in preview"


def test_the_trainer_step_wants_the_hugepages_of_an_efa_group_and_nothing_of_efa_elsewhere() -> None:
    cluster, _, job, sets = prod_job()
    runtime = cluster.runtimes[job.runtime]
    holds = team_job.trainer_step(job, sets, runtime)
    assert holds.holds
    assert holds.detail == "JobSet of 16 node pod(s), 8 processes per node pod; each node pod requests a whole node"
    container = sets[0].container()
    container["resources"]["requests"]["hugepages-2Mi"] = "10254Mi"  # 5128 pages of 2 MiB are 10256Mi
    short = team_job.trainer_step(job, sets, runtime)
    assert not short.holds and "no longer request hugepages-2Mi (wants" in short.detail
    no_efa = dataclasses.replace(job, group=job.group.model_copy(update={"efa_enabled": False}))
    del container["resources"]["requests"]["vpc.amazonaws.com/efa"]
    assert team_job.trainer_step(no_efa, sets, runtime).holds


def test_a_rank_that_requests_no_gpu_on_a_one_gpu_group_is_short() -> None:
    """Not requesting a resource is requesting none of it, also where the group has only one to give."""
    cluster, _, job, sets = prod_job()
    one_gpu = dataclasses.replace(
        job, group=job.group.model_copy(update={"instance_type": "g5.2xlarge", "efa_enabled": False})
    )
    requests = sets[0].container()["resources"]["requests"]
    del requests["nvidia.com/gpu"]
    step = team_job.trainer_step(one_gpu, sets, cluster.runtimes[job.runtime])
    assert not step.holds and "no longer request nvidia.com/gpu (wants 1" in step.detail


def test_the_limit_range_step_says_what_it_defaulted_or_that_there_is_none() -> None:
    cluster, _, job, sets = prod_job()
    step = team_job.limit_range_step(cluster, job, sets)
    assert step.holds and step.detail == (
        "defaulted: node/restart-wait limits.ephemeral-storage, node/restart-wait requests.ephemeral-storage"
    )
    cluster.limit_ranges.clear()
    none = team_job.limit_range_step(cluster, job, sets)
    assert none.holds and none.detail == "namespace pretraining has no LimitRange: nothing defaulted"


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda c: c.local_queues.clear(), "no LocalQueue 'p5-train' in namespace pretraining"),
        (lambda c: c.cluster_queues.clear(), "LocalQueue p5-train points at ClusterQueue p5-train, not in the plan"),
    ],
    ids=["no-local-queue", "no-cluster-queue"],
)
def test_every_kueue_step_stops_at_a_missing_queue(edit: Callable[[team_job.Cluster], None], why: str) -> None:
    cluster, _, job, sets = prod_job()
    edit(cluster)
    for step in (
        team_job.coverage_step(cluster, job, sets),
        team_job.placement_step(cluster, job, sets),
        team_job.nominal_step(cluster, job, sets, sets),
    ):
        assert (step.holds, step.detail) == (False, why)


def test_the_cluster_queue_must_select_the_teams_namespace() -> None:
    cluster, _, job, sets = prod_job()
    step = team_job.coverage_step(cluster, job, sets)
    assert step.holds and step.detail == (
        "ClusterQueue p5-train covers cpu, hugepages-2Mi, memory, nvidia.com/gpu, vpc.amazonaws.com/efa; "
        "excluded by Kueue's configuration: ephemeral-storage"
    )
    del cluster.namespaces["pretraining"]["trainstack.io/team"]  # the queue selects namespaces with this key
    step = team_job.coverage_step(cluster, job, sets)
    assert not step.holds and step.detail == "ClusterQueue p5-train's namespaceSelector does not select pretraining"


def test_placement_needs_every_named_flavor_and_at_least_one() -> None:
    cluster, _, job, sets = prod_job()
    step = team_job.placement_step(cluster, job, sets)
    assert step.holds and step.detail == (
        "ClusterQueue p5-train's flavor(s) p5-train reach only p5-train and tolerate its taints"
    )
    flavors = dict(cluster.flavors)
    cluster.flavors.clear()
    missing = team_job.placement_step(cluster, job, sets)
    assert (missing.holds, missing.detail) == (False, "ResourceFlavor p5-train is not in the plan")
    cluster.flavors.update(flavors)
    cluster.flavors["p5-train"]["nodeLabels"] = {"trainstack.io/node-group": "other"}
    conflict = team_job.placement_step(cluster, job, sets)
    assert not conflict.holds and conflict.detail.startswith("node pods conflict with flavor p5-train: trainstack.io")
    cluster.cluster_queues["p5-train"]["resourceGroups"] = []
    none = team_job.placement_step(cluster, job, sets)
    assert (none.holds, none.detail) == (False, "ClusterQueue p5-train names no flavor")


def test_the_nominal_quota_must_hold_a_job_of_the_whole_group_not_only_the_teams() -> None:
    cluster, _, job, sets = prod_job(team="research")  # 32 GPUs: a job of 4 nodes of the group's 16
    whole = trainer.pod_sets(
        examples.for_team(job.kind, job.namespace, job.group.name, job.runtime, job.group.max_size),
        cluster.runtimes[job.runtime],
    )
    assert team_job.nominal_step(cluster, job, sets, whole).holds
    for group in cluster.cluster_queues["p5-train"]["resourceGroups"]:
        for resource in group["flavors"][0]["resources"]:
            if resource["name"] == "nvidia.com/gpu":
                resource["nominalQuota"] = 64
    step = team_job.nominal_step(cluster, job, sets, whole)
    assert not step.holds and step.detail.startswith(
        "a job of the whole group, 16 node(s) needs more than ClusterQueue p5-train holds: nvidia.com/gpu 128 > 64"
    )


def test_a_quota_unknown_in_preview_is_skipped_and_a_quota_below_one_node_says_so() -> None:
    cluster, _, job, sets = prod_job()
    assert team_job.quota_step(cluster, job, sets).detail == "4 quota(s) admit a job of 16 node(s)"
    cluster.quotas["pretraining"] = [{"hard": {"requests.nvidia.com/gpu": UNKNOWN}}]
    assert team_job.quota_step(cluster, job, sets).holds
    small = dataclasses.replace(job, team=job.team.model_copy(update={"gpu_quota": 4}))
    cluster.quotas["pretraining"] = [{"hard": {"requests.nvidia.com/gpu": "4"}}]
    step = team_job.quota_step(cluster, small, sets)
    assert not step.holds and step.detail.endswith("; gpu_quota 4 holds no whole p5.48xlarge node (8 per node)"), (
        step.detail
    )


def test_a_quota_naming_a_resource_a_pod_leaves_unset_refuses_it() -> None:
    cluster, _, job, sets = prod_job()
    cluster.limit_ranges.clear()  # nothing fills in what the rank container leaves out
    del sets[0].container()["resources"]["limits"]["cpu"]
    step = team_job.quota_step(cluster, job, sets)
    assert (step.holds, step.detail) == (False, "node pods must specify limits.cpu (the quota names them)")


def test_a_namespace_without_a_pod_security_label_is_privileged() -> None:
    cluster, _, job, sets = prod_job()
    del cluster.namespaces["pretraining"]["pod-security.kubernetes.io/enforce"]
    step = team_job.pod_security_step(cluster, job, sets)
    assert step.name == "Pod Security 'privileged' admits the pods"
    assert step.holds and step.detail == "namespace pretraining enforces privileged; every pod passes"


def test_the_registry_step_without_a_policy_unknown_or_unbound_judges_nothing() -> None:
    cluster, _, job, sets = prod_job()
    assert team_job.registry_step(cluster, job, sets).detail == (
        "2 image(s) approved; an unapproved image volume is refused; metadata-only updates pass"
    )
    unbound = copy.deepcopy(cluster)
    del unbound.namespaces["pretraining"]["trainstack.io/tenant"]
    step = team_job.registry_step(unbound, job, sets)
    assert step.holds and step.detail == "the policy is not bound to namespace pretraining"
    preview = copy.deepcopy(cluster)
    assert preview.registry_binding is not None
    preview.registry_binding["matchResources"] = UNKNOWN
    step = team_job.registry_step(preview, job, sets)
    assert step.holds and step.detail.startswith("the policy's approved registries are unknown in preview")
    for field in ("registry_policy", "registry_binding"):
        missing = dataclasses.replace(cluster, **{field: None})
        assert team_job.registry_step(missing, job, sets).detail == "no registry policy in the plan"


def test_the_device_policy_must_be_bound_refuse_the_thief_and_admit_the_ranks() -> None:
    cluster, _, job, sets = prod_job(kind="mpi")
    step = team_job.device_step(cluster, job, sets)
    assert step.holds and step.detail == (
        "node, launcher pods admitted; a pod naming every GPU without a request is refused"
    ), step.detail
    for field in ("device_policy", "device_binding"):
        missing = dataclasses.replace(cluster, **{field: None})
        step = team_job.device_step(missing, job, sets)
        assert step.holds and step.detail == "no device access policy in the plan"
    unbound = copy.deepcopy(cluster)
    del unbound.namespaces["pretraining"]["trainstack.io/tenant"]
    step = team_job.device_step(unbound, job, sets)
    assert (step.holds, step.detail) == (False, "the policy is not bound to namespace pretraining")
    refuses = dataclasses.replace(cluster, device_policy={"validations": [{"expression": "false", "message": "no"}]})
    step = team_job.device_step(refuses, job, sets)
    assert (step.holds, step.detail) == (False, "node pods refused on CREATE: no")
    admits = dataclasses.replace(cluster, device_policy={"validations": [{"expression": "true"}]})
    step = team_job.device_step(admits, job, sets)
    assert not step.holds and step.detail.startswith("a pod with the ranks' tolerations and NVIDIA_VISIBLE_DEVICES")


def test_an_efa_nodes_allocatable_holds_its_devices_and_hugepages() -> None:
    cluster, _, job, sets = prod_job()
    ranks = team_job.Ranks.of(cluster, job, sets)
    assert ranks.allocatable["vpc.amazonaws.com/efa"] == 32 and ranks.allocatable["nvidia.com/gpu"] == 8
    assert ranks.allocatable["hugepages-2Mi"] == 5128 * 2 * 2**20
    assert ranks.beside == {} and ranks.procs == 8


def test_without_a_memory_backed_dev_shm_a_rank_gets_the_runtimes_64_mib() -> None:
    cluster, _, job, sets = prod_job()
    pod = sets[0].pod
    pod["volumes"] = [v for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") != "Memory"]
    ranks = team_job.Ranks.of(cluster, job, sets)
    assert ranks.shm == Fraction(8 * 2**20)  # 64 MiB shared by 8 ranks
    step = ranks.step()
    assert not step.holds and "/dev/shm" in step.detail and "< floor 1 GiB" in step.detail


def test_the_mpi_launcher_counts_beside_a_worker_on_its_node() -> None:
    cluster, _, job, sets = prod_job(kind="mpi")
    ranks = team_job.Ranks.of(cluster, job, sets)
    assert ranks.beside["cpu"] > 0 and ranks.step().holds
    crowded = dataclasses.replace(ranks, beside={"cpu": ranks.allocatable["cpu"]})
    step = crowded.step()
    assert not step.holds and "the DaemonSets' headroom and the launcher: cpu" in step.detail


def test_the_mpi_runtimes_flows_are_ssh_and_open_mpi() -> None:
    cluster, stack, job, sets = prod_job(kind="mpi")
    step = team_job.network_step(cluster, stack, job, sets)
    assert step.holds and step.detail.startswith("13 flows allowed (ssh 22, Open MPI and NCCL 32768-60999, DNS")
    cluster.network_policies = [p for p in cluster.network_policies if p.name != "allow-same-namespace"]
    step = team_job.network_step(cluster, stack, job, sets)
    assert not step.holds and step.detail.startswith("launcher to worker ssh: TCP 22 is not allowed")


def test_a_range_of_ports_refused_is_named_as_a_range() -> None:
    cluster, stack, job, sets = prod_job()
    for policy in cluster.network_policies:  # the same-namespace rule keeps only the c10d port
        if policy.namespace == "pretraining" and policy.name == "allow-same-namespace":
            for rule in policy.spec.get("ingress", []):
                rule["ports"] = [{"protocol": "TCP", "port": 29500}]
    step = team_job.network_step(cluster, stack, job, sets)
    assert not step.holds and "TCP 32768-60999 is not allowed" in step.detail, step.detail


def test_the_internet_step_is_not_asked_where_teams_may_reach_the_internet() -> None:
    cluster, stack, job, sets = prod_job()
    step = team_job.internet_step(cluster, stack, job, sets)
    assert step.holds and step.detail.startswith("HTTPS to 203.0.113.10 is refused for every pod")
    open_stack = stack.model_copy(update={"security": stack.security.model_copy(update={"team_internet_egress": True})})
    step = team_job.internet_step(cluster, open_stack, job, sets)
    assert step.holds and step.detail.startswith("not asked: security.team_internet_egress is on")


def test_the_lustre_step_needs_the_file_system_the_mount_and_the_claim() -> None:
    cluster, stack, job, sets = prod_job()
    assert team_job.lustre_step(dataclasses.replace(cluster, lustre=False), stack, job, sets).detail == (
        "no FSx for Lustre in this stack"
    )
    no_claim = dataclasses.replace(cluster, claims={c for c in cluster.claims if c[0] != "pretraining"})
    step = team_job.lustre_step(no_claim, stack, job, sets)
    assert (step.holds, step.detail) == (False, "no claim fsx-lustre in namespace pretraining")
    unsquashed = team_job.lustre_step(dataclasses.replace(cluster, root_squash=None), stack, job, sets)
    assert unsquashed.holds and "as its own UID (no root squash)" in unsquashed.detail  # root, not squashed
    pod = sets[0].pod
    pod["volumes"] = [v for v in pod["volumes"] if "persistentVolumeClaim" not in v]
    step = team_job.lustre_step(cluster, stack, job, sets)
    assert (step.holds, step.detail) == (False, "the node pods do not mount the team claim fsx-lustre")


def test_the_mpi_workers_create_the_checkpoint_directory_as_the_squash_identity() -> None:
    cluster, stack, job, sets = prod_job(kind="mpi")
    step = team_job.lustre_step(cluster, stack, job, sets)
    assert step.holds and step.detail.startswith(
        "the ranks reach Lustre as 65534:65534, the owner of /teams/pretraining"
    )
    assert "the workers' command creates" in step.detail


def test_a_runtime_without_fatal_exit_codes_has_nothing_to_fail_on() -> None:
    cluster, _, job, sets = prod_job()
    runtime = copy.deepcopy(cluster.runtimes[job.runtime])
    for replicated in runtime["template"]["spec"]["replicatedJobs"]:
        replicated["template"]["spec"].pop("podFailurePolicy", None)
    step = team_job.exit_code_step(job, sets, runtime)
    assert (step.holds, step.detail) == (True, "no fatal exit codes are configured")


def test_an_unknown_launcher_or_a_restart_rule_first_keeps_the_job_restarting() -> None:
    cluster, _, job, sets = prod_job()
    runtime = cluster.runtimes[job.runtime]
    held = team_job.exit_code_step(job, sets, runtime)
    assert held.holds and held.detail == "a rank exiting 2: python3 -c exits 2, FailJob rule 1, JobSet FailJobSet"
    restart_first = copy.deepcopy(runtime)
    rules = restart_first["template"]["spec"]["failurePolicy"]["rules"]
    rules.insert(0, {"action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]})
    step = team_job.exit_code_step(job, sets, restart_first)
    assert not step.holds and step.detail.endswith("but JobSet's first matching rule does RestartJobSet")
    sets[0].container()["command"] = ["/opt/launch.sh"]
    step = team_job.exit_code_step(job, sets, runtime)
    assert not step.holds and step.detail == (
        "node/node runs /opt/launch.sh: trainstack cannot tell whether it passes a rank's exit code on"
    )


def test_only_the_containers_that_mount_lustre_must_write_it() -> None:
    cluster, stack, job, sets = prod_job()
    outsider = {"name": "metrics", "image": "x", "securityContext": {"runAsUser": 1000, "runAsGroup": 1000}}
    sets[0].pod["containers"].append(outsider)
    assert team_job.lustre_step(cluster, stack, job, sets).holds  # it never touches /fsx
    outsider["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx/scratch"}]
    step = team_job.lustre_step(cluster, stack, job, sets)
    assert not step.holds and step.detail.startswith("node/metrics runs as 1000:1000 and cannot write")


def test_the_torch_entrypoint_creates_the_checkpoint_directory() -> None:
    cluster, stack, job, sets = prod_job()
    step = team_job.lustre_step(cluster, stack, job, sets)
    assert step.holds and step.detail.endswith(
        "(mode 770); the torchrun entrypoint creates $TRAINSTACK_CHECKPOINT_DIR under /fsx/checkpoints"
    )


def test_a_rank_pod_fits_a_node_exactly_up_to_the_daemonsets_headroom() -> None:
    from components.k8s.training_runtimes import DAEMONSET_HEADROOM_MIB, DAEMONSET_HEADROOM_MILLICORES

    cluster, _, job, sets = prod_job()
    ranks = team_job.Ranks.of(cluster, job, sets)
    room = {
        "cpu": ranks.allocatable["cpu"] - Fraction(DAEMONSET_HEADROOM_MILLICORES, 1000),
        "memory": ranks.allocatable["memory"] - DAEMONSET_HEADROOM_MIB * 2**20,
    }
    assert dataclasses.replace(ranks, node_requests=room).step().holds
    smallest = {"cpu": Fraction(1, 10**9), "memory": Fraction(1)}  # a nanocore, a byte
    for resource in room:
        over = dataclasses.replace(ranks, node_requests={**room, resource: room[resource] + smallest[resource]})
        step = over.step()
        assert not step.holds and f"cannot hold the rank pod, the DaemonSets' headroom: {resource}" in step.detail


def test_without_the_trainjob_api_no_team_job_is_walked() -> None:
    stack = stack_config("prod")
    operator = stack.kubernetes.training_operator.model_copy(update={"kind": "mpi_operator"})
    mpi_only = stack.model_copy(
        update={"kubernetes": stack.kubernetes.model_copy(update={"training_operator": operator})}
    )
    assert list(team_job.walk(team_job.Trip(recording=recording("prod"), stack=mpi_only))) == []


def test_a_rank_without_limits_is_counted_as_getting_nothing() -> None:
    cluster, _, job, sets = prod_job()
    cluster.limit_ranges.clear()
    pod = sets[0].pod
    for container in [*pod["containers"], *pod.get("initContainers", [])]:
        container.get("resources", {}).pop("limits", None)
    ranks = team_job.Ranks.of(cluster, job, sets)
    assert (ranks.cpu, ranks.memory) == (0, 0)
    step = ranks.step()
    assert not step.holds and "CPU 0 vCPU < floor 2 vCPU" in step.detail and "memory 0" in step.detail, step.detail


@pytest.mark.parametrize(("asked", "ranks"), [(1, 1), (0, 1)], ids=["one-process", "zero-counts-as-one"])
def test_a_trainjobs_processes_per_node_set_the_ranks_and_never_fewer_than_one(asked: int, ranks: int) -> None:
    cluster, _, job, sets = prod_job()
    job.trainjob["spec"]["trainer"]["numProcPerNode"] = asked
    found = team_job.Ranks.of(cluster, job, sets)
    assert found.procs == ranks and found.figures["ranks per node"] == str(ranks)
    assert found.cpu > 180  # one rank takes the node's CPU limit (about 191 of the p5's 192 vCPU)
