"""The existing-VPC example (stacks/examples/existing-vpc.yaml): it plans clean, the whole program puts the
cluster, the EFA group and FSx in the stack file's subnets and creates no network, and the stack files that
mix or mismatch the two ways of getting a network are refused with the key named (exit 2).

The example lives outside the Pulumi.*.yaml glob on purpose (it is not an environment), so it is named here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.load import FULL_KEY, load_file
from tests.conftest import ROOT, program_recording
from trainstack.cli import EXIT_BAD_INPUT, EXIT_OK, main
from trainstack.engine import Recording

EXAMPLE = ROOT / "stacks" / "examples" / "existing-vpc.yaml"
STACK = "staging"  # the example's environment, which `plan --config` uses as the stack name
NETWORK_TYPES = {
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:ec2/flowLog:FlowLog",
}


def document() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def run() -> Recording:
    return program_recording(load_file(EXAMPLE), STACK)


@pytest.mark.usefixtures("shared_recordings")
@pytest.mark.e2e
def test_the_example_plans_clean_through_contracts_and_policies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", str(EXAMPLE), "--format", "json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)["trainstack"]
    assert report["contracts"] == []
    assert not [v for v in report["policy"]["violations"] if v["level"] == "mandatory"]


@pytest.mark.e2e
def test_the_program_uses_the_stack_files_vpc_and_subnets_and_creates_no_network() -> None:
    existing = document()["config"][FULL_KEY]["network"]["existing_vpc"]
    subnets: dict[str, str] = existing["private_subnet_ids"]
    recording = run()
    assert not [r.name for r in recording.resources if r.type in NETWORK_TYPES]
    assert recording.outputs["vpc_id"] == existing["vpc_id"]
    assert recording.outputs["private_subnet_ids"] == subnets
    groups = recording.by_type("aws:ec2/securityGroup:SecurityGroup")
    assert groups and {g.inputs["vpcId"] for g in groups} == {existing["vpc_id"]}
    cluster = recording.one("aws:eks/cluster:Cluster")
    assert sorted(cluster.inputs["vpcConfig"]["subnetIds"]) == sorted(subnets.values())
    # The EFA group and FSx for Lustre share the GPU AZ's subnet (one AZ: EFA does not cross subnets).
    [gpu] = [g for g in recording.by_type("aws:eks/nodeGroup:NodeGroup") if g.name.endswith("-ng")]
    assert gpu.inputs["subnetIds"] == [subnets["us-east-1a"]]
    assert recording.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs["subnetIds"] == subnets["us-east-1a"]
    # The data perimeter names the existing S3 gateway endpoint.
    policies = [p.inputs["policy"] for p in recording.by_type("aws:s3/bucketPolicy:BucketPolicy")]
    assert any(existing["s3_endpoint_id"] in policy for policy in policies)


def _network(raw: dict[str, Any]) -> dict[str, Any]:
    network: dict[str, Any] = raw["network"]
    return network


def _existing(raw: dict[str, Any]) -> dict[str, Any]:
    existing: dict[str, Any] = raw["network"]["existing_vpc"]
    return existing


BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "both": (lambda c: _network(c).update(nat_gateways="per_az"), "existing_vpc and nat_gateways are exclusive"),
    "both-endpoints": (
        lambda c: _network(c).update(interface_endpoints=True),
        "existing_vpc and interface_endpoints are exclusive",
    ),
    "azs-mismatch": (
        lambda c: _network(c).update(availability_zones=["us-east-1a", "us-east-1c"]),
        "existing_vpc.private_subnet_ids has subnets for ['us-east-1a', 'us-east-1b'] but availability_zones",
    ),
    "az-other-region": (
        lambda c: _existing(c).update(
            private_subnet_ids={"us-west-2a": "subnet-0a1b2c3d4e5f60001", "us-east-1b": "subnet-0a1b2c3d4e5f60002"}
        ),
        "us-west-2a",
    ),
    "vpc-id": (lambda c: _existing(c).update(vpc_id="vpc-XYZ"), "network.existing_vpc.vpc_id"),
    "subnet-id": (
        lambda c: _existing(c)["private_subnet_ids"].update({"us-east-1a": "sub-123"}),
        "a subnet id such as subnet-0a1b2c3d4e5f67890",
    ),
    "same-subnet-twice": (
        lambda c: _existing(c)["private_subnet_ids"].update({"us-east-1b": "subnet-0a1b2c3d4e5f60001"}),
        "names a subnet for two AZs",
    ),
    "no-s3-endpoint": (lambda c: _existing(c).pop("s3_endpoint_id"), "network.existing_vpc.s3_endpoint_id is missing"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_existing_vpc_files_are_refused_naming_the_key(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, expected = BAD[case]
    raw = copy.deepcopy(document())
    edit(raw["config"][FULL_KEY])
    path = tmp_path / "existing-vpc.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["plan", "--config", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "network" in err and expected in err
    assert "Traceback" not in err
