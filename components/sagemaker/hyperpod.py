"""SageMaker HyperPod on trainstack's network and storage, orchestrated by the EKS cluster or by Slurm.

`HyperPodCluster` builds, as children:
- a lifecycle bucket (`sagemaker-` name prefix: SageMaker API reference, ClusterLifeCycleConfig.SourceS3Uri,
  "make sure the S3 bucket path starts with s3://sagemaker-"), encrypted with the data key, versioned, all
  public access blocked, TLS only, and locked down: the scripts run as root on every node HyperPod creates or
  recovers, and AWS's AmazonSageMakerFullAccess policy grants object access to every `sagemaker-*` bucket, so
  the bucket policy denies reading the lifecycle prefix to all but the deploying principal and the execution
  role, writing it to all but the deploying principal, and any upload not encrypted with the stack's key
  (explicit denies beat any identity policy; docs/security.md);
- the lifecycle scripts shipped in `components/sagemaker/lifecycle/<orchestrator>/`, uploaded under a content-hashed
  prefix (`hyperpod/lifecycle/<cluster>/<digest>/`): any changed script gives a new prefix, so the cluster's
  SourceS3Uri changes and HyperPod runs the new scripts on the nodes it creates next, while the objects
  under the old prefix stay immutable until Pulumi deletes them after the update;
- for Slurm, `provisioning_parameters.json` (controller, login and worker groups, FSx DNS and mount names)
  next to the scripts: its content comes from the FSx outputs, its key does not;
- the execution role (`HyperPodExecutionRole` in components/sagemaker/sagemaker_roles.py) of the controller and compute
  groups, and for a Slurm login group a login-node role of its own: users work there, so it must not hold what
  the workers hold (CreateCluster takes an ExecutionRole per instance group);
- for Slurm, one NCCL validation sbatch script per EFA GPU group (components/sagemaker/slurm_validation.py), which the
  scripts install under /opt/trainstack/validation;
- the `aws-native:sagemaker:Cluster` (after `args.after`: with the EKS orchestrator the HyperPod dependencies
  chart of components/sagemaker/hyperpod_dependencies.py, the core add-ons and the system node group): one instance
  group per configured group, threads per core 1, an extra EBS volume and the root volume encrypted with the
  data key (continuous provisioning, which that needs), the lifecycle config, deep health checks on start for
  accelerated groups, automatic node recovery, the private subnet of the GPU AZ with the EFA security group, the
  EKS cluster as orchestrator (Slurm when absent: the API's default), and the training plan on the groups that
  use it.

The cluster is registered with the explicit `aws-native` provider; IAM and S3 children use the explicit
`aws` provider. Pass both as `providers=[aws, aws_native]` on the component.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as aws_native
from pulumi_aws_native import sagemaker

from components.kms import deployer_arn
from components.naming import aws_partition, child_name, physical_name
from components.sagemaker.sagemaker_roles import (
    LIFECYCLE_KEY_ROOT,
    HyperPodExecutionRole,
    HyperPodExecutionRoleArgs,
    hyperpod_role_name,
)
from components.sagemaker.slurm_validation import validation_scripts
from components.storage.buckets import secure_bucket
from stacks.catalog import CATALOG, Accelerator
from stacks.schema import (
    HyperPodCapacity,
    HyperPodGroupRole,
    HyperPodInstanceGroupSpec,
    HyperPodOrchestrator,
    HyperPodSpec,
)

LIFECYCLE_ROOT = Path(__file__).resolve().parent / "lifecycle"
ON_CREATE = "on_create.sh"
PROVISIONING_PARAMETERS = "provisioning_parameters.json"
# Hyperthreading off: one thread per physical core, the setting HyperPod and AWS's distributed-training
# guidance use for GPU training (CreateCluster ThreadsPerCore: 1 disables multithreading).
THREADS_PER_CORE = 1
INSTANCE_STRESS = sagemaker.ClusterDeepHealthCheckType.INSTANCE_STRESS
INSTANCE_CONNECTIVITY = sagemaker.ClusterDeepHealthCheckType.INSTANCE_CONNECTIVITY
LIFECYCLE_NONCURRENT_DAYS = 7  # old bundle versions are never read again once the cluster moved on
LIFECYCLE_ABORT_UPLOAD_DAYS = 1  # the scripts are kilobytes: an upload still open a day later was abandoned
DIGEST_LENGTH = 16  # hex characters of the bundle digest in the key (64 bits: no practical collision)


LIFECYCLE_READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
# Every way to put or change an object: uploads and deletes, and replication into this bucket, which S3 authorizes as
# s3:ReplicateObject/ReplicateDelete/ReplicateTags on the destination, not as s3:PutObject (S3 User Guide,
# replication permissions); ACL and tag changes.
LIFECYCLE_WRITE_ACTIONS = (
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:RestoreObject",
    "s3:ReplicateObject",
    "s3:ReplicateDelete",
    "s3:ReplicateTags",
    "s3:PutObjectAcl",
    "s3:PutObjectTagging",
)

# --------------------------------------------------------------------------------------------- pure


def lifecycle_lockdown_statements(
    bucket_arn: str, deployer_arn: str, reader_role_arns: Sequence[str], kms_key_arn: str | None
) -> list[dict[str, Any]]:
    """Bucket policy statements that keep the lifecycle scripts to the deployer (read, write) and the cluster's
    node roles (read only: the execution role, and the login role where there is one), and refuse uploads not
    encrypted with the stack's key. Writes are the deployer's anywhere in the bucket: nothing but trainstack's
    bundles lives there, and an object outside the lifecycle root is one a repointed SourceS3Uri could name."""
    objects = f"{bucket_arn}/{LIFECYCLE_KEY_ROOT}/*"
    statements: list[dict[str, Any]] = [
        {
            "Sid": "DenyLifecycleReadExceptDeployerAndHyperPod",
            "Effect": "Deny",
            "Principal": "*",
            "Action": list(LIFECYCLE_READ_ACTIONS),
            "Resource": objects,
            "Condition": {"ArnNotEquals": {"aws:PrincipalArn": sorted({deployer_arn, *reader_role_arns})}},
        },
        {
            "Sid": "DenyLifecycleWriteExceptDeployer",
            "Effect": "Deny",
            "Principal": "*",
            "Action": list(LIFECYCLE_WRITE_ACTIONS),
            "Resource": f"{bucket_arn}/*",
            "Condition": {"ArnNotEquals": {"aws:PrincipalArn": deployer_arn}},
        },
    ]
    if kms_key_arn is not None:
        # The key id condition is absent from uploads that rely on the bucket's default encryption: those are
        # refused too, so every object says which key it was written with (and only this key will do).
        statements.append(
            {
                "Sid": "DenyLifecycleUploadWithoutStackKey",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:PutObject",
                "Resource": objects,
                "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption-aws-kms-key-id": kms_key_arn}},
            }
        )
    return statements


def script_digest(body: bytes) -> str:
    """SHA-256 of one script's bytes, hex."""
    return hashlib.sha256(body).hexdigest()


def bundle_digest(files: Mapping[str, bytes]) -> str:
    """A digest over every file name and content of a lifecycle bundle: changes when any file changes,
    is added, removed or renamed; independent of the order the files were read in."""
    outer = hashlib.sha256()
    for name in sorted(files):
        outer.update(f"{name}\0{script_digest(files[name])}\n".encode())
    return outer.hexdigest()[:DIGEST_LENGTH]


def lifecycle_root(cluster_name: str) -> str:
    """The S3 prefix (no trailing slash) of every bundle of one cluster: all the execution role may read (a
    recovering node still reads the previous bundle while an update moves the cluster to the next)."""
    return f"{LIFECYCLE_KEY_ROOT}/{cluster_name}"


def lifecycle_prefix(cluster_name: str, files: Mapping[str, bytes]) -> str:
    """The S3 prefix (no trailing slash) a bundle is uploaded under."""
    return f"{lifecycle_root(cluster_name)}/{bundle_digest(files)}"


def read_bundle(directory: Path) -> dict[str, bytes]:
    """Every regular file of a lifecycle directory by name. The entry point must be there."""
    files = {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}
    if ON_CREATE not in files:
        raise ValueError(f"lifecycle directory {directory} has no {ON_CREATE}")
    return files


def nvidia_groups(spec: HyperPodSpec) -> list[str]:
    """Instance groups of NVIDIA GPU types (the catalog): their nodes need nvidia-container-cli for enroot."""
    return [
        g.name
        for g in spec.instance_groups
        if (row := CATALOG.get(g.ec2_instance_type)) is not None and row.accelerator is Accelerator.NVIDIA
    ]


def slurm_settings(spec: HyperPodSpec) -> dict[str, Any]:
    """The `trainstack` block of provisioning_parameters.json: what components/sagemaker/lifecycle/slurm/node_config.py
    hands the step scripts (containers is null when off)."""
    slurm = spec.slurm
    return {
        "containers": {"enroot_version": slurm.enroot_version, "pyxis_version": slurm.pyxis_version}
        if slurm.containers
        else None,
        "accounting": slurm.accounting,
        "homes_on_lustre": slurm.homes_on_lustre,
        "hold_lustre_client": slurm.hold_lustre_client,
        "users": [u.model_dump(mode="json") for u in slurm.users],
        "nvidia_groups": nvidia_groups(spec),
    }


def provisioning_parameters(
    spec: HyperPodSpec,
    fsx_dns_name: str | None = None,
    fsx_mount_name: str | None = None,
    fsx_root_squash: str | None = None,
) -> dict[str, Any]:
    """`provisioning_parameters.json` for the Slurm lifecycle scripts (the format of AWS's HyperPod
    base-config: controller_group, login_group, worker_groups with partition names, fsx_dns_name,
    fsx_mountname, plus the file system's root squash UID:GID (null when off) and trainstack's settings under
    `trainstack`). Each compute group is its own Slurm partition, named after the group."""
    controller = spec.groups(HyperPodGroupRole.CONTROLLER)
    login = spec.groups(HyperPodGroupRole.LOGIN)
    params: dict[str, Any] = {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": controller[0].name if controller else None,
        "worker_groups": [
            {"instance_group_name": g.name, "partition_name": g.name} for g in spec.groups(HyperPodGroupRole.COMPUTE)
        ],
    }
    if login:
        params["login_group"] = login[0].name
    params["trainstack"] = slurm_settings(spec)
    if fsx_dns_name and fsx_mount_name:
        params["fsx_dns_name"] = fsx_dns_name
        params["fsx_mountname"] = fsx_mount_name
        params["fsx_root_squash"] = fsx_root_squash
    return params


def deep_health_checks(group: HyperPodInstanceGroupSpec) -> list[sagemaker.ClusterDeepHealthCheckType]:
    """On-start deep health checks for a group. Both run on GPU and Trainium types (SageMaker Developer
    Guide, HyperPod "Deep health checks": DCGM level 4, NCCL/NCCOM, EFA); the connectivity check needs EFA.
    Controller and login groups are CPU instances outside the catalog and get none."""
    row = CATALOG.get(group.ec2_instance_type)
    if group.role is not HyperPodGroupRole.COMPUTE or row is None:
        return []
    return [INSTANCE_STRESS, INSTANCE_CONNECTIVITY] if row.supports_efa else [INSTANCE_STRESS]


# ---------------------------------------------------------------------------------------- component


@dataclass
class HyperPodClusterArgs:
    """Spec (validated config) and wiring (outputs of the network, EKS and storage components)."""

    spec: HyperPodSpec
    base_name: str
    """Physical base name of the stack, for example trainstack-staging."""
    region: str
    subnet_ids: Sequence[pulumi.Input[str]]
    """Private subnet(s) of the GPU AZ: EFA and FSx work within one AZ."""
    security_group_ids: Sequence[pulumi.Input[str]]
    """The EFA security group (all traffic to and from itself, admitted by FSx); with the EKS orchestrator
    also the EKS cluster security group."""
    vpc_id: pulumi.Input[str] = ""
    """The VPC of `subnet_ids`: the execution role puts network interfaces only there."""
    eks_cluster_arn: pulumi.Input[str] | None = None
    """Required for the EKS orchestrator."""
    kms_key_arn: pulumi.Input[str] | None = None
    """The data key: encrypts the lifecycle bucket and every group's extra EBS volume (the execution role may
    decrypt with it and create the grants EBS needs)."""
    fsx_dns_name: pulumi.Input[str] | None = None
    fsx_mount_name: pulumi.Input[str] | None = None
    """FSx for Lustre the Slurm nodes mount at /fsx."""
    fsx_root_squash: str | None = None
    """The file system's root squash UID:GID (storage.fsx.root_squash), None when it squashes nothing: the Slurm
    lifecycle does its /fsx work as that identity."""
    lifecycle_dir: Path | None = None
    """Lifecycle scripts to upload; defaults to components/sagemaker/lifecycle/<orchestrator>."""
    protect: bool = False
    """Protect the cluster and its lifecycle bucket against deletion (prod)."""
    after: Sequence[pulumi.Resource] = ()
    """What must exist before HyperPod provisions nodes. With the EKS orchestrator: the HyperPod dependencies
    chart (health agent, deep health checks), the core add-ons and the system node group."""


def _check_args(args: HyperPodClusterArgs) -> None:
    """Refuse what the stack schema already refuses, for callers that build the args by hand."""
    spec = args.spec
    if not spec.enabled:
        raise ValueError("HyperPodCluster needs an enabled HyperPod spec; do not construct it otherwise")
    if spec.orchestrator is HyperPodOrchestrator.EKS and args.eks_cluster_arn is None:
        raise ValueError("the EKS orchestrator needs eks_cluster_arn")
    if not args.subnet_ids or not args.security_group_ids:
        raise ValueError("HyperPod needs at least one subnet and one security group")


class HyperPodCluster(pulumi.ComponentResource):
    """A SageMaker HyperPod cluster (EKS or Slurm) with its lifecycle scripts and execution role."""

    cluster_name: str
    """The HyperPod cluster name (physical, known at plan time)."""
    cluster_arn: pulumi.Output[str]
    """ARN of the HyperPod cluster."""
    execution_role_arn: pulumi.Output[str]
    """ARN of the role the controller and compute groups run as."""
    login_role_arn: pulumi.Output[str] | None
    """ARN of the role the Slurm login group runs as; None without a login group."""
    lifecycle_bucket_name: pulumi.Output[str]
    """Bucket holding the lifecycle scripts."""
    lifecycle_source_s3_uri: pulumi.Output[str]
    """The content-hashed S3 prefix of the lifecycle scripts (the instance groups' SourceS3Uri)."""
    orchestrator: str
    """eks or slurm."""

    def __init__(self, name: str, args: HyperPodClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:sagemaker:HyperPodCluster", name, None, opts)
        spec = args.spec
        _check_args(args)
        eks = spec.orchestrator is HyperPodOrchestrator.EKS
        self.orchestrator = spec.orchestrator.value
        self.cluster_name = physical_name(args.base_name, "hyperpod")
        child = pulumi.ResourceOptions(parent=self)

        files, prefix = self._lifecycle_bundle(args)
        bucket = self._lifecycle_bucket(name, args)
        objects = self._lifecycle_objects(name, args, bucket, files, prefix, child)
        self.role = self._node_role(name, args, bucket, prefix, child, login=False)
        self.login_role = (
            self._node_role(name, args, bucket, prefix, child, login=True)
            if spec.groups(HyperPodGroupRole.LOGIN)
            else None
        )
        roles = [self.role, *([self.login_role] if self.login_role else [])]
        self.lifecycle_source_s3_uri = bucket.bucket.apply(lambda b: f"s3://{b}/{prefix}/")
        self.cluster = self._cluster(name, args, eks, depends_on=[*objects, *roles, *args.after])

        self.cluster_arn = self.cluster.cluster_arn
        self.execution_role_arn = self.role.role_arn
        self.login_role_arn = self.login_role.role_arn if self.login_role is not None else None
        self.lifecycle_bucket_name = bucket.bucket
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_arn": self.cluster_arn,
                "execution_role_arn": self.execution_role_arn,
                "login_role_arn": self.login_role_arn,
                "lifecycle_bucket_name": self.lifecycle_bucket_name,
                "lifecycle_source_s3_uri": self.lifecycle_source_s3_uri,
                "orchestrator": self.orchestrator,
            }
        )

    def _lifecycle_bundle(self, args: HyperPodClusterArgs) -> tuple[dict[str, bytes], str]:
        """The lifecycle files to upload and the content-hashed prefix they go under: what is known at plan time
        goes into the digest, so changed scripts (or, with Slurm, a changed group layout) change the prefix."""
        spec = args.spec
        slurm = spec.orchestrator is not HyperPodOrchestrator.EKS
        files = read_bundle(args.lifecycle_dir or LIFECYCLE_ROOT / spec.orchestrator.value)
        if slurm:
            # The NCCL validation jobs are generated (group, node count, floor): they ship with the scripts.
            files |= {name: body.encode() for name, body in validation_scripts(spec).items()}
        static = dict(files)
        if slurm:
            # The group names are known now: put them in the digest so a changed layout changes the prefix.
            static[PROVISIONING_PARAMETERS] = json.dumps(
                provisioning_parameters(spec, fsx_root_squash=args.fsx_root_squash), sort_keys=True
            ).encode()
        return files, lifecycle_prefix(self.cluster_name, static)

    @staticmethod
    def _lifecycle_objects(
        name: str,
        args: HyperPodClusterArgs,
        bucket: aws.s3.Bucket,
        files: dict[str, bytes],
        prefix: str,
        child: pulumi.ResourceOptions,
    ) -> list[aws.s3.BucketObjectv2]:
        """One object per lifecycle file, then (Slurm) provisioning_parameters.json, which names the Lustre file
        system and so is only known once it exists."""
        spec = args.spec
        # The bucket policy refuses uploads that do not name the stack's key (lifecycle_lockdown_statements).
        sse: dict[str, Any] = (
            {"server_side_encryption": "aws:kms", "kms_key_id": args.kms_key_arn} if args.kms_key_arn else {}
        )
        objects = [
            aws.s3.BucketObjectv2(
                child_name(name, "lifecycle", file_name.replace(".", "-").replace("_", "-")),
                aws.s3.BucketObjectv2Args(
                    bucket=bucket.id,
                    key=f"{prefix}/{file_name}",
                    content=body.decode("utf-8"),
                    content_type="text/x-shellscript" if file_name.endswith((".sh", ".sbatch")) else "text/plain",
                    checksum_algorithm="SHA256",
                    **sse,
                ),
                child,
            )
            for file_name, body in files.items()
        ]
        if spec.orchestrator is not HyperPodOrchestrator.EKS:
            params = pulumi.Output.all(
                pulumi.Output.from_input(args.fsx_dns_name), pulumi.Output.from_input(args.fsx_mount_name)
            ).apply(
                lambda fsx: json.dumps(
                    provisioning_parameters(spec, fsx[0], fsx[1], args.fsx_root_squash), indent=2, sort_keys=True
                )
            )
            objects.append(
                aws.s3.BucketObjectv2(
                    child_name(name, "lifecycle", "provisioning-parameters"),
                    aws.s3.BucketObjectv2Args(
                        bucket=bucket.id,
                        key=f"{prefix}/{PROVISIONING_PARAMETERS}",
                        content=params,
                        content_type="application/json",
                        checksum_algorithm="SHA256",
                        **sse,
                    ),
                    child,
                )
            )
        return objects

    def _node_role(
        self,
        name: str,
        args: HyperPodClusterArgs,
        bucket: aws.s3.Bucket,
        prefix: str,
        child: pulumi.ResourceOptions,
        *,
        login: bool,
    ) -> HyperPodExecutionRole:
        """The role a group's nodes run as; the login group's has no EKS access."""
        return HyperPodExecutionRole(
            child_name(name, "login" if login else "execution"),
            HyperPodExecutionRoleArgs(
                base_name=args.base_name,
                region=args.region,
                lifecycle_bucket_arn=bucket.arn,
                lifecycle_prefix=prefix,
                lifecycle_root=lifecycle_root(self.cluster_name),
                vpc_id=args.vpc_id,
                subnet_ids=args.subnet_ids,
                security_group_ids=args.security_group_ids,
                eks_cluster_arn=None if login else args.eks_cluster_arn,
                kms_key_arn=args.kms_key_arn,
                login=login,
            ),
            child,
        )

    def _cluster(
        self, name: str, args: HyperPodClusterArgs, eks: bool, depends_on: list[pulumi.Resource]
    ) -> sagemaker.Cluster:
        """The HyperPod cluster itself, each instance group running as its role."""
        spec = args.spec
        groups = [
            self._group(
                g,
                spec,
                self.login_role.role_arn
                if self.login_role is not None and g.role is HyperPodGroupRole.LOGIN
                else self.role.role_arn,
                self.lifecycle_source_s3_uri,
                args.kms_key_arn,
            )
            for g in spec.instance_groups
        ]
        return sagemaker.Cluster(
            child_name(name, "cluster"),
            sagemaker.ClusterArgs(
                cluster_name=self.cluster_name,
                instance_groups=groups,
                node_recovery=sagemaker.ClusterNodeRecovery.AUTOMATIC,
                # A customer managed key on the EBS volumes needs continuous provisioning (SageMaker Developer
                # Guide, "Customer managed AWS KMS key encryption for SageMaker HyperPod"); both orchestrators
                # support it ("Continuous provisioning" for Slurm and for EKS).
                node_provisioning_mode=sagemaker.ClusterNodeProvisioningMode.CONTINUOUS
                if args.kms_key_arn is not None
                else None,
                vpc_config=sagemaker.ClusterVpcConfigArgs(
                    subnets=list(args.subnet_ids), security_group_ids=list(args.security_group_ids)
                ),
                orchestrator=sagemaker.ClusterOrchestratorArgs(
                    eks=sagemaker.ClusterOrchestratorEksConfigArgs(cluster_arn=args.eks_cluster_arn)
                )
                if eks and args.eks_cluster_arn is not None  # always set with eks (checked in _check_args)
                else None,
            ),
            pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                # Scripts and role policies must exist before HyperPod provisions the first node; the fixed
                # cluster name cannot exist twice, so a replacement deletes first.
                depends_on=depends_on,
                delete_before_replace=True,
            ),
        )

    @staticmethod
    def _group(
        group: HyperPodInstanceGroupSpec,
        spec: HyperPodSpec,
        role_arn: pulumi.Input[str],
        source_s3_uri: pulumi.Input[str],
        kms_key_arn: pulumi.Input[str] | None,
    ) -> sagemaker.ClusterInstanceGroupArgs:
        checks = deep_health_checks(group)
        volumes = [
            sagemaker.ClusterInstanceStorageConfigArgs(
                ebs_volume_config=sagemaker.ClusterEbsVolumeConfigArgs(
                    volume_size_in_gb=group.ebs_volume_size_gib, volume_kms_key_id=kms_key_arn
                )
            )
        ]
        if kms_key_arn is not None:
            # The root volume too (the Slurm controller keeps the accounting database there): RootVolume true
            # takes a key and no size (SageMaker API reference, ClusterEbsVolumeConfig.RootVolume); without it
            # HyperPod encrypts the root volume with an AWS owned key.
            volumes.append(
                sagemaker.ClusterInstanceStorageConfigArgs(
                    ebs_volume_config=sagemaker.ClusterEbsVolumeConfigArgs(
                        root_volume=True, volume_kms_key_id=kms_key_arn
                    )
                )
            )
        return sagemaker.ClusterInstanceGroupArgs(
            instance_group_name=group.name,
            instance_type=group.instance_type,
            instance_count=group.instance_count,
            execution_role=role_arn,
            threads_per_core=THREADS_PER_CORE,
            instance_storage_configs=volumes,
            life_cycle_config=sagemaker.ClusterLifeCycleConfigArgs(source_s3_uri=source_s3_uri, on_create=ON_CREATE),
            on_start_deep_health_checks=checks or None,
            training_plan_arn=spec.training_plan_arn if group.capacity is HyperPodCapacity.TRAINING_PLAN else None,
        )

    def _lifecycle_bucket(self, name: str, args: HyperPodClusterArgs) -> aws.s3.Bucket:
        partition = aws_partition(args.region)
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        names = [hyperpod_role_name(args.base_name)]
        if args.spec.groups(HyperPodGroupRole.LOGIN):
            names.append(hyperpod_role_name(args.base_name, login=True))
        readers = account.apply(lambda a: [f"arn:{partition}:iam::{a}:role/{n}" for n in names])
        deployer = deployer_arn(self)
        key = pulumi.Output.from_input(args.kms_key_arn)

        def lockdown(bucket_arn: pulumi.Output[str]) -> pulumi.Output[list[dict[str, Any]]]:
            return pulumi.Output.all(bucket_arn, deployer, readers, key).apply(
                lambda v: lifecycle_lockdown_statements(v[0], v[1], v[2], v[3])
            )

        expire_old_bundles = aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="expire-old-bundles",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=LIFECYCLE_NONCURRENT_DAYS
            ),
        )
        # An upload the deployer's `pulumi up` left unfinished (interrupted) is billed until aborted (S3 User Guide,
        # "Configuring a bucket lifecycle configuration to delete incomplete multipart uploads").
        abort_stale_uploads = aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="abort-incomplete-multipart-uploads",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=LIFECYCLE_ABORT_UPLOAD_DAYS
            ),
        )
        return secure_bucket(
            child_name(name, "lifecycle-bucket"),
            aws.s3.BucketArgs(
                # Globally unique by the provider's random suffix; "sagemaker-" first, as HyperPod requires.
                bucket_prefix=physical_name("sagemaker", args.base_name, "lc", max_length=36) + "-",
                force_destroy=True,  # only generated copies of files in this repository live here
            ),
            kms_key_arn=args.kms_key_arn,
            rules=[expire_old_bundles, abort_stale_uploads],
            parent=self,
            protect=args.protect,
            extra_statements=lockdown,
        )


def aws_native_provider(
    name: str, region: str, tags: Mapping[str, str], aliases: Sequence[pulumi.Alias] = ()
) -> aws_native.Provider:
    """The explicit aws-native provider (SageMaker HyperPod), with the stack's tags as default tags.

    `aliases`: names it had before, so renaming it does not move the HyperPod resources to a new provider.
    """
    return aws_native.Provider(
        name,
        region=region,
        default_tags=aws_native.ProviderDefaultTagsArgs(tags=dict(tags)),
        opts=pulumi.ResourceOptions(aliases=list(aliases)),
    )
