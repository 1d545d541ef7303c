"""An existing VPC's state (EC2): the VPC, each private subnet (its VPC, AZ, public-IP mapping and free addresses)
and the S3 gateway endpoint the data buckets admit. A VPC trainstack creates has no state to check yet."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from stacks.account_rules import Subnet, subnet_problems
from stacks.schema.stack import POD_ADDRESSES_PER_NODE
from trainstack.preflight.aws import AskFailed, error_code
from trainstack.preflight.context import Context, attempt
from trainstack.preflight.model import Check, Status

FAMILY = "network"
EXISTING = "network.existing_vpc"


def _vpc_check(ctx: Context, vpc_id: str) -> Check:
    asked = f"ec2:DescribeVpcs {vpc_id}"
    title = "the existing VPC exists and holds network.vpc_cidr"

    def judge() -> Check:
        vpcs: list[dict[str, Any]]
        try:
            vpcs = ctx.ask(FAMILY, "ec2", "DescribeVpcs", VpcIds=[vpc_id])["Vpcs"]
        except ClientError as error:
            if error_code(error) != "InvalidVpcID.NotFound":
                raise
            vpcs = []
        if not vpcs:
            answer, status = f"{EXISTING}.vpc_id = {vpc_id}: no such VPC in this account and region", Status.FAILED
        else:
            cidrs = [
                a["CidrBlock"]
                for a in vpcs[0].get("CidrBlockAssociationSet", [])
                if a.get("CidrBlockState", {}).get("State", "associated") == "associated"
            ] or [vpcs[0].get("CidrBlock", "")]
            ok = ctx.stack.network.vpc_cidr in cidrs
            status = Status.PASSED if ok else Status.FAILED
            answer = f"{vpc_id} has {', '.join(cidrs)}" + (
                "" if ok else f": network.vpc_cidr {ctx.stack.network.vpc_cidr} is not one of them"
            )
        return Check(
            id="network.vpc",
            family=FAMILY,
            title=title,
            status=status,
            asked=asked,
            answer=answer,
            action="" if status is Status.PASSED else "correct network.existing_vpc.vpc_id or network.vpc_cidr",
            key=f"{EXISTING}.vpc_id",
        )

    return attempt(FAMILY, "network.vpc", title, f"{EXISTING}.vpc_id", asked, judge)


def _subnet(raw: dict[str, Any]) -> Subnet:
    return Subnet(
        id=raw["SubnetId"],
        vpc_id=raw.get("VpcId", ""),
        availability_zone=raw.get("AvailabilityZone", ""),
        free_addresses=int(raw.get("AvailableIpAddressCount", 0)),
        maps_public_ip=bool(raw.get("MapPublicIpOnLaunch", False)),
    )


def _subnet_checks(ctx: Context, vpc_id: str, subnets: dict[str, str]) -> list[Check]:
    asked = f"ec2:DescribeSubnets {', '.join(subnets.values())}"
    nodes = ctx.stack.nodes_per_subnet()

    def judge_all() -> list[Check]:
        raw = ctx.ask(
            FAMILY, "ec2", "DescribeSubnets", Filters=[{"Name": "subnet-id", "Values": list(subnets.values())}]
        )
        found = {s["SubnetId"]: _subnet(s) for s in raw["Subnets"]}
        out: list[Check] = []
        for az, subnet_id in subnets.items():
            key = f"{EXISTING}.private_subnet_ids.{az}"
            problems = subnet_problems(
                key, subnet_id, az, vpc_id, nodes.get(az, 0), 1 + POD_ADDRESSES_PER_NODE, found.get(subnet_id)
            )
            subnet = found.get(subnet_id)
            ok = (
                f"{subnet_id} in {az}: {subnet.free_addresses:,} free addresses for {nodes.get(az, 0)} nodes"
                if subnet
                else ""
            )
            out.append(
                Check(
                    id=f"network.subnet.{az}",
                    family=FAMILY,
                    title=f"the private subnet in {az} is usable and has room",
                    status=Status.FAILED if problems else Status.PASSED,
                    asked=asked,
                    answer="; ".join(problems) or ok,
                    action="fix the subnet or the stack file" if problems else "",
                    key=key,
                )
            )
        return out

    try:
        return judge_all()
    except AskFailed as error:  # one call for every subnet: each is unchecked alike
        return [
            Check(
                id=f"network.subnet.{az}",
                family=FAMILY,
                title=f"the private subnet in {az} is usable and has room",
                status=Status.ERROR,
                asked=asked,
                answer=str(error),
                action="fix access and run preflight again; until then this is unchecked",
                key=f"{EXISTING}.private_subnet_ids.{az}",
            )
            for az in subnets
        ]


def _endpoint_check(ctx: Context, vpc_id: str, endpoint_id: str) -> Check:
    asked = f"ec2:DescribeVpcEndpoints {endpoint_id}"
    title = "the S3 gateway endpoint exists in the VPC"
    key = f"{EXISTING}.s3_endpoint_id"

    def judge() -> Check:
        found = ctx.ask(
            FAMILY, "ec2", "DescribeVpcEndpoints", Filters=[{"Name": "vpc-endpoint-id", "Values": [endpoint_id]}]
        )["VpcEndpoints"]
        problems: list[str] = []
        if not found:
            problems.append(f"{key} = {endpoint_id}: no such endpoint in this account and region")
        else:
            endpoint = found[0]
            if endpoint.get("VpcId") != vpc_id:
                problems.append(f"{endpoint_id} is in {endpoint.get('VpcId')}, not {vpc_id}")
            if not str(endpoint.get("ServiceName", "")).endswith(".s3") or endpoint.get("VpcEndpointType") != "Gateway":
                problems.append(
                    f"{endpoint_id} is a {endpoint.get('VpcEndpointType')} endpoint for "
                    f"{endpoint.get('ServiceName')}, not S3's gateway endpoint"
                )
            if str(endpoint.get("State", "")).lower() != "available":
                problems.append(f"{endpoint_id} is {endpoint.get('State')}")
        return Check(
            id="network.s3-endpoint",
            family=FAMILY,
            title=title,
            status=Status.FAILED if problems else Status.PASSED,
            asked=asked,
            answer="; ".join(problems)
            or f"{endpoint_id}: S3 gateway endpoint of {vpc_id}; the data buckets admit only requests through it",
            action="correct network.existing_vpc.s3_endpoint_id" if problems else "",
            key=key,
        )

    return attempt(FAMILY, "network.s3-endpoint", title, key, asked, judge)


def checks(ctx: Context) -> list[Check]:
    existing = ctx.stack.network.existing_vpc
    if existing is None:
        return [
            Check(
                id="network.vpc",
                family=FAMILY,
                title="the VPC",
                status=Status.SKIPPED,
                asked="(not asked)",
                answer="trainstack creates the VPC and its subnets: nothing exists to check yet",
                key="network",
            )
        ]
    out = [_vpc_check(ctx, existing.vpc_id), *_subnet_checks(ctx, existing.vpc_id, existing.private_subnet_ids)]
    if existing.s3_endpoint_id is not None:
        out.append(_endpoint_check(ctx, existing.vpc_id, existing.s3_endpoint_id))
    return out
