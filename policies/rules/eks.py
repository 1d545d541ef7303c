"""EKS rules (the `trainstack:eks` area): the control plane (endpoint, secrets encryption, logs, access entries,
version, pod identity, the VPC CNI's network policy agent) and every managed node group's nodes: launch templates
(IMDSv2, encrypted EBS, no public IP, no secrets in user data, approved AMIs), SSH, subnets, the node role, and
the system nodes' floor."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs

from ..address_space import describe, public_addresses
from ..facts_generated import (
    EKS_ADDON,
    EKS_CLUSTER,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    SUBNET,
)
from .base import (
    Graph,
    Report,
    accelerated_node_groups,
    as_list,
    availability_zone,
    get,
    graph,
    has,
    int_config,
    items,
    json_document,
    number,
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
    description="Cluster access is managed with EKS access entries (authenticationMode API; API_AND_CONFIG_MAP "
    "where allowConfigMap is set, as in dev and staging), and the creator gets no implicit cluster-admin where "
    "forbidCreatorAdmin is set (staging and prod) (CIS EKS 5.5.1).",
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


@resource_rule(
    name="eks-network-policy-enabled",
    description="The VPC CNI add-on runs its network policy agent (configuration `enableNetworkPolicy`): without "
    "it NetworkPolicy objects are accepted and silently not enforced (EKS User Guide, network policies).",
    severity=Severity.HIGH,
    types=[EKS_ADDON],
)
def eks_network_policy_enabled(args: ResourceValidationArgs, report: Report) -> None:
    if get(args.props, "addonName") != "vpc-cni":
        args.not_applicable("not the vpc-cni add-on")
        return
    values = json_document(get(args.props, "configurationValues"))
    if str(get(values, "enableNetworkPolicy", "")).lower() != "true":
        report("the vpc-cni add-on does not set enableNetworkPolicy to true: NetworkPolicies are not enforced.")


@resource_rule(
    name="lt-imdsv2",
    description="Launch templates require IMDSv2 session tokens: IMDSv1 lets any SSRF in a pod read the "
    "node role's credentials (CKV_AWS_79, EKS security best practices).",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
)
def lt_imdsv2(args: ResourceValidationArgs, report: Report) -> None:
    tokens = get(args.props, "metadataOptions.httpTokens", "optional")  # EC2's default is optional
    if tokens != "required":
        report(f"metadataOptions.httpTokens is {tokens!r}; set 'required'.")


@resource_rule(
    name="lt-imds-hop-limit",
    description="The IMDSv2 hop limit is 1 (2 only where allowed), so pods without hostNetwork cannot "
    "reach the instance metadata service and the node role (CKV_AWS_341, EKS best practices).",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
    config={
        "maxHopLimit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 64,
            "default": 1,
            "description": "Largest httpPutResponseHopLimit allowed.",
        }
    },
)
def lt_imds_hop_limit(args: ResourceValidationArgs, report: Report) -> None:
    limit = number(get(args.props, "metadataOptions.httpPutResponseHopLimit"))
    allowed = int(args.get_config().get("maxHopLimit", 1))
    if limit is None:
        report(
            f"metadataOptions.httpPutResponseHopLimit is unset (EC2 default 1, EKS AMIs may raise it); "
            f"set it to at most {allowed}."
        )
    elif limit > allowed:
        report(f"metadataOptions.httpPutResponseHopLimit is {int(limit)}; at most {allowed} is allowed here.")


def _volumes(args: ResourceValidationArgs) -> list[tuple[str, Any]]:
    mappings = items(get(args.props, "blockDeviceMappings"))
    volumes = [(str(get(m, "deviceName", "?")), get(m, "ebs")) for m in mappings if get(m, "ebs") is not None]
    if not volumes:
        args.not_applicable("the launch template defines no EBS volumes (the AMI's defaults apply)")
    return volumes


@resource_rule(
    name="lt-ebs-encrypted",
    description="Every EBS volume a launch template defines is encrypted: node disks hold container images, "
    "caches and checkpoints (CKV_AWS_106; Pulumi compliance pack).",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
)
def lt_ebs_encrypted(args: ResourceValidationArgs, report: Report) -> None:
    for device, ebs in _volumes(args):
        if not truthy(get(ebs, "encrypted")):  # a string in pulumi-aws: "true"
            report(f'{device}: ebs.encrypted is not "true".')


@resource_rule(
    name="lt-ebs-cmk",
    description="Node EBS volumes are encrypted with a customer managed KMS key, so key policy and "
    "CloudTrail govern who can read node disks (Pulumi compliance pack launchtemplate-configure-CMK).",
    severity=Severity.LOW,
    types=[LAUNCH_TEMPLATE],
)
def lt_ebs_cmk(args: ResourceValidationArgs, report: Report) -> None:
    for device, ebs in _volumes(args):
        if truthy(get(ebs, "encrypted")) and not has(ebs, "kmsKeyId"):
            report(f"{device}: ebs.kmsKeyId is not set; the volume uses the AWS managed key aws/ebs.")


@resource_rule(
    name="lt-no-public-ip",
    description="Node network interfaces never get public IPs: GPU nodes live in private subnets behind "
    "NAT (CKV_AWS_88, CIS EKS 5.4.3).",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
)
def lt_no_public_ip(args: ResourceValidationArgs, report: Report) -> None:
    for nic in items(get(args.props, "networkInterfaces")):
        if truthy(get(nic, "associatePublicIpAddress")):
            report(
                f"network interface (card {get(nic, 'networkCardIndex', 0)}, device "
                f"{get(nic, 'deviceIndex', 0)}) sets associatePublicIpAddress."
            )


_SECRET_PATTERNS = {
    "an AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    "an AWS secret access key": re.compile(r"aws_secret_access_key\s*[=:]", re.IGNORECASE),
    "a private key": re.compile(r"-----BEGIN (RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"),
    "a password assignment": re.compile(r"\bpassword\s*[=:]\s*\S+", re.IGNORECASE),
    "a bearer token": re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{20,}"),
}


@resource_rule(
    name="lt-userdata-no-secrets",
    description="Launch-template user data carries no credentials: anyone with ec2:DescribeLaunchTemplate"
    "Versions, and every process on the node through IMDS, can read it (CKV_AWS_46).",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
)
def lt_userdata_no_secrets(args: ResourceValidationArgs, report: Report) -> None:
    raw = get(args.props, "userData")
    if not raw:
        args.not_applicable("no user data")
    try:
        text = base64.b64decode(str(raw), validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        text = str(raw)
    found = [what for what, pattern in _SECRET_PATTERNS.items() if pattern.search(text)]
    if found:
        report(f"user data contains {', '.join(found)}; use Secrets Manager or Pod Identity instead.")


@resource_rule(
    name="ng-no-ssh",
    description="Managed node groups open no SSH (remoteAccess): use SSM Session Manager, which is "
    "audited and needs no inbound port (CKV_AWS_100).",
    severity=Severity.MEDIUM,
    types=[NODE_GROUP],
)
def ng_no_ssh(args: ResourceValidationArgs, report: Report) -> None:
    if has(args.props, "remoteAccess"):
        report("remoteAccess is set: the node group opens SSH (port 22); use SSM Session Manager.")


@stack_rule(
    name="ng-private-subnets",
    description="Node groups launch only into subnets that do not map public IPs on launch, so no node is "
    "reachable from the internet (CIS EKS 5.4.3).",
    severity=Severity.HIGH,
)
def ng_private_subnets(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = g.of_type(NODE_GROUP)
    if not groups:
        args.not_applicable("no managed node groups")
    for group in groups:
        for subnet in Graph.deps(group, "subnetIds", SUBNET):
            if truthy(get(subnet.props, "mapPublicIpOnLaunch")):
                report(
                    f"node group {group.name} uses subnet {subnet.name}, which maps public IPs on launch.", group.urn
                )


_DEFAULT_NODE_POLICIES = [
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
    "AmazonEKS_CNI_Policy",
]


def _policy_name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


@stack_rule(
    name="node-role-least-priv",
    description="Node roles carry only the AWS managed policies nodes need (worker node, ECR pull, SSM, "
    "CNI where allowed): everything else belongs on a pod's own role, because every pod on the node can "
    "use the node role (EKS security best practices, CKV2_AWS_56).",
    severity=Severity.HIGH,
    config={
        "allowedPolicies": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "default": _DEFAULT_NODE_POLICIES,
            "description": "AWS managed policy names a node role may carry.",
        }
    },
)
def node_role_least_priv(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    allowed = set(args.get_config().get("allowedPolicies", _DEFAULT_NODE_POLICIES))
    roles: list[PolicyResource] = []
    for group in g.of_type(NODE_GROUP):
        roles += [r for r in Graph.deps(group, "nodeRoleArn", IAM_ROLE) if r not in roles]
    if not roles:
        args.not_applicable("no node group with a node role in the stack")
    for role in roles:
        for attachment in g.referrers(role, "role", IAM_ROLE_POLICY_ATTACHMENT):
            if Graph.deps(attachment, "policyArn", IAM_POLICY):
                report(
                    f"node role {role.name} gets the stack's own policy through {attachment.name}; give that "
                    "access to a pod role (Pod Identity or IRSA) instead.",
                    attachment.urn,
                )
                continue
            arn = str(get(attachment.props, "policyArn", ""))
            if _policy_name(arn) not in allowed:
                report(f"node role {role.name} carries {arn}; allowed: {sorted(allowed)}.", attachment.urn)
        for inline in g.referrers(role, "role", IAM_ROLE_POLICY):
            report(f"node role {role.name} has the inline policy {inline.name}; move it to a pod role.", inline.urn)
        for arn in as_list(get(role.props, "managedPolicyArns")):
            if _policy_name(str(arn)) not in allowed:
                report(f"node role {role.name} lists {arn} in managedPolicyArns; allowed: {sorted(allowed)}.", role.urn)


@resource_rule(
    name="lt-ami-approved",
    description="A launch template that names its own AMI (gpu_node_groups[].ami_id) names one the platform "
    "approved: a custom image skips EKS's patched, scanned accelerated AMIs and their release notes, and nodes "
    "keep whatever kernel, driver and agents it carries (EKS User Guide, 'Customize managed nodes with launch "
    "templates': EKS merges no bootstrap into it). Templates without an AMI (EKS picks it) pass.",
    severity=Severity.HIGH,
    types=[LAUNCH_TEMPLATE],
    config={
        "approvedAmiIds": {
            "type": "array",
            "items": {"type": "string", "pattern": "^ami-([0-9a-f]{8}|[0-9a-f]{17})$"},
            "uniqueItems": True,
            "default": [],
            "description": "AMI ids the platform approved for node groups (built and scanned by its image pipeline).",
        }
    },
)
def lt_ami_approved(args: ResourceValidationArgs, report: Report) -> None:
    image = get(args.props, "imageId")
    if not image:
        return  # no AMI of its own: EKS picks its accelerated AMI
    approved = [str(a) for a in args.get_config().get("approvedAmiIds", [])]
    if str(image) not in approved:
        listed = ", ".join(approved) if approved else "none"
        report(f"imageId {image} is not an approved AMI (approvedAmiIds: {listed}).")


@stack_rule(
    name="cluster-in-stack",
    description="The EKS cluster is this stack's: on a cluster it does not own (existing_cluster, platform-only "
    "mode) the pack cannot see the endpoint, secrets encryption, logging, access entries or node groups, so "
    "every rule about them is silently not applicable. Advisory by default; prod requires its own cluster.",
    severity=Severity.HIGH,
)
def cluster_in_stack(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    providers = [r for r in args.resources if r.resource_type == "pulumi:providers:kubernetes"]
    if not providers:
        args.not_applicable("no Kubernetes objects in the stack")
    if not g.of_type(EKS_CLUSTER):
        report(
            "the stack puts Kubernetes objects on a cluster it does not create (existing_cluster): its endpoint, "
            "encryption, logging, access and node rules cannot be checked here; review the cluster with its owner.",
            providers[0].urn,
        )


def system_node_groups(g: Graph) -> list[PolicyResource]:
    """Managed node groups of non-accelerated instances: where CoreDNS, Kueue and the operators run."""
    accelerated = {group.urn for group, _ in accelerated_node_groups(g)}
    return [group for group in g.of_type(NODE_GROUP) if group.urn not in accelerated]


def _subnets_outside_stack(groups: list[PolicyResource]) -> set[str]:
    """Subnet ids of node groups whose subnets no subnet resource of this stack produced (an existing VPC's)."""
    return {
        str(subnet)
        for group in groups
        if not Graph.deps(group, "subnetIds", SUBNET)
        for subnet in items(get(group.props, "subnetIds"))
    }


@stack_rule(
    name="system-nodes-floor",
    floor="staging",
    description="The cluster's controllers (CoreDNS, Kueue, the training and GPU operators, the CSI "
    "controllers) run on at least the floor of system nodes across at least the floor of AZs: with one node, "
    "a node replacement or an AZ event stops DNS and job admission for every GPU in the cluster (EKS best "
    "practices, reliability: run CoreDNS and critical add-ons on multiple nodes across AZs).",
    severity=Severity.HIGH,
    config={
        "minNodes": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Fewest system nodes (minSize summed over non-accelerated node groups). Why: CoreDNS "
            "runs two replicas with anti-affinity, and a rolling update takes one node away. Source: EKS best "
            "practices, reliability (CoreDNS); EKS managed node group update behaviour.",
        },
        "minAvailabilityZones": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Fewest AZs the system node groups' subnets span. Why: a single-AZ controller plane "
            "fails with its AZ. Source: EKS best practices, reliability (spread across AZs).",
        },
    },
)
def system_nodes_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = system_node_groups(g)
    if not g.of_type(EKS_CLUSTER):
        args.not_applicable("no EKS cluster")
    nodes = sum(int(number(get(group.props, "scalingConfig.minSize")) or 0) for group in groups)
    azs = sorted({availability_zone(s) for group in groups for s in Graph.deps(group, "subnetIds", SUBNET)})
    # Subnets of an existing VPC carry no AZ in the stack: each counts as one AZ of its own (trainstack's stack
    # file names one subnet per AZ, and `pulumi up` checks each subnet's AZ against it before using it).
    outside = sorted(_subnets_outside_stack(groups))
    azs += [f"{subnet} (outside the stack)" for subnet in outside]
    min_nodes, min_azs = int_config(args, "minNodes", 2), int_config(args, "minAvailabilityZones", 2)
    names = ", ".join(group.name for group in groups) or "none"
    urn = groups[0].urn if groups else g.of_type(EKS_CLUSTER)[0].urn
    if nodes < min_nodes:
        report(
            f"system node groups ({names}) keep at least {nodes} node(s) (eks.system_node_group.min_size); the floor "
            f"here is {min_nodes}, so DNS and job admission survive the loss of a node.",
            urn,
        )
    if len(azs) < min_azs:
        report(f"system node groups ({names}) span {len(azs)} AZ(s) {azs}; the floor here is {min_azs}.", urn)
