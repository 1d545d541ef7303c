"""The VPC for a training cluster: private subnets per AZ for nodes, pods and EFA, public subnets for NAT only.

Builds the VPC (DNS support and hostnames on), one private and one public subnet per AZ carved from the VPC
CIDR by `carve_subnets`, an internet gateway, NAT gateways (one, or one per AZ), route tables, an S3 gateway
endpoint on the private route tables, optional interface endpoints for private clusters, VPC flow logs to
CloudWatch, the EFA security group that allows all traffic to and from itself, and an egress-only workload
security group for SageMaker jobs and Slurm HyperPod nodes.

With `network.existing_vpc` it creates none of the network itself: the VPC and its private subnets come from
the stack file, their routing, endpoints and flow logs stay with the VPC's owner, and only the EFA and
workload security groups are created, in that VPC (docs/existing-infra.md).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_aws as aws

from components.naming import aws_partition, child_name, physical_name
from stacks.registries import (
    DOCKER_HUB_AWS_BUCKET,
    DOCKER_HUB_AWS_BUCKET_REGION,
    K8S_LAYER_PREFIX,
    k8s_registry_bucket,
)
from stacks.schema import ExistingVpcSpec, NatGateways, NetworkSpec

Tier = Literal["private", "public"]

# Interface endpoints private nodes need to pull images (ECR api + dkr; layers come through the S3 gateway
# endpoint), get tokens (STS), call EC2 (vpc-cni), ship logs (CloudWatch Logs), be managed through Systems
# Manager (ssm, plus ssmmessages for Session Manager's data channel and ec2messages, which SSM Agent uses for
# Run Command where ssmmessages is not used), and get EKS Pod Identity credentials (eks-auth: the Pod Identity
# agent calls AssumeRoleForPodIdentity there; vpc-cni and the EBS and FSx CSI drivers get their AWS
# permissions that way).
# Sources: EKS User Guide, "Deploy private clusters with limited internet access" (private-clusters.html),
# "Set up the Amazon EKS Pod Identity Agent" (com.amazonaws.<region>.eks-auth for nodes in private subnets),
# and Systems Manager User Guide, "Improve the security of EC2 instances by using VPC endpoints for Systems
# Manager" (ssm, ssmmessages, ec2messages).
INTERFACE_ENDPOINT_SERVICES: tuple[str, ...] = (
    "ecr.api",
    "ecr.dkr",
    "sts",
    "ec2",
    "logs",
    "ssm",
    "ssmmessages",
    "ec2messages",
    "eks-auth",
)
HTTPS_PORT = 443  # interface endpoints answer on HTTPS only
ANYWHERE_IPV4 = "0.0.0.0/0"

# Subnet role tags the AWS Load Balancer Controller uses to pick subnets (EKS User Guide, network-load-balancing).
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"


@dataclass(frozen=True)
class SubnetPlan:
    """One subnet to create: its AZ, tier and CIDR."""

    availability_zone: str
    tier: Tier
    cidr: str


def carve_subnets(
    vpc_cidr: str, availability_zones: Sequence[str], private_prefix_length: int, public_prefix_length: int
) -> list[SubnetPlan]:
    """Carve one private and one public subnet per AZ from the VPC CIDR: private subnets first, in AZ order,
    then public ones right after them.

    Blocks are aligned to their own size, so with private subnets at least as large as public ones (the
    schema's rule) the layout has no gaps. Raises ValueError when the subnets do not fit.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr)
    plans: list[SubnetPlan] = []
    cursor = int(vpc.network_address)
    end = int(vpc.broadcast_address) + 1
    tiers: tuple[tuple[Tier, int], ...] = (("private", private_prefix_length), ("public", public_prefix_length))
    for tier, prefix in tiers:
        if prefix < vpc.prefixlen:
            raise ValueError(f"a /{prefix} {tier} subnet does not fit in VPC {vpc_cidr}")
        size = 2 ** (32 - prefix)
        for az in availability_zones:
            cursor = -(-cursor // size) * size  # align up to the block size
            if cursor + size > end:
                raise ValueError(
                    f"{len(availability_zones)} private /{private_prefix_length} and public /{public_prefix_length} "
                    f"subnets do not fit in VPC {vpc_cidr}"
                )
            plans.append(SubnetPlan(az, tier, str(ipaddress.IPv4Network((cursor, prefix)))))
            cursor += size
    return plans


def nat_gateway_azs(spec: NetworkSpec) -> list[str]:
    """The AZs that get a NAT gateway (in their public subnet): the first AZ, or every AZ."""
    if spec.nat_gateways is NatGateways.PER_AZ:
        return list(spec.availability_zones)
    return [spec.availability_zones[0]]


def nat_gateway_for(spec: NetworkSpec, availability_zone: str) -> str:
    """The AZ of the NAT gateway that the private route table of `availability_zone` sends internet traffic to."""
    return availability_zone if spec.nat_gateways is NatGateways.PER_AZ else spec.availability_zones[0]


def endpoint_service_name(region: str, service: str) -> str:
    """The VPC endpoint service name, for example `com.amazonaws.us-east-1.ecr.api`."""
    return f"com.amazonaws.{region}.{service}"


def s3_prefix_cidrs(region: str, provider: pulumi.ProviderResource | None = None) -> pulumi.Output[list[str]]:
    """The CIDRs of S3 in `region`: AWS's managed prefix list `com.amazonaws.<region>.s3`, the destinations the S3
    gateway endpoint routes (VPC User Guide, gateway endpoints). Read at deploy, so the list is AWS's of that day."""
    found = aws.ec2.get_prefix_list_output(
        name=f"com.amazonaws.{region}.s3", opts=pulumi.InvokeOutputOptions(provider=provider)
    )
    return found.cidr_blocks.apply(lambda cidrs: sorted(cidrs))


def aws_owned_buckets(region: str) -> list[str]:
    """AWS-owned S3 buckets (name patterns) the nodes read through the gateway endpoint."""
    return [
        f"prod-{region}-starport-layer-bucket",
        f"al2023-repos-{region}-*",
        f"amazon-ssm-{region}",
        f"amazon-ssm-packages-{region}",
        f"aws-ssm-{region}",
        f"aws-ssm-document-attachments-{region}",
        f"{region}-birdwatcher-prod",
        f"patch-baseline-snapshot-{region}",
    ]


def public_registry_layer_objects(partition: str, region: str) -> list[str]:
    """The objects of public registries' layer buckets in `region` (a bucket elsewhere is not reached through
    this region's gateway endpoint), read-only: registry.k8s.io's blobs (`containers/images/` of the bucket its
    redirector picks for the region) and Docker Hub's bucket for AWS clients in us-east-1 (stacks/registries.py
    has the facts and their sources). Without them Kueue, JobSet, node-feature-discovery and kube-state-metrics
    (registry.k8s.io) and Grafana (Docker Hub) get a 403 on every layer and their atomic releases roll back."""
    objects: list[str] = []
    k8s = k8s_registry_bucket(region)
    if k8s is not None and k8s[1] == region:
        objects.append(f"arn:{partition}:s3:::{k8s[0]}/{K8S_LAYER_PREFIX}*")
    if region == DOCKER_HUB_AWS_BUCKET_REGION:
        objects.append(f"arn:{partition}:s3:::{DOCKER_HUB_AWS_BUCKET}/*")
    return objects


def s3_gateway_endpoint_policy(partition: str, region: str, account_id: str) -> dict[str, Any]:
    """The S3 gateway endpoint's policy: the account's principals on the account's buckets, plus anonymous reads
    of the AWS-owned buckets nodes pull from. Nothing in the VPC can copy data to another account's bucket
    through it (a data perimeter: AWS whitepaper "Building a data perimeter on AWS", resource perimeter).

    AWS-owned buckets: ECR image layers (ECR User Guide, "Amazon ECR interface VPC endpoints": the minimum S3
    gateway endpoint permissions, `prod-<region>-starport-layer-bucket`), the Amazon Linux 2023 package
    repositories (AL2023 User Guide, "Using Amazon S3 gateway endpoints": `al2023-repos-<region>-*`), and the
    buckets SSM Agent reads for updates, documents and patching (Systems Manager User Guide, "SSM Agent
    communications with AWS managed S3 buckets"). An AWS-owned bucket not listed here is refused through the
    endpoint (docs/security.md).

    Public registries' layer buckets (`public_registry_layer_objects`): GetObject on their layer objects only, so
    the endpoint still carries no write to a bucket outside the account. Mirroring those images into the
    account's ECR would need a pull-through cache rule per upstream and every chart's image values rewritten;
    the narrow read keeps the charts' defaults (and their digests) as upstream publishes them."""
    registry_layers = public_registry_layer_objects(partition, region)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AccountPrincipalsToAccountBuckets",
                "Effect": "Allow",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:PrincipalAccount": account_id, "aws:ResourceAccount": account_id}},
            },
            {
                "Sid": "AwsOwnedImageLayersAndPackages",
                "Effect": "Allow",
                "Principal": "*",
                "Action": "s3:GetObject",
                "Resource": [f"arn:{partition}:s3:::{bucket}/*" for bucket in aws_owned_buckets(region)],
            },
            *(
                [
                    {
                        "Sid": "PublicRegistryImageLayers",
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "s3:GetObject",
                        "Resource": registry_layers,
                    }
                ]
                if registry_layers
                else []
            ),
        ],
    }


def interface_endpoint_policy(service: str, account_id: str) -> dict[str, Any]:
    """An interface endpoint's policy: only the account's principals. The STS endpoint also takes web identity
    federation (IRSA), whose caller is not yet an account principal; the role's trust policy decides."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "AccountPrincipalsOnly",
            "Effect": "Allow",
            "Principal": "*",
            "Action": "*",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:PrincipalAccount": account_id}},
        }
    ]
    if service == "sts":
        statements.append(
            {
                "Sid": "WebIdentityFederation",
                "Effect": "Allow",
                "Principal": "*",
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Resource": "*",
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def flow_log_group_name(base_name: str) -> str:
    """The VPC flow logs' log group."""
    return f"/aws/vpc-flow-logs/{base_name}"


def subnet_tags(base_name: str, plan: SubnetPlan) -> dict[str, str]:
    """Name and load-balancer role tags of a subnet."""
    role_tag = INTERNAL_ELB_TAG if plan.tier == "private" else PUBLIC_ELB_TAG
    return {"Name": physical_name(base_name, plan.tier, plan.availability_zone), role_tag: "1"}


def _key(text: str) -> str:
    """A name part from a service or AZ name: `ecr.api` -> `ecr-api`."""
    return text.replace(".", "-")


@dataclass(frozen=True)
class ExistingSubnet:
    """What AWS says about a subnet the stack file names (EC2 DescribeSubnets)."""

    id: str
    availability_zone: str
    vpc_id: str
    map_public_ip_on_launch: bool


def existing_subnet_problem(subnet: ExistingSubnet, availability_zone: str, vpc_id: str) -> str | None:
    """Why an existing subnet cannot serve as the private subnet of `availability_zone` in `vpc_id`, or None."""
    where = f"network.existing_vpc.private_subnet_ids.{availability_zone}"
    if subnet.vpc_id != vpc_id:
        return f"{where}: subnet {subnet.id} is in VPC {subnet.vpc_id}, not in network.existing_vpc.vpc_id {vpc_id}"
    if subnet.availability_zone != availability_zone:
        return f"{where}: subnet {subnet.id} is in {subnet.availability_zone}, not in {availability_zone}"
    if subnet.map_public_ip_on_launch:
        return (
            f"{where}: subnet {subnet.id} maps public IPs on launch; nodes must not get public addresses: "
            "give a private subnet"
        )
    return None


def _checked_subnet(subnet: ExistingSubnet, availability_zone: str, vpc_id: str) -> str:
    problem = existing_subnet_problem(subnet, availability_zone, vpc_id)
    if problem is not None:
        raise ValueError(problem)
    return subnet.id


@dataclass
class NetworkArgs:
    """Spec (what exists) and wiring of a `Network`."""

    spec: NetworkSpec
    """The validated `network` block of the stack config."""
    base_name: str
    """The stack's base name (for example `trainstack-prod`): physical names and Name tags carry it."""
    region: str
    """The AWS region, for endpoint service names and flow-log trust conditions."""
    log_kms_key_arn: pulumi.Input[str] | None = None
    """The telemetry key (components/security/telemetry_key.py) the flow log group is encrypted with."""


class Network(pulumi.ComponentResource):
    """VPC, subnets, NAT, endpoints, flow logs, the EFA security group and the workload security group."""

    vpc_id: pulumi.Output[str]
    """ID of the VPC (created, or the existing one of `network.existing_vpc`)."""
    vpc_cidr: str
    """CIDR of the VPC (from the spec, so it is known while the program runs)."""
    private_subnet_ids: dict[str, pulumi.Output[str]]
    """Private subnet IDs keyed by AZ: nodes, pods, EFA interfaces, interface endpoints."""
    public_subnet_ids: dict[str, pulumi.Output[str]]
    """Public subnet IDs keyed by AZ: NAT gateways and internet-facing load balancers."""
    private_route_table_ids: dict[str, pulumi.Output[str]]
    """Private route table IDs keyed by AZ."""
    nat_gateway_ids: dict[str, pulumi.Output[str]]
    """NAT gateway IDs keyed by the AZ they live in."""
    efa_security_group_id: pulumi.Output[str]
    """The security group that allows all traffic to and from itself (EFA needs both directions)."""
    workload_security_group_id: pulumi.Output[str]
    """Egress-only group (all IPv4 egress, no ingress) for workloads that carry no EKS cluster security group:
    Slurm HyperPod nodes and SageMaker training jobs; FSx for Lustre admits it as a client."""
    s3_endpoint_id: pulumi.Output[str] | None
    """The S3 gateway endpoint (data buckets may deny requests that do not come through it); an existing VPC's
    when the stack file names one, else None."""
    endpoint_security_group_id: pulumi.Output[str] | None
    """Security group of the interface endpoints (HTTPS from the VPC), when they exist."""
    flow_log_group_name: pulumi.Output[str] | None
    """CloudWatch log group of the VPC flow logs; None for an existing VPC (its owner keeps its flow logs)."""
    pod_subnet_ids: dict[str, pulumi.Output[str]]
    """Pod subnets keyed by AZ (`network.pod_network`, VPC CNI custom networking); empty without it."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:network:Network", name, None, opts)
        self.vpc_cidr = args.spec.vpc_cidr
        self.pod_subnet_ids = {}
        if args.spec.existing_vpc is None:
            self._create_vpc(name, args)
        else:
            self._use_existing_vpc(args.spec.existing_vpc, args.spec.availability_zones)
        # trainstack's own security groups, in its VPC or the existing one.
        self.efa_security_group_id = self._efa_security_group(name, args, self.vpc_id)
        self.workload_security_group_id = self._workload_security_group(name, args, self.vpc_id)

        self.register_outputs(
            {
                "vpc_id": self.vpc_id,
                "vpc_cidr": self.vpc_cidr,
                "private_subnet_ids": self.private_subnet_ids,
                "public_subnet_ids": self.public_subnet_ids,
                "private_route_table_ids": self.private_route_table_ids,
                "nat_gateway_ids": self.nat_gateway_ids,
                "efa_security_group_id": self.efa_security_group_id,
                "workload_security_group_id": self.workload_security_group_id,
                "endpoint_security_group_id": self.endpoint_security_group_id,
                "s3_endpoint_id": self.s3_endpoint_id,
                "flow_log_group_name": self.flow_log_group_name,
                "pod_subnet_ids": self.pod_subnet_ids,
            }
        )

    def _create_vpc(self, name: str, args: NetworkArgs) -> None:
        """The whole network: VPC, subnets, internet and NAT gateways, routes, endpoints and flow logs."""
        vpc = self._vpc(name, args)
        self.vpc_id = vpc.id
        self._close_default_security_group(name, args, vpc)
        subnets = self._subnets(name, args, vpc.id)
        azs = list(args.spec.availability_zones)
        self.private_subnet_ids = {az: subnets[("private", az)].id for az in azs}
        self.public_subnet_ids = {az: subnets[("public", az)].id for az in azs}
        igw = self._public_routes(name, args, vpc.id, self.public_subnet_ids)
        nat_gateways = self._nat_gateways(name, args, self.public_subnet_ids, igw)
        self.nat_gateway_ids = {az: nat.id for az, nat in nat_gateways.items()}
        self.private_route_table_ids = self._private_routes(name, args, vpc.id, self.private_subnet_ids, nat_gateways)
        if args.spec.pod_network is not None:
            self.pod_subnet_ids = self._pod_subnets(name, args, vpc, self.private_route_table_ids)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self.s3_endpoint_id = self._s3_endpoint(name, args, vpc.id, self.private_route_table_ids, account_id)
        self.endpoint_security_group_id = (
            self._interface_endpoints(name, args, vpc.id, self.private_subnet_ids, account_id)
            if args.spec.interface_endpoints
            else None
        )
        self.flow_log_group_name = self._flow_logs(name, args, vpc.id)

    def _use_existing_vpc(self, existing: ExistingVpcSpec, availability_zones: Sequence[str]) -> None:
        """An existing VPC: its ids from the stack file, nothing created. Its routing, endpoints and flow logs
        belong to its owner, so the public subnets, NAT gateways and route tables are empty here.

        Each subnet is read back (ec2 DescribeSubnets through `get_subnet`) and checked against the stack file
        before anything uses it: a subnet in another AZ or VPC, or one that maps public IPs, stops `pulumi up`
        before a node, FSx or the cluster lands there."""
        self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
        self.private_subnet_ids = {}
        for az in availability_zones:
            found = aws.ec2.get_subnet_output(
                id=existing.private_subnet_ids[az], opts=pulumi.InvokeOutputOptions(parent=self)
            )
            self.private_subnet_ids[az] = found.apply(
                lambda subnet, az=az: _checked_subnet(
                    ExistingSubnet(subnet.id, subnet.availability_zone, subnet.vpc_id, subnet.map_public_ip_on_launch),
                    az,
                    existing.vpc_id,
                )
            )
        self.public_subnet_ids = {}
        self.nat_gateway_ids = {}
        self.private_route_table_ids = {}
        self.s3_endpoint_id = (
            pulumi.Output.from_input(existing.s3_endpoint_id) if existing.s3_endpoint_id is not None else None
        )
        self.endpoint_security_group_id = None
        self.flow_log_group_name = None

    def _vpc(self, name: str, args: NetworkArgs) -> aws.ec2.Vpc:
        """The VPC, with the DNS settings EKS and private endpoint DNS need."""
        return aws.ec2.Vpc(
            child_name(name, "vpc"),
            aws.ec2.VpcArgs(
                cidr_block=args.spec.vpc_cidr,
                enable_dns_support=True,  # both are required for EKS and for private DNS on interface endpoints
                enable_dns_hostnames=True,
                tags={"Name": physical_name(args.base_name, "vpc")},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _close_default_security_group(self, name: str, args: NetworkArgs, vpc: aws.ec2.Vpc) -> None:
        """Every VPC comes with a default security group that admits all traffic from its members and lets them
        reach anywhere; anything launched without a group lands in it. Nothing of trainstack uses it (each
        component has its own groups), so it keeps no rule at all (CIS AWS Foundations 5.4, checkov
        CKV2_AWS_12). Adopting it removes every rule it has; on destroy it stays with the VPC, which AWS deletes
        together (pulumi-aws ec2.DefaultSecurityGroup)."""
        aws.ec2.DefaultSecurityGroup(
            child_name(name, "default-sg"),
            aws.ec2.DefaultSecurityGroupArgs(
                vpc_id=vpc.id,
                ingress=[],
                egress=[],
                tags={"Name": physical_name(args.base_name, "default-closed")},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _subnets(
        self, name: str, args: NetworkArgs, vpc_id: pulumi.Input[str]
    ) -> dict[tuple[Tier, str], aws.ec2.Subnet]:
        """One private and one public subnet per AZ, carved from the VPC CIDR, keyed by (tier, AZ)."""
        spec = args.spec
        plans = carve_subnets(
            spec.vpc_cidr, spec.availability_zones, spec.private_subnet_prefix_length, spec.public_subnet_prefix_length
        )
        return {
            (plan.tier, plan.availability_zone): aws.ec2.Subnet(
                child_name(name, plan.tier, plan.availability_zone),
                aws.ec2.SubnetArgs(
                    vpc_id=vpc_id,
                    cidr_block=plan.cidr,
                    availability_zone=plan.availability_zone,
                    map_public_ip_on_launch=False,  # public subnets host NAT gateways only
                    tags=subnet_tags(args.base_name, plan),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for plan in plans
        }

    def _public_routes(
        self, name: str, args: NetworkArgs, vpc_id: pulumi.Input[str], public_subnet_ids: dict[str, pulumi.Output[str]]
    ) -> aws.ec2.InternetGateway:
        """The internet gateway and one public route table for every public subnet; returns the gateway."""
        child = pulumi.ResourceOptions(parent=self)
        igw = aws.ec2.InternetGateway(
            child_name(name, "igw"),
            aws.ec2.InternetGatewayArgs(vpc_id=vpc_id, tags={"Name": physical_name(args.base_name, "igw")}),
            opts=child,
        )
        public_rt = aws.ec2.RouteTable(
            child_name(name, "public-rt"),
            aws.ec2.RouteTableArgs(vpc_id=vpc_id, tags={"Name": physical_name(args.base_name, "public")}),
            opts=child,
        )
        aws.ec2.Route(
            child_name(name, "public-default"),
            aws.ec2.RouteArgs(route_table_id=public_rt.id, destination_cidr_block=ANYWHERE_IPV4, gateway_id=igw.id),
            opts=child,
        )
        for az, subnet_id in public_subnet_ids.items():
            aws.ec2.RouteTableAssociation(
                child_name(name, "public-rta", az),
                aws.ec2.RouteTableAssociationArgs(route_table_id=public_rt.id, subnet_id=subnet_id),
                opts=child,
            )
        return igw

    def _nat_gateways(
        self,
        name: str,
        args: NetworkArgs,
        public_subnet_ids: dict[str, pulumi.Output[str]],
        igw: aws.ec2.InternetGateway,
    ) -> dict[str, aws.ec2.NatGateway]:
        """NAT gateways with their Elastic IPs in the public subnets (one, or one per AZ), keyed by AZ."""
        nat_gateways: dict[str, aws.ec2.NatGateway] = {}
        for az in nat_gateway_azs(args.spec):
            eip = aws.ec2.Eip(
                child_name(name, "nat-eip", az),
                aws.ec2.EipArgs(domain="vpc", tags={"Name": physical_name(args.base_name, "nat", az)}),
                opts=pulumi.ResourceOptions(parent=self),
            )
            nat_gateways[az] = aws.ec2.NatGateway(
                child_name(name, "nat", az),
                aws.ec2.NatGatewayArgs(
                    allocation_id=eip.id,
                    subnet_id=public_subnet_ids[az],
                    connectivity_type="public",
                    tags={"Name": physical_name(args.base_name, "nat", az)},
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
        return nat_gateways

    def _private_routes(
        self,
        name: str,
        args: NetworkArgs,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: dict[str, pulumi.Output[str]],
        nat_gateways: dict[str, aws.ec2.NatGateway],
    ) -> dict[str, pulumi.Output[str]]:
        """A private route table per AZ (so switching to per-AZ NAT never re-associates subnets), default route
        to its NAT gateway; returns the route table ids by AZ."""
        child = pulumi.ResourceOptions(parent=self)
        route_table_ids: dict[str, pulumi.Output[str]] = {}
        for az, subnet_id in private_subnet_ids.items():
            rt = aws.ec2.RouteTable(
                child_name(name, "private-rt", az),
                aws.ec2.RouteTableArgs(vpc_id=vpc_id, tags={"Name": physical_name(args.base_name, "private", az)}),
                opts=child,
            )
            aws.ec2.Route(
                child_name(name, "private-default", az),
                aws.ec2.RouteArgs(
                    route_table_id=rt.id,
                    destination_cidr_block=ANYWHERE_IPV4,
                    nat_gateway_id=nat_gateways[nat_gateway_for(args.spec, az)].id,
                ),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                child_name(name, "private-rta", az),
                aws.ec2.RouteTableAssociationArgs(route_table_id=rt.id, subnet_id=subnet_id),
                opts=child,
            )
            route_table_ids[az] = rt.id
        return route_table_ids

    def _pod_subnets(
        self, name: str, args: NetworkArgs, vpc: aws.ec2.Vpc, route_table_ids: dict[str, pulumi.Output[str]]
    ) -> dict[str, pulumi.Output[str]]:
        """VPC CNI custom networking: the secondary CIDR and one pod subnet per AZ, on the AZ's private route
        table (the same NAT and S3 gateway endpoint as the nodes). Returns the subnet ids by AZ."""
        pods = args.spec.pod_network
        assert pods is not None
        child = pulumi.ResourceOptions(parent=self)
        association = aws.ec2.VpcIpv4CidrBlockAssociation(
            child_name(name, "pods-cidr"),
            aws.ec2.VpcIpv4CidrBlockAssociationArgs(vpc_id=vpc.id, cidr_block=pods.cidr),
            opts=child,
        )
        blocks = ipaddress.IPv4Network(pods.cidr).subnets(new_prefix=pods.subnet_prefix_length)
        subnet_ids: dict[str, pulumi.Output[str]] = {}
        for az, block in zip(args.spec.availability_zones, blocks, strict=False):
            subnet = aws.ec2.Subnet(
                child_name(name, "pods", az),
                aws.ec2.SubnetArgs(
                    vpc_id=association.vpc_id,  # after the association: the CIDR must be the VPC's first
                    cidr_block=str(block),
                    availability_zone=az,
                    map_public_ip_on_launch=False,
                    tags={"Name": physical_name(args.base_name, "pods", az)},  # no ELB role: pods only
                ),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                child_name(name, "pods-rta", az),
                aws.ec2.RouteTableAssociationArgs(route_table_id=route_table_ids[az], subnet_id=subnet.id),
                opts=child,
            )
            subnet_ids[az] = subnet.id
        return subnet_ids

    def _s3_endpoint(
        self,
        name: str,
        args: NetworkArgs,
        vpc_id: pulumi.Input[str],
        route_table_ids: dict[str, pulumi.Output[str]],
        account_id: pulumi.Output[str],
    ) -> pulumi.Output[str]:
        """The S3 gateway endpoint on the private route tables: free, and keeps dataset, checkpoint and ECR layer
        traffic off the NAT gateways. Returns its id."""
        partition = aws_partition(args.region)
        endpoint = aws.ec2.VpcEndpoint(
            child_name(name, "s3"),
            aws.ec2.VpcEndpointArgs(
                vpc_id=vpc_id,
                service_name=endpoint_service_name(args.region, "s3"),
                vpc_endpoint_type="Gateway",
                route_table_ids=list(route_table_ids.values()),
                policy=pulumi.Output.json_dumps(
                    account_id.apply(lambda account: s3_gateway_endpoint_policy(partition, args.region, account))
                ),
                tags={"Name": physical_name(args.base_name, "s3")},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return endpoint.id

    def _interface_endpoints(
        self,
        name: str,
        args: NetworkArgs,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: dict[str, pulumi.Output[str]],
        account_id: pulumi.Output[str],
    ) -> pulumi.Output[str]:
        """The interface endpoints of INTERFACE_ENDPOINT_SERVICES in the private subnets, behind a security group
        that admits HTTPS from the VPC. Returns the group's id."""
        child = pulumi.ResourceOptions(parent=self)
        endpoint_sg = aws.ec2.SecurityGroup(
            child_name(name, "endpoints-sg"),
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc_id,
                description="Interface VPC endpoints: HTTPS from inside the VPC",
                tags={"Name": physical_name(args.base_name, "endpoints")},
            ),
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            child_name(name, "endpoints-https"),
            aws.vpc.SecurityGroupIngressRuleArgs(
                security_group_id=endpoint_sg.id,
                ip_protocol="tcp",
                from_port=HTTPS_PORT,
                to_port=HTTPS_PORT,
                cidr_ipv4=args.spec.vpc_cidr,
                description="HTTPS from the VPC",
            ),
            opts=child,
        )
        if args.spec.pod_network is not None:  # pods of custom networking call AWS from the secondary CIDR
            aws.vpc.SecurityGroupIngressRule(
                child_name(name, "endpoints-https-pods"),
                aws.vpc.SecurityGroupIngressRuleArgs(
                    security_group_id=endpoint_sg.id,
                    ip_protocol="tcp",
                    from_port=HTTPS_PORT,
                    to_port=HTTPS_PORT,
                    cidr_ipv4=args.spec.pod_network.cidr,
                    description="HTTPS from the pod subnets",
                ),
                opts=child,
            )
        for service in INTERFACE_ENDPOINT_SERVICES:
            aws.ec2.VpcEndpoint(
                child_name(name, _key(service)),
                aws.ec2.VpcEndpointArgs(
                    vpc_id=vpc_id,
                    service_name=endpoint_service_name(args.region, service),
                    vpc_endpoint_type="Interface",
                    private_dns_enabled=True,
                    subnet_ids=list(private_subnet_ids.values()),
                    security_group_ids=[endpoint_sg.id],
                    policy=pulumi.Output.json_dumps(
                        account_id.apply(lambda account, service=service: interface_endpoint_policy(service, account))
                    ),
                    tags={"Name": physical_name(args.base_name, _key(service))},
                ),
                opts=child,
            )
        return endpoint_sg.id

    def _efa_security_group(self, name: str, args: NetworkArgs, vpc_id: pulumi.Input[str]) -> pulumi.Output[str]:
        """The EFA group: all traffic to and from the group itself, ingress AND egress (EC2 User Guide, "Get
        started with EFA and NCCL", step "Prepare an EFA-enabled security group"). GPU launch templates attach it.
        Returns its id."""
        child = pulumi.ResourceOptions(parent=self)
        efa_sg = aws.ec2.SecurityGroup(
            child_name(name, "efa-sg"),
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc_id,
                description="EFA: all traffic to and from members of this group",
                tags={"Name": physical_name(args.base_name, "efa")},
            ),
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            child_name(name, "efa-self-ingress"),
            aws.vpc.SecurityGroupIngressRuleArgs(
                security_group_id=efa_sg.id,
                referenced_security_group_id=efa_sg.id,
                ip_protocol="-1",
                description="EFA: all traffic from members of this group",
            ),
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            child_name(name, "efa-self-egress"),
            aws.vpc.SecurityGroupEgressRuleArgs(
                security_group_id=efa_sg.id,
                referenced_security_group_id=efa_sg.id,
                ip_protocol="-1",
                description="EFA: all traffic to members of this group",
            ),
            opts=child,
        )
        return efa_sg.id

    def _workload_security_group(self, name: str, args: NetworkArgs, vpc_id: pulumi.Input[str]) -> pulumi.Output[str]:
        """Workload egress; returns the group's id.

        The EFA group only talks to itself (pulumi-aws drops the default allow-all egress rule of every group it
        creates), so anything that carries no other group -- Slurm HyperPod nodes, SageMaker training jobs --
        would reach neither the S3 gateway endpoint, the interface endpoints, NAT, nor FSx (TCP 988, 1018-1023).
        This group gives them egress to anywhere, the usual choice for nodes behind NAT (the egress an EKS
        cluster security group or a new default group has): the private subnets have no inbound path from the
        internet, and a port list would break on every new dependency (pip mirrors, Hugging Face, container
        registries, experiment trackers). No ingress: replies are admitted statefully, and peer traffic comes
        through the EFA group."""
        child = pulumi.ResourceOptions(parent=self)
        workload_sg = aws.ec2.SecurityGroup(
            child_name(name, "workload-sg"),
            aws.ec2.SecurityGroupArgs(
                vpc_id=vpc_id,
                description="Training workloads: egress to AWS endpoints, FSx, NAT; no ingress",
                tags={"Name": physical_name(args.base_name, "workload")},
            ),
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            child_name(name, "workload-egress"),
            aws.vpc.SecurityGroupEgressRuleArgs(
                security_group_id=workload_sg.id,
                cidr_ipv4=ANYWHERE_IPV4,
                ip_protocol="-1",
                description="All IPv4 egress: endpoints, FSx for Lustre, NAT",
            ),
            opts=child,
        )
        return workload_sg.id

    def _flow_logs(self, name: str, args: NetworkArgs, vpc_id: pulumi.Input[str]) -> pulumi.Output[str]:
        """VPC flow logs to a CloudWatch log group, delivered through a role only the flow-logs service of
        this account may assume."""
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self)
        log_group = aws.cloudwatch.LogGroup(
            child_name(name, "flow-logs"),
            aws.cloudwatch.LogGroupArgs(
                name=flow_log_group_name(args.base_name),
                retention_in_days=spec.flow_logs_retention_days,
                kms_key_id=args.log_kms_key_arn,
            ),
            opts=child,
        )
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        trust = _flow_logs_trust_policy(account_id, args.region)
        role = aws.iam.Role(
            child_name(name, "flow-logs-role"),
            aws.iam.RoleArgs(assume_role_policy=trust, description=f"VPC flow logs of {args.base_name} to CloudWatch"),
            opts=child,
        )
        delivery = aws.iam.RolePolicy(
            child_name(name, "flow-logs-delivery"),
            aws.iam.RolePolicyArgs(
                role=role.id,
                policy=_flow_logs_delivery_policy(log_group.arn),
            ),
            opts=child,
        )
        aws.ec2.FlowLog(
            child_name(name, "flow-log"),
            aws.ec2.FlowLogArgs(
                vpc_id=vpc_id,
                traffic_type=spec.flow_logs_traffic_type,
                log_destination_type="cloud-watch-logs",
                log_destination=log_group.arn,
                iam_role_arn=role.arn,
                max_aggregation_interval=60,  # one-minute records; the default is ten
                tags={"Name": physical_name(args.base_name, "flow-log")},
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[delivery]),
        )
        return log_group.name


def _flow_logs_trust_policy(account_id: pulumi.Output[str], region: str) -> pulumi.Output[str]:
    """Only this account's flow logs may assume the delivery role: the confused-deputy guard (VPC User Guide,
    "IAM role for publishing flow logs to CloudWatch Logs")."""
    return pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                    "Condition": {
                        "StringEquals": {"aws:SourceAccount": account_id},
                        "ArnLike": {
                            "aws:SourceArn": pulumi.Output.concat(
                                "arn:",
                                aws_partition(region),
                                ":ec2:",
                                region,
                                ":",
                                account_id,
                                ":vpc-flow-log/*",
                            )
                        },
                    },
                }
            ],
        }
    )


def _flow_logs_delivery_policy(log_group_arn: pulumi.Output[str]) -> pulumi.Output[str]:
    """What the delivery role may do: write into the flow-log group, and list log groups."""
    return pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                    "Resource": [log_group_arn, pulumi.Output.concat(log_group_arn, ":*")],
                },
                # Settled dispute: logs:DescribeLogGroups is a List action with no resource type in
                # the Service Authorization Reference (CloudWatch Logs), so a statement scoping it
                # to one log group ARN never matches and the call is denied; it takes "*" (as in
                # the VPC guide's flow-log role policy). It only lists group names and settings.
                {"Effect": "Allow", "Action": "logs:DescribeLogGroups", "Resource": "*"},
            ],
        }
    )
