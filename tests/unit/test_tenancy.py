"""Pure tenancy rules: pod security labels, compute quotas sized from the nodes, network policies, registries."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import namespaces
from components.k8s import tenancy
from components.k8s.tenancy import (
    network_policies,
    node_shapes,
    registry_expression,
    reserved_cpu_millicores,
    team_compute_quota,
)
from components.k8s_common import TEAM_LABEL
from components.namespaces import (
    PSA_ENFORCE,
    TENANT_LABEL,
    TENANT_TEAM,
    pod_security_labels,
    system_namespace_labels,
    team_namespace_labels,
)
from policies.rules import k8s as rules
from stacks.catalog import CATALOG
from stacks.schema import TeamSpec
from tests.conftest import stack_config


def test_every_level_warns_and_audits_at_restricted() -> None:
    for level in ("privileged", "baseline", "restricted"):
        labels = pod_security_labels(level)
        assert labels[PSA_ENFORCE] == level
        assert labels["pod-security.kubernetes.io/warn"] == labels["pod-security.kubernetes.io/audit"] == "restricted"


def test_team_namespaces_enforce_their_level_and_carry_the_tenant_label() -> None:
    labels = team_namespace_labels(TeamSpec(name="research", gpu_quota=8, pod_security="restricted"))
    assert labels[TEAM_LABEL] == "research" and labels[TENANT_LABEL] == TENANT_TEAM
    assert labels[PSA_ENFORCE] == "restricted"
    assert team_namespace_labels(TeamSpec(name="a", gpu_quota=1))[PSA_ENFORCE] == "baseline"


def test_only_documented_system_namespaces_are_privileged() -> None:
    privileged = {ns for ns, (level, _why) in namespaces.SYSTEM_POD_SECURITY.items() if level == "privileged"}
    assert privileged == set(rules._DEFAULT_PRIVILEGED)
    with pytest.raises(KeyError):
        system_namespace_labels("some-new-namespace")  # a new namespace must be added to the table first


def test_reserved_cpu_follows_the_eks_ami_tiers() -> None:
    # 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% of the rest (in millicores).
    assert reserved_cpu_millicores(1) == 60
    assert reserved_cpu_millicores(2) == 70
    assert reserved_cpu_millicores(4) == 80
    assert reserved_cpu_millicores(192) == math.ceil(80 + 188 * 2.5)


@given(st.integers(min_value=1, max_value=448))
def test_reserved_cpu_grows_and_stays_small(vcpus: int) -> None:
    reserved = reserved_cpu_millicores(vcpus)
    assert reserved_cpu_millicores(vcpus + 1) >= reserved
    assert 0 < reserved < vcpus * 1000 * 0.07


@given(gpu_quota=st.integers(min_value=0, max_value=256))
def test_a_team_quota_is_exactly_its_gpu_share_of_the_nodes(gpu_quota: int) -> None:
    prod = stack_config("prod")
    shapes = node_shapes(prod.gpu_node_groups)
    [shape] = shapes
    quota = team_compute_quota(TeamSpec(name="t", gpu_quota=gpu_quota), shapes)
    nodes = min(math.ceil(gpu_quota / shape.accelerators_per_node), shape.nodes)
    assert quota["requests.cpu"] == quota["limits.cpu"] == f"{nodes * shape.cpu_millicores}m"
    assert quota["requests.memory"] == f"{nodes * shape.memory_mib}Mi"
    assert quota["requests.ephemeral-storage"] == f"{nodes * shape.ephemeral_gib}Gi"
    assert int(quota["pods"]) == min(gpu_quota, shape.nodes * shape.accelerators_per_node) + tenancy.POD_HEADROOM


@given(gpu_quota=st.integers(min_value=0, max_value=256))
def test_a_team_holds_no_more_efa_devices_or_hugepages_than_its_nodes_have(gpu_quota: int) -> None:
    prod = stack_config("prod")
    [group] = prod.gpu_node_groups
    [shape] = node_shapes([group])
    row = CATALOG[group.instance_type]
    quota = team_compute_quota(TeamSpec(name="t", gpu_quota=gpu_quota), [shape])
    nodes = min(math.ceil(gpu_quota / shape.accelerators_per_node), shape.nodes)
    assert shape.efa_per_node == row.max_efa_interfaces > 0 and shape.hugepages_mib == group.hugepages_2mi * 2 > 0
    # Extended resources take only the requests. form in a quota (pods.go podComputeUsageHelper).
    assert quota["requests.vpc.amazonaws.com/efa"] == str(nodes * row.max_efa_interfaces)
    assert quota["requests.hugepages-2Mi"] == f"{nodes * group.hugepages_2mi * 2}Mi"
    assert "vpc.amazonaws.com/efa" not in quota and "limits.vpc.amazonaws.com/efa" not in quota


def test_a_group_without_efa_gives_no_efa_devices_and_no_hugepages() -> None:
    dev = stack_config("dev")
    shapes = node_shapes([g for g in dev.gpu_node_groups if not g.efa_enabled])
    assert shapes and all(s.efa_per_node == s.hugepages_mib == 0 for s in shapes)
    quota = team_compute_quota(TeamSpec(name="t", gpu_quota=8), shapes)
    assert quota["requests.vpc.amazonaws.com/efa"] == "0" and quota["requests.hugepages-2Mi"] == "0Mi"


def test_efa_and_hugepages_come_from_the_group_that_has_them_not_the_largest_share() -> None:
    """Two groups of one accelerator kind: the team may run on either, so it gets each device count of the group
    with the most, even when another group wins the CPU and memory share."""
    staging = stack_config("staging")
    shapes = node_shapes(staging.gpu_node_groups, staging.sagemaker.hyperpod.instance_groups)
    no_efa = [tenancy.NodeShape(**{**vars(s), "efa_per_node": 0, "hugepages_mib": 0}) for s in shapes[1:]]
    team = TeamSpec(name="t", gpu_quota=16)
    mixed = team_compute_quota(team, [shapes[0], *no_efa])
    alone = team_compute_quota(team, [shapes[0]])
    assert mixed["requests.vpc.amazonaws.com/efa"] == alone["requests.vpc.amazonaws.com/efa"] != "0"
    assert mixed["requests.hugepages-2Mi"] == alone["requests.hugepages-2Mi"] != "0Mi"


def test_the_priority_quota_admits_no_pod_of_a_system_class() -> None:
    from trainstack.journeys import resources

    spec = tenancy.priority_quota()
    assert spec["hard"] == {"pods": "0"}
    pod = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    for name in ("system-cluster-critical", "system-node-critical"):
        assert resources.quota_applies({**pod, "priorityClassName": name}, spec)
    assert not resources.quota_applies(pod, spec)  # no class: a team's job is not counted
    assert not resources.quota_applies({**pod, "priorityClassName": "team-high"}, spec)


def test_allocatable_is_below_capacity_and_leaves_the_hugepages_out() -> None:
    prod = stack_config("prod")
    group = prod.gpu_node_groups[0]
    row = CATALOG[group.instance_type]
    [shape] = node_shapes([group])
    assert shape.cpu_millicores < row.vcpus * 1000
    assert shape.memory_mib <= row.memory_gib * 1024 - group.hugepages_2mi * 2 - 100
    assert shape.ephemeral_gib == row.instance_store_gib  # containerd and pods live on the NVMe RAID0


def test_allocatable_memory_is_capacity_less_the_amis_reservation_the_eviction_threshold_and_hugepages() -> None:
    row = CATALOG["p5.48xlarge"]
    shape = tenancy.node_shape(row, nodes=2, hugepages_mib=5120, disk_gib=200)
    kube_reserved_mib = 11 * 250 + 255  # nodeadm: 11 MiB per pod at the largest max-pods the EKS AMIs set, + 255 MiB
    assert shape.memory_mib == row.memory_gib * 1024 - kube_reserved_mib - 100 - 5120


def test_each_accelerator_kind_adds_its_own_share() -> None:
    staging = stack_config("staging")
    hyperpod = staging.sagemaker.hyperpod.instance_groups
    shapes = node_shapes(staging.gpu_node_groups, hyperpod)
    team = TeamSpec(name="t", gpu_quota=16)
    node_group, hyperpod_group = (team_compute_quota(team, [shape]) for shape in shapes)
    both = team_compute_quota(team, shapes)
    # Both groups offer nvidia.com/gpu: the team's 16 GPUs may be on either, so it gets the larger share once,
    # not the sum (HyperPod nodes pre-allocate no hugepages, so theirs is larger).
    memory = [int(q["requests.memory"].removesuffix("Mi")) for q in (node_group, hyperpod_group, both)]
    assert memory[2] == max(memory[:2]) < memory[0] + memory[1]
    assert both["pods"] == node_group["pods"]


def test_default_deny_then_only_the_flows_training_needs() -> None:
    policies = network_policies()
    assert policies["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert {p["protocol"] for p in policies["allow-dns"]["egress"][0]["ports"]} == {"UDP", "TCP"}
    # Nothing but the namespace itself may connect in.
    ingress = [rule for spec in policies.values() for rule in spec.get("ingress", [])]
    assert ingress == [{"from": [{"podSelector": {}}]}]
    # Lustre is the node's traffic (the kernel client mounts for the pod): no pod policy could admit or stop it.
    assert not any("lustre" in name for name in policies)


def test_registry_expression_names_every_prefix() -> None:
    expression = registry_expression(["nvcr.io/nvidia/", "public.ecr.aws/hpc-cloud/"])
    assert expression.startswith("variables.images.all(image, ")
    assert "'nvcr.io/nvidia/'" in expression and "'public.ecr.aws/hpc-cloud/'" in expression


def test_https_goes_where_it_is_sent() -> None:
    anywhere = network_policies()["allow-https"]["egress"]
    assert anywhere == [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}]
    fenced = network_policies(["10.0.0.0/16", "52.216.0.0/15"])["allow-https"]["egress"]
    assert [p["ipBlock"]["cidr"] for p in fenced[0]["to"]] == ["10.0.0.0/16", "52.216.0.0/15"]
    assert fenced[0]["ports"] == [{"protocol": "TCP", "port": 443}]
    # Everything else is the same whatever HTTPS reaches.
    assert {k: v for k, v in network_policies().items() if k != "allow-https"} == {
        k: v for k, v in network_policies(["10.0.0.0/16"]).items() if k != "allow-https"
    }
    with pytest.raises(ValueError, match="HTTPS to S3"):
        network_policies([])
