"""`network`: the VPC, its subnets, NAT, endpoints and flow logs; or an existing VPC and its private subnets."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from stacks.schema.base import RetentionDays, Spec
from stacks.schema.values import AvailabilityZone, PrivateCidr


class NatGateways(StrEnum):
    SINGLE = "single"
    PER_AZ = "per_az"


# EC2 resource ids: the type prefix and 8 (older resources) or 17 hexadecimal digits (EC2 User Guide, "Resource
# IDs": "a resource identifier ... followed by a hyphen and a unique combination of letters and numbers";
# longer IDs have 17 characters after the hyphen).
VPC_ID_PATTERN = r"^vpc-[0-9a-f]{8,17}$"
SUBNET_ID_PATTERN = r"^subnet-[0-9a-f]{8,17}$"
VPC_ENDPOINT_ID_PATTERN = r"^vpce-[0-9a-f]{8,17}$"
SubnetId = Annotated[str, StringConstraints(pattern=SUBNET_ID_PATTERN)]

# Keys that describe a network trainstack creates; with `existing_vpc` they have no meaning, so setting one (to
# anything but its default) is refused rather than ignored.
CREATE_ONLY_KEYS: tuple[str, ...] = (
    "public_subnet_prefix_length",
    "nat_gateways",
    "interface_endpoints",
    "flow_logs_traffic_type",
    "flow_logs_retention_days",
)


class ExistingVpcSpec(Spec):
    """A VPC trainstack does not own: its id and one private subnet per AZ. Routing (NAT or a transit gateway),
    endpoints and flow logs stay with the VPC's owner; trainstack creates only its security groups in it."""

    vpc_id: str = Field(
        pattern=VPC_ID_PATTERN, examples=["vpc-0a1b2c3d4e5f67890"], description="The existing VPC's id (vpc-...)."
    )
    private_subnet_ids: dict[AvailabilityZone, SubnetId] = Field(
        min_length=2,
        max_length=4,
        examples=[{"us-east-1a": "subnet-0a1b2c3d4e5f67890", "us-east-1b": "subnet-0b1c2d3e4f5a67890"}],
        description="One private subnet per AZ, keyed by AZ; the keys are exactly network.availability_zones. "
        "Nodes, pods, the EKS control plane's interfaces, FSx and HyperPod go here; the subnets must not map "
        "public IPs on launch and need a route out (NAT or equivalent) unless every AWS API has an endpoint.",
    )
    s3_endpoint_id: str | None = Field(
        default=None,
        pattern=VPC_ENDPOINT_ID_PATTERN,
        examples=["vpce-0a1b2c3d4e5f67890"],
        description="The VPC's S3 gateway endpoint (vpce-...), which data buckets admit when "
        "security.data_buckets_vpc_only is on (required then).",
    )

    @model_validator(mode="after")
    def _distinct_subnets(self) -> Self:
        ids = list(self.private_subnet_ids.values())
        if len(set(ids)) != len(ids):
            raise ValueError(f"private_subnet_ids names a subnet for two AZs: {self.private_subnet_ids}")
        return self


# RFC 6598 shared address space: a secondary VPC CIDR any primary range may take (VPC User Guide, "VPC CIDR blocks",
# IPv4 CIDR block association restrictions), and the one the peers give pods (ai-on-eks: 100.64.0.0/16).
SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
RFC1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


class PodNetworkSpec(Spec):
    """VPC CNI custom networking: pods take their addresses from subnets of a secondary VPC CIDR, one per AZ (an
    ENIConfig per AZ names it), so the node subnets hold only the nodes' own addresses."""

    cidr: PrivateCidr = Field(
        description="Secondary IPv4 CIDR associated with the VPC for pods, /16 to /20: in 100.64.0.0/10, or in "
        "the same RFC 1918 block as vpc_cidr without overlapping it (AWS refuses other combinations)."
    )
    subnet_prefix_length: int = Field(
        default=18, ge=16, le=24, description="Prefix length of each AZ's pod subnet, carved from `cidr`."
    )

    @property
    def per_subnet_addresses(self) -> int:
        return 2 ** (32 - self.subnet_prefix_length)


def secondary_cidr_problem(primary: str, secondary: str) -> str | None:
    """Why AWS would refuse `secondary` as a second CIDR of a VPC whose primary is `primary` (VPC User Guide, "IPv4
    CIDR block association restrictions"), or None."""
    first, second = ipaddress.IPv4Network(primary), ipaddress.IPv4Network(secondary)
    if first.overlaps(second):
        return f"{secondary} overlaps vpc_cidr {primary}"
    if second.subnet_of(SHARED_ADDRESS_SPACE):
        return None
    same_block = any(first.subnet_of(block) and second.subnet_of(block) for block in RFC1918)
    if not same_block:
        return (
            f"{secondary} is in another private block than vpc_cidr {primary}: AWS associates only 100.64.0.0/10 "
            "or the primary's own RFC 1918 block"
        )
    return None


class NetworkSpec(Spec):
    """The VPC: private subnets per AZ for nodes and pods, public subnets for NAT only."""

    vpc_cidr: PrivateCidr = Field(
        description="IPv4 CIDR of the VPC, /16 to /20, in a private range. With existing_vpc: the existing "
        "VPC's CIDR that holds its private subnets (the security groups admit it; /16 to /28)."
    )
    availability_zones: list[AvailabilityZone] = Field(
        min_length=2, max_length=4, description="AZs for subnets; EKS needs two. GPU groups pick one of them."
    )
    private_subnet_prefix_length: int = Field(
        default=18,
        ge=16,
        le=28,
        description="Prefix length of each private subnet (nodes and their pods; efa-only interfaces take no "
        "address), /16 to /24; with existing_vpc, that of the smallest existing private subnet (/16 to /28), for the "
        "address capacity check.",
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
    pod_network: PodNetworkSpec | None = Field(
        default=None,
        description="Custom networking: a secondary VPC CIDR with a pod subnet per AZ (VPC CNI ENIConfig), so "
        "pods stop taking node-subnet addresses; the address check then counts nodes against the private "
        "subnets and pods against the pod subnets. Only for a VPC trainstack creates.",
    )
    existing_vpc: ExistingVpcSpec | None = Field(
        default=None,
        description="Use an existing VPC and its private subnets instead of creating one: trainstack then "
        "creates no VPC, subnets, NAT, route tables, endpoints or flow logs, only its security groups (EFA, "
        "workload) in that VPC. Exclusive with public_subnet_prefix_length, nat_gateways, interface_endpoints "
        "and flow_logs_*. See docs/existing-infra.md.",
    )

    @property
    def creates_vpc(self) -> bool:
        """Whether trainstack creates the VPC (False with `existing_vpc`)."""
        return self.existing_vpc is None

    @model_validator(mode="after")
    def _subnets_fit(self) -> Self:
        if len(set(self.availability_zones)) != len(self.availability_zones):
            raise ValueError(f"availability_zones has duplicates: {self.availability_zones}")
        if self.existing_vpc is not None:
            if self.pod_network is not None:
                raise ValueError(
                    "pod_network with existing_vpc: the secondary CIDR and its subnets belong to the VPC's owner; "
                    "use a VPC trainstack creates, or run the VPC CNI's custom networking there yourself"
                )
            return self._fits_existing(self.existing_vpc)
        if self.pod_network is not None:
            pods = self.pod_network
            if why := secondary_cidr_problem(self.vpc_cidr, pods.cidr):
                raise ValueError(f"pod_network.cidr {why}")
            block = ipaddress.IPv4Network(pods.cidr)
            if not 16 <= block.prefixlen <= 20:
                raise ValueError(f"pod_network.cidr {pods.cidr} must be /16 to /20")
            need = len(self.availability_zones) * pods.per_subnet_addresses
            if pods.subnet_prefix_length < block.prefixlen or need > block.num_addresses:
                raise ValueError(
                    f"{len(self.availability_zones)} pod subnets of /{pods.subnet_prefix_length} need {need} "
                    f"addresses; pod_network.cidr {pods.cidr} has {block.num_addresses}"
                )
        vpc = ipaddress.IPv4Network(self.vpc_cidr)
        if not 16 <= vpc.prefixlen <= 20:
            raise ValueError(f"vpc_cidr {self.vpc_cidr} must be /16 to /20")
        if self.private_subnet_prefix_length > 24:
            raise ValueError(
                f"private_subnet_prefix_length /{self.private_subnet_prefix_length} is too small for a VPC trainstack "
                "creates: /16 to /24 (the /28 floor is for existing subnets)"
            )
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

    def _fits_existing(self, existing: ExistingVpcSpec) -> Self:
        """An existing VPC: no create-only keys, the subnets' AZs are the network's, and the sizes are possible."""
        # Judged by value, not by which keys the file spelt: the offline engine hands the program a full dump
        # (defaults included), and a default value asks for nothing the existing VPC lacks.
        fields = type(self).model_fields
        both = [key for key in CREATE_ONLY_KEYS if getattr(self, key) != fields[key].default]
        if both:
            raise ValueError(
                f"existing_vpc and {', '.join(both)} are exclusive: {', '.join(both)} describe a VPC trainstack "
                "creates; remove them (the existing VPC's owner runs its NAT, endpoints and flow logs)"
            )
        subnet_azs = list(existing.private_subnet_ids)
        if sorted(subnet_azs) != sorted(self.availability_zones):
            raise ValueError(
                f"existing_vpc.private_subnet_ids has subnets for {subnet_azs} but availability_zones is "
                f"{self.availability_zones}: give exactly one private subnet for each AZ in availability_zones"
            )
        vpc = ipaddress.IPv4Network(self.vpc_cidr)
        # VPC User Guide, "VPC CIDR blocks": an IPv4 VPC block is /16 to /28, and so is a subnet's.
        if not 16 <= vpc.prefixlen <= 28:
            raise ValueError(f"vpc_cidr {self.vpc_cidr} is not a VPC CIDR: AWS allows /16 to /28")
        if self.private_subnet_prefix_length < vpc.prefixlen:
            raise ValueError(
                f"private_subnet_prefix_length /{self.private_subnet_prefix_length} is larger than vpc_cidr "
                f"{self.vpc_cidr}: give the prefix length of the smallest existing private subnet"
            )
        return self
