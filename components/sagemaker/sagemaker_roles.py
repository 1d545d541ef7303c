"""IAM for SageMaker: the HyperPod node roles (execution; Slurm login nodes) and the training-job role.

The policy documents are pure functions of plain strings (tested in tests/unit/test_sagemaker_policies.py);
the components render them with `pulumi.Output.all(...).apply(json.dumps)`, which only fills in the
content of a policy, never decides what exists.

Sources:
- HyperPod execution role: SageMaker Developer Guide, "IAM role for SageMaker HyperPod" (managed policy
  AmazonSageMakerClusterInstanceRolePolicy, plus the EC2 network-interface actions a cluster in your own
  VPC needs, plus ECR pull and eks-auth:AssumeRoleForPodIdentity for the EKS orchestrator); the same set is
  in aws-samples/awsome-distributed-training `7.sagemaker-hyperpod-eks/.../sagemaker-iam-role-stack.yaml`.
  Its trust adds the account guard the guide's example omits (aws:SourceAccount), as the training role has.
  Not aws:SourceArn on the account's clusters: no HyperPod document confirms that SageMaker sends it when a
  cluster's nodes assume the role, and a condition it never sends would make cluster creation fail.
- One role per kind of node: CreateCluster takes an ExecutionRole per instance group ("Specifies an IAM execution
  role to be assumed by the instance group", required in ClusterInstanceGroupSpecification: botocore 1.44.5
  data/sagemaker/2017-07-24/service-2.json). Slurm login nodes, where users work, get a role of their own
  (`login=True`): the same node needs (lifecycle scripts, interfaces, EBS grants), the data key only through S3 for
  the lifecycle bucket, and nothing later granted to the workers.
- HyperPod creates the EKS access entries for the execution role and its service-linked role itself
  (SageMaker API reference, ClusterMetadata.EksRoleAccessEntries / SlrAccessEntry: "created by HyperPod on
  your behalf"), so trainstack creates none; the cluster only needs authentication mode API or
  API_AND_CONFIG_MAP ("Getting started with Amazon EKS support in SageMaker HyperPod").
- Training jobs: SageMaker Developer Guide, "How to use SageMaker AI execution roles" (CreateTrainingJob
  permissions: S3, ECR, CloudWatch Logs, the VPC ENI actions, KMS) and "Give SageMaker training jobs access
  to resources in your Amazon VPC"; FSx input needs fsx:DescribeFileSystems.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.naming import aws_partition, child_name, physical_name
from components.pod_identity import managed_policy_arn

SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
HYPERPOD_MANAGED_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
LIFECYCLE_KEY_ROOT = "hyperpod/lifecycle"  # every lifecycle bundle lives under this prefix of its bucket

# EC2 actions a SageMaker cluster or job in a customer VPC uses to attach its network interfaces.
# Describe* calls support no resource-level permissions (Service Authorization Reference, Amazon EC2).
ENI_DESCRIBE_ACTIONS = (
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
)
ENI_MUTATE_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
)
# Listed for the EKS orchestrator's execution role by the HyperPod IAM guide ("IAM role for SageMaker HyperPod",
# EKS section) and the same set in aws-samples' sagemaker-iam-role-stack.yaml; kept as documented. On this
# cluster aws-node (the VPC CNI) does not use the execution role: it has its own Pod Identity role
# (components/eks/eks.py), and the execution role only needs eks-auth:AssumeRoleForPodIdentity so the Pod Identity
# agent on HyperPod nodes can hand those credentials out.
HYPERPOD_ENI_EXTRA_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:DetachNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
)
# The Slurm orchestrator's execution role: the reference grants DetachNetworkInterface next to the common ENI
# actions (aws-samples/awsome-distributed-training, 1.architectures/5.sagemaker-hyperpod/
# 1.AmazonSageMakerClustersExecutionRolePolicy.json "AdditionToEnableVpcConfig", and the same set in
# sagemaker-hyperpod.yaml and terraform-modules/hyperpod-slurm-tf/modules/sagemaker_iam_role/main.tf).
HYPERPOD_SLURM_ENI_EXTRA_ACTIONS = ("ec2:DetachNetworkInterface",)
ECR_PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
# What the execution role may never read outside its own cluster's lifecycle prefix. The managed instance policy
# grants s3:GetObject and s3:ListBucket on every `sagemaker-*` bucket (SageMaker API reference,
# ClusterLifeCycleConfig.SourceS3Uri: "allows access to S3 buckets with the specific prefix sagemaker-"), so anyone
# who may UpdateCluster could point SourceS3Uri at a `sagemaker-*` bucket of their own and have their script run as
# root on every new node. An explicit deny beats that allow (IAM policy evaluation logic): a repointed source is
# unreadable and node creation fails instead.
LIFECYCLE_FOREIGN_READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")


def _statement(sid: str, actions: Sequence[str], resources: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": list(resources), **extra}


def _document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def sagemaker_trust_policy(account_id: str) -> dict[str, Any]:
    """Trust for roles SageMaker assumes, only on behalf of resources in `account_id` (confused-deputy guard:
    SageMaker Developer Guide, "Cross-service confused deputy prevention", global key aws:SourceAccount)."""
    return _document(
        {
            "Effect": "Allow",
            "Principal": {"Service": SAGEMAKER_PRINCIPAL},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
        }
    )


def _sagemaker_role(
    name: str, physical: str, description: str, account: pulumi.Output[str], opts: pulumi.ResourceOptions
) -> aws.iam.Role:
    """An IAM role only SageMaker acting for this account may assume (see `sagemaker_trust_policy`)."""
    return aws.iam.Role(
        name,
        aws.iam.RoleArgs(
            name=physical,
            description=description,
            assume_role_policy=account.apply(lambda a: json.dumps(sagemaker_trust_policy(a))),
            max_session_duration=3600,
        ),
        opts,
    )


@dataclass(frozen=True)
class VpcScope:
    """Where a SageMaker role may put network interfaces: the VPC, and the subnets and security groups the cluster or
    job is configured with (its VpcConfig)."""

    vpc_id: str
    subnet_ids: Sequence[str]
    security_group_ids: Sequence[str]


# Condition keys per action and resource, from the Service Authorization Reference (Amazon EC2) as parliament
# 1.6.4's iam_definition.json records it: CreateNetworkInterface's network-interface resource takes no ec2:Vpc (the
# interface does not exist yet), so creation is bounded by the subnet and security-group resources it also needs;
# every other interface action takes ec2:Vpc on the interface; instance resources take no ec2:Vpc.
ENI_VPC_SCOPED_ACTIONS = (
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
)


def _vpc_statements(
    partition: str, region: str, account_id: str, scope: VpcScope, extra: Sequence[str] = ()
) -> list[dict[str, Any]]:
    regional = f"arn:{partition}:ec2:{region}:{account_id}"
    interfaces = f"{regional}:network-interface/*"
    subnets = [f"{regional}:subnet/{s}" for s in scope.subnet_ids]
    groups = [f"{regional}:security-group/{g}" for g in scope.security_group_ids]
    # ec2:DetachNetworkInterface also needs the instance, and ModifyNetworkInterfaceAttribute may name the instance
    # and security groups; instance resources carry no ec2:Vpc, hence IfExists (checked wherever the key exists:
    # the interface, the security group).
    on_instances = any(a in extra for a in ("ec2:DetachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute"))
    in_vpc = {"ArnEqualsIfExists": {"ec2:Vpc": f"{regional}:vpc/{scope.vpc_id}"}}
    return [
        _statement("VpcDescribe", ENI_DESCRIBE_ACTIONS, ["*"]),
        _statement("VpcCreateInterfaces", ["ec2:CreateNetworkInterface"], [interfaces, *subnets, *groups]),
        _statement(
            "VpcManageInterfaces",
            (*ENI_VPC_SCOPED_ACTIONS, *extra),
            [interfaces, *([f"{regional}:instance/*", *groups] if on_instances else [])],
            Condition=in_vpc,
        ),
        # Not limited to ec2:CreateAction: the HyperPod guide grants CreateTags on interfaces without that condition.
        _statement("TagNetworkInterfaces", ["ec2:CreateTags"], [interfaces], Condition=in_vpc),
    ]


def _ecr_statements(partition: str, region: str) -> list[dict[str, Any]]:
    # Images come from this account and from AWS-owned registries (EKS add-ons, SageMaker DLCs), hence any
    # account in the region. GetAuthorizationToken has no resource-level permissions.
    return [
        _statement("EcrToken", ["ecr:GetAuthorizationToken"], ["*"]),
        _statement("EcrPull", ECR_PULL_ACTIONS, [f"arn:{partition}:ecr:{region}:*:repository/*"]),
    ]


def _lifecycle_read_statements(bucket_arn: str, prefix: str, root: str) -> list[dict[str, Any]]:
    """Read and list the one lifecycle bundle (`prefix`); deny reading any object outside the cluster's
    lifecycle `root` and listing any other bucket."""
    return [
        _statement("LifecycleRead", ["s3:GetObject"], [f"{bucket_arn}/{prefix}/*"]),
        _statement(
            "LifecycleList",
            ["s3:ListBucket"],
            [bucket_arn],
            Condition={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        ),
        {
            "Sid": "DenyReadOutsideLifecycle",
            "Effect": "Deny",
            "Action": sorted(LIFECYCLE_FOREIGN_READ_ACTIONS),
            "NotResource": [f"{bucket_arn}/{root}/*"],
        },
        {
            "Sid": "DenyListOtherBuckets",
            "Effect": "Deny",
            "Action": ["s3:ListBucket"],
            "NotResource": [bucket_arn],
        },
    ]


def _data_key_statements(
    kms_key_arn: str, bucket_arn: str, root: str, region: str, *, login: bool
) -> list[dict[str, Any]]:
    """Decrypt the lifecycle objects with the data key (a login node only through S3), and the grants HyperPod
    makes on it for the instance groups' EBS volumes."""
    through_s3: dict[str, Any] = {}
    if login:
        # S3 asks KMS with the bucket's ARN as encryption context when the bucket key is on
        # (components/storage/buckets.py) and the object's ARN otherwise (S3 User Guide, "Encryption context"):
        # both, and nothing else.
        through_s3 = {
            "Condition": {
                "StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"},
                "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, f"{bucket_arn}/{root}/*"]},
            }
        }
    return [
        _statement("LifecycleDecrypt", ["kms:Decrypt"], [kms_key_arn], **through_s3),
        # A customer managed key on the instance groups' EBS volumes: HyperPod creates grants on it with the execution
        # role's permissions when it adds, scales or patches nodes (SageMaker Developer Guide, "Customer managed AWS
        # KMS key encryption for SageMaker HyperPod", Permissions: kms:CreateGrant; DescribeKey to resolve the key).
        _statement("EbsVolumeKeyDescribe", ["kms:DescribeKey"], [kms_key_arn]),
        # Only grants an AWS service asks for on the role's behalf (EBS attaching a volume): without the condition
        # anyone holding the role's credentials (root on any node) could grant the data key to any principal.
        _statement(
            "EbsVolumeKeyGrants",
            ["kms:CreateGrant"],
            [kms_key_arn],
            Condition={"Bool": {"kms:GrantIsForAWSResource": "true"}},
        ),
    ]


def hyperpod_execution_policy(
    *,
    partition: str,
    region: str,
    account_id: str,
    lifecycle_bucket_arn: str,
    lifecycle_prefix: str,
    scope: VpcScope,
    lifecycle_root: str | None = None,
    eks_cluster_arn: str | None = None,
    kms_key_arn: str | None = None,
    login: bool = False,
) -> dict[str, Any]:
    """The inline policy of the HyperPod execution role, next to AmazonSageMakerClusterInstanceRolePolicy.

    Read-only on the lifecycle prefix, and an explicit deny on reading or listing anything else in S3 (any object
    outside `lifecycle_root`, the cluster's own root of content-hashed bundles, which defaults to the prefix;
    any bucket but the lifecycle bucket), the VPC network-interface actions (with the orchestrator's extra ones),
    grants on the data key for the EBS volumes it encrypts, and for the EKS orchestrator ECR pull, Pod Identity
    and describe on the one cluster.

    `login`: the Slurm login nodes' role, which decrypts with the data key only when S3 asks for the lifecycle
    bucket's objects (root on a login node holds these credentials: no direct kms:Decrypt of anything).
    """
    if login and eks_cluster_arn is not None:
        raise ValueError("login nodes exist only with the Slurm orchestrator; a login role takes no EKS cluster")
    prefix = lifecycle_prefix.strip("/")
    root = (lifecycle_root or prefix).strip("/")
    if prefix != root and not prefix.startswith(f"{root}/"):
        raise ValueError(f"lifecycle prefix {prefix!r} is not under lifecycle root {root!r}")
    eni_extra = HYPERPOD_ENI_EXTRA_ACTIONS if eks_cluster_arn is not None else HYPERPOD_SLURM_ENI_EXTRA_ACTIONS
    statements = [
        *_lifecycle_read_statements(lifecycle_bucket_arn, prefix, root),
        *_vpc_statements(partition, region, account_id, scope, eni_extra),
    ]
    if kms_key_arn is not None:
        statements += _data_key_statements(kms_key_arn, lifecycle_bucket_arn, root, region, login=login)
    if eks_cluster_arn is not None:
        statements += [
            _statement("EksDescribe", ["eks:DescribeCluster"], [eks_cluster_arn]),
            _statement("EksPodIdentity", ["eks-auth:AssumeRoleForPodIdentity"], [eks_cluster_arn]),
            *_ecr_statements(partition, region),
        ]
    return _document(*statements)


def training_job_policy(
    *,
    partition: str,
    region: str,
    account_id: str,
    datasets_bucket_arn: str,
    checkpoints_bucket_arn: str,
    checkpoints_prefix: str,
    scope: VpcScope,
    fsx_arn: str | None = None,
    kms_key_arn: str | None = None,
    checkpoints_kms_key_arn: str | None = None,
) -> dict[str, Any]:
    """The policy of one team's SageMaker training-job execution role: read datasets, read and write checkpoints
    and model output under the team's own prefix of the checkpoints bucket (`checkpoints_prefix`, the prefix its
    Pod Identity role writes: components/storage/team_storage.py), FSx input, ECR pull, KMS on the data key and (through
    S3 only) on the checkpoints key, VPC interfaces, and its own log group."""
    prefix = checkpoints_prefix.strip("/")
    if not prefix:
        raise ValueError("a training role's checkpoints prefix cannot be the whole bucket")
    log_group = f"arn:{partition}:logs:{region}:{account_id}:log-group:/aws/sagemaker/TrainingJobs"
    statements = [
        _statement("ListDatasets", ["s3:GetBucketLocation", "s3:ListBucket"], [datasets_bucket_arn]),
        _statement("LocateCheckpoints", ["s3:GetBucketLocation"], [checkpoints_bucket_arn]),
        _statement(
            "ListOwnCheckpoints",
            ["s3:ListBucket"],
            [checkpoints_bucket_arn],
            Condition={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        ),
        _statement("ReadDatasets", ["s3:GetObject"], [f"{datasets_bucket_arn}/*"]),
        _statement(
            "ReadWriteOwnCheckpoints",
            ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            [f"{checkpoints_bucket_arn}/{prefix}/*"],
        ),
        *_ecr_statements(partition, region),
        *_vpc_statements(partition, region, account_id, scope),
        _statement("LogGroup", ["logs:CreateLogGroup", "logs:DescribeLogStreams"], [f"{log_group}:*"]),
        _statement("LogStreams", ["logs:CreateLogStream", "logs:PutLogEvents"], [f"{log_group}:log-stream:*"]),
    ]
    if fsx_arn is not None:
        # fsx:DescribeFileSystems has no resource-level permission (Service Authorization Reference, Amazon FSx:
        # no resource type): scoped to the file system's ARN it is never allowed, so it takes "*".
        statements.append(_statement("FsxInput", ["fsx:DescribeFileSystems"], ["*"]))
    if kms_key_arn is not None:
        statements.append(
            _statement("DataKey", ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"], [kms_key_arn])
        )
    if checkpoints_kms_key_arn is not None:
        # The checkpoints bucket encrypts with its own key (components/storage/buckets.py): S3 uses it with the job's
        # permissions, GenerateDataKey to write and Decrypt to read and to complete a multipart upload (S3 User
        # Guide, SSE-KMS permissions), and only S3 needs it (kms:ViaService).
        statements.append(
            _statement(
                "CheckpointsKey",
                ["kms:Decrypt", "kms:GenerateDataKey"],
                [checkpoints_kms_key_arn],
                Condition={"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            )
        )
    return _document(*statements)


def vpc_scope(
    vpc_id: pulumi.Input[str], subnet_ids: Sequence[pulumi.Input[str]], security_group_ids: Sequence[pulumi.Input[str]]
) -> pulumi.Output[VpcScope]:
    """The VpcScope of resolved ids; a role without a VPC id is a wiring error, not a policy on every VPC."""

    def build(v: list[Any]) -> VpcScope:
        if not v[0] or not v[1] or not v[2]:
            raise ValueError("a SageMaker role's network scope needs the VPC id, its subnets and security groups")
        return VpcScope(str(v[0]), [str(x) for x in v[1]], [str(x) for x in v[2]])

    return pulumi.Output.all(
        pulumi.Output.from_input(vpc_id), pulumi.Output.all(*subnet_ids), pulumi.Output.all(*security_group_ids)
    ).apply(build)


def _account_id(parent: pulumi.Resource) -> pulumi.Output[str]:
    return aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id


# ----------------------------------------------------------------------------------------- components


@dataclass
class HyperPodExecutionRoleArgs:
    """Wiring for the HyperPod execution role (the spec lives with the cluster)."""

    base_name: str  # physical base name, for example trainstack-staging
    region: str
    lifecycle_bucket_arn: pulumi.Input[str]
    lifecycle_prefix: str
    lifecycle_root: str | None = None
    """The cluster's root of lifecycle bundles: the only S3 objects the role may read (defaults to the prefix)."""
    vpc_id: pulumi.Input[str] = ""
    subnet_ids: Sequence[pulumi.Input[str]] = ()
    security_group_ids: Sequence[pulumi.Input[str]] = ()
    """The cluster's VpcConfig: the only place the role may put network interfaces."""
    eks_cluster_arn: pulumi.Input[str] | None = None
    kms_key_arn: pulumi.Input[str] | None = None
    login: bool = False
    """The Slurm login nodes' role (`hyperpod_execution_policy`), named `<base>-hyperpod-login`."""


def hyperpod_role_name(base_name: str, login: bool = False) -> str:
    """A HyperPod role's physical name (fixed, so the lifecycle bucket's policy can name it before it exists)."""
    return physical_name(base_name, "hyperpod-login" if login else "hyperpod-exec", max_length=64)


class HyperPodExecutionRole(pulumi.ComponentResource):
    """The IAM role HyperPod instances run as: the AWS managed instance policy plus a scoped inline policy."""

    role_arn: pulumi.Output[str]
    """ARN of the execution role, for every instance group's ExecutionRole."""
    role_name: pulumi.Output[str]
    """Name of the execution role."""

    def __init__(self, name: str, args: HyperPodExecutionRoleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:sagemaker:HyperPodExecutionRole", name, None, opts)
        partition = aws_partition(args.region)
        child = pulumi.ResourceOptions(parent=self)
        account = _account_id(self)
        self.role = _sagemaker_role(
            child_name(name, "role"),
            hyperpod_role_name(args.base_name, args.login),
            "SageMaker HyperPod login-node role (trainstack)"
            if args.login
            else "SageMaker HyperPod execution role (trainstack)",
            account,
            child,
        )
        self.managed = aws.iam.RolePolicyAttachment(
            child_name(name, "instance-policy"),
            aws.iam.RolePolicyAttachmentArgs(
                role=self.role.name, policy_arn=managed_policy_arn(HYPERPOD_MANAGED_POLICY, partition)
            ),
            child,
        )
        document = pulumi.Output.all(
            account,
            pulumi.Output.from_input(args.lifecycle_bucket_arn),
            pulumi.Output.from_input(args.eks_cluster_arn),
            pulumi.Output.from_input(args.kms_key_arn),
            vpc_scope(args.vpc_id, args.subnet_ids, args.security_group_ids),
        ).apply(
            lambda v: json.dumps(
                hyperpod_execution_policy(
                    partition=partition,
                    region=args.region,
                    account_id=v[0],
                    scope=v[4],
                    lifecycle_bucket_arn=v[1],
                    lifecycle_prefix=args.lifecycle_prefix,
                    lifecycle_root=args.lifecycle_root,
                    eks_cluster_arn=v[2],
                    kms_key_arn=v[3],
                    login=args.login,
                )
            )
        )
        self.inline = aws.iam.RolePolicy(
            child_name(name, "inline"),
            aws.iam.RolePolicyArgs(role=self.role.name, name="trainstack-hyperpod", policy=document),
            child,
        )
        self.role_arn = self.role.arn
        self.role_name = self.role.name
        self.register_outputs({"role_arn": self.role_arn, "role_name": self.role_name})


@dataclass
class TrainingJobRoleArgs:
    """Wiring for the SageMaker training-job roles (one per team) and the VPC settings jobs launch with."""

    base_name: str  # physical base name
    region: str
    teams: Sequence[str]
    """One role per team, writing only `s3://<checkpoints>/<team>/`."""
    datasets_bucket_arn: pulumi.Input[str]
    checkpoints_bucket_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    security_group_ids: Sequence[pulumi.Input[str]]
    vpc_id: pulumi.Input[str] = ""
    """The VPC of `subnet_ids`: the roles put network interfaces only there."""
    fsx_arn: pulumi.Input[str] | None = None
    kms_key_arn: pulumi.Input[str] | None = None
    checkpoints_kms_key_arn: pulumi.Input[str] | None = None
    """The checkpoints bucket's key, which S3 uses with the job's permissions when it writes checkpoints."""


class TrainingJobRole(pulumi.ComponentResource):
    """Per team, an execution role for SageMaker training jobs on trainstack's data; and the VPC settings to use.

    A team's jobs pass `role_arns[team]` as RoleArn and `subnet_ids` / `security_group_ids` as VpcConfig, so they
    reach FSx and the buckets through the same private subnet and EFA security group as the GPU nodes, and write
    checkpoints only under the team's prefix: one role for every team could overwrite every team's checkpoints.
    """

    role_arns: pulumi.Output[dict[str, str]]
    """Team -> ARN of its training-job execution role."""
    subnet_ids: pulumi.Output[list[str]]
    """Private subnet ids for a training job's VpcConfig.Subnets."""
    security_group_ids: pulumi.Output[list[str]]
    """Security group ids for a training job's VpcConfig.SecurityGroupIds."""

    def __init__(self, name: str, args: TrainingJobRoleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:sagemaker:TrainingJobRole", name, None, opts)
        partition = aws_partition(args.region)
        child = pulumi.ResourceOptions(parent=self)
        account = _account_id(self)
        roles: dict[str, pulumi.Output[str]] = {}
        for team in args.teams:
            role = _sagemaker_role(
                child_name(name, team, "role"),
                physical_name(args.base_name, f"sm-train-{team}", max_length=64),
                f"SageMaker training-job execution role of team {team} (trainstack)",
                account,
                child,
            )
            document = pulumi.Output.all(
                account,
                pulumi.Output.from_input(args.datasets_bucket_arn),
                pulumi.Output.from_input(args.checkpoints_bucket_arn),
                pulumi.Output.from_input(args.fsx_arn),
                pulumi.Output.from_input(args.kms_key_arn),
                pulumi.Output.from_input(args.checkpoints_kms_key_arn),
                vpc_scope(args.vpc_id, args.subnet_ids, args.security_group_ids),
            ).apply(
                lambda v, team=team: json.dumps(
                    training_job_policy(
                        partition=partition,
                        region=args.region,
                        account_id=v[0],
                        scope=v[6],
                        datasets_bucket_arn=v[1],
                        checkpoints_bucket_arn=v[2],
                        checkpoints_prefix=team,
                        fsx_arn=v[3],
                        kms_key_arn=v[4],
                        checkpoints_kms_key_arn=v[5],
                    )
                )
            )
            aws.iam.RolePolicy(
                child_name(name, team, "inline"),
                aws.iam.RolePolicyArgs(role=role.name, name="trainstack-training-job", policy=document),
                child,
            )
            roles[team] = role.arn
        self.role_arns = pulumi.Output.all(**roles).apply(dict) if roles else pulumi.Output.from_input({})
        self.subnet_ids = pulumi.Output.all(*args.subnet_ids).apply(list)
        self.security_group_ids = pulumi.Output.all(*args.security_group_ids).apply(list)
        self.register_outputs(
            {
                "role_arns": self.role_arns,
                "subnet_ids": self.subnet_ids,
                "security_group_ids": self.security_group_ids,
            }
        )
