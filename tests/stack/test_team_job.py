"""The team-job journey over the whole program: it holds on every committed stack and example, and one edit of the
recording (or of the docs' TrainJob) breaks the named step, with its neighbours still holding."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from stacks.load import load_file
from tests.conftest import ROOT, STACKS, edited_config, program_recording, recording, stack_config
from trainstack.engine import Recording
from trainstack.journeys import Journey, examples, team_job

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
