"""The EKS control plane, its core add-ons, the system node group and the node IAM role.

- Cluster: access entries only (`authentication_mode` from config, no implicit creator admin), secrets
  envelope-encrypted with a customer KMS key (rotation on, explicit key policy), control-plane logs into a
  log group created first (so its retention is ours), private endpoint always on, public endpoint per
  config and restricted to listed CIDRs, upgrade policy, no self-managed bootstrap add-ons.
- Add-ons pinned from config. vpc-cni and aws-ebs-csi-driver get their AWS permissions through EKS Pod
  Identity, never through the node role. vpc-cni, kube-proxy and the Pod Identity agent are created before
  any node group (nodes need them to become Ready); CoreDNS and the EBS CSI controller (Deployments) after
  the system node group, so they have somewhere to run.
- The node IAM role carries only AmazonEKSWorkerNodePolicy, AmazonEC2ContainerRegistryPullOnly and
  AmazonSSMManagedInstanceCore; GPU node groups use it too, and wait for its attachments (`node_dependencies`).
- Node root/data volumes (system and GPU launch templates) are encrypted with a second customer KMS key
  (`node_volume_kms_key_arn`), in every environment so dev rehearses exactly what prod runs. Its policy lets
  the EC2 Auto Scaling service-linked role, which launches managed node group instances, use the key and
  create grants for EC2. That role must exist when the key is created (KMS refuses a policy naming a missing
  principal): an account that never had an Auto Scaling group needs
  `aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com` once.
- A Kubernetes provider built from the cluster's endpoint and CA with an `aws eks get-token` exec config. It
  depends on the admin access entries and policy associations: the creator gets no implicit admin, so the
  identity running `pulumi up` must be (or assume) one of `eks.admin_role_arns`, and with a private-only
  endpoint `pulumi up` must run from inside the VPC (or over a VPN / bastion) to reach the API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.kms import account_root_statement, customer_key
from components.launch_template import NodeVolume, node_launch_template
from components.naming import aws_partition, child_name, physical_name, resource_tags
from components.pod_identity import PodIdentityRole, managed_policy_arn, pod_identity_role
from stacks.account_rules import AUTOSCALING_SERVICE_LINKED_ROLE
from stacks.schema import EksSpec

# Managed policies. Sources: EKS User Guide "Amazon EKS node IAM role" (worker node, ECR pull-only, SSM),
# "Amazon EKS cluster IAM role", "Configure the VPC CNI to use Pod Identity" and "Amazon EBS CSI driver".
CLUSTER_POLICY = "AmazonEKSClusterPolicy"
NODE_POLICIES: tuple[str, ...] = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
CNI_POLICY = "AmazonEKS_CNI_Policy"
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
CLUSTER_ADMIN_ACCESS_POLICY = "AmazonEKSClusterAdminPolicy"

# Service accounts the add-ons run as (kube-system): aws-node (vpc-cni), ebs-csi-controller-sa (EBS CSI).
KUBE_SYSTEM = "kube-system"
CNI_SERVICE_ACCOUNT = "aws-node"
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"

SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
ROOT_DEVICE = "/dev/xvda"  # root device of the EKS-optimized AL2023 AMIs
NODE_ROLE_LABEL = "trainstack.io/node-role"


@dataclass(frozen=True)
class AddonPlan:
    """One EKS managed add-on: its name, pinned version, and whether nodes need it before they join."""

    name: str
    version: str
    before_compute: bool
    configuration: Mapping[str, Any] | None = None
    """The add-on's configuration values (its JSON schema: `aws eks describe-addon-configuration`)."""


# The VPC CNI's network policy agent is off by default; on, NetworkPolicy objects are enforced (eBPF on each
# pod's interface). Key and string value as the EKS User Guide's "Restrict Pod network traffic with Kubernetes
# network policies" passes them to `aws eks update-addon --configuration-values`; the aws-vpc-cni chart
# (amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml) has the same top-level `enableNetworkPolicy`.
VPC_CNI_CONFIGURATION: Mapping[str, Any] = {"enableNetworkPolicy": "true"}
# VPC CNI custom networking (EKS User Guide, "Deploy Pods in alternate subnets with custom networking"): pods take
# their addresses from the subnet of the ENIConfig whose name is the node's zone label. The add-on takes the two
# variables under `env` (its configuration schema; amazon-vpc-cni-k8s README, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG
# and ENI_CONFIG_LABEL_DEF).
ZONE_LABEL = "topology.kubernetes.io/zone"
CUSTOM_NETWORKING_ENV: Mapping[str, str] = {
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
    "ENI_CONFIG_LABEL_DEF": ZONE_LABEL,
}
ENI_CONFIG_API_VERSION = "crd.k8s.amazonaws.com/v1alpha1"  # the CRD the vpc-cni add-on installs


def addon_plan(spec: EksSpec, custom_networking: bool = False) -> list[AddonPlan]:
    """The core add-ons in creation order, with versions from config.

    Nodes become Ready only with a CNI and kube-proxy, and vpc-cni gets its credentials from the Pod Identity
    agent, so those three come before compute. CoreDNS and the EBS CSI controller are Deployments: after it.
    (terraform-aws-eks calls the first group `before_compute`.)
    """
    versions = spec.addons
    return [
        AddonPlan("eks-pod-identity-agent", versions.pod_identity_agent, before_compute=True),
        AddonPlan("kube-proxy", versions.kube_proxy, before_compute=True),
        AddonPlan(
            "vpc-cni", versions.vpc_cni, before_compute=True, configuration=vpc_cni_configuration(custom_networking)
        ),
        AddonPlan("coredns", versions.coredns, before_compute=False),
        AddonPlan("aws-ebs-csi-driver", versions.ebs_csi_driver, before_compute=False),
    ]


def vpc_cni_configuration(custom_networking: bool) -> dict[str, Any]:
    """The vpc-cni add-on's configuration values: network policies always, custom networking when asked."""
    if not custom_networking:
        return dict(VPC_CNI_CONFIGURATION)
    return {**VPC_CNI_CONFIGURATION, "env": dict(CUSTOM_NETWORKING_ENV)}


def eni_config(availability_zone: str, subnet_id: pulumi.Input[str]) -> dict[str, Any]:
    """The ENIConfig of one AZ: named as the zone label's value, so every node there uses that pod subnet. No
    securityGroups: the CNI then gives pod interfaces the node's primary interface groups (the cluster group)."""
    return {
        "apiVersion": ENI_CONFIG_API_VERSION,
        "kind": "ENIConfig",
        "metadata": {"name": availability_zone},
        "spec": {"subnet": subnet_id},
    }


def access_entry_keys(role_arns: Sequence[str]) -> list[str]:
    """Stable, unique name parts for the admin access entries: the role name, or account-role on a clash.

    >>> access_entry_keys(["arn:aws:iam::111122223333:role/admin", "arn:aws:iam::444455556666:role/ops/admin"])
    ['admin', 'ops-admin']
    """

    def short(arn: str) -> str:
        return arn.split(":role/", 1)[1].replace("/", "-").lower()

    def long(arn: str) -> str:
        return f"{arn.split(':')[4]}-{short(arn)}"

    shorts = [short(a) for a in role_arns]
    keys = [long(a) if shorts.count(short(a)) > 1 else short(a) for a in role_arns]
    if len(set(keys)) != len(keys):
        raise ValueError(f"admin_role_arns has duplicates: {list(role_arns)}")
    return keys


def kubeconfig(cluster_name: str, endpoint: str, certificate_authority: str, region: str) -> dict[str, Any]:
    """A kubeconfig that authenticates with `aws eks get-token` (no credentials inside)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": [
                            "eks",
                            "get-token",
                            "--cluster-name",
                            cluster_name,
                            "--region",
                            region,
                            "--output",
                            "json",
                        ],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }


def kms_key_policy(partition: str, account_id: str, cluster_role_arn: str) -> dict[str, Any]:
    """The secrets key's policy: the account administers it through IAM; the cluster role may use it.

    Sources: KMS Developer Guide "Default key policy" (the account-root statement) and EKS User Guide
    "Encrypt Kubernetes secrets with KMS" (the cluster role needs Encrypt, Decrypt, DescribeKey, ListGrants,
    CreateGrant on the key).
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            account_root_statement(partition, account_id),
            {
                "Sid": "EksClusterRoleEnvelopeEncryption",
                "Effect": "Allow",
                "Principal": {"AWS": cluster_role_arn},
                "Action": ["kms:Encrypt", "kms:Decrypt", "kms:DescribeKey", "kms:ListGrants", "kms:CreateGrant"],
                "Resource": "*",
            },
        ],
    }


def autoscaling_service_linked_role_arn(partition: str, account_id: str) -> str:
    """The default EC2 Auto Scaling service-linked role, which EKS managed node groups launch instances with."""
    return f"arn:{partition}:iam::{account_id}:role/{AUTOSCALING_SERVICE_LINKED_ROLE}"


def node_volume_key_policy(partition: str, account_id: str) -> dict[str, Any]:
    """The node-volume key's policy: the account administers it through IAM; EC2 Auto Scaling may use it.

    Source: EC2 Auto Scaling User Guide, "Required AWS KMS key policy for use with encrypted volumes"
    (https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html):
    the service-linked role needs Encrypt, Decrypt, ReEncrypt*, GenerateDataKey* and DescribeKey, plus
    CreateGrant limited to grants for AWS resources (EC2 attaches the volume through a grant). Its AWS managed
    permissions cover only the AWS managed key aws/ebs. The node role needs nothing: the instance never
    calls KMS for its own volumes.
    """
    service_linked_role = autoscaling_service_linked_role_arn(partition, account_id)
    return {
        "Version": "2012-10-17",
        "Statement": [
            account_root_statement(partition, account_id),
            {
                "Sid": "AutoScalingUsesKeyForNodeVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": service_linked_role},
                "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
                "Resource": "*",
            },
            {
                "Sid": "AutoScalingGrantsForAttachedVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": service_linked_role},
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {"Bool": {"kms:GrantIsForAWSResource": True}},
            },
        ],
    }


def _trust(service: str, *actions: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
        }
    )


def control_plane_log_group_name(base_name: str) -> str:
    """The log group EKS writes the control plane's logs to (the cluster is named `base_name`)."""
    return f"/aws/eks/{base_name}/cluster"


@dataclass
class EksClusterArgs:
    """Spec (what exists) and wiring of an `EksCluster`."""

    spec: EksSpec
    """The validated `eks` block of the stack config."""
    base_name: str
    """The cluster's physical name (the stack's base name, for example `trainstack-prod`)."""
    region: str
    """AWS region, for the kubeconfig and ARNs."""
    vpc_id: pulumi.Input[str]
    """The VPC (from `Network.vpc_id`)."""
    private_subnet_ids: Sequence[pulumi.Input[str]]
    """Private subnets for control-plane ENIs and the system node group, one per AZ."""
    protect: bool = False
    """Protect the KMS keys and the cluster against deletion (prod)."""
    tags: Mapping[str, str] = field(default_factory=dict[str, str])
    """Global tags, repeated on launch-template instances, volumes and interfaces (default_tags miss them)."""
    key_administrator_arns: Sequence[str] = ()
    """Administrators of the secrets and node-volume keys besides the deploying principal."""
    pod_subnet_ids: Mapping[str, pulumi.Input[str]] = field(default_factory=dict[str, pulumi.Input[str]])
    """Pod subnets by AZ (`Network.pod_subnet_ids`): VPC CNI custom networking, an ENIConfig per AZ."""
    log_kms_key_arn: pulumi.Input[str] | None = None
    """The telemetry key (components/security/telemetry_key.py) the control plane's log group is encrypted with."""


def _oidc_issuer(identities: Sequence[aws.eks.outputs.ClusterIdentity]) -> str:
    """The cluster's OIDC issuer URL, which EKS sets on every cluster it creates (the provider types it optional)."""
    issuer = identities[0].oidcs[0].issuer if identities and identities[0].oidcs else None
    if issuer is None:
        raise ValueError("EKS reported no OIDC issuer for the cluster")
    return issuer


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster with access entries, KMS secrets encryption, logging, core add-ons and system nodes."""

    cluster_name: pulumi.Output[str]
    """Name of the cluster."""
    cluster_arn: pulumi.Output[str]
    """ARN of the cluster."""
    cluster_endpoint: pulumi.Output[str]
    """HTTPS endpoint of the Kubernetes API."""
    cluster_certificate_authority: pulumi.Output[str]
    """Base64 CA bundle of the API server."""
    cluster_service_cidr: pulumi.Output[str]
    """The Service IPv4 CIDR EKS assigned (a custom AMI's nodeadm NodeConfig needs it for the cluster DNS address)."""
    cluster_security_group_id: pulumi.Output[str]
    """The EKS-managed cluster security group (control plane <-> nodes)."""
    oidc_provider_arn: pulumi.Output[str]
    """ARN of the IAM OIDC provider (IRSA, for tools that do not support Pod Identity)."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer URL."""
    kms_key_arn: pulumi.Output[str]
    """ARN of the customer KMS key that encrypts Kubernetes secrets."""
    node_volume_kms_key_arn: pulumi.Output[str]
    """ARN of the customer KMS key that encrypts node root/data EBS volumes (system and GPU launch templates)."""
    node_role_arn: pulumi.Output[str]
    """ARN of the node IAM role (system and GPU node groups)."""
    node_role_name: pulumi.Output[str]
    """Name of the node IAM role."""
    system_node_group_name: pulumi.Output[str]
    """Name of the system managed node group."""
    system_node_group: aws.eks.NodeGroup
    """The system node group: add-ons and charts that run Deployments should depend on it."""
    node_dependencies: list[pulumi.Resource]
    """What every node group must wait for: the vpc-cni, kube-proxy and Pod Identity agent add-ons and the node
    role's policy attachments."""
    addons: dict[str, aws.eks.Addon]
    """Every core add-on by EKS name (vpc-cni, kube-proxy, coredns, ...), for `depends_on`."""
    k8s_provider: k8s.Provider
    """Kubernetes provider for this cluster (exec auth through `aws eks get-token`)."""
    kubeconfig: pulumi.Output[str]
    """The kubeconfig (JSON) the provider uses; it carries no credentials."""
    account_id: pulumi.Output[str]
    """The AWS account the cluster lives in."""

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:eks:EksCluster", name, None, opts)
        partition = aws_partition(args.region)
        self.account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        cluster_role, cluster_policy = self._cluster_role(name, args, partition)
        secrets_key = self._secrets_key(name, args, partition, cluster_role)
        node_volume_key = self._node_volume_key(name, args, partition)
        log_group = self._control_plane_log_group(name, args)
        cluster = self._cluster(name, args, cluster_role, secrets_key, depends_on=[log_group, cluster_policy])
        admin_access = self._admin_access(name, args, partition, cluster)
        self.oidc_issuer_url = cluster.identities.apply(_oidc_issuer)
        oidc = self._oidc_provider(name, self.oidc_issuer_url)
        node_role, node_policies = self._node_role(name, args, partition)
        identity_roles = self._pod_identity_roles(name, partition, cluster)
        self.addons = self._addons_before_compute(name, args, cluster, identity_roles)
        # Nodes join only with a CNI, kube-proxy and Pod Identity (vpc-cni's credentials), and only once the
        # node role can register (AmazonEKSWorkerNodePolicy) and pull images (ECR pull-only): a node group
        # created before its role's attachments fails to join. Every node group waits on all of these.
        self.node_dependencies = [*self.addons.values(), *node_policies]
        self.kubeconfig = pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority.data).apply(
            lambda v: json.dumps(kubeconfig(v[0], v[1], v[2], args.region))
        )
        self.k8s_provider = self._kubernetes_provider(name, cluster, self.kubeconfig, admin_access)
        # Custom networking: a node that starts before its zone's ENIConfig exists puts pods in the node subnet
        # until it is replaced, so every node group waits for them too.
        self.node_dependencies += self._eni_configs(name, args)
        self.system_node_group = self._system_node_group(name, args, cluster, node_role, node_volume_key.arn)
        self.addons |= self._addons_after_compute(name, args, cluster, identity_roles, self.system_node_group)

        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.cluster_endpoint = cluster.endpoint
        self.cluster_certificate_authority = cluster.certificate_authority.data
        self.cluster_service_cidr = cluster.kubernetes_network_config.apply(
            lambda config: (config.service_ipv4_cidr if config else None) or ""
        )
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        self.oidc_provider_arn = oidc.arn
        self.kms_key_arn = secrets_key.arn
        self.node_volume_kms_key_arn = node_volume_key.arn
        self.node_role_arn = node_role.arn
        self.node_role_name = node_role.name
        self.system_node_group_name = self.system_node_group.node_group_name

        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_arn": self.cluster_arn,
                "cluster_endpoint": self.cluster_endpoint,
                "cluster_security_group_id": self.cluster_security_group_id,
                "oidc_provider_arn": self.oidc_provider_arn,
                "oidc_issuer_url": self.oidc_issuer_url,
                "kms_key_arn": self.kms_key_arn,
                "node_volume_kms_key_arn": self.node_volume_kms_key_arn,
                "node_role_arn": self.node_role_arn,
                "node_role_name": self.node_role_name,
                "system_node_group_name": self.system_node_group_name,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _cluster_role(
        self, name: str, args: EksClusterArgs, partition: str
    ) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
        """The control plane's IAM role and its AmazonEKSClusterPolicy attachment (the cluster waits for it)."""
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            child_name(name, "cluster-role"),
            aws.iam.RoleArgs(
                assume_role_policy=_trust("eks.amazonaws.com", "sts:AssumeRole", "sts:TagSession"),
                description=f"EKS control plane of {args.base_name}",
            ),
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(
            child_name(name, "cluster-policy"),
            aws.iam.RolePolicyAttachmentArgs(role=role.name, policy_arn=managed_policy_arn(CLUSTER_POLICY, partition)),
            opts=child,
        )
        return role, attachment

    def _secrets_key(self, name: str, args: EksClusterArgs, partition: str, cluster_role: aws.iam.Role) -> aws.kms.Key:
        """The customer KMS key that envelope-encrypts Kubernetes secrets; the cluster role may use it."""
        return customer_key(
            child_name(name, "secrets-key"),
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {args.base_name}",
            policy=pulumi.Output.json_dumps(
                pulumi.Output.all(self.account_id, cluster_role.arn).apply(
                    lambda v: kms_key_policy(partition, v[0], v[1])
                )
            ),
            alias=physical_name(args.base_name, "eks-secrets"),
            parent=self,
            protect=args.protect,
            administrators=args.key_administrator_arns,
        )

    def _node_volume_key(self, name: str, args: EksClusterArgs, partition: str) -> aws.kms.Key:
        """The customer KMS key of node root/data volumes. A separate key from the secrets key: different users
        (EC2 Auto Scaling vs. the EKS control plane), so each policy grants only what its service needs."""
        return customer_key(
            child_name(name, "node-volume-key"),
            description=f"EBS encryption of the node root/data volumes of EKS cluster {args.base_name}",
            policy=pulumi.Output.json_dumps(self.account_id.apply(lambda a: node_volume_key_policy(partition, a))),
            alias=physical_name(args.base_name, "eks-node-volumes"),
            parent=self,
            protect=args.protect,
            administrators=args.key_administrator_arns,
        )

    def _control_plane_log_group(self, name: str, args: EksClusterArgs) -> aws.cloudwatch.LogGroup:
        """The control-plane log group. EKS writes to this exact name; creating it first sets retention (EKS User
        Guide, "Send control plane logs to CloudWatch Logs")."""
        return aws.cloudwatch.LogGroup(
            child_name(name, "cluster-logs"),
            aws.cloudwatch.LogGroupArgs(
                name=control_plane_log_group_name(args.base_name),
                retention_in_days=args.spec.log_retention_days,
                kms_key_id=args.log_kms_key_arn,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _cluster(
        self,
        name: str,
        args: EksClusterArgs,
        role: aws.iam.Role,
        secrets_key: aws.kms.Key,
        depends_on: Sequence[pulumi.Resource],
    ) -> aws.eks.Cluster:
        """The control plane: private endpoint always, public per config, access entries only, secrets encrypted."""
        spec = args.spec
        return aws.eks.Cluster(
            child_name(name, "cluster"),
            aws.eks.ClusterArgs(
                name=args.base_name,
                version=spec.version,
                role_arn=role.arn,
                vpc_config=aws.eks.ClusterVpcConfigArgs(
                    subnet_ids=list(args.private_subnet_ids),
                    endpoint_private_access=True,
                    endpoint_public_access=spec.endpoint_public_access,
                    public_access_cidrs=list(spec.public_access_cidrs) if spec.endpoint_public_access else None,
                ),
                access_config=aws.eks.ClusterAccessConfigArgs(
                    authentication_mode=spec.authentication_mode.value,
                    bootstrap_cluster_creator_admin_permissions=False,  # admins come from access entries only
                ),
                encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                    provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=secrets_key.arn),
                    resources=["secrets"],
                ),
                enabled_cluster_log_types=[t.value for t in spec.control_plane_log_types],
                upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type=spec.support_type),
                # The core add-ons are EKS managed add-ons below; no self-managed copies to adopt or clash with.
                bootstrap_self_managed_addons=False,
                deletion_protection=args.protect,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, depends_on=list(depends_on)),
        )

    def _admin_access(
        self, name: str, args: EksClusterArgs, partition: str, cluster: aws.eks.Cluster
    ) -> list[pulumi.Resource]:
        """An access entry with the cluster-admin policy for each admin role. The creator gets no implicit admin
        (bootstrap off), so the deployer's Kubernetes access exists only once these are in place: the Kubernetes
        provider waits for them."""
        child = pulumi.ResourceOptions(parent=self)
        admin_policy_arn = f"arn:{partition}:eks::aws:cluster-access-policy/{CLUSTER_ADMIN_ACCESS_POLICY}"
        role_arns = args.spec.admin_role_arns
        admin_access: list[pulumi.Resource] = []
        for key_part, role_arn in zip(access_entry_keys(role_arns), role_arns, strict=True):
            entry = aws.eks.AccessEntry(
                child_name(name, "admin", key_part),
                aws.eks.AccessEntryArgs(cluster_name=cluster.name, principal_arn=role_arn, type="STANDARD"),
                opts=child,
            )
            association = aws.eks.AccessPolicyAssociation(
                child_name(name, "admin", key_part, "policy"),
                aws.eks.AccessPolicyAssociationArgs(
                    cluster_name=cluster.name,
                    principal_arn=entry.principal_arn,
                    policy_arn=admin_policy_arn,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                ),
                opts=child,
            )
            admin_access += [entry, association]
        return admin_access

    def _oidc_provider(self, name: str, issuer_url: pulumi.Output[str]) -> aws.iam.OpenIdConnectProvider:
        """The IAM OIDC provider of the cluster's issuer (IRSA, for tools without Pod Identity support)."""
        return aws.iam.OpenIdConnectProvider(
            child_name(name, "oidc"),
            aws.iam.OpenIdConnectProviderArgs(url=issuer_url, client_id_lists=["sts.amazonaws.com"]),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _node_role(
        self, name: str, args: EksClusterArgs, partition: str
    ) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
        """The node IAM role (system and GPU groups) and its NODE_POLICIES attachments."""
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            child_name(name, "node-role"),
            aws.iam.RoleArgs(
                assume_role_policy=_trust("ec2.amazonaws.com", "sts:AssumeRole"),
                description=f"EKS nodes of {args.base_name}",
            ),
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                child_name(name, "node", policy.lower()),
                aws.iam.RolePolicyAttachmentArgs(role=role.name, policy_arn=managed_policy_arn(policy, partition)),
                opts=child,
            )
            for policy in NODE_POLICIES
        ]
        return role, attachments

    def _pod_identity_roles(self, name: str, partition: str, cluster: aws.eks.Cluster) -> dict[str, PodIdentityRole]:
        """The Pod Identity roles of the add-ons that call AWS (vpc-cni, EBS CSI), keyed by add-on name."""
        child = pulumi.ResourceOptions(parent=self)
        return {
            "vpc-cni": pod_identity_role(
                child_name(name, "vpc-cni-pod-identity"),
                cluster_name=cluster.name,
                namespace=KUBE_SYSTEM,
                service_account=CNI_SERVICE_ACCOUNT,
                policy_arns=[managed_policy_arn(CNI_POLICY, partition)],
                opts=child,
            ),
            "aws-ebs-csi-driver": pod_identity_role(
                child_name(name, "ebs-csi-pod-identity"),
                cluster_name=cluster.name,
                namespace=KUBE_SYSTEM,
                service_account=EBS_CSI_SERVICE_ACCOUNT,
                policy_arns=[managed_policy_arn(EBS_CSI_POLICY, partition)],
                opts=child,
            ),
        }

    def _addons_before_compute(
        self, name: str, args: EksClusterArgs, cluster: aws.eks.Cluster, identity_roles: Mapping[str, PodIdentityRole]
    ) -> dict[str, aws.eks.Addon]:
        """The add-ons nodes need to become Ready, in `addon_plan` order; vpc-cni waits for the Pod Identity
        agent and its role, which give it its AWS credentials."""
        addons: dict[str, aws.eks.Addon] = {}
        for plan in (p for p in addon_plan(args.spec, bool(args.pod_subnet_ids)) if p.before_compute):
            waits: list[pulumi.Resource] = []
            if plan.name == "vpc-cni":
                waits = [addons["eks-pod-identity-agent"], identity_roles["vpc-cni"]]
            addons[plan.name] = self._addon(name, cluster, plan, waits)
        return addons

    def _addons_after_compute(
        self,
        name: str,
        args: EksClusterArgs,
        cluster: aws.eks.Cluster,
        identity_roles: Mapping[str, PodIdentityRole],
        system_node_group: aws.eks.NodeGroup,
    ) -> dict[str, aws.eks.Addon]:
        """The add-ons that run Deployments (CoreDNS, the EBS CSI controller): after the system nodes they run on,
        and after their Pod Identity role where they have one."""
        addons: dict[str, aws.eks.Addon] = {}
        for plan in (p for p in addon_plan(args.spec, bool(args.pod_subnet_ids)) if not p.before_compute):
            waits: list[pulumi.Resource] = [system_node_group]
            if plan.name in identity_roles:
                waits.append(identity_roles[plan.name])
            addons[plan.name] = self._addon(name, cluster, plan, waits)
        return addons

    def _system_node_group(
        self,
        name: str,
        args: EksClusterArgs,
        cluster: aws.eks.Cluster,
        node_role: aws.iam.Role,
        node_volume_key_arn: pulumi.Output[str],
    ) -> aws.eks.NodeGroup:
        """The On-Demand system node group over every private subnet, with its launch template; it waits for
        `node_dependencies`."""
        system = args.spec.system_node_group
        template = node_launch_template(
            child_name(name, "system-lt"),
            description=f"System nodes of {args.base_name}",
            volume=NodeVolume(ROOT_DEVICE, system.disk_size_gib, node_volume_key_arn),
            hop_limit=1,  # pods off the host network cannot reach the node role
            launch_tags=resource_tags(dict(args.tags), physical_name(args.base_name, "system")),
            parent=self,
        )
        return aws.eks.NodeGroup(
            child_name(name, "system"),
            aws.eks.NodeGroupArgs(
                cluster_name=cluster.name,
                # Its own version, or the cluster's at creation, kept when eks.version moves (ignore_changes below):
                # the control plane, then the system nodes, then the GPU nodes, each a diff of its own.
                version=system.kubernetes_version or args.spec.version,
                release_version=system.ami_release_version,
                node_role_arn=node_role.arn,
                subnet_ids=list(args.private_subnet_ids),
                ami_type=SYSTEM_AMI_TYPE,
                capacity_type="ON_DEMAND",
                instance_types=[system.instance_type],
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=system.min_size, desired_size=system.desired_size, max_size=system.max_size
                ),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
                launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                    id=template.id, version=template.latest_version.apply(str)
                ),
                labels={NODE_ROLE_LABEL: "system"},
                node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=self.node_dependencies,
                ignore_changes=["version"] if system.kubernetes_version is None else None,
            ),
        )

    def _eni_configs(self, name: str, args: EksClusterArgs) -> list[pulumi.Resource]:
        """One ENIConfig per AZ with a pod subnet, after the vpc-cni add-on (which installs the CRD)."""
        return [
            k8s.apiextensions.CustomResource(
                child_name(name, "eniconfig", az),
                api_version=ENI_CONFIG_API_VERSION,
                kind="ENIConfig",
                metadata=eni_config(az, subnet_id)["metadata"],
                spec=eni_config(az, subnet_id)["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self, provider=self.k8s_provider, depends_on=[self.addons["vpc-cni"]]
                ),
            )
            for az, subnet_id in args.pod_subnet_ids.items()
        ]

    def _kubernetes_provider(
        self, name: str, cluster: aws.eks.Cluster, config: pulumi.Output[str], admin_access: Sequence[pulumi.Resource]
    ) -> k8s.Provider:
        """The Kubernetes provider of this cluster. Every Kubernetes object waits for the admin access entries
        and their policy associations: without them the first `pulumi up` races them and the API answers
        Unauthorized."""
        return k8s.Provider(
            child_name(name, "k8s"),
            # The cluster's ARN is its identity: a change in the generated kubeconfig (endpoint, CA rotation,
            # the token command) then updates the provider instead of replacing it and every object it manages,
            # Helm releases and PVCs included (pulumi-kubernetes ProviderArgs.cluster_identifier).
            k8s.ProviderArgs(kubeconfig=config, enable_server_side_apply=True, cluster_identifier=cluster.arn),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(admin_access)),
        )

    def _addon(
        self, name: str, cluster: aws.eks.Cluster, plan: AddonPlan, waits: Sequence[pulumi.Resource]
    ) -> aws.eks.Addon:
        return aws.eks.Addon(
            child_name(name, plan.name),
            aws.eks.AddonArgs(
                cluster_name=cluster.name,
                addon_name=plan.name,
                addon_version=plan.version,
                configuration_values=json.dumps(plan.configuration) if plan.configuration else None,
                # The add-on's settings are ours: overwrite drift on create and update.
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(waits)),
        )
