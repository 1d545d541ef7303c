"""What an AWS account must hold for a stack to deploy, judged from the answers AWS gives: pure functions.

The offline plan proves the shape of every request; these rules judge the account's *state* (who the caller
is, what exists, what is offered, what quotas and reservations allow). Two callers ask AWS and hand the answers
here, so both print the same message for the same fact: `python -m trainstack preflight` (boto3, read-only calls,
trainstack/preflight/) and the program itself under a real `pulumi preview`/`up` (pulumi-aws invokes,
components/account_checks.py). Each function returns the problem as one line (naming the stack-file key, the
value, what AWS answered and what to do), or None when the account is fine.

No boto3, no Pulumi here: facts in, sentences out.
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from stacks.catalog import CATALOG
from stacks.schema import CapacityType, StackConfig

# The EC2 Auto Scaling service-linked role that launches EKS managed node group instances; the node-volume KMS
# key's policy names it, and KMS refuses a policy whose principal does not exist (components/eks/eks.py). IAM User
# Guide, "Using service-linked roles for Amazon EC2 Auto Scaling": role name and path.
AUTOSCALING_ROLE_NAME = "AWSServiceRoleForAutoScaling"
AUTOSCALING_ROLE_PATH = "/aws-service-role/autoscaling.amazonaws.com/"
AUTOSCALING_SERVICE_LINKED_ROLE = AUTOSCALING_ROLE_PATH.lstrip("/") + AUTOSCALING_ROLE_NAME
CREATE_AUTOSCALING_ROLE = "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com"

# A check the program makes during a real preview or up (components/account_checks.py) that the offline plan's
# mocks, which see no account, cannot answer: its status there, as the plan report shows it.
NOT_CHECKED_OFFLINE = "not checked (offline)"

_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):(?P<account>\d{12})?:"
)


def account_of(arn: str) -> str | None:
    """The 12-digit account of an ARN, or None (S3 bucket ARNs carry none)."""
    match = _ARN.match(arn)
    return match["account"] if match else None


def role_name(arn: str) -> str:
    """The role's name: the last segment of `arn:aws:iam::<account>:role/<path/>name`."""
    return arn.split(":role/", 1)[1].rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------------------------- identity


def stack_accounts(stack: StackConfig) -> list[str]:
    """The accounts eks.admin_role_arns name: the account the stack is meant for."""
    return sorted({a for arn in stack.eks.admin_role_arns if (a := account_of(arn))})


def principals(stack: StackConfig) -> Iterator[tuple[str, str]]:
    """(stack-file key, ARN) of every IAM principal the stack names, in key order."""
    for i, arn in enumerate(stack.eks.admin_role_arns):
        yield f"eks.admin_role_arns[{i}]", arn
    for i, arn in enumerate(stack.security.key_administrator_arns):
        yield f"security.key_administrator_arns[{i}]", arn
    for i, arn in enumerate(stack.security.outside_vpc_data_role_arns):
        yield f"security.outside_vpc_data_role_arns[{i}]", arn
    for t, team in enumerate(stack.kubernetes.teams):
        for i, arn in enumerate(team.member_role_arns):
            yield f"kubernetes.teams[{t}].member_role_arns[{i}]", arn


def account_problem(caller_account: str, stack_accounts: Sequence[str]) -> str | None:
    """The credentials must be for the account the stack's ARNs name (eks.admin_role_arns)."""
    if not stack_accounts or caller_account in stack_accounts:
        return None
    return (
        f"the credentials are for account {caller_account}, but eks.admin_role_arns names account "
        f"{', '.join(sorted(set(stack_accounts)))}: every resource would land in the wrong account; use "
        "credentials for the stack's account (AWS_PROFILE, or assume a role there)"
    )


def caller_role(caller_arn: str) -> tuple[str, str] | None:
    """(account, role name) of an STS assumed-role session ARN, or None for any other principal."""
    match = re.match(r"^arn:aws[a-z-]*:sts::(\d{12}):assumed-role/([^/]+)/", caller_arn)
    return (match[1], match[2]) if match else None


def caller_admin_problem(caller_arn: str, admin_role_arns: Sequence[str]) -> str | None:
    """The identity running `pulumi up` must be one of eks.admin_role_arns: the cluster gives its creator no
    implicit admin, and the Kubernetes provider authenticates as that identity (components/eks/eks.py). A session ARN
    carries no role path, so a role is matched by account and name (names are unique in an account)."""
    session = caller_role(caller_arn)
    if session is not None:
        for arn in admin_role_arns:
            if account_of(arn) == session[0] and role_name(arn) == session[1]:
                return None
    return (
        f"the caller {caller_arn} is not one of eks.admin_role_arns ({', '.join(admin_role_arns)}): the cluster "
        "gives its creator no admin, so `pulumi up` would fail Unauthorized at the first Kubernetes resource; run "
        "it as one of those roles (a profile with role_arn, or aws sts assume-role)"
    )


# What a missing principal breaks, by the stack-file key that names it.
PRINCIPAL_USES: dict[str, str] = {
    "eks.admin_role_arns": "its EKS access entry cannot be created (the principal must exist)",
    "security.key_administrator_arns": "KMS refuses a key policy naming a principal that does not exist "
    "(MalformedPolicyDocumentException)",
    "security.outside_vpc_data_role_arns": "S3 refuses a bucket policy naming a principal that does not exist "
    "(MalformedPolicy: Invalid principal in policy)",
    "kubernetes.teams.member_role_arns": "its EKS access entry cannot be created (the principal must exist)",
}


def principal_problem(key: str, arn: str, found_arn: str | None) -> str | None:
    """A principal the stack names must exist, under exactly that ARN (a path is part of it)."""
    use = PRINCIPAL_USES.get(re.sub(r"\[\d+\]", "", key), "it is named in the stack")
    if found_arn is None:
        return f"{key} = {arn}: no such principal in account {account_of(arn)}; {use}; create it or fix the ARN"
    if found_arn != arn:
        return f"{key} = {arn}: the account has it as {found_arn} (another path); policies need the exact ARN"
    return None


def autoscaling_role_problem(found: bool) -> str | None:
    if found:
        return None
    return (
        f"the EC2 Auto Scaling service-linked role ({AUTOSCALING_ROLE_NAME}) does not exist: the node-volume KMS "
        "key's policy names it and KMS refuses a policy with a missing principal; create it once per account: "
        f"{CREATE_AUTOSCALING_ROLE}"
    )


# ------------------------------------------------------------------------------------------------ offerings


def offering_problem(key: str, instance_type: str, availability_zone: str, offered_in: Iterable[str]) -> str | None:
    """EC2 must offer the type in the AZ (DescribeInstanceTypeOfferings, location type availability-zone): AZ
    names map to different physical zones in each account, so only the account's own answer counts."""
    zones = sorted(set(offered_in))
    if availability_zone in zones:
        return None
    where = f"it is offered in {', '.join(zones)}" if zones else "it is offered in no AZ of this region"
    return (
        f"{key}: {instance_type} is not offered in {availability_zone} for this account ({where}); move the "
        "group to one of those AZs or pick another type"
    )


# --------------------------------------------------------------------------------------------------- quotas


@dataclass(frozen=True)
class QuotaClass:
    """One EC2 vCPU quota: instances whose family starts with `prefixes` count against it."""

    label: str
    on_demand_name: str
    on_demand_code: str
    spot_name: str
    spot_code: str


# The EC2 vCPU quotas (Service Quotas, service code ec2) by instance family. Names as AWS lists them in Service
# Quotas and the EC2 User Guide ("Amazon EC2 service quotas": On-Demand Instance quotas, Spot Instance quotas);
# codes as public `aws service-quotas list-service-quotas --service-code ec2` listings show them. Sources disagree
# on two Trainium codes (L-2C3B7624 in two listings, L-2C49D5F8 in one; L-6B0D517C in two, L-5480EFD2 in one):
# the majority is kept, and preflight compares the name AWS returns for each code with the name here, so a wrong
# code fails loudly instead of judging another quota.
QUOTA_CLASSES: tuple[tuple[tuple[str, ...], QuotaClass], ...] = (
    (
        ("trn",),
        QuotaClass(
            "Trn", "Running On-Demand Trn instances", "L-2C3B7624", "All Trn Spot Instance Requests", "L-6B0D517C"
        ),
    ),
    (
        ("p",),
        QuotaClass("P", "Running On-Demand P instances", "L-417A185B", "All P Spot Instance Requests", "L-7212CCBC"),
    ),
    (
        ("g", "vt"),
        QuotaClass(
            "G and VT",
            "Running On-Demand G and VT instances",
            "L-DB2E81BA",
            "All G and VT Spot Instance Requests",
            "L-3819A6DF",
        ),
    ),
    (
        ("a", "c", "d", "h", "i", "m", "r", "t", "z"),
        QuotaClass(
            "Standard",
            "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
            "L-1216C47A",
            "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
            "L-34B43A08",
        ),
    ),
)
# Families with quotas of their own that a first letter above would misfile (DL, HPC and Inf start with d, h, i).
_OWN_QUOTA = ("dl", "hpc", "inf", "u-", "x", "f")


def quota_class(instance_type: str) -> QuotaClass | None:
    """The vCPU quota an instance type counts against, or None for a family trainstack has no quota for."""
    family = instance_type.split(".", 1)[0]
    if family.startswith(_OWN_QUOTA):
        return None
    for prefixes, found in QUOTA_CLASSES:
        if family.startswith(prefixes):
            return found
    return None


@dataclass(frozen=True)
class QuotaDemand:
    """vCPUs a stack launches against one quota: who, how many instances at max, vCPUs each."""

    who: str  # stack-file key of the group
    instance_type: str
    instances: int
    vcpus_each: int

    @property
    def vcpus(self) -> int:
        return self.instances * self.vcpus_each


def quota_demands(stack: StackConfig, system_vcpus: int | None) -> dict[tuple[str, bool], list[QuotaDemand]]:
    """vCPUs at max size per (quota class label, spot), for the GPU groups that launch On-Demand or Spot, and the
    system nodes when `system_vcpus` is known (their type is not in the catalog). Groups on a reservation or Capacity
    Block launch into capacity already held (judged by the reservation check) and are left out: the quota counted
    when the reservation was made (verify against the EC2 guide's quota pages)."""
    found: dict[tuple[str, bool], list[QuotaDemand]] = defaultdict(list)
    for i, group in enumerate(stack.gpu_node_groups):
        found_class = quota_class(group.instance_type)
        if group.capacity.reserved or found_class is None:
            continue
        spot = group.capacity.type is CapacityType.SPOT
        demand = QuotaDemand(
            f"gpu_node_groups[{i}]", group.instance_type, group.max_size, CATALOG[group.instance_type].vcpus
        )
        found[(found_class.label, spot)].append(demand)
    system = stack.eks.system_node_group
    system_class = quota_class(system.instance_type)
    if system_class is not None and system_vcpus is not None:
        found[(system_class.label, False)].append(
            QuotaDemand("eks.system_node_group", system.instance_type, system.max_size, system_vcpus)
        )
    return dict(found)


def quota_check_id(label: str, spot: bool) -> str:
    """The check's id for one quota class: `compute.quota.g-and-vt-spot`."""
    return f"compute.quota.{label.lower().replace(' ', '-')}{'-spot' if spot else ''}"


def quota_problem(
    name: str, code: str, value: float, demand: Sequence[QuotaDemand], running_elsewhere: int | None
) -> str | None:
    """The quota must cover the stack's groups at max size plus what already runs outside the stack."""
    need = sum(d.vcpus for d in demand)
    others = running_elsewhere or 0
    if need + others <= value:
        return None
    parts = ", ".join(f"{d.who}: {d.instances} x {d.instance_type} = {d.vcpus:,}" for d in demand)
    running = f"; {others:,} already run in the region outside this stack" if others else ""
    return (
        f"'{name}' ({code}) is {value:,.0f} vCPUs, but the stack needs {need:,} at max size ({parts}){running}: "
        f"launches fail with VcpuLimitExceeded; request {need + others:,}: aws service-quotas "
        f"request-service-quota-increase --service-code ec2 --quota-code {code} --desired-value {need + others}"
    )


# ----------------------------------------------------------------------------------------------- reservations


@dataclass(frozen=True)
class Reservation:
    """What DescribeCapacityReservations says about one reservation (EC2 API, CapacityReservation)."""

    id: str
    instance_type: str
    availability_zone: str
    state: str  # active | expired | cancelled | pending | failed | scheduled | payment-pending | ...
    reservation_type: str  # default (an ODCR) | capacity-block
    total: int
    available: int
    tenancy: str
    platform: str
    start: datetime.datetime | None
    end: datetime.datetime | None
    placement_group_arn: str | None


CAPACITY_BLOCK = "capacity-block"


def reservation_problems(
    key: str,
    instance_type: str,
    availability_zone: str,
    capacity_block: bool,
    placement_group: str | None,
    desired: int,
    found: Reservation | None,
    reservation_id: str,
    running_in_it: int = 0,
) -> list[str]:
    """Everything that makes a group's launches into its reservation fail (each one line). `running_in_it`: the
    stack's own nodes already running in the reservation (a day-2 `pulumi up`), which count as the group's, not as
    taken."""
    if found is None:
        return [
            f"{key}.reservation_id = {reservation_id}: no such reservation in this account and region "
            "(aws ec2 describe-capacity-reservations); check the id, the account and the region"
        ]
    problems: list[str] = []
    kind = "a Capacity Block" if found.reservation_type == CAPACITY_BLOCK else "an On-Demand Capacity Reservation"
    if capacity_block != (found.reservation_type == CAPACITY_BLOCK):
        want = "capacity_block" if found.reservation_type == CAPACITY_BLOCK else "reservation"
        problems.append(f"{key}.type: {found.id} is {kind}; set capacity.type to {want}")
    if found.instance_type != instance_type:
        problems.append(
            f"{key}.reservation_id = {found.id} reserves {found.instance_type}, the group runs {instance_type}"
        )
    if found.availability_zone != availability_zone:
        problems.append(
            f"{key}.reservation_availability_zone: {found.id} is in {found.availability_zone}, the group is in "
            f"{availability_zone}: a reservation fixes the AZ"
        )
    if found.state != "active":
        when = f" (starts {found.start:%Y-%m-%d %H:%M} UTC)" if found.start is not None else ""
        problems.append(
            f"{key}.reservation_id = {found.id} is {found.state}{when}: nodes cannot launch into it until it is "
            "active; deploy the group then, or keep desired_size 0 until it starts"
        )
    if found.tenancy != "default":
        problems.append(f"{key}.reservation_id = {found.id} is for {found.tenancy} tenancy; node groups launch default")
    if found.platform != "Linux/UNIX":
        problems.append(f"{key}.reservation_id = {found.id} is for {found.platform}; EKS AMIs are Linux/UNIX")
    if found.available + running_in_it < desired:
        own = f" (and {running_in_it} run this stack's nodes)" if running_in_it else ""
        problems.append(
            f"{key}.reservation_id = {found.id} has {found.available} of {found.total} instances free{own}, the "
            f"group starts {desired}: free them or lower desired_size"
        )
    pg = found.placement_group_arn.rsplit("/", 1)[-1] if found.placement_group_arn else None
    if placement_group is not None and pg != placement_group:
        made = f"placement group {pg}" if pg else "no placement group"
        problems.append(
            f"{key}.reservation_placement_group = {placement_group}: {found.id} was made in {made}; "
            "launches outside it do not use the reservation"
        )
    return problems


# ------------------------------------------------------------------------------------------------ EKS


EKS_CLUSTER_TAG = "eks:cluster-name"  # EKS tags managed node group instances with their cluster's name (the stack's)


EKS_CREATES = ("STANDARD_SUPPORT", "EXTENDED_SUPPORT")  # DescribeClusterVersions versionStatus (EKS API Reference)


def eks_version_problem(version: str, region: str, status: str) -> str | None:
    """EKS must create clusters on eks.version in the region: DescribeClusterVersions lists it in standard or
    extended support (`status` is its versionStatus, "" when it is not listed)."""
    if status in EKS_CREATES:
        return None
    return (
        f"eks.version {version}: EKS does not create clusters on it in {region} ({status or 'not listed'}); pick a "
        "version `aws eks describe-cluster-versions` lists"
    )


# ----------------------------------------------------------------------------------------------- add-ons


def addon_problem(addon: str, build: str, kubernetes_version: str, offered: Sequence[str]) -> str | None:
    """EKS must offer the pinned build for the cluster's Kubernetes version (DescribeAddonVersions)."""
    if build in offered:
        return None
    newest = f"; offered: {', '.join(offered[:3])}{' ...' if len(offered) > 3 else ''}" if offered else ""
    return (
        f"EKS offers no {addon} build {build} for Kubernetes {kubernetes_version} in this region{newest}: "
        f"CreateAddon would fail; pin an offered build (aws eks describe-addon-versions --kubernetes-version "
        f"{kubernetes_version} --addon-name {addon})"
    )


# ------------------------------------------------------------------------------------------------- subnets


@dataclass(frozen=True)
class Subnet:
    """What DescribeSubnets says about one subnet."""

    id: str
    vpc_id: str
    availability_zone: str
    free_addresses: int  # AvailableIpAddressCount: AWS's 5 reserved addresses already left out
    maps_public_ip: bool


def subnet_problems(
    key: str, subnet_id: str, availability_zone: str, vpc_id: str, nodes: int, per_node: int, found: Subnet | None
) -> list[str]:
    """An existing private subnet must exist in the VPC and AZ the stack says, stay private, and have a free
    address for every node at max size and each pod the VPC CNI may place on it (`per_node` each)."""
    if found is None:
        return [f"{key} = {subnet_id}: no such subnet in this account and region"]
    problems: list[str] = []
    if found.vpc_id != vpc_id:
        problems.append(f"{key} = {subnet_id} is in {found.vpc_id}, not network.existing_vpc.vpc_id {vpc_id}")
    if found.availability_zone != availability_zone:
        problems.append(f"{key} = {subnet_id} is in {found.availability_zone}, not {availability_zone}")
    if found.maps_public_ip:
        problems.append(
            f"{key} = {subnet_id} maps public IPs on launch: nodes there would be reachable; use a private one"
        )
    if found.free_addresses < nodes * per_node:
        problems.append(
            f"{key} = {subnet_id} has {found.free_addresses:,} free addresses, but {nodes} nodes at max size need up "
            f"to {nodes * per_node:,} (1 + {per_node - 1} pods each): nodes and pods fail to get addresses; free "
            "addresses, add a CIDR, or lower max sizes"
        )
    return problems
