"""The rules that span a stack's areas (stacks/schema/stack.py), each at its boundary and alone: a committed stack
or example with one edit, validated in-process, must be refused with exactly that rule's problem or accepted; and
the facts the program reads off a stack (which AZ, which groups, which defaults by environment)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from stacks.load import FULL_KEY
from stacks.schema import StackConfig
from stacks.schema.gpu import AmiFamily
from stacks.schema.stack import TagsSpec
from tests.conftest import ROOT, STACKS, stack_document

Edit = Callable[[dict[str, Any]], None]
ADMIN = "arn:aws:iam::111122223333:role/ml-platform-admin"
MEMBER = "arn:aws:iam::111122223333:role/research-member"
BLOCK = {
    "type": "capacity_block",
    "reservation_id": "cr-0a1b2c3d4e5f67890",
    "reservation_availability_zone": "us-east-1a",
}


@functools.cache
def _document(name: str) -> dict[str, Any]:
    if name in STACKS:
        return stack_document(name)["config"][FULL_KEY]
    return yaml.safe_load((ROOT / "stacks" / "examples" / f"{name}.yaml").read_text())["config"][FULL_KEY]


def config(name: str, edit: Edit = lambda raw: None) -> StackConfig:
    raw = copy.deepcopy(_document(name))
    edit(raw)
    return StackConfig.model_validate(raw)


def problems(name: str, edit: Edit) -> list[str]:
    """The stack-wide problems of the edited stack (the root error), one per line."""
    with pytest.raises(ValidationError) as caught:
        config(name, edit)
    errors = caught.value.errors()
    assert [e["loc"] for e in errors] == [()], errors  # refused by a stack-wide rule, not a field's own
    return errors[0]["msg"].removeprefix("Value error, ").split("\n")


def only(name: str, edit: Edit) -> str:
    [problem] = problems(name, edit)
    return problem


def group(raw: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return raw["gpu_node_groups"][index]


# ------------------------------------------------------------------------------------------------------- tags


def test_tags_extra_may_not_set_a_tag_trainstack_sets_and_may_set_others() -> None:
    with pytest.raises(ValidationError, match=r"tags.extra may not set \['cost-center', 'owner'\]"):
        TagsSpec(cost_center="ml", owner="me", extra={"owner": "x", "cost-center": "y", "team": "z"})
    assert TagsSpec(cost_center="ml", owner="me", extra={"team": "z"}).extra == {"team": "z"}
    assert config("dev", lambda raw: raw["tags"].update(extra={"team": "z"})).default_tags("trainstack") == {
        "team": "z",
        "project": "trainstack",
        "env": "dev",
        "cost-center": "ml-research",
        "owner": "ml-platform@example.com",
    }


# ------------------------------------------------------------------------------------------------- GPU groups


def _second_group(name: str, **fields: Any) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"].append({**group(raw), "name": name, **fields})

    return edit


def test_two_groups_of_one_name_are_refused_and_of_two_names_accepted() -> None:
    assert only("dev", _second_group("g5")) == "gpu_node_groups names must be unique, got ['g5', 'g5']"
    assert [g.name for g in config("dev", _second_group("g5b")).gpu_node_groups] == ["g5", "g5b"]


def test_a_group_outside_the_networks_azs_is_refused_and_inside_accepted() -> None:
    assert only("dev", lambda raw: group(raw).update(availability_zone="us-east-1c")) == (
        "gpu_node_groups.0.availability_zone us-east-1c is not in network.availability_zones "
        "['us-east-1a', 'us-east-1b']"
    )
    assert config("dev", lambda raw: group(raw).update(availability_zone="us-east-1b")).gpu_availability_zone == (
        "us-east-1b"
    )


def test_an_az_of_another_region_is_refused_for_each_az() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["network"]["availability_zones"] = ["us-east-1a", "us-west-2a"]

    assert "network.availability_zones entry us-west-2a is not in region us-east-1" in problems("dev", edit)
    assert "network.availability_zones entry us-east-1a is not in region us-east-1" not in problems("dev", edit)


def test_a_team_member_who_is_an_admin_is_refused_and_another_role_accepted() -> None:
    def member(role: str) -> Edit:
        return lambda raw: raw["kubernetes"]["teams"][0].update(member_role_arns=[MEMBER, role])

    assert only("dev", member(ADMIN)).startswith(f"kubernetes.teams.0.member_role_arns.1 {ADMIN} is in eks.admin_role")
    assert config("dev", member("arn:aws:iam::111122223333:role/other")).kubernetes.teams[0].member_role_arns[0] == (
        MEMBER
    )


# -------------------------------------------------------------------------------------------- node versions


def _system(**fields: Any) -> Edit:
    return lambda raw: raw["eks"]["system_node_group"].update(fields)


def test_a_node_group_three_minors_behind_is_accepted_and_four_refused() -> None:
    # eks.version is 1.36 in dev.
    assert config("dev", _system(kubernetes_version="1.33")).eks.system_node_group.kubernetes_version == "1.33"
    assert only("dev", _system(kubernetes_version="1.32")).startswith("eks.system_node_group.kubernetes_version 1.32:")
    assert only("dev", lambda raw: group(raw).update(kubernetes_version="1.32")).startswith(
        "gpu_node_groups.0.kubernetes_version 1.32:"
    )


def test_an_al2023_release_must_belong_to_the_version_the_group_runs() -> None:
    assert config("dev", _system(ami_release_version="1.36.0-20260915")).eks.system_node_group.ami_release_version
    assert only("dev", _system(ami_release_version="1.35.0-20260915")).startswith(
        "eks.system_node_group.ami_release_version 1.35.0-20260915 is not a release for Kubernetes 1.36 (eks.version)"
    )
    # A group pinned to its own version takes that version's releases, and its key is named.
    pinned = config("dev", _system(kubernetes_version="1.35", ami_release_version="1.35.0-20260915"))
    assert pinned.eks.system_node_group.ami_release_version == "1.35.0-20260915"
    assert only("dev", _system(kubernetes_version="1.35", ami_release_version="1.36.0-20260915")).startswith(
        "eks.system_node_group.ami_release_version 1.36.0-20260915 is not a release for Kubernetes 1.35 "
        "(eks.system_node_group.kubernetes_version)"
    )
    assert only("dev", lambda raw: group(raw).update(ami_release_version="1.3.0-20260915")).startswith(
        "gpu_node_groups.0.ami_release_version 1.3.0-20260915 is not a release for Kubernetes 1.36"
    )


def test_a_bottlerocket_release_is_not_held_to_the_kubernetes_version() -> None:
    def edit(raw: dict[str, Any]) -> None:
        group(raw).update(ami_family="BOTTLEROCKET_x86_64_NVIDIA", ami_release_version="1.44.0-0f2a6ffa")

    assert config("dev", edit).gpu_node_groups[0].ami_family is AmiFamily.BOTTLEROCKET_NVIDIA


# ------------------------------------------------------------------------------------------------- GPU budget


def test_the_budget_may_equal_the_accelerators_at_max_but_not_fall_below() -> None:
    # dev: one g5.2xlarge group (1 GPU) of max_size 2.
    assert config("dev", lambda raw: raw["cost"].update(max_gpus=2)).accelerators_at_max == 2
    assert only("dev", lambda raw: raw["cost"].update(max_gpus=1)) == (
        "GPU node groups (2 at max size) and HyperPod (0) reach 2 accelerators, over cost.max_gpus 1"
    )


def test_the_budget_counts_hyperpods_accelerators_apart_from_the_groups() -> None:
    # hyperpod-slurm: no GPU node group, two ml.p5.48xlarge (16 GPUs).
    cluster = config("hyperpod-slurm")
    assert (cluster.hyperpod_accelerators, cluster.accelerators_at_max) == (16, 16)
    assert only("hyperpod-slurm", lambda raw: raw["cost"].update(max_gpus=15)) == (
        "GPU node groups (0 at max size) and HyperPod (16) reach 16 accelerators, over cost.max_gpus 15"
    )
    off = config("hyperpod-slurm", lambda raw: raw["sagemaker"]["hyperpod"].update(enabled=False))
    assert (off.hyperpod_accelerators, off.accelerators_at_max) == (0, 0)


def test_storage_demand_is_the_accelerators_at_max_times_the_per_gpu_rate() -> None:
    assert config("dev").storage_demand_mb_s == 2 * 100


# ---------------------------------------------------------------------------------------------------- waivers

WAIVER = {
    "rule": "efa-on-capable-groups",
    "resource": "gpu-g5-ng",
    "reason": "Single-node evaluation jobs only; EFA would not speed them up and multi-node jobs run elsewhere.",
    "owner": "ml-platform@example.com",
    "expires": "2027-06-30",
    "environment": "dev",
}


def test_a_waiver_of_another_environment_is_refused() -> None:
    assert only("dev", lambda raw: raw.update(waivers=[{**WAIVER, "environment": "staging"}])).startswith(
        "waivers.0.environment staging: this is a dev stack"
    )
    assert len(config("dev", lambda raw: raw.update(waivers=[WAIVER])).waivers) == 1


def test_a_rule_waived_twice_for_one_resource_is_refused_once_and_for_two_resources_accepted() -> None:
    twice = [WAIVER, {**WAIVER, "reason": WAIVER["reason"] + " Again."}]
    assert only("dev", lambda raw: raw.update(waivers=twice)) == (
        "waivers: efa-on-capable-groups on gpu-g5-ng is waived twice"
    )
    two = [WAIVER, {**WAIVER, "resource": "gpu-other-ng"}]
    assert len(config("dev", lambda raw: raw.update(waivers=two)).waivers) == 2


# ----------------------------------------------------------------------------------------------- subnet space
#
# dev: system group max 3 in each AZ, the g5 group (max 2) in us-east-1a. A private /24 keeps 251 addresses.


def _private(prefix: int, pods: dict[str, Any] | None = None) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        raw["network"].update(private_subnet_prefix_length=prefix, public_subnet_prefix_length=max(prefix, 24))
        if pods is not None:
            raw["network"]["pod_network"] = pods

    return edit


def test_nodes_per_subnet_count_the_system_group_in_every_az_and_a_group_in_its_own() -> None:
    assert config("dev").nodes_per_subnet() == {"us-east-1a": 5, "us-east-1b": 3}
    assert config("hyperpod-slurm").nodes_per_subnet() == {"us-east-1a": 4 + 4, "us-east-1b": 4}
    # A HyperPod cluster that is off starts no instance.
    off = config("hyperpod-slurm", lambda raw: raw["sagemaker"]["hyperpod"].update(enabled=False))
    assert off.nodes_per_subnet() == {"us-east-1a": 4, "us-east-1b": 4}


def test_a_private_subnet_too_small_for_its_nodes_and_their_pods_is_refused_per_az() -> None:
    assert problems("dev", _private(24)) == [
        "network.private_subnet_prefix_length /24 gives 251 addresses in us-east-1a, but 5 nodes at max size need up "
        "to 555 (1 + 110 pods each): use a larger private subnet (a smaller prefix length) or smaller groups",
        "network.private_subnet_prefix_length /24 gives 251 addresses in us-east-1b, but 3 nodes at max size need up "
        "to 333 (1 + 110 pods each): use a larger private subnet (a smaller prefix length) or smaller groups",
    ]
    assert config("dev", _private(22)).network.private_subnet_prefix_length == 22  # 1019 addresses: 5 x 111 fit


POD_CIDR = {"cidr": "100.64.0.0/16", "subnet_prefix_length": 17}  # two /17 pod subnets: 32763 addresses each


def test_with_a_pod_network_node_subnets_hold_only_nodes_up_to_their_last_address() -> None:
    # 251 usable addresses in a /24: 3 system + 248 GPU nodes fit exactly, one more does not.
    def nodes(count: int) -> Edit:
        def edit(raw: dict[str, Any]) -> None:
            _private(24, POD_CIDR)(raw)
            group(raw).update(max_size=count)
            raw["cost"]["max_gpus"] = 1000

        return edit

    assert config("dev", nodes(248)).nodes_per_subnet()["us-east-1a"] == 251
    assert only("dev", nodes(249)) == (
        "network.private_subnet_prefix_length /24 gives 251 addresses in us-east-1a, fewer than its 252 nodes at max "
        "size: use a larger private subnet"
    )


def test_with_a_pod_network_pod_subnets_hold_the_pods() -> None:
    small_pods = {"cidr": "100.64.0.0/16", "subnet_prefix_length": 24}  # 251 pod addresses: 2 nodes' worth
    assert problems("dev", _private(24, small_pods)) == [
        "network.pod_network.subnet_prefix_length /24 gives 251 pod addresses in us-east-1a, but 5 nodes at max size "
        "need up to 550 (110 pods each): use a larger pod subnet or smaller groups",
        "network.pod_network.subnet_prefix_length /24 gives 251 pod addresses in us-east-1b, but 3 nodes at max size "
        "need up to 330 (110 pods each): use a larger pod subnet or smaller groups",
    ]
    assert config("dev", _private(24, POD_CIDR)).network.pod_network is not None


# ---------------------------------------------------------------------------------------------- Lustre over EFA


def _efa_group(raw: dict[str, Any], index: int, az: str) -> None:
    entry = {**group(raw), "name": f"efa{index}", "instance_type": "g5.8xlarge", "efa_enabled": True}
    entry.update(availability_zone=az, capacity={"type": "on_demand"})
    raw["gpu_node_groups"].append(entry)
    raw["cost"]["max_gpus"] = 100


def _efa_lustre(raw: dict[str, Any], enabled: bool = True) -> None:
    fsx = {"deployment_type": "PERSISTENT_2", "throughput_mb_s_per_tib": 1000, "storage_capacity_gib": 4800}
    raw["storage"]["fsx"].update(fsx, efa_enabled=True, enabled=enabled)


def _lustre_efa(*azs: str) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        _efa_lustre(raw)
        for i, az in enumerate(azs):
            _efa_group(raw, i, az)

    return edit


def test_lustre_over_efa_needs_an_efa_group_and_all_of_them_in_one_az() -> None:
    assert only("dev", _lustre_efa()) == "storage.fsx.efa_enabled needs at least one EFA GPU node group to serve"
    assert config("dev", _lustre_efa("us-east-1b", "us-east-1b")).gpu_availability_zone == "us-east-1b"
    assert only("dev", _lustre_efa("us-east-1b", "us-east-1a")).startswith(
        "storage.fsx.efa_enabled with EFA GPU groups in ['us-east-1a', 'us-east-1b']: Lustre over EFA reaches "
        "clients in its own subnet only (us-east-1b)"
    )


def test_lustre_without_efa_or_disabled_fsx_is_not_held_to_the_efa_groups() -> None:
    def two_azs(raw: dict[str, Any]) -> None:
        _efa_group(raw, 0, "us-east-1a")
        _efa_group(raw, 1, "us-east-1b")

    assert len(config("dev", two_azs).gpu_node_groups) == 3
    assert config("dev", lambda raw: _efa_lustre(raw, enabled=False)).storage.fsx.efa_enabled


# ------------------------------------------------------------------------------------------------- AZ of a stack


def test_the_gpu_az_is_the_first_efa_groups_else_the_first_groups_else_the_networks() -> None:
    assert config("dev").gpu_availability_zone == "us-east-1a"
    assert config("dev", lambda raw: group(raw).update(availability_zone="us-east-1b")).gpu_availability_zone == (
        "us-east-1b"
    )
    efa_second = config("dev", lambda raw: _efa_group(raw, 0, "us-east-1b"))
    assert efa_second.gpu_availability_zone == "us-east-1b"
    none = config("dev", lambda raw: raw.update(gpu_node_groups=[]))
    assert none.gpu_availability_zone == "us-east-1a"
    assert config("dev", lambda raw: (raw.update(gpu_node_groups=[]), raw["network"].update(
        availability_zones=["us-east-1b", "us-east-1a"]))).gpu_availability_zone == "us-east-1b"  # fmt: skip


# -------------------------------------------------------------------------------------------- network perimeter


def _private_endpoint(raw: dict[str, Any]) -> None:
    raw["eks"].update(endpoint_public_access=False, public_access_cidrs=[])


def test_a_private_cluster_in_a_vpc_trainstack_creates_needs_interface_endpoints() -> None:
    assert only("dev", _private_endpoint).startswith(
        "eks.endpoint_public_access is false: set network.interface_endpoints true"
    )
    with_endpoints = config(
        "dev", lambda raw: (_private_endpoint(raw), raw["network"].update(interface_endpoints=True))
    )
    assert with_endpoints.network.interface_endpoints is True
    # In an existing VPC the endpoints are its owner's: not trainstack's to require.
    assert config("existing-vpc", _private_endpoint).network.creates_vpc is False


def test_an_existing_vpc_names_its_s3_endpoint_while_the_buckets_are_vpc_only() -> None:
    def no_endpoint(setting: bool | None) -> Edit:
        def edit(raw: dict[str, Any]) -> None:
            raw["network"]["existing_vpc"].pop("s3_endpoint_id")
            raw["security"]["data_buckets_vpc_only"] = setting

        return edit

    refusal = "network.existing_vpc.s3_endpoint_id is missing: the data buckets admit only requests through"
    assert only("existing-vpc", no_endpoint(True)).startswith(refusal)
    assert only("existing-vpc", no_endpoint(None)).startswith(refusal)  # on by default outside dev
    assert config("existing-vpc", no_endpoint(False)).data_buckets_vpc_only is False
    assert config("existing-vpc").network.existing_vpc.s3_endpoint_id == "vpce-0a1b2c3d4e5f67890"  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------- validation jobs
#
# prod: validation on over the p5-train group (NVIDIA, EFA, max_size 16).


def _eval_group(raw: dict[str, Any]) -> None:
    entry = {**group(raw), "name": "eval", "instance_type": "g6e.xlarge", "efa_enabled": False}
    entry.update(min_size=0, desired_size=0, max_size=2, capacity={"type": "on_demand"})
    raw["gpu_node_groups"].append(entry)
    raw["cost"]["max_gpus"] = 200


def _validation(**fields: Any) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        _eval_group(raw)
        raw["kubernetes"]["validation"].update(fields)

    return edit


def test_validation_may_name_only_an_nvidia_efa_group() -> None:
    assert only("prod", _validation(node_group="eval")) == (
        "kubernetes.validation.node_group 'eval' must name an NVIDIA EFA GPU group (the NCCL and DCGM jobs are "
        "NVIDIA-only); valid: ['p5-train']"
    )
    named = config("prod", _validation(node_group="p5-train"))
    assert named.validation_node_group is not None and named.validation_node_group.name == "p5-train"
    assert config("prod", _validation(enabled=False, node_group="eval", nodes=64)).validation_node_group is None


def test_validation_nodes_may_reach_the_groups_max_size_and_not_beyond() -> None:
    assert config("prod", _validation(nodes=16)).kubernetes.validation.nodes == 16  # type: ignore[union-attr]
    assert only("prod", _validation(nodes=17)).startswith("kubernetes.validation.nodes 17 exceeds the max_size 16")


def test_the_validation_group_is_the_first_candidate_and_none_without_one() -> None:
    assert [g.name for g in config("prod", _eval_group).validation_candidates] == ["p5-train"]
    assert config("prod", _eval_group).validation_node_group.name == "p5-train"  # type: ignore[union-attr]
    assert config("dev").validation_node_group is None  # no validation section
    assert config("dev").validation_candidates == []  # a spot group without EFA

    def trainium_only(raw: dict[str, Any]) -> None:
        group(raw).update(instance_type="trn1.32xlarge", ami_family="AL2023_x86_64_NEURON")
        raw["cost"]["max_gpus"] = 1000
        raw["kubernetes"]["validation"]["nodes"] = 64  # no NVIDIA group: nothing to hold it against

    cluster = config("prod", trainium_only)
    assert (cluster.validation_candidates, cluster.validation_node_group) == ([], None)


# ------------------------------------------------------------------------------------------- by environment


def _as(environment: str) -> Edit:
    return lambda raw: raw.update(environment=environment)


def test_scratch_lustre_is_for_dev_only() -> None:
    assert config("dev").storage.fsx.deployment_type.value == "SCRATCH_2"
    assert only("dev", _as("staging")) == "storage.fsx.deployment_type SCRATCH_2 is for dev only, not staging"


@pytest.mark.parametrize(
    ("environment", "metrics", "vpc_only", "egress", "protect"),
    [("dev", False, False, True, False), ("staging", True, True, True, False), ("prod", True, True, False, True)],
)
def test_defaults_by_environment(environment: str, metrics: bool, vpc_only: bool, egress: bool, protect: bool) -> None:
    cluster = config("prod", _as(environment))
    assert (cluster.metrics_enabled, cluster.data_buckets_vpc_only) == (metrics, vpc_only)
    assert (cluster.team_internet_egress, cluster.protect_data) == (egress, protect)


def test_settings_win_over_the_environments_defaults() -> None:
    def settings(raw: dict[str, Any]) -> None:
        raw["environment"] = "staging"
        raw["health"] = {"metrics": False}
        raw["security"].update(data_buckets_vpc_only=False, team_internet_egress=False)

    cluster = config("prod", settings)
    assert (cluster.metrics_enabled, cluster.data_buckets_vpc_only, cluster.team_internet_egress) == (False,) * 3
    on = config("dev", lambda raw: raw.update(health={"metrics": True}, security={"data_buckets_vpc_only": True}))
    assert (on.metrics_enabled, on.data_buckets_vpc_only) == (True, True)


def test_root_squash_off_is_refused_outside_dev() -> None:
    off: Edit = lambda raw: raw["storage"]["fsx"].update(root_squash=None)  # noqa: E731
    assert config("dev", off).storage.fsx.root_squash is None
    assert only("prod", off).startswith("storage.fsx.root_squash is null: root squash is required in prod")


@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ({"checkpoint_lock": None}, "security.checkpoint_lock is unset: prod checkpoints need S3 Object Lock"),
        ({"team_internet_egress": True}, "security.team_internet_egress is true: prod team pods reach only the VPC"),
        ({"data_buckets_vpc_only": False}, "security.data_buckets_vpc_only is false: prod data buckets deny access"),
    ],
)
def test_each_prod_protection_is_refused_off_in_prod_alone_and_allowed_in_staging(
    setting: dict[str, Any], refusal: str
) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["security"].update(setting)

    assert only("prod", edit).startswith(refusal)
    staging = config("prod", lambda raw: (edit(raw), _as("staging")(raw)))
    assert staging.environment.value == "staging"


KEY_ADMIN = "arn:aws:iam::444455556666:role/kms-admin"  # no cluster admin: its overlaps are judged alone


def _member(role: str, team: int = 1) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        raw["security"]["key_administrator_arns"] = [KEY_ADMIN]
        raw["kubernetes"]["teams"][team]["member_role_arns"] = [role]

    return edit


def _exempt(role: str) -> Edit:
    def edit(raw: dict[str, Any]) -> None:
        raw["security"]["key_administrator_arns"] = [KEY_ADMIN]
        raw["security"]["outside_vpc_data_role_arns"] = [role]

    return edit


def test_a_key_administrator_may_not_be_a_team_member_in_any_case() -> None:
    assert only("prod", _member(KEY_ADMIN.replace("kms-admin", "KMS-Admin"))).startswith(
        f"security.key_administrator_arns.0 {KEY_ADMIN} is also a member of team research: in prod"
    )
    assert config("prod", _member(MEMBER)).kubernetes.teams[1].member_role_arns == [MEMBER]
    assert config("prod", lambda raw: (_member(KEY_ADMIN)(raw), _as("dev")(raw))).environment.value == "dev"


def test_a_key_administrator_may_not_be_exempt_from_the_data_perimeter() -> None:
    assert only("prod", _exempt(KEY_ADMIN)).startswith(
        f"security.key_administrator_arns.0 {KEY_ADMIN} is also in security.outside_vpc_data_role_arns"
    )
    assert config("prod", _exempt("arn:aws:iam::444455556666:role/ingest")).security.outside_vpc_data_role_arns


def test_a_team_member_may_not_be_exempt_from_the_data_perimeter() -> None:
    def edit(raw: dict[str, Any]) -> None:
        _member(MEMBER)(raw)
        _exempt(MEMBER)(raw)

    assert only("prod", edit).startswith(
        f"security.outside_vpc_data_role_arns.0 {MEMBER} is a member of team research: a team member exempt"
    )


# ------------------------------------------------------------------------------------------- training runtimes


def _runtime(**fields: Any) -> Edit:
    return lambda raw: raw["kubernetes"]["training_operator"].setdefault("runtimes", {}).update(fields)


def test_a_runtime_image_from_an_unapproved_registry_is_refused_by_its_key() -> None:
    assert only("dev", _runtime(mpi_image="docker.io/library/openmpi:4.1.6")).startswith(
        "kubernetes.training_operator.runtimes.mpi_image docker.io/library/openmpi:4.1.6 is not from an approved"
    )
    for key in ("torch_image", "restart_wait_image"):
        assert only("dev", _runtime(**{key: "docker.io/library/busybox:1.37.0"})).startswith(
            f"kubernetes.training_operator.runtimes.{key} docker.io/library/busybox:1.37.0"
        )


def test_a_runtime_image_from_the_accounts_ecr_in_the_region_or_an_added_registry_is_accepted() -> None:
    ecr = "111122223333.dkr.ecr.us-east-1.amazonaws.com/torch:2.7.1"
    assert config("dev", _runtime(torch_image=ecr)).kubernetes.training_operator.runtimes.torch_image == ecr
    assert only("dev", _runtime(torch_image=ecr.replace("us-east-1", "us-west-2"))).startswith(
        "kubernetes.training_operator.runtimes.torch_image"
    )

    def added(raw: dict[str, Any]) -> None:
        _runtime(torch_image="docker.io/library/pytorch:2.7.1")(raw)
        raw["security"] = {"allowed_image_registries": ["docker.io/library/", "public.ecr.aws/"]}

    assert config("dev", added).security.allowed_image_registries[0] == "docker.io/library/"


def test_runtime_images_are_not_judged_for_the_mpi_operator() -> None:
    def edit(raw: dict[str, Any]) -> None:
        _runtime(torch_image="docker.io/library/pytorch:2.7.1")(raw)
        raw["kubernetes"]["training_operator"].update(kind="mpi_operator", version="0.6.0")

    assert config("dev", edit).kubernetes.training_operator.kind == "mpi_operator"


def _restricted(raw: dict[str, Any]) -> None:
    raw["kubernetes"]["teams"][0]["pod_security"] = "restricted"


def test_a_restricted_team_is_refused_where_the_mpi_runtime_is_installed() -> None:
    assert only("dev", _restricted).startswith("kubernetes.teams.0.pod_security restricted: the MPI runtime")
    assert config("dev", lambda raw: (_restricted(raw), _runtime(mpi=False)(raw))).kubernetes.teams[0].pod_security


def test_a_restricted_team_is_accepted_where_no_mpi_runtime_is_installed() -> None:
    def trainium(raw: dict[str, Any]) -> None:
        _restricted(raw)
        group(raw).update(instance_type="trn1.32xlarge", ami_family="AL2023_x86_64_NEURON")
        raw["cost"]["max_gpus"] = 100

    assert [g.name for g in config("dev", trainium).neuron_node_groups] == ["g5"]

    def mpi_operator(raw: dict[str, Any]) -> None:
        _restricted(raw)
        raw["kubernetes"]["training_operator"].update(kind="mpi_operator", version="0.6.0")

    assert config("dev", mpi_operator).kubernetes.training_operator.kind == "mpi_operator"
    assert config("dev", lambda raw: (_restricted(raw), raw.update(gpu_node_groups=[]))).gpu_node_groups == []


# ------------------------------------------------------------------------------------------------------ Neuron


def _trainium(raw: dict[str, Any]) -> None:
    group(raw).update(instance_type="trn1.32xlarge", ami_family="AL2023_x86_64_NEURON")
    raw["cost"]["max_gpus"] = 100


def test_neuron_groups_need_the_neuron_device_plugin_and_others_may_drop_it() -> None:
    def without_plugin(raw: dict[str, Any]) -> None:
        raw["kubernetes"]["neuron_device_plugin"] = None

    assert only("dev", lambda raw: (_trainium(raw), without_plugin(raw))).startswith(
        "gpu_node_groups ['g5'] are Neuron (Trainium): set kubernetes.neuron_device_plugin"
    )
    assert config("dev", without_plugin).neuron_node_groups == []
    assert config("dev", _trainium).kubernetes.neuron_device_plugin is not None


# ---------------------------------------------------------------------------------------------------- HyperPod


def _hyperpod(**changes: Any) -> Edit:
    return lambda raw: raw["sagemaker"]["hyperpod"].update(changes)


def _hyperpod_on_eks(raw: dict[str, Any]) -> None:
    hyperpod = raw["sagemaker"]["hyperpod"]
    hyperpod.update(orchestrator="eks", instance_groups=[g for g in hyperpod["instance_groups"] if g["name"] == "p5"])
    hyperpod.pop("slurm")


def test_a_hyperpod_type_not_offered_in_the_region_is_refused() -> None:
    def p5_type(name: str) -> Edit:
        return lambda raw: raw["sagemaker"]["hyperpod"]["instance_groups"][2].update(instance_type=name)

    # cfn-lint's us-east-1 list has ml.p5en.48xlarge but not ml.p5e.48xlarge.
    assert only("hyperpod-slurm", p5_type("ml.p5e.48xlarge")).startswith(
        "sagemaker.hyperpod.instance_groups.2.instance_type ml.p5e.48xlarge is not offered for HyperPod in us-east-1"
    )
    assert config("hyperpod-slurm", p5_type("ml.p5en.48xlarge")).sagemaker.hyperpod.enabled
    # A cluster that is off is not held to the list.
    assert config("hyperpod-slurm", lambda raw: (p5_type("ml.p5e.48xlarge")(raw), _hyperpod(enabled=False)(raw)))


def test_hyperpod_on_eks_joins_the_cluster_as_its_nodes() -> None:
    cluster = config("hyperpod-slurm", _hyperpod_on_eks)
    assert cluster.hyperpod_on_eks and cluster.hyperpod_eks_nvidia
    assert [g.name for g in cluster.hyperpod_eks_groups] == ["p5"]
    assert cluster.efa_plugin_hyperpod_instance_types == ["ml.p5.48xlarge"]
    assert cluster.needs_efa_plugin  # no GPU node group: HyperPod's EFA nodes alone
    assert cluster.hyperpod_security_groups == ("cluster", "efa")
    assert cluster.gpu_operator_ami_family is AmiFamily.AL2023_NVIDIA
    assert cluster.hyperpod_eks_version_warning is not None and "HyperPod on EKS 1.36" in (
        cluster.hyperpod_eks_version_warning
    )
    documented = config("hyperpod-slurm", lambda raw: (_hyperpod_on_eks(raw), raw["eks"].update(version="1.34"),
                        raw["eks"]["addons"].update(kube_proxy="v1.34.0-eksbuild.1")))  # fmt: skip
    assert documented.hyperpod_eks_version_warning is None


def test_hyperpod_under_slurm_or_off_adds_nothing_to_the_eks_cluster() -> None:
    slurm = config("hyperpod-slurm")
    assert (slurm.hyperpod_on_eks, slurm.hyperpod_eks_groups, slurm.hyperpod_eks_nvidia) == (False, [], False)
    assert (slurm.needs_efa_plugin, slurm.gpu_operator_ami_family, slurm.hyperpod_eks_version_warning) == (
        False,
        None,
        None,
    )
    assert slurm.hyperpod_security_groups == ("efa", "workload")
    off = config("hyperpod-slurm", lambda raw: (_hyperpod_on_eks(raw), _hyperpod(enabled=False)(raw)))
    assert (off.hyperpod_on_eks, off.hyperpod_eks_groups, off.hyperpod_eks_version_warning) == (False, [], None)


def test_trainium_hyperpod_nodes_on_eks_need_no_gpu_operator() -> None:
    def trainium(raw: dict[str, Any]) -> None:
        _hyperpod_on_eks(raw)
        raw["sagemaker"]["hyperpod"]["instance_groups"][0].update(instance_type="ml.trn1.32xlarge")
        raw["cost"]["max_gpus"] = 100

    cluster = config("hyperpod-slurm", trainium)
    assert (cluster.hyperpod_eks_nvidia, cluster.gpu_operator_ami_family) == (False, None)
    assert cluster.efa_plugin_hyperpod_instance_types == ["ml.trn1.32xlarge"]


def test_efa_plugin_follows_efa_groups() -> None:
    assert config("dev").needs_efa_plugin is False
    assert config("prod").needs_efa_plugin is True


# ----------------------------------------------------------------------------------------------- Slurm and FSx


def _no_fsx(raw: dict[str, Any]) -> None:
    raw["storage"]["fsx"]["enabled"] = False


def _slurm(**changes: Any) -> Edit:
    return lambda raw: raw["sagemaker"]["hyperpod"]["slurm"].update(changes)


def test_slurm_settings_that_keep_state_on_lustre_each_need_fsx() -> None:
    found = problems("hyperpod-slurm", _no_fsx)
    assert [p.split(" needs ")[0] for p in found] == [
        "sagemaker.hyperpod.slurm.homes_on_lustre true",
        "sagemaker.hyperpod.slurm.users ['alice', 'bob']",
        "sagemaker.hyperpod.slurm.accounting true",
    ]
    assert only("hyperpod-slurm", lambda raw: (_no_fsx(raw), _slurm(homes_on_lustre=False, users=[])(raw))).startswith(
        "sagemaker.hyperpod.slurm.accounting true needs storage.fsx.enabled"
    )
    none = config("hyperpod-slurm", lambda raw: (_no_fsx(raw), _slurm(homes_on_lustre=False, users=[],
                  accounting=False)(raw)))  # fmt: skip
    assert none.storage.fsx.enabled is False


def test_slurm_under_root_squash_needs_an_exempt_host() -> None:
    no_nids: Edit = lambda raw: raw["storage"]["fsx"].update(no_squash_nids=[])  # noqa: E731
    assert only("hyperpod-slurm", no_nids).startswith(
        "storage.fsx.root_squash 65534:65534 with storage.fsx.no_squash_nids [] and a Slurm HyperPod cluster"
    )
    assert config("hyperpod-slurm").storage.fsx.no_squash_nids == ["10.20.0.10@tcp"]
    # Root squash off: nothing to be exempt from (staging refuses it for its own reason).
    unsquashed = problems("hyperpod-slurm", lambda raw: (no_nids(raw), raw["storage"]["fsx"].update(root_squash=None)))
    assert unsquashed == [
        'storage.fsx.root_squash is null: root squash is required in staging (use "65534:65534" and list exempt '
        "administration hosts in storage.fsx.no_squash_nids)"
    ]


def test_a_disabled_file_system_is_not_held_to_root_squash_rules() -> None:
    def off(raw: dict[str, Any]) -> None:
        _no_fsx(raw)
        _slurm(homes_on_lustre=False, users=[{"name": "alice", "uid": 2001}], accounting=False)(raw)
        raw["storage"]["fsx"].update(no_squash_nids=[], root_squash="2001:2001")

    # The one problem is the user's home, not the exemption list or the squash UID of a file system that is off.
    assert only("hyperpod-slurm", off).startswith("sagemaker.hyperpod.slurm.users ['alice'] needs storage.fsx")


def test_a_slurm_user_with_the_squash_uid_is_refused() -> None:
    assert only("hyperpod-slurm", lambda raw: raw["storage"]["fsx"].update(root_squash="2002:2002")).startswith(
        "sagemaker.hyperpod.slurm.users.1.uid 2002 (bob) is storage.fsx.root_squash's UID (2002:2002)"
    )
    # The GID does not count: root acts as the squash UID.
    assert config("hyperpod-slurm", lambda raw: raw["storage"]["fsx"].update(root_squash="3000:2002")).storage.fsx


def test_slurm_rules_do_not_apply_to_hyperpod_on_eks_or_off() -> None:
    def eks_without_fsx(raw: dict[str, Any]) -> None:
        _hyperpod_on_eks(raw)
        raw["storage"]["fsx"]["no_squash_nids"] = []

    assert config("hyperpod-slurm", eks_without_fsx).hyperpod_on_eks
    assert config("hyperpod-slurm", lambda raw: (_no_fsx(raw), _hyperpod(enabled=False)(raw))).sagemaker


# ------------------------------------------------------------------------------------------- version pairings


def test_kueue_and_trainer_must_speak_one_trainjob_field_under_kubeflow_trainer_only() -> None:
    old_kueue: Edit = lambda raw: raw["kubernetes"]["kueue"].update(chart_version="0.14.4")  # noqa: E731
    assert only("dev", old_kueue).startswith("kubernetes.kueue.chart_version / kubernetes.training_operator.version:")

    def mpi_operator(raw: dict[str, Any]) -> None:
        old_kueue(raw)
        raw["kubernetes"]["training_operator"].update(kind="mpi_operator", version="0.6.0")

    assert config("dev", mpi_operator).kubernetes.kueue.chart_version == "0.14.4"


@pytest.mark.parametrize(("build", "refused"), [("v1.33.0-eksbuild.1", False), ("v1.32.0-eksbuild.1", True)])
def test_kube_proxy_may_trail_the_cluster_by_three_minors(build: str, refused: bool) -> None:
    edit: Edit = lambda raw: raw["eks"]["addons"].update(kube_proxy=build)  # noqa: E731
    if refused:
        assert only("dev", edit).startswith(f"eks.addons.kube_proxy: kube-proxy add-on {build} is built for")
    else:
        assert config("dev", edit).eks.addons.kube_proxy == build


def test_an_efa_plugin_too_old_for_a_groups_type_is_refused_for_efa_groups_only() -> None:
    def b200(efa: bool) -> Edit:
        def edit(raw: dict[str, Any]) -> None:
            raw["kubernetes"]["efa_device_plugin"]["chart_version"] = "v0.5.9"
            entry = {**group(raw), "name": "b200", "instance_type": "p6-b200.48xlarge", "efa_enabled": efa}
            entry.update(capacity={"type": "on_demand"}, min_size=0, desired_size=0, max_size=2)
            raw["gpu_node_groups"].append(entry)
            raw["cost"]["max_gpus"] = 100

        return edit

    assert only("dev", b200(True)).startswith(
        "kubernetes.efa_device_plugin.chart_version (gpu_node_groups.1): aws-efa-k8s-device-plugin v0.5.9 miscounts"
    )
    assert config("dev", b200(False)).gpu_node_groups[1].efa_enabled is False


def test_an_autoscaler_one_minor_behind_is_accepted_and_two_or_ahead_refused() -> None:
    def tag(image: str) -> Edit:
        return lambda raw: raw["kubernetes"].update(cluster_autoscaler={"image_tag": image})

    assert config("dev", tag("v1.35.2")).kubernetes.cluster_autoscaler.minor == "1.35"
    assert config("dev", tag("v1.36.0")).autoscaled_groups[0].name == "g5"
    for image in ("v1.34.0", "v1.37.0"):
        assert only("dev", tag(image)).startswith(f"kubernetes.cluster_autoscaler.image_tag {image} is for Kubernetes")
    # Fixed-size groups run no autoscaler: its tag is not judged.
    fixed = config("prod", tag("v1.30.0"))
    assert fixed.autoscaled_groups == []


def test_a_capacity_block_group_is_autoscaled_even_at_fixed_size() -> None:
    def block(raw: dict[str, Any]) -> None:
        group(raw).update(capacity=BLOCK, placement="auto")

    assert [g.name for g in config("prod", block).autoscaled_groups] == ["p5-train"]


# ------------------------------------------------------------------------------------------------ platform only


def test_a_platform_only_stack_is_refused_beside_a_hyperpod_cluster_of_its_own() -> None:
    cluster = config("existing-cluster")
    assert cluster.platform_only and not config("dev").platform_only

    def hyperpod(raw: dict[str, Any]) -> None:
        raw["sagemaker"] = {"hyperpod": copy.deepcopy(_document("hyperpod-slurm")["sagemaker"]["hyperpod"])}
        _hyperpod_on_eks(raw)
        raw["cost"]["max_gpus"] = 1000

    assert "existing_cluster with sagemaker.hyperpod.enabled" in " ".join(problems("existing-cluster", hyperpod))


def test_a_group_of_fixed_size_on_an_existing_cluster_is_accepted() -> None:
    (group_,) = config("existing-cluster").gpu_node_groups
    assert group_.min_size == group_.max_size


HEALTH = "sagemaker.amazonaws.com/node-health-status"


@pytest.mark.parametrize(("value", "shown"), [(None, "absent"), ("Unschedulable", "'Unschedulable'")])
def test_a_hyperpod_group_that_would_admit_unhealthy_nodes_is_refused(value: str | None, shown: str) -> None:
    assert config("existing-hyperpod-eks").gpu_node_groups[0].selector[HEALTH] == "Schedulable"

    def health(raw: dict[str, Any]) -> None:
        selector = group(raw)["selector"]
        selector.pop(HEALTH)
        if value is not None:
            selector[HEALTH] = value

    assert only("existing-hyperpod-eks", health) == (
        f"gpu_node_groups.0 (workers).selector['{HEALTH}'] is {shown} on HyperPod instance group 'worker-group-1'; "
        "valid: 'Schedulable', so its queue never admits a job onto a node HyperPod is checking, replacing or "
        "rebooting"
    )


def test_only_a_hyperpod_clusters_instance_groups_must_select_healthy_nodes() -> None:
    def plain_cluster(raw: dict[str, Any]) -> None:
        raw["existing_cluster"]["hyperpod"] = False
        group(raw)["selector"].pop(HEALTH)

    assert not config("existing-hyperpod-eks", plain_cluster).existing_cluster.hyperpod  # type: ignore[union-attr]

    def eks_group(raw: dict[str, Any]) -> None:  # a managed node group beside HyperPod's: no HyperPod labels
        group(raw)["selector"] = {"eks.amazonaws.com/nodegroup": "p5-efa"}

    assert config("existing-hyperpod-eks", eks_group).gpu_node_groups[0].selector == {
        "eks.amazonaws.com/nodegroup": "p5-efa"
    }


def test_the_json_schema_describes_the_root_object() -> None:
    from stacks.schema.stack import json_schema

    schema = json_schema()
    assert schema["title"] == "StackConfig"
    assert {"environment", "gpu_node_groups", "waivers"} <= set(schema["properties"])  # type: ignore[arg-type]
