"""`network`: the VPC, its subnets, NAT, endpoints and flow logs."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, model_validator

from stacks.schema.base import RetentionDays, Spec
from stacks.schema.values import AvailabilityZone, PrivateCidr


class NatGateways(StrEnum):
    SINGLE = "single"
    PER_AZ = "per_az"


class NetworkSpec(Spec):
    """The VPC: private subnets per AZ for nodes and pods, public subnets for NAT only."""

    vpc_cidr: PrivateCidr = Field(description="IPv4 CIDR of the VPC, /16 to /20, in a private range.")
    availability_zones: list[AvailabilityZone] = Field(
        min_length=2, max_length=4, description="AZs for subnets; EKS needs two. GPU groups pick one of them."
    )
    private_subnet_prefix_length: int = Field(
        default=18, ge=16, le=24, description="Prefix length of each private subnet (nodes, pods, EFA IPs)."
    )
    public_subnet_prefix_length: int = Field(
        default=24, ge=20, le=28, description="Prefix length of each public subnet (NAT gateways, load balancers)."
    )
    nat_gateways: NatGateways = Field(
        default=NatGateways.SINGLE, description="One NAT gateway for the VPC, or one per AZ for zonal resilience."
    )
    interface_endpoints: bool = Field(
        default=False,
        description="Create interface endpoints (ECR api/dkr, STS, EC2, CloudWatch Logs, SSM, SSM messages, EC2 "
        "messages, EKS Auth for Pod Identity) so private nodes reach AWS without NAT; trainstack requires them "
        "when the EKS endpoint is private only.",
    )
    flow_logs_traffic_type: Literal["ALL", "REJECT"] = Field(default="ALL", description="VPC flow log filter.")
    flow_logs_retention_days: RetentionDays = Field(
        default=30, description="CloudWatch retention for flow logs (a CloudWatch-allowed value)."
    )

    @model_validator(mode="after")
    def _subnets_fit(self) -> Self:
        vpc = ipaddress.IPv4Network(self.vpc_cidr)
        if not 16 <= vpc.prefixlen <= 20:
            raise ValueError(f"vpc_cidr {self.vpc_cidr} must be /16 to /20")
        if len(set(self.availability_zones)) != len(self.availability_zones):
            raise ValueError(f"availability_zones has duplicates: {self.availability_zones}")
        if self.private_subnet_prefix_length > self.public_subnet_prefix_length:
            # Private subnets hold nodes, pods and EFA IPs; carving the larger blocks first packs without gaps.
            raise ValueError(
                f"private_subnet_prefix_length /{self.private_subnet_prefix_length} is smaller than "
                f"public_subnet_prefix_length /{self.public_subnet_prefix_length}: private subnets must be at least "
                "as large as public ones"
            )
        count = len(self.availability_zones)
        needed = count * 2 ** (32 - self.private_subnet_prefix_length) + count * 2 ** (
            32 - self.public_subnet_prefix_length
        )
        if needed > vpc.num_addresses:
            raise ValueError(
                f"{count} private /{self.private_subnet_prefix_length} and {count} public "
                f"/{self.public_subnet_prefix_length} subnets need {needed} addresses; vpc_cidr {self.vpc_cidr} "
                f"has {vpc.num_addresses}"
            )
        return self
