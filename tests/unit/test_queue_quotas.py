"""Kueue quotas derived from the node groups, team quotas, and the ClusterQueue/ResourceFlavor specs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from components.k8s.scheduling import (
    cluster_queue_spec,
    device_resources,
    group_quota,
    hyperpod_target,
    node_group_target,
    queue_targets,
    resource_flavor_spec,
    team_quota_hard,
)
from components.k8s_common import EFA_RESOURCE, NODE_GROUP_LABEL, TEAM_LABEL
from components.namespaces import team_namespace_labels
from stacks.catalog import CATALOG
from stacks.schema import GpuNodeGroupSpec, HyperPodInstanceGroupSpec, TeamSpec, default_ami_family

EFA_TYPES = sorted(name for name, row in CATALOG.items() if row.supports_efa)


def group(
    instance_type: str, max_size: int, efa: bool, hugepages: int | None = None, name: str = "g"
) -> GpuNodeGroupSpec:
    family = default_ami_family(CATALOG[instance_type])  # fits the type's accelerator and CPU architecture
    extra = {} if hugepages is None else {"hugepages_2mi": hugepages}
    return GpuNodeGroupSpec(
        name=name,
        instance_type=instance_type,
        availability_zone="us-east-1a",
        ami_family=family,
        min_size=0,
        desired_size=0,
        max_size=max_size,
        efa_enabled=efa,
        **extra,
    )


@given(st.sampled_from(EFA_TYPES), st.integers(min_value=2, max_value=512), st.integers(min_value=0, max_value=20000))
def test_efa_group_quota_is_the_group_at_max_size(instance_type: str, max_size: int, hugepages: int) -> None:
    row = CATALOG[instance_type]
    hugepages = min(hugepages, row.memory_gib * 512 // 4)  # the schema's cap: a quarter of the node's memory
    quota = group_quota(group(instance_type, max_size, efa=True, hugepages=hugepages))
    assert quota[row.device_resource] == str(row.accelerator_count * max_size)
    assert quota[EFA_RESOURCE] == str(row.max_efa_interfaces * max_size)
    assert quota["cpu"] == str(row.vcpus * max_size)
    assert quota["memory"] == f"{row.memory_gib * max_size}Gi"
    if hugepages:
        assert quota["hugepages-2Mi"] == f"{hugepages * 2 * max_size}Mi"
    else:
        assert "hugepages-2Mi" not in quota


@given(st.sampled_from(sorted(CATALOG)), st.integers(min_value=1, max_value=64))
def test_group_without_efa_gets_no_efa_or_hugepage_quota(instance_type: str, max_size: int) -> None:
    quota = group_quota(group(instance_type, max_size, efa=False))
    assert EFA_RESOURCE not in quota and "hugepages-2Mi" not in quota
    assert quota[CATALOG[instance_type].device_resource] == str(CATALOG[instance_type].accelerator_count * max_size)


def test_neuron_group_quota_counts_neuron_devices_not_gpus() -> None:
    quota = group_quota(group("trn1n.32xlarge", 4, efa=True))
    assert quota["aws.amazon.com/neuron"] == "64"
    assert "nvidia.com/gpu" not in quota
    assert quota[EFA_RESOURCE] == "64"


@given(st.sampled_from(EFA_TYPES), st.integers(min_value=2, max_value=64))
def test_cluster_queue_covers_exactly_its_quota_in_the_cohort(instance_type: str, max_size: int) -> None:
    spec_group = group(instance_type, max_size, efa=True, name="train")
    spec = cluster_queue_spec(node_group_target(spec_group), "trainstack-prod")
    (resource_group,) = spec["resourceGroups"]
    (flavor,) = resource_group["flavors"]
    quota = group_quota(spec_group)
    assert spec["cohort"] == "trainstack-prod"
    assert resource_group["coveredResources"] == list(quota)
    assert flavor["name"] == "train"
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]} == quota
    assert spec["namespaceSelector"]["matchExpressions"][0]["key"] == TEAM_LABEL


def test_flavor_pins_pods_to_the_group_and_tolerates_its_taint() -> None:
    gpu = resource_flavor_spec(group("p5.48xlarge", 2, efa=True, name="p5"))
    assert gpu["nodeLabels"] == {NODE_GROUP_LABEL: "p5"}
    assert gpu["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    neuron = resource_flavor_spec(group("trn1.32xlarge", 2, efa=True, name="trn"))
    assert neuron["tolerations"][0]["key"] == "aws.amazon.com/neuron"


@given(st.integers(min_value=0, max_value=10_000))
def test_team_quota_caps_every_accelerator_kind_the_cluster_offers(gpus: int) -> None:
    team = TeamSpec(name="research", gpu_quota=gpus)
    groups = [
        group("p5.48xlarge", 2, efa=True, name="a"),
        group("trn1.32xlarge", 2, efa=True, name="b"),
        group("p4d.24xlarge", 2, efa=True, name="c"),
    ]
    assert device_resources(groups) == ["nvidia.com/gpu", "aws.amazon.com/neuron"]
    assert team_quota_hard(team, groups) == {
        "requests.nvidia.com/gpu": str(gpus),
        "requests.aws.amazon.com/neuron": str(gpus),
    }
    assert team_namespace_labels(team)[TEAM_LABEL] == "research"


def _hyperpod(instance_type: str, count: int, name: str = "workers") -> HyperPodInstanceGroupSpec:
    return HyperPodInstanceGroupSpec(name=name, instance_type=instance_type, instance_count=count)


@given(st.sampled_from(sorted(CATALOG)), st.integers(min_value=1, max_value=64))
def test_hyperpod_queue_is_the_ec2_twin_row_times_the_instance_count(ec2_type: str, count: int) -> None:
    row = CATALOG[ec2_type]
    target = hyperpod_target(_hyperpod(f"ml.{ec2_type}", count))
    assert target.name == "hyperpod-workers"
    assert target.quota[row.device_resource] == str(row.accelerator_count * count)
    assert target.quota["cpu"] == str(row.vcpus * count)
    assert target.quota["memory"] == f"{row.memory_gib * count}Gi"
    assert target.quota.get(EFA_RESOURCE) == (str(row.max_efa_interfaces * count) if row.supports_efa else None)
    assert "hugepages-2Mi" not in target.quota  # HyperPod nodes pre-allocate none


def test_hyperpod_flavor_pins_healthy_nodes_of_its_group_and_tolerates_nothing() -> None:
    target = hyperpod_target(_hyperpod("ml.p5.48xlarge", 2))
    assert target.node_labels == {
        "sagemaker.amazonaws.com/instance-group-name": "workers",
        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
    }
    assert target.tolerations == []
    targets = queue_targets([group("p5.48xlarge", 2, efa=True, name="workers")], [_hyperpod("ml.p5.48xlarge", 2)])
    assert [t.name for t in targets] == ["workers", "hyperpod-workers"]  # same group name, distinct queues


def test_team_quota_counts_hyperpod_accelerators_too() -> None:
    team = TeamSpec(name="research", gpu_quota=8)
    assert team_quota_hard(team, [], [_hyperpod("ml.trn1.32xlarge", 1)]) == {"requests.aws.amazon.com/neuron": "8"}
