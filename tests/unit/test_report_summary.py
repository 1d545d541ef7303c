"""The summary and the diagram read what was recorded: a hand-built program of bare provider resources
under the recording mocks (so these tests do not depend on how the components build them)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.rules.base import lustre_throughput_mb_s
from stacks.catalog import CATALOG
from tests.conftest import run_component, stack_config
from trainstack.model.summary import fabric_gbps, summarize
from trainstack.report.mermaid import check, flowchart


def program(efa_cards: int = 32, reservation: bool = True) -> None:
    provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
    opts = pulumi.ResourceOptions(provider=provider)
    vpc = aws.ec2.Vpc("vpc", aws.ec2.VpcArgs(cidr_block="10.0.0.0/16"), opts=opts)
    subnets = [
        aws.ec2.Subnet(
            f"private-{az}", aws.ec2.SubnetArgs(vpc_id=vpc.id, cidr_block=cidr, availability_zone=az), opts=opts
        )
        for az, cidr in (("us-east-1a", "10.0.0.0/18"), ("us-east-1b", "10.0.64.0/18"))
    ]
    group = aws.ec2.PlacementGroup("pg", aws.ec2.PlacementGroupArgs(strategy="cluster", name="train-pg"), opts=opts)
    nics = [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=i,
            device_index=0 if i == 0 else 1,
            subnet_id=subnets[0].id,
            interface_type="efa" if i == 0 else "efa-only",
        )
        for i in range(efa_cards)
    ]
    reserved = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id="cr-0123456789abcdef0"
        )
    )
    template = aws.ec2.LaunchTemplate(
        "lt",
        aws.ec2.LaunchTemplateArgs(
            instance_type="p5.48xlarge",
            network_interfaces=nics,
            placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name),
            capacity_reservation_specification=reserved if reservation else None,
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda", ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(volume_size=300)
                )
            ],
        ),
        opts=opts,
    )
    cluster = aws.eks.Cluster(
        "eks",
        aws.eks.ClusterArgs(
            role_arn="arn:aws:iam::123456789012:role/c",
            version="1.33",
            vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=[s.id for s in subnets]),
        ),
        opts=opts,
    )
    aws.eks.NodeGroup(
        "gpu",
        aws.eks.NodeGroupArgs(
            cluster_name=cluster.name,
            node_role_arn="arn:aws:iam::123456789012:role/n",
            subnet_ids=[subnets[0].id],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=2, desired_size=4, max_size=8),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version="1"),
        ),
        opts=opts,
    )
    bucket = aws.s3.Bucket("datasets", opts=opts)
    # A file system and its data repository association in one component, as the storage component builds.
    storage = pulumi.ComponentResource("test:storage:Lustre", "lustre")
    child = pulumi.ResourceOptions(provider=provider, parent=storage)
    fs = aws.fsx.LustreFileSystem(
        "fs",
        aws.fsx.LustreFileSystemArgs(
            deployment_type="PERSISTENT_2",
            storage_capacity=9600,
            per_unit_storage_throughput=500,
            subnet_ids=subnets[0].id,
        ),
        opts=child,
    )
    aws.fsx.DataRepositoryAssociation(
        "dra",
        aws.fsx.DataRepositoryAssociationArgs(
            file_system_id=fs.id,
            file_system_path="/d",
            data_repository_path=bucket.bucket.apply(lambda b: f"s3://{b}"),
            # Export only: the diagram's arrow must run from the file system to the bucket.
            s3=aws.fsx.DataRepositoryAssociationS3Args(
                auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=["NEW", "CHANGED"])
            ),
        ),
        opts=child,
    )
    aws.ec2.NatGateway("nat", aws.ec2.NatGatewayArgs(subnet_id=subnets[1].id, allocation_id="eipalloc-1"), opts=opts)


@pytest.mark.parametrize("preview", [False, True])
def test_a_gpu_group_is_read_from_its_launch_template_subnet_and_placement_group(preview: bool) -> None:
    recording = run_component(program, preview=preview)
    summary = summarize(recording, stack_config("prod"))
    (group,) = summary.node_groups
    assert (group.instance_type, group.min_size, group.desired_size, group.max_size) == ("p5.48xlarge", 2, 4, 8)
    assert (group.efa_interfaces, group.efa_max) == (32, 32)
    assert group.fabric_gbps_per_node == 3200
    assert summary.gpus_desired == 32 and summary.gpus_max == 64
    assert group.availability_zones == ("us-east-1a",)
    assert group.placement_group == "train-pg"
    assert group.capacity == "reservation cr-0123456789abcdef0"
    assert group.root_volume_gib == 300
    (fs,) = summary.file_systems
    assert fs.throughput_mb_s == pytest.approx(9600 / 1024 * 500)
    # The demand is the config's (its accelerators at max), not this hand-made program's: one source.
    assert fs.demand_mb_s == stack_config("prod").storage_demand_mb_s
    assert summary.nat_gateways == 1 and summary.bucket_count == 1
    assert summary.eks_clusters == (("eks", "1.33", "STANDARD"),)


def test_a_partial_efa_layout_gets_a_fraction_of_the_fabric() -> None:
    summary = summarize(run_component(lambda: program(efa_cards=4, reservation=False)), stack_config("prod"))
    (group,) = summary.node_groups
    assert group.efa_interfaces == 4
    assert group.fabric_gbps_per_node == pytest.approx(3200 * 4 / 32)
    assert group.capacity == "on-demand"


@given(st.sampled_from(sorted(CATALOG)), st.integers(0, 40))
def test_fabric_never_exceeds_the_line_rate_and_is_zero_without_efa(instance_type: str, interfaces: int) -> None:
    row = CATALOG[instance_type]
    value = fabric_gbps(instance_type, interfaces)
    assert 0 <= value <= row.network_gbps
    if interfaces == 0 or not row.supports_efa:
        assert value == 0
    if row.supports_efa and interfaces >= row.max_efa_interfaces:
        assert value == row.network_gbps


def test_scratch_throughput_uses_its_fixed_baseline() -> None:
    scratch = {"deploymentType": "SCRATCH_2", "storageCapacity": 2400}
    persistent = {"deploymentType": "PERSISTENT_2", "storageCapacity": 2400, "perUnitStorageThroughput": 1000}
    assert lustre_throughput_mb_s(scratch) == pytest.approx(2400 / 1024 * 200)
    assert lustre_throughput_mb_s(persistent) == pytest.approx(2400 / 1024 * 1000)


def test_the_diagram_puts_the_gpu_az_first_and_draws_the_data_path_and_the_fabric() -> None:
    source = flowchart(run_component(program))
    assert check(source) == []
    labels = {node: label.replace("<br>", " ") for node, label in _labels(source).items()}
    by_label = {label: node for node, label in labels.items()}
    group = next(n for label, n in by_label.items() if label.startswith("gpu 4 x p5.48xlarge"))
    fs = next(n for label, n in by_label.items() if label.startswith("FSx for Lustre"))
    bucket = next(n for label, n in by_label.items() if label.startswith("S3"))
    eks = next(n for label, n in by_label.items() if label.startswith("control plane"))
    assert "EFA 32/32, 12.8 Tbit/s" in labels[group]  # the group carries its fabric (4 nodes x 3.2 Tbit/s)
    # The AZ with the GPUs and the file system is a subgraph; the subnets of every AZ are one network node.
    assert 'subgraph az_us_east_1a["us-east-1a"]' in source and "az_us_east_1b" not in source
    assert any(label.startswith("2 subnets in 2 AZs") for label in labels.values())
    assert f'{group} -->|"Lustre"| {fs}' in source  # GPU nodes -> Lustre
    assert f'{fs} -->|"exports /d"| {bucket}' in source  # the association's only policy exports
    assert f'{eks} -->|"manages"| {group}' in source


@pytest.mark.parametrize(
    ("inputs", "label", "arrow"),
    [
        ({"s3": {"autoImportPolicy": {"events": ["NEW"]}}}, "imports to /d", "-->"),
        ({"batchImportMetaDataOnCreate": True}, "imports to /d", "-->"),
        ({"s3": {"autoExportPolicy": {"events": ["NEW"]}}}, "exports /d", "<--"),
        (
            {"s3": {"autoImportPolicy": {"events": ["NEW"]}, "autoExportPolicy": {"events": ["DELETED"]}}},
            "imports and exports /d",
            "<-->",
        ),
        ({"s3": {"autoImportPolicy": {"events": []}}}, "linked", "-->"),
    ],
)
def test_the_s3_edge_follows_the_associations_policies(inputs: dict[str, object], label: str, arrow: str) -> None:
    from trainstack.engine import RecordedResource
    from trainstack.report.mermaid import direction
    from trainstack.tokens import FSX_DATA_REPOSITORY_ASSOCIATION

    dra = RecordedResource(
        type=FSX_DATA_REPOSITORY_ASSOCIATION,
        name="dra",
        urn="urn:dra",
        parent="",
        custom=True,
        inputs={**inputs, "fileSystemPath": "/d"},
        dependencies=(),
        property_dependencies={},
        protect=False,
        retain_on_delete=False,
        provider="",
    )
    assert direction(dra) == (label, arrow)


def _labels(source: str) -> dict[str, str]:
    import re

    return {m.group(1): m.group(2) for m in re.finditer(r'^\s*(n_\w+)[\[({]+"([^"]*)"', source, re.MULTILINE)}


@pytest.mark.e2e
def test_hyperpod_accelerators_count_in_storage_demand_and_in_the_diff() -> None:
    """HyperPod nodes mount the same FSx file system and spend the same GPU budget as the node groups."""
    from tests.conftest import edited_config, program_recording, recording
    from trainstack.model.diff import diff_reports
    from trainstack.model.report import build_report

    config = stack_config("staging")
    with_hyperpod = build_report(config, recording("staging"))
    s = with_hyperpod.summary
    assert s.hyperpod_gpus > 0
    assert s.accelerators_max == s.gpus_max + s.hyperpod_gpus == config.accelerators_at_max
    for fs in s.file_systems:
        assert fs.demand_mb_s == pytest.approx(s.accelerators_max * config.storage.fsx.per_gpu_read_mb_s)

    def hyperpod_off(raw: dict[str, Any]) -> None:
        raw["sagemaker"]["hyperpod"].update(enabled=False)
        raw["kubernetes"]["teams"][0]["gpu_quota"] = 16  # a quota may not exceed what the cluster can hold

    off = edited_config("staging", hyperpod_off)
    without = build_report(off, program_recording(off, "staging"))
    assert without.summary.hyperpod_gpus == 0
    diff = diff_reports(without, with_hyperpod, "hyperpod off")
    assert diff.accelerators_max.change == s.hyperpod_gpus
    assert diff.accelerators_desired.change == s.hyperpod_gpus
