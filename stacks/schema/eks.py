"""`eks`: the control plane, its pinned add-ons and the system node group."""

from __future__ import annotations

import ipaddress
from collections import Counter
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from stacks.schema.base import AmiReleaseVersion, RetentionDays, RoleArn, Spec
from stacks.schema.values import Cidr, Limits


class LogType(StrEnum):
    API = "api"
    AUDIT = "audit"
    AUTHENTICATOR = "authenticator"
    CONTROLLER_MANAGER = "controllerManager"
    SCHEDULER = "scheduler"


class AuthenticationMode(StrEnum):
    API = "API"
    API_AND_CONFIG_MAP = "API_AND_CONFIG_MAP"


ADDON_VERSION = r"^v\d+\.\d+\.\d+-eksbuild\.\d+$"

# Versions EKS still creates clusters on as of 2026-11-29 (EKS release calendar; endoflife.date/amazon-eks):
# 1.35 and 1.36 on standard support, 1.34 until 2026-12-02, 1.32-1.33 on extended support only; 1.31 left
# extended support on 2026-11-26. The policy pack (eks-version-allowed) narrows this to standard support.
KubernetesVersion = Literal["1.32", "1.33", "1.34", "1.35", "1.36"]

# A node group's own Kubernetes version (EKS Nodegroup `version`): left out, the cluster's at the group's creation,
# kept after that (components ignore later changes), so moving eks.version moves the control plane alone and each
# group moves when its own key is set: the upgrade recipe's separate steps (docs/day2.md).
NODE_KUBERNETES_VERSION_HELP = (
    "Kubernetes minor version of the group's nodes. Left out: the cluster's (eks.version) when the group is "
    "created, and the group keeps it when eks.version moves; set it to move the group after the control plane "
    "(never newer than eks.version, at most 3 minors older; docs/day2.md, Upgrade EKS)."
)


class EksAddonVersions(Spec):
    """EKS managed add-on versions, pinned (`aws eks describe-addon-versions` lists them per cluster version)."""

    vpc_cni: str = Field(pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="vpc-cni add-on version.")
    coredns: str = Field(pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="coredns add-on version.")
    kube_proxy: str = Field(
        pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="kube-proxy add-on version."
    )
    pod_identity_agent: str = Field(
        pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="eks-pod-identity-agent add-on version."
    )
    ebs_csi_driver: str = Field(
        pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="aws-ebs-csi-driver add-on version."
    )
    fsx_csi_driver: str = Field(
        pattern=ADDON_VERSION, examples=["v1.22.4-eksbuild.3"], description="aws-fsx-csi-driver add-on version."
    )


# The EKS add-on name of each `eks.addons` key (EKS API addonName; the names components/eks/eks.py and
# components/storage/lustre_volume.py create, a test keeps them equal).
ADDON_NAMES: dict[str, str] = {
    "vpc_cni": "vpc-cni",
    "coredns": "coredns",
    "kube_proxy": "kube-proxy",
    "pod_identity_agent": "eks-pod-identity-agent",
    "ebs_csi_driver": "aws-ebs-csi-driver",
    "fsx_csi_driver": "aws-fsx-csi-driver",
}


class SystemNodeGroupSpec(Spec):
    """The small on-demand CPU node group for controllers (CoreDNS, Kueue, operators)."""

    instance_type: str = Field(
        default="m7i.xlarge", pattern=r"^[a-z0-9-]+\.[a-z0-9]+$", examples=["m7i.xlarge"], description="CPU type."
    )
    min_size: int = Field(default=2, ge=1, le=Limits.NODES_PER_GROUP, description="Minimum nodes.")
    desired_size: int = Field(default=2, ge=1, le=Limits.NODES_PER_GROUP, description="Nodes at creation.")
    max_size: int = Field(default=4, ge=1, le=Limits.NODES_PER_GROUP, description="Maximum nodes.")
    disk_size_gib: int = Field(default=100, ge=20, le=16384, description="gp3 root volume in GiB.")
    ami_release_version: AmiReleaseVersion | None = Field(
        default=None, description="Pinned EKS AL2023 AMI release (e.g. 1.36.0-20260915); left out, the newest."
    )
    kubernetes_version: KubernetesVersion | None = Field(default=None, description=NODE_KUBERNETES_VERSION_HELP)

    @model_validator(mode="after")
    def _sizes(self) -> Self:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"need min_size <= desired_size <= max_size, got {self.min_size}, {self.desired_size}, {self.max_size}"
            )
        return self


# No office or VPN egress range is as large as a /8 (16,777,216 addresses); a list that opens the public endpoint
# to that much of the internet is open to the internet, however it is spelt (0.0.0.0/1 + 128.0.0.0/1 is 0.0.0.0/0).
MAX_PUBLIC_ENDPOINT_ADDRESSES = 2**24


def cidr_union_addresses(cidrs: list[str]) -> int:
    """Addresses the union of IPv4 `cidrs` covers, overlaps counted once."""
    networks = [ipaddress.IPv4Network(c) for c in cidrs]
    return sum(n.num_addresses for n in ipaddress.collapse_addresses(networks))


AdminRoleArn = RoleArn  # cluster-admin goes to exactly one role each


class EksSpec(Spec):
    """The EKS control plane and its core add-ons."""

    version: KubernetesVersion = Field(
        description="Kubernetes minor version of the control plane (node groups keep their own: kubernetes_version)."
    )
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        default="STANDARD", description="Upgrade policy; EXTENDED support is billed extra per cluster hour."
    )
    authentication_mode: AuthenticationMode = Field(
        default=AuthenticationMode.API, description="Cluster access: access entries only (API) or with aws-auth."
    )
    admin_role_arns: list[AdminRoleArn] = Field(
        min_length=1,
        max_length=Limits.ADMIN_ROLES,
        examples=[["arn:aws:iam::111122223333:role/ml-platform-admin"]],
        description="IAM roles given cluster-admin through access entries; at least one. The cluster gives its creator "
        "no implicit admin, so the identity running `pulumi up` must be one of these roles (or assume one): the "
        "Kubernetes provider authenticates as that identity.",
    )
    endpoint_public_access: bool = Field(
        description="Whether the API endpoint is also reachable from the internet (the private one always is). "
        "With false, `pulumi up` must run from inside the VPC or a network joined to it: the Kubernetes "
        "provider talks to the API endpoint."
    )
    public_access_cidrs: list[Cidr] = Field(
        default_factory=list,
        max_length=Limits.PUBLIC_ACCESS_CIDRS,
        description="CIDRs allowed to the public endpoint; required when it is public.",
    )
    control_plane_log_types: list[LogType] = Field(
        default_factory=lambda: [LogType.API, LogType.AUDIT, LogType.AUTHENTICATOR],
        description="Control-plane log types sent to CloudWatch.",
    )
    log_retention_days: RetentionDays = Field(
        default=90, description="CloudWatch retention for control-plane logs (a CloudWatch-allowed value)."
    )
    addons: EksAddonVersions = Field(description="Pinned EKS add-on versions.")
    system_node_group: SystemNodeGroupSpec = Field(
        default_factory=SystemNodeGroupSpec, description="CPU nodes for controllers."
    )

    @field_validator("admin_role_arns")
    @classmethod
    def _distinct_admins(cls, value: list[str]) -> list[str]:
        # Each ARN becomes one access entry, keyed by the role: a repeat would be a second entry for one principal
        # (EKS CreateAccessEntry: ResourceInUseException). IAM role names are not case-sensitive.
        counts = Counter(arn.lower() for arn in value)
        repeated = sorted({arn for arn in value if counts[arn.lower()] > 1})
        if repeated:
            raise ValueError(
                f"lists {repeated} more than once (IAM role names are not case-sensitive): name each role once"
            )
        return value

    @model_validator(mode="after")
    def _endpoint(self) -> Self:
        if self.endpoint_public_access:
            if not self.public_access_cidrs:
                raise ValueError("endpoint_public_access is true but public_access_cidrs is empty: list the CIDRs")
            covered = cidr_union_addresses(self.public_access_cidrs)
            if covered > MAX_PUBLIC_ENDPOINT_ADDRESSES:
                raise ValueError(
                    f"public_access_cidrs {self.public_access_cidrs} together cover {covered:,} addresses "
                    f"({covered / 2**32:.1%} of IPv4), more than a /8: that is the internet, however it is spelt; "
                    "list only the office or VPN ranges that need the API, such as 203.0.113.0/24"
                )
        elif self.public_access_cidrs:
            raise ValueError("public_access_cidrs is set but endpoint_public_access is false")
        if len(set(self.control_plane_log_types)) != len(self.control_plane_log_types):
            raise ValueError("control_plane_log_types has duplicates")
        return self
