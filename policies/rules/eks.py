"""EKS control plane and identity rules."""

from __future__ import annotations

from pulumi_policy import ResourceValidationArgs, Severity, StackValidationArgs

from ..address_space import describe, public_addresses
from .base import (
    EKS_ADDON,
    EKS_CLUSTER,
    IAM_OIDC_PROVIDER,
    Report,
    get,
    graph,
    has,
    items,
    resource_rule,
    stack_rule,
    truthy,
)

WORLD = ("0.0.0.0/0", "::/0")
ALL_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


@resource_rule(
    name="eks-endpoint-not-public",
    description="The EKS API endpoint is private, or public only to listed CIDRs outside prod: an open "
    "endpoint exposes the cluster's authentication to the internet (CIS EKS 5.4.1/5.4.2, CKV_AWS_38/39).",
    severity=Severity.CRITICAL,
    types=[EKS_CLUSTER],
    config={
        "allowRestrictedPublic": {
            "type": "boolean",
            "default": False,
            "description": "Allow a public endpoint limited to publicAccessCidrs (none of them 0.0.0.0/0).",
        },
        "maxPublicAddresses": {
            "type": "integer",
            "minimum": 0,
            "default": 65536,
            "description": "Most public addresses the union of publicAccessCidrs may cover where a restricted "
            "public endpoint is allowed (65536: a /16). Judged by address space, not spelling: 0.0.0.0/1 plus "
            "128.0.0.0/1 is the internet. Source: CIS EKS 5.4.1 (restrict the endpoint to the CIDRs that need it).",
        },
    },
    remediation="Set eks.endpoint_public_access false (prod) or list only the office/VPN CIDRs.",
)
def eks_endpoint_not_public(args: ResourceValidationArgs, report: Report) -> None:
    vpc = get(args.props, "vpcConfig", {})
    if not truthy(get(vpc, "endpointPrivateAccess")):
        report("vpcConfig.endpointPrivateAccess is not true: nodes reach the API over the internet.")
    public = get(vpc, "endpointPublicAccess")
    if public is not None and not truthy(public):
        return
    # A missing endpointPublicAccess means public: that is the AWS default.
    cidrs = [str(c) for c in items(get(vpc, "publicAccessCidrs"))]
    if not args.get_config().get("allowRestrictedPublic", False):
        report(
            f"The API endpoint is public (publicAccessCidrs {cidrs or 'unset, i.e. 0.0.0.0/0'}); this "
            "environment requires endpointPublicAccess false."
        )
    elif not cidrs or any(c in WORLD for c in cidrs):
        report(f"The API endpoint is public to the world (publicAccessCidrs {cidrs or 'unset'}).")
    elif (covered := public_addresses(cidrs)) > (limit := int(args.get_config().get("maxPublicAddresses", 65536))):
        report(
            f"publicAccessCidrs {cidrs} open the API endpoint to {describe(covered)}; at most {limit:,} public "
            "addresses are allowed here (eks.public_access_cidrs: list only the office or VPN ranges)."
        )


@resource_rule(
    name="eks-secrets-kms",
    description="Kubernetes secrets are envelope-encrypted with a customer KMS key, so etcd backups and "
    "snapshots never hold them in clear (CIS EKS 5.3.1, CKV_AWS_58).",
    severity=Severity.HIGH,
    types=[EKS_CLUSTER],
)
def eks_secrets_kms(args: ResourceValidationArgs, report: Report) -> None:
    encryption = get(args.props, "encryptionConfig")
    if encryption is None:
        report("encryptionConfig is not set: secrets are not encrypted with a KMS key.")
        return
    if "secrets" not in [str(r) for r in items(get(encryption, "resources"))]:
        report("encryptionConfig.resources does not include 'secrets'.")
    if not has(get(encryption, "provider"), "keyArn"):
        report("encryptionConfig.provider.keyArn is not set.")


@resource_rule(
    name="eks-control-plane-logs",
    description="Control-plane logs (at least api, audit and authenticator; all five in prod) go to "
    "CloudWatch: without them nobody can tell who did what to the cluster (CIS EKS 2.1.1, CKV_AWS_37).",
    severity=Severity.MEDIUM,
    types=[EKS_CLUSTER],
    config={
        "requiredLogTypes": {
            "type": "array",
            "items": {"type": "string", "enum": ALL_LOG_TYPES},
            "uniqueItems": True,
            "default": ["api", "audit", "authenticator"],
            "description": "Log types that must be enabled.",
        }
    },
)
def eks_control_plane_logs(args: ResourceValidationArgs, report: Report) -> None:
    enabled = {str(t) for t in items(get(args.props, "enabledClusterLogTypes"))}
    required = list(args.get_config().get("requiredLogTypes", ["api", "audit", "authenticator"]))
    missing = [t for t in required if t not in enabled]
    if missing:
        report(f"enabledClusterLogTypes lacks {missing} (has {sorted(enabled)}).")


@resource_rule(
    name="eks-access-entries",
    description="Cluster access is managed with EKS access entries (authenticationMode API), not the "
    "aws-auth ConfigMap, and in prod the creator gets no implicit cluster-admin (CIS EKS 5.5.1).",
    severity=Severity.MEDIUM,
    types=[EKS_CLUSTER],
    config={
        "allowConfigMap": {
            "type": "boolean",
            "default": False,
            "description": "Also accept API_AND_CONFIG_MAP (migration from aws-auth).",
        },
        "forbidCreatorAdmin": {
            "type": "boolean",
            "default": True,
            "description": "Require bootstrapClusterCreatorAdminPermissions false (its AWS default is true).",
        },
    },
)
def eks_access_entries(args: ResourceValidationArgs, report: Report) -> None:
    access = get(args.props, "accessConfig", {})
    mode = get(access, "authenticationMode", "CONFIG_MAP")  # EKS's default when unset
    allowed = {"API", "API_AND_CONFIG_MAP"} if args.get_config().get("allowConfigMap", False) else {"API"}
    if mode not in allowed:
        report(f"accessConfig.authenticationMode is {mode}; allowed here: {sorted(allowed)}.")
    if (
        args.get_config().get("forbidCreatorAdmin", True)
        and get(access, "bootstrapClusterCreatorAdminPermissions") is not False
    ):
        report(
            "accessConfig.bootstrapClusterCreatorAdminPermissions is not false: whoever runs `pulumi up` "
            "becomes a hidden cluster-admin; grant admins with access entries instead."
        )


# EKS versions on standard support, last reviewed 2026-11-29 (EKS release calendar in the EKS user guide;
# endoflife.date/amazon-eks; `aws eks describe-cluster-versions`): 1.35 (EKS release 2026-01-27) until
# 2027-03-27, 1.36 (EKS release 2026-06-02) until 2027-08-02. 1.34 ends standard support on 2026-12-02, days
# away, so it is left off; 1.33 left it on 2026-07-29. The stack schema accepts 1.32-1.36.
SUPPORTED_VERSIONS = ["1.35", "1.36"]


@resource_rule(
    name="eks-version-allowed",
    description="The Kubernetes version is on the allow-list and on standard support: extended support "
    "costs six times the standard cluster-hour price (EKS pricing) and old versions miss security fixes.",
    severity=Severity.MEDIUM,
    types=[EKS_CLUSTER],
    config={
        "allowedVersions": {
            "type": "array",
            "items": {"type": "string", "pattern": r"^1\.\d+$"},
            "minItems": 1,
            "default": SUPPORTED_VERSIONS,
            "description": "Kubernetes minor versions allowed.",
        },
        "allowExtendedSupport": {"type": "boolean", "default": False, "description": "Allow EXTENDED support."},
    },
)
def eks_version_allowed(args: ResourceValidationArgs, report: Report) -> None:
    version = get(args.props, "version")
    allowed = list(args.get_config().get("allowedVersions", SUPPORTED_VERSIONS))
    if version is None:
        report("version is not pinned: EKS would pick its default, and upgrades would happen by accident.")
    elif str(version) not in allowed:
        report(f"version {version} is not in the allowed versions {allowed}.")
    support = get(args.props, "upgradePolicy.supportType", "EXTENDED")  # EKS's default when unset
    if support != "STANDARD" and not args.get_config().get("allowExtendedSupport", False):
        report(f"upgradePolicy.supportType is {support}: set STANDARD (extended support is billed extra).")


@stack_rule(
    name="eks-workload-identity",
    description="Each cluster has a way to give pods their own IAM identity (the EKS Pod Identity agent "
    "add-on or an IAM OIDC provider for IRSA), so workloads never borrow the node role (EKS security best "
    "practices, IAM).",
    severity=Severity.HIGH,
)
def eks_workload_identity(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    clusters = g.of_type(EKS_CLUSTER)
    if not clusters:
        args.not_applicable("no EKS cluster in the stack")
    for cluster in clusters:
        addons = [
            a
            for a in g.referrers(cluster, "clusterName", EKS_ADDON)
            if get(a.props, "addonName") == "eks-pod-identity-agent"
        ]
        oidc = g.referrers(cluster, "url", IAM_OIDC_PROVIDER)
        if not addons and not oidc:
            report(
                f"cluster {cluster.name} has neither the eks-pod-identity-agent add-on nor an IAM OIDC "
                "provider built from its issuer.",
                cluster.urn,
            )
