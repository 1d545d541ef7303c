"""stacks/account_rules.py: the judgements preflight and the program's own account checks share."""

from __future__ import annotations

import pytest

from components.eks.eks import addon_plan, autoscaling_service_linked_role_arn
from components.storage.lustre_volume import ADDON_NAME
from stacks.account_rules import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_ROLE_PATH,
    QuotaDemand,
    Reservation,
    caller_admin_problem,
    eks_version_problem,
    offering_problem,
    principal_problem,
    principals,
    quota_check_id,
    quota_class,
    quota_demands,
    quota_problem,
    reservation_problems,
    stack_accounts,
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
