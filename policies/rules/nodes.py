"""Worker node rules: launch templates, managed node groups, the node role."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs

from .base import (
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    LAUNCH_TEMPLATE,
    SUBNET,
    Graph,
    Report,
    as_list,
    get,
    graph,
    has,
    items,
    number,
    resource_rule,
    stack_rule,
    truthy,
)


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
    types=[EKS_NODE_GROUP],
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
    groups = g.of_type(EKS_NODE_GROUP)
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
    for group in g.of_type(EKS_NODE_GROUP):
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
