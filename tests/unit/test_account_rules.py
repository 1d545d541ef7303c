"""stacks/account_rules.py: the judgements preflight and the program's own account checks share."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest

from components.eks.eks import addon_plan, autoscaling_service_linked_role_arn
from components.storage.lustre_volume import ADDON_NAME
from stacks.account_rules import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_ROLE_PATH,
    CREATE_AUTOSCALING_ROLE,
    QuotaDemand,
    Reservation,
    Subnet,
    account_of,
    account_problem,
    addon_problem,
    autoscaling_role_problem,
    caller_admin_problem,
    caller_role,
    eks_version_problem,
    offering_problem,
    principal_problem,
    principals,
    quota_check_id,
    quota_class,
    quota_demands,
    quota_problem,
    reservation_problems,
    role_name,
    stack_accounts,
    subnet_problems,
)
from stacks.schema.eks import ADDON_NAMES
from tests.conftest import edited_config, stack_config


@pytest.mark.parametrize(
    ("instance_type", "label"),
    [
        ("p5.48xlarge", "P"),
        ("p6e-gb200.36xlarge", "P"),
        ("g5.2xlarge", "G and VT"),
        ("vt1.3xlarge", "G and VT"),
        ("trn1n.32xlarge", "Trn"),
        ("m7i.large", "Standard"),
        ("t3.micro", "Standard"),
        ("inf2.xlarge", None),  # Inf, DL, HPC and X have quotas of their own trainstack does not judge
        ("dl1.24xlarge", None),
        ("hpc7g.16xlarge", None),
        ("x2idn.16xlarge", None),
    ],
)
def test_each_type_counts_against_its_familys_quota(instance_type: str, label: str | None) -> None:
    found = quota_class(instance_type)
    assert (found.label if found else None) == label


def test_a_quota_counts_what_runs_elsewhere_and_names_the_increase() -> None:
    demand = [QuotaDemand("gpu_node_groups[0]", "p5.48xlarge", 2, 192)]
    assert quota_problem("Running On-Demand P instances", "L-417A185B", 384, demand, 0) is None
    problem = quota_problem("Running On-Demand P instances", "L-417A185B", 384, demand, 1)
    assert problem is not None and "--desired-value 385" in problem and "1 already run" in problem


def test_the_caller_is_matched_by_account_and_role_name_not_path() -> None:
    admins = ["arn:aws:iam::111122223333:role/platform/ml-admin"]
    assert caller_admin_problem("arn:aws:sts::111122223333:assumed-role/ml-admin/alice", admins) is None
    assert caller_admin_problem("arn:aws:sts::444455556666:assumed-role/ml-admin/alice", admins) is not None
    assert caller_admin_problem("arn:aws:iam::111122223333:user/alice", admins) is not None
    assert caller_admin_problem("arn:aws:sts::111122223333:assumed-role/ml-admins/alice", admins) is not None


def test_a_principal_must_exist_under_its_exact_arn() -> None:
    arn = "arn:aws:iam::111122223333:role/ml-admin"
    assert principal_problem("eks.admin_role_arns[0]", arn, arn) is None
    assert "access entry" in str(principal_problem("eks.admin_role_arns[0]", arn, None))
    assert "MalformedPolicyDocument" in str(principal_problem("security.key_administrator_arns[1]", arn, None))
    assert "another path" in str(principal_problem("eks.admin_role_arns[0]", arn, arn.replace("role/", "role/x/")))


def test_offering_names_the_zones_that_have_the_type() -> None:
    assert offering_problem("k", "p5.48xlarge", "us-east-1a", ["us-east-1a"]) is None
    assert "offered in no AZ" in str(offering_problem("k", "p5.48xlarge", "us-east-1a", []))


def test_the_autoscaling_role_is_the_one_the_node_volume_key_policy_names() -> None:
    assert autoscaling_service_linked_role_arn("aws", "111122223333") == (
        f"arn:aws:iam::111122223333:role{AUTOSCALING_ROLE_PATH}{AUTOSCALING_ROLE_NAME}"
    )


def test_addon_names_are_the_ones_the_components_create() -> None:
    created = {plan.name for plan in addon_plan(stack_config("prod").eks)} | {ADDON_NAME}
    assert set(ADDON_NAMES.values()) == created


def test_quota_demands_leave_reserved_groups_out_and_count_the_system_nodes_only_when_known() -> None:
    def on_demand_and_reserved(raw: dict[str, object]) -> None:
        groups = raw["gpu_node_groups"]
        assert isinstance(groups, list)
        groups.append(
            {**groups[0], "name": "p5-od", "capacity": {"type": "on_demand"}, "min_size": 0, "desired_size": 0}
        )

    cluster = edited_config("prod", on_demand_and_reserved)
    demands = quota_demands(cluster, None)
    assert list(demands) == [("P", False)]  # the reservation's group is judged by its reservation, not the quota
    assert [(d.who, d.instances, d.vcpus) for d in demands[("P", False)]] == [("gpu_node_groups[1]", 16, 16 * 192)]
    with_system = quota_demands(cluster, 8)
    assert [(d.who, d.vcpus) for d in with_system[("Standard", False)]] == [("eks.system_node_group", 6 * 8)]


def test_quota_check_ids_are_preflights() -> None:
    assert quota_check_id("G and VT", True) == "compute.quota.g-and-vt-spot"
    assert quota_check_id("P", False) == "compute.quota.p"


@pytest.mark.parametrize(
    ("status", "fails"),
    [("STANDARD_SUPPORT", False), ("EXTENDED_SUPPORT", False), ("UNSUPPORTED", True), ("", True)],
)
def test_eks_creates_clusters_only_on_a_supported_version(status: str, fails: bool) -> None:
    problem = eks_version_problem("1.36", "us-east-1", status)
    assert (problem is not None) is fails
    if problem is not None:
        assert (
            f"eks.version 1.36: EKS does not create clusters on it in us-east-1 ({status or 'not listed'})" in problem
        )


def test_the_stacks_account_and_principals_come_from_its_keys() -> None:
    prod = stack_config("prod")
    assert stack_accounts(prod) == ["444455556666"]
    keys = [key for key, _ in principals(prod)]
    assert keys[:2] == ["eks.admin_role_arns[0]", "eks.admin_role_arns[1]"]
    assert len(keys) == len(prod.eks.admin_role_arns) + len(prod.security.key_administrator_arns) + len(
        prod.security.outside_vpc_data_role_arns
    ) + sum(len(t.member_role_arns) for t in prod.kubernetes.teams)


def test_the_stacks_own_nodes_in_the_reservation_count_as_the_groups() -> None:
    full = Reservation(
        "cr-0a1b2c3d4e5f67890",
        "p5.48xlarge",
        "us-east-1a",
        "active",
        "default",
        16,
        0,
        "default",
        "Linux/UNIX",
        None,
        None,
        None,
    )

    def problems(running: int) -> list[str]:
        return reservation_problems("g", "p5.48xlarge", "us-east-1a", False, None, 16, full, full.id, running)

    assert problems(16) == []  # a day-2 `pulumi up`: the group's own 16 nodes fill it
    assert problems(15) == [
        "g.reservation_id = cr-0a1b2c3d4e5f67890 has 0 of 16 instances free (and 15 run this stack's nodes), the "
        "group starts 16: free them or lower desired_size"
    ]
    assert problems(0)[0].startswith("g.reservation_id = cr-0a1b2c3d4e5f67890 has 0 of 16 instances free, the group")


def test_an_arn_s_account_and_a_role_s_name() -> None:
    assert account_of("arn:aws:iam::111122223333:role/platform/ml-admin") == "111122223333"
    assert account_of("arn:aws-cn:kms:cn-north-1:444455556666:key/abc") == "444455556666"
    assert account_of("arn:aws:s3:::datasets") is None  # S3 bucket ARNs carry no account
    assert account_of("not-an-arn") is None
    assert role_name("arn:aws:iam::111122223333:role/platform/team/ml-admin") == "ml-admin"
    assert role_name("arn:aws:iam::111122223333:role/ml-admin") == "ml-admin"


def test_the_credentials_must_be_for_the_stack_s_account() -> None:
    assert account_problem("111122223333", ["111122223333", "444455556666"]) is None
    assert account_problem("111122223333", []) is None  # a stack naming no account is not judged
    assert account_problem("999988887777", ["444455556666", "111122223333", "444455556666"]) == (
        "the credentials are for account 999988887777, but eks.admin_role_arns names account "
        "111122223333, 444455556666: every resource would land in the wrong account; use credentials for the "
        "stack's account (AWS_PROFILE, or assume a role there)"
    )


def test_a_caller_session_is_its_account_and_role() -> None:
    assert caller_role("arn:aws:sts::111122223333:assumed-role/ml-admin/alice") == ("111122223333", "ml-admin")
    assert caller_role("arn:aws-us-gov:sts::111122223333:assumed-role/ml-admin/alice") == ("111122223333", "ml-admin")
    assert caller_role("arn:aws:iam::111122223333:user/alice") is None
    assert caller_role("arn:aws:sts::111122223333:federated-user/alice") is None


def test_a_caller_outside_the_admins_is_told_to_run_as_one() -> None:
    admins = ["arn:aws:iam::111122223333:role/a", "arn:aws:iam::111122223333:role/b"]
    assert caller_admin_problem("arn:aws:sts::111122223333:assumed-role/b/alice", admins) is None
    problem = caller_admin_problem("arn:aws:sts::111122223333:assumed-role/c/alice", admins) or ""
    assert problem.startswith(
        "the caller arn:aws:sts::111122223333:assumed-role/c/alice is not one of eks.admin_role_arns "
        "(arn:aws:iam::111122223333:role/a, arn:aws:iam::111122223333:role/b): the cluster gives its creator no admin"
    )


def test_a_missing_principal_names_its_key_account_and_what_breaks() -> None:
    arn = "arn:aws:iam::111122223333:role/reader"
    assert principal_problem("security.outside_vpc_data_role_arns[2]", arn, None) == (
        f"security.outside_vpc_data_role_arns[2] = {arn}: no such principal in account 111122223333; S3 refuses a "
        "bucket policy naming a principal that does not exist (MalformedPolicy: Invalid principal in policy); "
        "create it or fix the ARN"
    )
    member = principal_problem("kubernetes.teams[1].member_role_arns[0]", arn, None) or ""
    assert "; its EKS access entry cannot be created (the principal must exist);" in member
    assert "; it is named in the stack;" in (principal_problem("elsewhere[0]", arn, None) or "")
    assert principal_problem("elsewhere[0]", arn, arn.replace("role/", "role/x/")) == (
        f"elsewhere[0] = {arn}: the account has it as {arn.replace('role/', 'role/x/')} (another path); "
        "policies need the exact ARN"
    )


def test_the_autoscaling_role_is_needed_once_per_account() -> None:
    assert autoscaling_role_problem(True) is None
    problem = autoscaling_role_problem(False) or ""
    assert f"({AUTOSCALING_ROLE_NAME}) does not exist" in problem and problem.endswith(CREATE_AUTOSCALING_ROLE)


def test_an_unoffered_type_names_each_zone_offering_it_once_in_order() -> None:
    assert offering_problem(
        "gpu_node_groups[0].availability_zone", "p5.48xlarge", "us-east-1a", ["us-east-1f", "us-east-1c", "us-east-1f"]
    ) == (
        "gpu_node_groups[0].availability_zone: p5.48xlarge is not offered in us-east-1a for this account (it is "
        "offered in us-east-1c, us-east-1f); move the group to one of those AZs or pick another type"
    )


@pytest.mark.parametrize(
    ("instance_type", "label"),
    [("u-6tb1.metal", None), ("f1.2xlarge", None), ("a1.large", "Standard"), ("z1d.large", "Standard"), ("q9.x", None)],
)
def test_families_with_quotas_of_their_own_or_none_are_not_judged(instance_type: str, label: str | None) -> None:
    found = quota_class(instance_type)
    assert (found.label if found else None) == label


def test_a_quota_exactly_covering_the_stack_is_enough_and_one_short_names_every_group() -> None:
    demand = [
        QuotaDemand("gpu_node_groups[0]", "g5.12xlarge", 2, 48),
        QuotaDemand("gpu_node_groups[1]", "g6e.48xlarge", 10, 192),
    ]
    assert demand[1].vcpus == 1920
    name, code = "Running On-Demand G and VT instances", "L-DB2E81BA"
    assert quota_problem(name, code, 2016, demand, None) is None
    assert quota_problem(name, code, 2016 + 5, demand, 5) is None
    assert quota_problem(name, code, 2015, demand, None) == (
        f"'{name}' ({code}) is 2,015 vCPUs, but the stack needs 2,016 at max size (gpu_node_groups[0]: 2 x "
        "g5.12xlarge = 96, gpu_node_groups[1]: 10 x g6e.48xlarge = 1,920): launches fail with VcpuLimitExceeded; "
        f"request 2,016: aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} "
        "--desired-value 2016"
    )


def test_spot_groups_count_against_the_spot_quota() -> None:
    def spot(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["capacity"] = {"type": "spot"}

    demands = quota_demands(edited_config("dev", spot), None)
    assert list(demands) == [("G and VT", True)]
    [demand] = demands[("G and VT", True)]
    assert (demand.who, demand.instance_type) == (
        "gpu_node_groups[0]",
        stack_config("dev").gpu_node_groups[0].instance_type,
    )


BLOCK = Reservation(
    "cr-0123456789abcdef0",
    "p5.48xlarge",
    "us-east-1a",
    "active",
    "capacity-block",
    8,
    8,
    "default",
    "Linux/UNIX",
    datetime.datetime(2026, 10, 1, 11, 30, tzinfo=datetime.UTC),
    datetime.datetime(2026, 10, 8, 11, 30, tzinfo=datetime.UTC),
    "arn:aws:ec2:us-east-1:111122223333:placement-group/train-pg",
)


def _block_problems(
    found: Reservation | None, *, block: bool = True, pg: str | None = "train-pg", desired: int = 8
) -> list[str]:
    return reservation_problems("k", "p5.48xlarge", "us-east-1a", block, pg, desired, found, BLOCK.id)


def test_a_matching_active_block_with_room_has_no_problem() -> None:
    assert _block_problems(BLOCK) == []
    assert _block_problems(BLOCK, pg=None) == []  # a group without a placement group launches into any


def test_a_reservation_that_does_not_exist_is_the_only_problem() -> None:
    assert _block_problems(None) == [
        f"k.reservation_id = {BLOCK.id}: no such reservation in this account and region "
        "(aws ec2 describe-capacity-reservations); check the id, the account and the region"
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"reservation_type": "default"},
            f"k.type: {BLOCK.id} is an On-Demand Capacity Reservation; set capacity.type to reservation",
        ),
        (
            {"instance_type": "p4d.24xlarge"},
            f"k.reservation_id = {BLOCK.id} reserves p4d.24xlarge, the group runs p5.48xlarge",
        ),
        (
            {"availability_zone": "us-east-1b"},
            f"k.reservation_availability_zone: {BLOCK.id} is in us-east-1b, the group is in us-east-1a: "
            "a reservation fixes the AZ",
        ),
        (
            {"state": "scheduled"},
            f"k.reservation_id = {BLOCK.id} is scheduled (starts 2026-10-01 11:30 UTC): nodes cannot launch into it "
            "until it is active; deploy the group then, or keep desired_size 0 until it starts",
        ),
        (
            {"state": "expired", "start": None},
            f"k.reservation_id = {BLOCK.id} is expired: nodes cannot launch into it until it is active; deploy the "
            "group then, or keep desired_size 0 until it starts",
        ),
        (
            {"tenancy": "dedicated"},
            f"k.reservation_id = {BLOCK.id} is for dedicated tenancy; node groups launch default",
        ),
        ({"platform": "Windows"}, f"k.reservation_id = {BLOCK.id} is for Windows; EKS AMIs are Linux/UNIX"),
        (
            {"available": 7},
            f"k.reservation_id = {BLOCK.id} has 7 of 8 instances free, the group starts 8: "
            "free them or lower desired_size",
        ),
        (
            {"placement_group_arn": "arn:aws:ec2:us-east-1:111122223333:placement-group/other"},
            f"k.reservation_placement_group = train-pg: {BLOCK.id} was made in placement group other; launches "
            "outside it do not use the reservation",
        ),
        (
            {"placement_group_arn": None},
            f"k.reservation_placement_group = train-pg: {BLOCK.id} was made in no placement group; launches outside "
            "it do not use the reservation",
        ),
    ],
)
def test_each_mismatch_with_the_reservation_is_one_problem(change: dict[str, Any], problem: str) -> None:
    assert _block_problems(dataclasses.replace(BLOCK, **change)) == [problem]


def test_a_block_used_as_an_on_demand_reservation_is_told_its_kind() -> None:
    assert _block_problems(BLOCK, block=False) == [
        f"k.type: {BLOCK.id} is a Capacity Block; set capacity.type to capacity_block"
    ]


def test_a_group_starting_below_the_free_instances_fits() -> None:
    assert _block_problems(dataclasses.replace(BLOCK, available=3), desired=3) == []


def test_eks_version_problem_says_not_listed_or_the_status() -> None:
    assert eks_version_problem("1.24", "eu-west-1", "") == (
        "eks.version 1.24: EKS does not create clusters on it in eu-west-1 (not listed); pick a version "
        "`aws eks describe-cluster-versions` lists"
    )


def test_an_unoffered_addon_build_names_up_to_three_offered_ones() -> None:
    assert addon_problem("vpc-cni", "v1.20.0-eksbuild.1", "1.36", ["v1.20.0-eksbuild.1"]) is None
    three = ["v3", "v2", "v1"]
    tail = (
        ": CreateAddon would fail; pin an offered build (aws eks describe-addon-versions --kubernetes-version 1.36 "
        "--addon-name vpc-cni)"
    )
    assert addon_problem("vpc-cni", "v0", "1.36", three) == (
        f"EKS offers no vpc-cni build v0 for Kubernetes 1.36 in this region; offered: v3, v2, v1{tail}"
    )
    assert addon_problem("vpc-cni", "v0", "1.36", [*three, "v0.9"]) == (
        f"EKS offers no vpc-cni build v0 for Kubernetes 1.36 in this region; offered: v3, v2, v1 ...{tail}"
    )
    assert addon_problem("vpc-cni", "v0", "1.36", []) == (
        f"EKS offers no vpc-cni build v0 for Kubernetes 1.36 in this region{tail}"
    )


SUBNET = Subnet("subnet-0abc", "vpc-0abc", "us-east-1a", 4096, False)


def _subnet_problems(found: Subnet | None, nodes: int = 16, per_node: int = 256) -> list[str]:
    return subnet_problems(
        "network.existing_vpc.private_subnet_ids[0]", "subnet-0abc", "us-east-1a", "vpc-0abc", nodes, per_node, found
    )


def test_a_private_subnet_in_place_with_an_address_for_every_node_and_pod_is_fine() -> None:
    assert _subnet_problems(SUBNET) == []  # 16 x 256 = 4,096: exactly enough


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"vpc_id": "vpc-0def"}, "subnet-0abc is in vpc-0def, not network.existing_vpc.vpc_id vpc-0abc"),
        ({"availability_zone": "us-east-1b"}, "subnet-0abc is in us-east-1b, not us-east-1a"),
        (
            {"maps_public_ip": True},
            "subnet-0abc maps public IPs on launch: nodes there would be reachable; use a private one",
        ),
        (
            {"free_addresses": 4095},
            "subnet-0abc has 4,095 free addresses, but 16 nodes at max size need up to 4,096 (1 + 255 pods each): "
            "nodes and pods fail to get addresses; free addresses, add a CIDR, or lower max sizes",
        ),
    ],
)
def test_each_subnet_mismatch_is_one_problem(change: dict[str, Any], problem: str) -> None:
    assert _subnet_problems(dataclasses.replace(SUBNET, **change)) == [
        f"network.existing_vpc.private_subnet_ids[0] = {problem}"
    ]


def test_a_subnet_that_does_not_exist_is_the_only_problem() -> None:
    assert _subnet_problems(None) == [
        "network.existing_vpc.private_subnet_ids[0] = subnet-0abc: no such subnet in this account and region"
    ]


def test_every_principal_the_stack_names_is_listed_under_its_key_in_key_order() -> None:
    reader = "arn:aws:iam::444455556666:role/etl-reader"
    member = "arn:aws:iam::444455556666:role/research-member"

    def named(raw: dict[str, Any]) -> None:
        raw["security"]["outside_vpc_data_role_arns"] = [reader]
        raw["kubernetes"]["teams"][1]["member_role_arns"] = [member]

    stack = edited_config("prod", named)
    listed = list(principals(stack))
    assert listed[-2:] == [
        ("security.outside_vpc_data_role_arns[0]", reader),
        ("kubernetes.teams[1].member_role_arns[0]", member),
    ]
    assert [key for key, _ in listed[:-2]] == [
        f"eks.admin_role_arns[{i}]" for i in range(len(stack.eks.admin_role_arns))
    ] + [f"security.key_administrator_arns[{i}]" for i in range(len(stack.security.key_administrator_arns))]


def test_a_role_s_name_follows_its_whole_path_whatever_the_path_holds() -> None:
    """IAM paths take any printable ASCII between slashes (IAM API, Role.Path), even `:role/`."""
    assert role_name("arn:aws:iam::111122223333:role/odd:role/path/ml-admin") == "ml-admin"
