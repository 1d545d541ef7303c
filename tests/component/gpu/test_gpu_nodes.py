"""`GpuNodeGroup` under the recording mocks: placement, capacity, launch template and node group settings."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from components.gpu.gpu_nodes import GpuNodeGroup, GpuNodeGroupArgs, eks_capacity_type, node_labels, node_taint
from stacks.catalog import CATALOG
from stacks.schema import GpuNodeGroupSpec
from tests.component.helpers import aws_opts
from tests.conftest import run_component
from trainstack.engine import RecordedResource, Recorder, Recording

LT = "aws:ec2/launchTemplate:LaunchTemplate"
PG = "aws:ec2/placementGroup:PlacementGroup"
NG = "aws:eks/nodeGroup:NodeGroup"
TAGS = {"project": "trainstack", "env": "test", "cost-center": "cc", "owner": "team"}
SUBNET = "subnet-0123456789abcdef0"
SGS = ["sg-cluster", "sg-efa"]
NODE_KEY = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


def spec(**overrides: Any) -> GpuNodeGroupSpec:
    fields: dict[str, Any] = {
        "name": "train",
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        "min_size": 0,
        "desired_size": 2,
        "max_size": 4,
    }
    return GpuNodeGroupSpec.model_validate({**fields, **overrides})


ODCR = {"type": "reservation", "reservation_id": "cr-0a1b2c3d4e5f67890", "reservation_availability_zone": "us-east-1a"}
BLOCK = {**ODCR, "type": "capacity_block"}


def build(group: GpuNodeGroupSpec) -> Recording:
    def program() -> None:
        node_group = GpuNodeGroup(
            "trainstack-test-train",
            GpuNodeGroupArgs(
                spec=group,
                base_name="trainstack-test",
                cluster_name="trainstack-test",
                node_role_arn="arn:aws:iam::123456789012:role/nodes",
                subnet_id=SUBNET,
                security_group_ids=SGS,
                default_tags=TAGS,
                kubernetes_version="1.36",
                node_volume_kms_key_arn=NODE_KEY,
            ),
            opts=aws_opts(),
        )
        pulumi.export("efa", node_group.efa_interface_count)
        pulumi.export("gpus", node_group.gpu_count_max)
        pulumi.export("pg", node_group.placement_group_name)
        pulumi.export("ng", node_group.node_group_name)
        pulumi.export("lt", node_group.launch_template_id)

    return run_component(program)


def lt_of(recording: Recording) -> dict[str, Any]:
    return recording.one(LT).inputs


# ----------------------------------------------------------------------------------------- placement


def test_on_demand_efa_group_creates_a_cluster_placement_group_and_uses_it() -> None:
    recording = build(spec())
    group = recording.one(PG)
    assert group.inputs["strategy"] == "cluster"
    assert lt_of(recording)["placement"] == {"groupName": group.inputs["name"]}
    assert recording.outputs["pg"] == group.inputs["name"]


def test_reservation_without_placement_group_gets_none() -> None:
    recording = build(spec(capacity=ODCR))
    assert recording.by_type(PG) == []
    assert "placement" not in lt_of(recording)
    assert recording.outputs["pg"] is None


def test_reservation_made_in_a_placement_group_references_it_without_creating_one() -> None:
    recording = build(spec(capacity={**ODCR, "reservation_placement_group": "odcr-pg"}))
    assert recording.by_type(PG) == []
    assert lt_of(recording)["placement"] == {"groupName": "odcr-pg"}
    assert recording.outputs["pg"] == "odcr-pg"


def test_placement_none_and_cluster_modes() -> None:
    assert build(spec(placement="none")).by_type(PG) == []
    forced = build(spec(efa_enabled=False, instance_type="g6e.xlarge", placement="cluster"))
    assert forced.one(PG).inputs["strategy"] == "cluster"
    assert build(spec(placement="cluster", capacity={**ODCR, "reservation_placement_group": "pg1"})).by_type(PG) == []


# ------------------------------------------------------------------------------------------ capacity


def test_capacity_block_targets_the_block_with_capacity_block_market() -> None:
    recording = build(spec(capacity=BLOCK))
    template = lt_of(recording)
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": BLOCK["reservation_id"]}
    }
    node_group = recording.one(NG).inputs
    assert node_group["capacityType"] == "CAPACITY_BLOCK"
    assert node_group["updateConfig"]["updateStrategy"] == "MINIMAL"
    # Issue 11 regression: EKS takes a Capacity Block's instance type from the launch template only, and
    # refuses a node group that also lists instanceTypes.
    assert template["instanceType"] == "p5.48xlarge"
    assert "instanceTypes" not in node_group
    assert recording.by_type(PG) == []  # EC2 co-locates a Capacity Block itself


def test_odcr_is_on_demand_targeting_the_reservation_without_market_options() -> None:
    recording = build(spec(capacity=ODCR))
    template = lt_of(recording)
    assert "instanceMarketOptions" not in template
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": ODCR["reservation_id"]
    }
    assert recording.one(NG).inputs["capacityType"] == "ON_DEMAND"
    # Outside Capacity Blocks the node group names the type and the template does not (never both).
    assert "instanceType" not in template and recording.one(NG).inputs["instanceTypes"] == ["p5.48xlarge"]


def test_plain_on_demand_and_spot_target_nothing() -> None:
    on_demand = lt_of(build(spec()))
    assert "capacityReservationSpecification" not in on_demand and "instanceMarketOptions" not in on_demand
    spot = build(spec(instance_type="g5.2xlarge", efa_enabled=False, capacity={"type": "spot"}))
    assert spot.one(NG).inputs["capacityType"] == "SPOT"
    assert "instanceMarketOptions" not in lt_of(spot)  # EKS sets the spot market itself


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        ({"type": "on_demand"}, "ON_DEMAND"),
        ({"type": "spot"}, "SPOT"),
        (ODCR, "ON_DEMAND"),
        (BLOCK, "CAPACITY_BLOCK"),
    ],
)
def test_eks_capacity_types_are_api_values(capacity: dict[str, str], expected: str) -> None:
    group = spec(instance_type="g6e.xlarge", efa_enabled=False, capacity=capacity)
    assert eks_capacity_type(group) == expected


# ----------------------------------------------------------------------------------- launch template


def test_launch_template_has_every_efa_interface_with_both_security_groups() -> None:
    recording = build(spec())
    interfaces = lt_of(recording)["networkInterfaces"]
    assert len(interfaces) == 33  # ENA primary + 32 efa-only on p5
    assert interfaces[0] == {
        "networkCardIndex": 0,
        "deviceIndex": 0,
        "interfaceType": "interface",
        "deleteOnTermination": "true",
        "securityGroups": SGS,
    }
    assert sum(i["interfaceType"] == "efa-only" for i in interfaces) == 32
    assert all(i["securityGroups"] == SGS for i in interfaces)
    assert all("subnetId" not in i and "associatePublicIpAddress" not in i for i in interfaces)
    assert "vpcSecurityGroupIds" not in lt_of(recording)
    assert recording.outputs["efa"] == 32


def test_non_efa_group_uses_plain_security_groups() -> None:
    recording = build(spec(instance_type="g5.2xlarge", efa_enabled=False, max_size=1, desired_size=1))
    template = lt_of(recording)
    assert "networkInterfaces" not in template
    assert template["vpcSecurityGroupIds"] == SGS
    assert recording.outputs["efa"] == 0
    assert "vpc.amazonaws.com/efa.present" not in recording.one(NG).inputs["labels"]


@pytest.mark.parametrize("hop_limit", [1, 2])
def test_imdsv2_required_with_hop_limit(hop_limit: int) -> None:
    metadata = lt_of(build(spec(imds_hop_limit=hop_limit)))["metadataOptions"]
    assert metadata["httpTokens"] == "required"
    assert metadata["httpEndpoint"] == "enabled"
    assert metadata["httpPutResponseHopLimit"] == hop_limit


@pytest.mark.parametrize(
    ("family", "device"), [("AL2023_x86_64_NVIDIA", "/dev/xvda"), ("BOTTLEROCKET_x86_64_NVIDIA", "/dev/xvdb")]
)
def test_gp3_volume_encrypted_with_the_node_volume_key_on_the_family_device(family: str, device: str) -> None:
    (mapping,) = lt_of(build(spec(ami_family=family, root_volume_size_gib=300)))["blockDeviceMappings"]
    assert mapping["deviceName"] == device
    assert mapping["ebs"] == {
        "volumeSize": 300,
        "volumeType": "gp3",
        "encrypted": "true",
        "kmsKeyId": NODE_KEY,
        "deleteOnTermination": "true",
    }


def test_tags_on_instances_volumes_and_network_interfaces() -> None:
    specs = lt_of(build(spec()))["tagSpecifications"]
    assert sorted(s["resourceType"] for s in specs) == ["instance", "network-interface", "volume"]
    for tag_spec in specs:
        assert TAGS.items() <= tag_spec["tags"].items()
        assert tag_spec["tags"]["Name"] == "trainstack-test-train"


def test_user_data_matches_ami_family_and_names_no_ami() -> None:
    al2023 = base64.b64decode(lt_of(build(spec()))["userData"]).decode()
    assert "application/node.eks.aws" in al2023 and "strategy: RAID0" in al2023
    bottlerocket = base64.b64decode(lt_of(build(spec(ami_family="BOTTLEROCKET_x86_64_NVIDIA")))["userData"]).decode()
    assert bottlerocket.startswith("[settings.kernel.sysctl]")
    assert "imageId" not in lt_of(build(spec())) and "instanceType" not in lt_of(build(spec()))


# -------------------------------------------------------------------------------------------- node group


def test_node_group_single_subnet_scaling_labels_and_taint() -> None:
    recording = build(spec(labels={"team": "pretraining"}, max_unavailable=2))
    node_group = recording.one(NG).inputs
    assert node_group["subnetIds"] == [SUBNET]
    assert node_group["instanceTypes"] == ["p5.48xlarge"]
    assert node_group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert node_group["version"] == "1.36"
    assert node_group["scalingConfig"] == {"minSize": 0, "desiredSize": 2, "maxSize": 4}
    assert node_group["updateConfig"] == {"maxUnavailable": 2, "updateStrategy": "DEFAULT"}
    assert node_group["labels"] == {
        "team": "pretraining",
        "trainstack.io/node-group": "train",
        "trainstack.io/accelerator": "nvidia",
        "nvidia.com/gpu.present": "true",
        "vpc.amazonaws.com/efa.present": "true",
    }
    assert node_group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    template = recording.one(LT)
    assert node_group["launchTemplate"] == {"id": template.id, "version": "1"}
    assert recording.outputs["gpus"] == 32
    assert recording.outputs["ng"] == "trainstack-test-train"


def test_neuron_group_gets_the_neuron_taint_and_ami() -> None:
    group = spec(instance_type="trn1n.32xlarge")
    assert node_taint(CATALOG[group.instance_type]).key == "aws.amazon.com/neuron"
    assert "nvidia.com/gpu.present" not in node_labels(group)
    node_group = build(group).one(NG).inputs
    assert node_group["amiType"] == "AL2023_x86_64_NEURON"
    assert node_group["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}]


def test_children_are_parented_and_named_from_the_component() -> None:
    recording = build(spec())
    component = recording.one("trainstack:gpu:GpuNodeGroup")
    children: list[RecordedResource] = list(recording.children(component.urn))
    assert {r.type for r in children} == {PG, LT, NG}
    assert all(r.name.startswith("trainstack-test-train-") for r in children)
    assert all(r.provider_urn == recording.one("pulumi:providers:aws").urn for r in children)


def test_desired_size_is_ignored_and_the_group_is_replaced_delete_first(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    original = Recorder.RegisterResource

    def register(self: Recorder, request: Any) -> Any:
        seen[request.type] = request
        return original(self, request)

    monkeypatch.setattr(Recorder, "RegisterResource", register)
    build(spec())
    assert list(seen[NG].ignoreChanges) == ["scalingConfig.desiredSize"]
    assert seen[NG].deleteBeforeReplace


# ------------------------------------------------------------------------------------ config rules


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"capacity": {**BLOCK, "reservation_placement_group": "pg"}}, "capacity_block takes no reservation_placement"),
        ({"placement": "cluster", "capacity": ODCR}, "placement cluster on a reservation made without"),
        ({"labels": {"nvidia.com/gpu.present": "false"}}, "labels may not set"),
        # Issue 11: EKS refuses these prefixes anywhere in a node group label key.
        ({"labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}}, "EKS managed node groups refuse"),
        ({"labels": {"node-role.kubernetes.io/gpu": ""}}, r"refuse label keys containing kubernetes.io/"),
        ({"labels": {"example.k8s.io/team": "a"}}, "EKS managed node groups refuse"),
        ({"labels": {"eks.amazonaws.com/nodegroup": "x"}}, "EKS managed node groups refuse"),
        ({"instance_type": "p6e-gb200.36xlarge", "efa_layout": "efa_primary"}, "needs EFA on network card 0"),
        ({"instance_type": "trn1n.32xlarge", "ami_family": "AL2023_x86_64_NVIDIA"}, "does not fit trn1n"),
        (
            {"instance_type": "p6e-gb200.36xlarge", "ami_family": "AL2023_x86_64_NVIDIA"},
            r"does not fit p6e-gb200.36xlarge \(nvidia, arm64\); "
            r"valid: AL2023_ARM_64_NVIDIA, BOTTLEROCKET_ARM_64_NVIDIA",
        ),
        ({"instance_type": "p6e-gb200.36xlarge", "ami_family": "BOTTLEROCKET_x86_64_NVIDIA"}, "does not fit p6e"),
        ({"ami_family": "AL2023_ARM_64_NVIDIA"}, r"valid: AL2023_x86_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA"),
        ({"instance_type": "trn2.48xlarge", "ami_family": "BOTTLEROCKET_ARM_64_NVIDIA"}, "valid: AL2023_x86_64_NEURON"),
        ({"max_unavailable": 101}, "less than or equal to 100"),
    ],
)
def test_config_errors_name_the_problem(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(**overrides)


def test_ami_family_follows_the_instance_type_when_left_out() -> None:
    assert spec(instance_type="trn1n.32xlarge").ami_family.value == "AL2023_x86_64_NEURON"
    assert spec().ami_family.value == "AL2023_x86_64_NVIDIA"
    assert spec(instance_type="p6e-gb200.36xlarge").ami_family.value == "AL2023_ARM_64_NVIDIA"
    assert spec(ami_family="BOTTLEROCKET_x86_64_NVIDIA").ami_family.value == "BOTTLEROCKET_x86_64_NVIDIA"
    arm_bottlerocket = spec(instance_type="p6e-gb200.36xlarge", ami_family="BOTTLEROCKET_ARM_64_NVIDIA")
    assert arm_bottlerocket.ami_family.value == "BOTTLEROCKET_ARM_64_NVIDIA"


@pytest.mark.parametrize("instance_type", sorted(CATALOG))
def test_default_ami_matches_the_accelerator_and_cpu_of_every_catalog_type(instance_type: str) -> None:
    row = CATALOG[instance_type]
    family = spec(instance_type=instance_type, efa_enabled=row.supports_efa).ami_family
    assert (family.accelerator, family.architecture, family.bottlerocket) == (row.accelerator, row.architecture, False)
    arch = "ARM_64" if row.architecture == "arm64" else "x86_64"
    assert family.value == f"AL2023_{arch}_{row.accelerator.value.upper()}"


def test_grace_group_plans_the_arm_ami_with_the_same_node_setup() -> None:
    gb200 = {"instance_type": "p6e-gb200.36xlarge"}
    al2023 = build(spec(**gb200))
    assert al2023.one(NG).inputs["amiType"] == "AL2023_ARM_64_NVIDIA"
    user_data = base64.b64decode(lt_of(al2023)["userData"]).decode()
    assert "application/node.eks.aws" in user_data and "vm.nr_hugepages = 5128" in user_data
    assert [i["networkCardIndex"] for i in lt_of(al2023)["networkInterfaces"]] == [0, 1, 5, 9, 13]
    bottlerocket = build(spec(**gb200, ami_family="BOTTLEROCKET_ARM_64_NVIDIA"))
    assert bottlerocket.one(NG).inputs["amiType"] == "BOTTLEROCKET_ARM_64_NVIDIA"
    assert lt_of(bottlerocket)["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"
    assert base64.b64decode(lt_of(bottlerocket)["userData"]).decode().startswith("[settings.kernel.sysctl]")


def _user_data(group: GpuNodeGroupSpec) -> str:
    return base64.b64decode(lt_of(build(group))["userData"]).decode()


@pytest.mark.parametrize("family", ["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"])
def test_groups_without_efa_reserve_no_hugepages(family: str) -> None:
    # dev's g5.2xlarge has 32 GiB: 5128 x 2 MiB pages would take 31 percent of it for nothing.
    group = spec(instance_type="g5.2xlarge", efa_enabled=False, max_size=1, desired_size=1, ami_family=family)
    assert group.hugepages_2mi == 0
    assert "nr_hugepages" not in _user_data(group)
    assert spec(ami_family=family).hugepages_2mi == 5128  # EFA groups keep the default
    assert "nr_hugepages" in _user_data(spec(ami_family=family))


def test_hugepages_are_refused_without_efa_or_over_a_quarter_of_memory() -> None:
    with pytest.raises(ValidationError, match="without EFA"):
        spec(instance_type="g5.2xlarge", efa_enabled=False, max_size=1, desired_size=1, hugepages_2mi=512)
    # g5.48xlarge: 768 GiB, a quarter is 192 GiB = 98304 pages.
    spec(instance_type="g5.48xlarge", hugepages_2mi=98304)
    with pytest.raises(ValidationError, match=r"over 25% of g5.48xlarge's 768 GiB memory; use at most 98304"):
        spec(instance_type="g5.48xlarge", hugepages_2mi=98305)


def test_capacity_block_with_placement_cluster_points_to_auto_or_none() -> None:
    with pytest.raises(ValidationError, match="use placement auto or none"):
        spec(capacity=BLOCK, placement="cluster")
    with pytest.raises(ValidationError, match=r"set capacity\.reservation_placement_group or use auto"):
        spec(capacity=ODCR, placement="cluster")


def test_json_schema_shows_no_fixed_ami_family_or_hugepages_default() -> None:
    properties = GpuNodeGroupSpec.model_json_schema()["properties"]
    assert "default" not in properties["ami_family"] and "follows the instance type" in properties["ami_family"][
        "description"
    ].replace("\n", " ")
    assert "default" not in properties["hugepages_2mi"]
    assert "/dev/xvdb on Bottlerocket" in properties["root_volume_size_gib"]["description"]
