"""The offline engine records what the real SDK registers, and its mocks answer like AWS would."""

import json
import runpy
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.component.helpers import aws_opts
from tests.conftest import recording as shared_recording
from tests.conftest import run_component, stack_config
from trainstack.engine import PROGRAM, UNKNOWN, RecordedResource, pulumi_config, run, stable_order


def vpc_and_subnet(protect: bool = False) -> None:
    opts = aws_opts(protect=protect)
    vpc = aws.ec2.Vpc("vpc", aws.ec2.VpcArgs(cidr_block="10.0.0.0/16", enable_dns_hostnames=True), opts=opts)
    aws.ec2.Subnet(
        "subnet", aws.ec2.SubnetArgs(vpc_id=vpc.id, cidr_block="10.0.0.0/20", availability_zone="us-east-1a"), opts=opts
    )


def test_records_inputs_with_engine_names_dependencies_and_provider() -> None:
    recording = run_component(vpc_and_subnet)
    vpc = recording.one("aws:ec2/vpc:Vpc")
    subnet = recording.one("aws:ec2/subnet:Subnet")
    assert vpc.inputs == {"cidrBlock": "10.0.0.0/16", "enableDnsHostnames": True}
    assert subnet.inputs["vpcId"] == vpc.id and vpc.id.startswith("vpc-")
    assert subnet.property_dependencies["vpcId"] == (vpc.urn,)
    assert vpc.urn in subnet.dependencies
    assert subnet.provider_urn == recording.one("pulumi:providers:aws").urn
    assert vpc.urn == "urn:pulumi:test::trainstack::aws:ec2/vpc:Vpc::vpc"


def test_protect_is_recorded() -> None:
    assert run_component(lambda: vpc_and_subnet(protect=True)).one("aws:ec2/vpc:Vpc").protect
    assert not run_component(vpc_and_subnet).one("aws:ec2/vpc:Vpc").protect


def test_replace_on_changes_and_delete_before_replace_are_recorded() -> None:
    def program() -> None:
        opts = aws_opts()
        aws.ec2.Vpc("plain", aws.ec2.VpcArgs(cidr_block="10.0.0.0/16"), opts=opts)
        frozen = pulumi.ResourceOptions(replace_on_changes=["tags.*", "cidrBlock"], delete_before_replace=True)
        aws.ec2.Vpc(
            "frozen", aws.ec2.VpcArgs(cidr_block="10.1.0.0/16"), opts=pulumi.ResourceOptions.merge(opts, frozen)
        )
        later = pulumi.ResourceOptions(delete_before_replace=False)
        aws.ec2.Vpc("later", aws.ec2.VpcArgs(cidr_block="10.2.0.0/16"), opts=pulumi.ResourceOptions.merge(opts, later))

    vpcs = {r.name: r for r in run_component(program).by_type("aws:ec2/vpc:Vpc")}
    assert (vpcs["plain"].replace_on_changes, vpcs["plain"].delete_before_replace) == ((), None)  # provider decides
    assert vpcs["frozen"].replace_on_changes == ("tags.*", "cidrBlock")
    assert vpcs["frozen"].delete_before_replace is True
    assert vpcs["later"].delete_before_replace is False  # set to False is not left to the provider


def test_preview_leaves_computed_outputs_unknown() -> None:
    subnet = run_component(vpc_and_subnet, preview=True).one("aws:ec2/subnet:Subnet")
    assert subnet.inputs["vpcId"] == UNKNOWN


def test_each_run_starts_from_nothing_and_ids_are_deterministic() -> None:
    first, second = run_component(vpc_and_subnet), run_component(vpc_and_subnet)
    assert len(first.resources) == len(second.resources) == 3
    assert [r.id for r in first.resources] == [r.id for r in second.resources]


def test_data_sources_answer_realistically() -> None:
    def program() -> None:
        opts = pulumi.InvokeOutputOptions(provider=aws.Provider("aws", region="eu-west-1"))
        pulumi.export("azs", aws.get_availability_zones_output(opts=opts).names)
        pulumi.export("account", aws.get_caller_identity_output(opts=opts).account_id)
        pulumi.export(
            "efa", aws.ec2.get_instance_type_output(instance_type="p5.48xlarge", opts=opts).efa_maximum_interfaces
        )
        pulumi.export(
            "ami",
            aws.ssm.get_parameter_output(
                name="/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
                opts=opts,
            ).value,
        )

    outputs = run(program, stack="test", region="eu-west-1").outputs
    assert outputs["azs"][:2] == ["eu-west-1a", "eu-west-1b"]
    assert outputs["account"] == "123456789012"
    assert outputs["efa"] == 32
    assert outputs["ami"].startswith("ami-")


def test_an_unanswered_data_source_fails_loudly() -> None:
    def program() -> None:
        opts = pulumi.InvokeOptions(provider=aws.Provider("aws", region="us-east-1"))
        aws.ec2.get_vpc(default=True, opts=opts)

    with pytest.raises(Exception, match=r"no answer for data source aws:ec2/getVpc:getVpc"):
        run(program, stack="test", region="us-east-1")


def test_the_program_refuses_a_bad_config_with_a_run_error() -> None:
    config = pulumi_config(stack_config("dev"))
    raw = json.loads(config["trainstack:cluster"])
    raw["gpu_node_groups"][0]["instance_type"] = "p9.fake"
    with pytest.raises(pulumi.RunError, match=r"gpu_node_groups\.0\.instance_type"):
        run(
            lambda: runpy.run_path(str(PROGRAM), run_name="__main__"),
            stack="dev",
            region="us-east-1",
            config={"trainstack:cluster": json.dumps(raw)},
        )


@pytest.mark.slow
def test_the_program_registers_an_explicit_aws_provider_with_default_tags() -> None:
    recording = shared_recording("dev")
    providers = [r for r in recording.resources if r.type == "pulumi:providers:aws"]
    assert len(providers) == 1
    tags = json.loads(providers[0].inputs["defaultTags"])["tags"]
    assert tags["env"] == "dev" and tags["project"] == "trainstack" and tags["cost-center"] and tags["owner"]
    assert all(r.provider for r in recording.resources if r.custom and r.type.startswith("aws:"))


@pytest.mark.slow
def test_preview_outputs_are_known_where_the_config_decides_them() -> None:
    recording = shared_recording("dev", preview=True)
    assert recording.outputs["environment"] == "dev"
    assert recording.outputs["vpc_id"] == UNKNOWN


def _node(i: int, parent: int | None, deps: tuple[int, ...]) -> RecordedResource:
    urn = f"urn:pulumi:s::trainstack::t:m:T::r{i:02d}"
    return RecordedResource(
        type="t:m:T",
        name=f"r{i:02d}",
        urn=urn,
        parent=f"urn:pulumi:s::trainstack::t:m:T::r{parent:02d}" if parent is not None else "",
        custom=True,
        inputs={},
        dependencies=tuple(f"urn:pulumi:s::trainstack::t:m:T::r{d:02d}" for d in deps),
        property_dependencies={},
        protect=False,
        retain_on_delete=False,
        provider="",
    )


@st.composite
def graphs(draw: st.DrawFn) -> list[RecordedResource]:
    """A random DAG: resource i may have a parent and dependencies only among resources before it."""
    count = draw(st.integers(1, 12))
    nodes = []
    for i in range(count):
        parent = draw(st.none() | st.integers(0, i - 1)) if i else None
        deps = tuple(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else ()
        nodes.append(_node(i, parent, deps))
    return nodes


@given(graphs(), st.randoms(use_true_random=False))
def test_stable_order_is_topological_and_independent_of_registration_order(
    nodes: list[RecordedResource], rng: Any
) -> None:
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    ordered = stable_order(shuffled)
    assert ordered == stable_order(nodes)  # the thread pool's order does not matter
    position = {r.urn: i for i, r in enumerate(ordered)}
    for r in ordered:
        for before in (r.parent, *r.dependencies):
            if before:
                assert position[before] < position[r.urn]


def test_stable_order_breaks_ties_by_urn() -> None:
    assert [r.name for r in stable_order([_node(2, None, ()), _node(0, None, ()), _node(1, None, ())])] == [
        "r00",
        "r01",
        "r02",
    ]


@pytest.mark.slow
def test_a_recording_cannot_be_changed_through_a_shared_copy() -> None:
    first = shared_recording("dev")
    assert isinstance(first.resources, tuple)
    first.resources[0].inputs["poisoned"] = True
    assert "poisoned" not in shared_recording("dev").resources[0].inputs


def test_a_failed_run_leaves_nothing_for_the_next_run() -> None:
    # The failed run's pending SDK tasks belong to its closed event loop; the next run must not wait on them.
    def failing() -> None:
        vpc = aws.ec2.Vpc("v", cidr_block="10.0.0.0/16", opts=aws_opts())
        vpc.id.apply(lambda _: aws.ec2.get_subnet_output(id="subnet-0000000000000dead"))

    with pytest.raises(Exception, match=r"InvalidSubnetID\.NotFound"):
        run_component(failing)
    rec = run_component(lambda: aws.ec2.Vpc("v", cidr_block="10.0.0.0/16", opts=aws_opts()))
    assert rec.one("aws:ec2/vpc:Vpc").inputs["cidrBlock"] == "10.0.0.0/16"
