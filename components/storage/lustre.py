"""FSx for Lustre for training data: the file system in the GPU AZ, its security group, its CloudWatch log
group and the data repository association (DRA) with the datasets bucket.

Facts (checked for this module):
- Lustre traffic is TCP 988 and 1018-1023, between clients and file servers and among the file servers;
  creation fails with "InvalidNetworkSettings ... port 988" when the group lacks them (FSx for Lustre User
  Guide, "File system access control with Amazon VPC" and "Creating an FSx for Lustre file system fails").
- EFA-enabled file systems need PERSISTENT_2, a metadata configuration and a security group allowing all
  traffic to and from itself and the clients' group (pulumi-aws `efa_enabled` doc; User Guide, "EFA-enabled
  security groups"). We attach the GPU nodes' EFA group as well, so clients and servers share one.
- `subnet_ids` takes one subnet: a file system lives in one AZ (pulumi-aws 7 doc).
- The log group's name must begin with `/aws/fsx` (pulumi-aws `log_configuration.destination` doc).
- Root squash (`root_squash_configuration`): root on every client is mapped to `root_squash` (UID:GID), except
  clients listed in `no_squash_nids` (pulumi-aws fsx.LustreFileSystem docs; FSx for Lustre User Guide, "Lustre
  root squash"). A root container or node can then neither read nor change other teams' files.
- The data repository association imports the changes `auto_import_events` names and exports only
  `auto_export_events` (default none): the datasets bucket stays the source of truth, and a deletion on Lustre
  never reaches it unless DELETED is chosen explicitly (the policy pack refuses that in prod).
- DRAs "are supported on all FSx for Lustre 2.12 and 2.15 file systems, excluding scratch_1" (FSx API
  Reference, CreateDataRepositoryAssociation). So SCRATCH_2 on 2.15 gets the same DRA as PERSISTENT_2; the
  file-system-level `import_path`/`auto_import_policy` is the legacy link (pulumi-aws documents it for
  PERSISTENT_1 only), imports only, and cannot coexist with DRAs, so it is not used.
- No backups: FSx takes automatic and user-initiated backups "of persistent file systems that are not linked to
  an Amazon S3 durable data repository" (User Guide, "Working with backups"; botocore fsx CreateBackup: Lustre
  backups only for a persistent file system not linked to a data repository). Every file system here is linked,
  so automatic backups are off and no final backup is asked for on delete; what must outlive the file system
  lives in S3 (datasets in their bucket, checkpoints in the checkpoints bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.naming import child_name, physical_name
from stacks.schema import FsxSpec

LUSTRE_VERSION = "2.15"  # recommended for new file systems (CreateFileSystem FileSystemTypeVersion)
# TCP port ranges Lustre (LNet) uses between clients and servers (User Guide, limit-access-security-groups).
LUSTRE_PORT_RANGES: tuple[tuple[int, int], ...] = ((988, 988), (1018, 1023))
LOG_LEVEL = "WARN_ERROR"  # data repository warnings and errors; DISABLED is the AWS default
LOG_GROUP_PREFIX = "/aws/fsx/"


def port_label(ports: tuple[int, int]) -> str:
    """`988` or `1018-1023`, for rule names and descriptions."""
    low, high = ports
    return str(low) if low == high else f"{low}-{high}"


def log_group_name(base_name: str) -> str:
    """The CloudWatch log group for a stack's file system; FSx requires the `/aws/fsx` prefix."""
    return f"{LOG_GROUP_PREFIX}{base_name}"


def file_system_name(base_name: str) -> str:
    """The file system's Name tag: what YACE finds it by (components/fleet_metrics.yace_config), so the Lustre
    alerts and panels read this stack's file system and no other in the region."""
    return physical_name(base_name, "lustre")


def data_repository_path(bucket_name: str, prefix: str) -> str:
    """`s3://bucket/prefix/` (the prefix is empty or ends in `/`, as the schema enforces)."""
    return f"s3://{bucket_name}/{prefix}"


def metadata_configuration(spec: FsxSpec) -> aws.fsx.LustreFileSystemMetadataConfigurationArgs | None:
    """PERSISTENT_2: USER_PROVISIONED with spec.metadata_iops, else AUTOMATIC; SCRATCH_2 has none."""
    if not spec.persistent:
        return None
    if spec.metadata_iops is not None:
        return aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="USER_PROVISIONED", iops=spec.metadata_iops)
    return aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC")


@dataclass
class LustreFileSystemArgs:
    """Spec (from the validated config) and wiring (ids from the network, EKS and bucket components)."""

    spec: FsxSpec
    base_name: str
    """The stack's base name (`cluster.name`), for the log group's physical name."""
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The private subnet in the GPU node groups' AZ."""
    client_security_group_ids: Sequence[pulumi.Input[str]]
    """Security groups of the Lustre clients (EKS cluster security group, the EFA group, the workload group of
    SageMaker jobs and Slurm HyperPod nodes)."""
    kms_key_arn: pulumi.Input[str]
    """Customer-managed key for persistent types (SCRATCH_2 is encrypted with an AWS-owned key)."""
    datasets_bucket_name: pulumi.Input[str]
    log_kms_key_arn: pulumi.Input[str] | None = None
    """The telemetry key (components/security/telemetry_key.py) the file system's log group is encrypted with."""
    efa_security_group_id: pulumi.Input[str] | None = None
    """The GPU nodes' EFA security group (all traffic to and from itself); required when spec.efa_enabled."""
    protect: bool = False
    """Prod: protect and retain the file system (and its DRA) on delete."""


class LustreFileSystem(pulumi.ComponentResource):
    """An FSx for Lustre file system in one private subnet, linked to the datasets bucket.

    Children: `<name>-sg` and its rules (`<name>-sg-in-<peer>-<ports>`, `<name>-sg-out-<peer>-<ports>`, and
    `-efa-all` rules when EFA is on), `<name>-logs`, `<name>-fs`, `<name>-dra`.
    """

    file_system_id: pulumi.Output[str]
    """The file system id (fs-...), the PersistentVolume's volumeHandle."""
    dns_name: pulumi.Output[str]
    """DNS name clients mount."""
    mount_name: pulumi.Output[str]
    """Lustre mount name (the path after `@tcp:/`)."""
    arn: pulumi.Output[str]
    """ARN of the file system."""
    security_group_id: pulumi.Output[str]
    """The Lustre security group."""
    storage_capacity_gib: int
    """Capacity in GiB (known from the spec), for the PersistentVolume."""

    def __init__(self, name: str, args: LustreFileSystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:storage:LustreFileSystem", name, None, opts)
        spec = args.spec
        if spec.efa_enabled and args.efa_security_group_id is None:
            raise ValueError(f"{name}: an EFA-enabled file system needs efa_security_group_id (the GPU EFA group)")
        child = pulumi.ResourceOptions(parent=self)

        self.security_group = aws.ec2.SecurityGroup(
            child_name(name, "sg"),
            aws.ec2.SecurityGroupArgs(
                vpc_id=args.vpc_id,
                # A security group's description is create-only: it keeps the text it had when the name was
                # `<base>-lustre`, from the base name (never the logical name, which is fixed).
                description=(
                    f"FSx for Lustre {args.base_name}-lustre: "
                    "Lustre TCP 988 and 1018-1023 from clients and file servers"
                ),
            ),
            opts=child,
        )
        rules = self._rules(name, args)

        log_group = aws.cloudwatch.LogGroup(
            child_name(name, "logs"),
            aws.cloudwatch.LogGroupArgs(
                name=log_group_name(args.base_name),
                retention_in_days=spec.log_retention_days,
                kms_key_id=args.log_kms_key_arn,
            ),
            opts=child,
        )

        self.file_system = self._file_system(name, args, rules, log_group)
        self.association = self._association(name, args)

        self.file_system_id = self.file_system.id
        self.dns_name = self.file_system.dns_name
        self.mount_name = self.file_system.mount_name
        self.arn = self.file_system.arn
        self.security_group_id = self.security_group.id
        self.storage_capacity_gib = spec.storage_capacity_gib
        self.register_outputs(
            {
                "file_system_id": self.file_system_id,
                "dns_name": self.dns_name,
                "mount_name": self.mount_name,
                "arn": self.arn,
                "security_group_id": self.security_group_id,
                "storage_capacity_gib": self.storage_capacity_gib,
            }
        )

    def _file_system(
        self,
        name: str,
        args: LustreFileSystemArgs,
        rules: list[pulumi.Resource],
        log_group: aws.cloudwatch.LogGroup,
    ) -> aws.fsx.LustreFileSystem:
        """The file system: in its own group (and the GPU EFA group with EFA), logging to its log group."""
        spec = args.spec
        persistent = spec.persistent
        security_groups: list[pulumi.Input[str]] = [self.security_group.id]
        if spec.efa_enabled and args.efa_security_group_id is not None:
            security_groups.append(args.efa_security_group_id)
        return aws.fsx.LustreFileSystem(
            child_name(name, "fs"),
            aws.fsx.LustreFileSystemArgs(
                deployment_type=spec.deployment_type.value,
                storage_type="SSD",
                storage_capacity=spec.storage_capacity_gib,
                file_system_type_version=LUSTRE_VERSION,
                subnet_ids=args.subnet_id,
                security_group_ids=security_groups,
                data_compression_type=spec.data_compression,
                per_unit_storage_throughput=spec.throughput_mb_s_per_tib if persistent else None,
                kms_key_id=args.kms_key_arn if persistent else None,
                metadata_configuration=metadata_configuration(spec),
                efa_enabled=True if spec.efa_enabled else None,
                log_configuration=aws.fsx.LustreFileSystemLogConfigurationArgs(
                    destination=log_group.arn, level=LOG_LEVEL
                ),
                weekly_maintenance_start_time=spec.weekly_maintenance_start_time,
                root_squash_configuration=aws.fsx.LustreFileSystemRootSquashConfigurationArgs(
                    root_squash=spec.root_squash, no_squash_nids=list(spec.no_squash_nids) or None
                )
                if spec.root_squash
                else None,
                tags={"Name": file_system_name(args.base_name)},
                # No backups, automatic or final: FSx takes none of a file system linked to S3, and this one
                # always is (the association below). The datasets bucket is the durable copy.
                automatic_backup_retention_days=0 if persistent else None,
                skip_final_backup=True if persistent else None,
            ),
            # FSx checks the group's rules at creation: create them first (aws-parallelcluster #6181 race).
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=rules,
                protect=args.protect,
                retain_on_delete=args.protect,
            ),
        )

    def _association(self, name: str, args: LustreFileSystemArgs) -> aws.fsx.DataRepositoryAssociation:
        """The link to the datasets bucket: what is there is listed at creation, then kept in step both ways as
        the spec's import and export events say."""
        spec = args.spec
        return aws.fsx.DataRepositoryAssociation(
            child_name(name, "dra"),
            aws.fsx.DataRepositoryAssociationArgs(
                file_system_id=self.file_system.id,
                file_system_path=spec.file_system_path,
                data_repository_path=pulumi.Output.from_input(args.datasets_bucket_name).apply(
                    lambda bucket: data_repository_path(bucket, spec.import_path_prefix)
                ),
                batch_import_meta_data_on_create=True,  # list what is already in the bucket
                delete_data_in_filesystem=False,  # removing the link never deletes data
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                        events=[e.value for e in spec.auto_import_events]
                    )
                    if spec.auto_import_events
                    else None,
                    auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(
                        events=[e.value for e in spec.auto_export_events]
                    )
                    if spec.auto_export_events
                    else None,
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )

    def _rules(self, name: str, args: LustreFileSystemArgs) -> list[pulumi.Resource]:
        """Lustre ports in and out between the file servers (self) and each client group, and into each client
        group from the file servers; EFA: all traffic to and from itself."""
        sg = self.security_group.id
        peers: list[tuple[str, pulumi.Input[str]]] = [("self", sg)]
        peers += [(f"client{i}", group) for i, group in enumerate(args.client_security_group_ids)]
        rules = self._server_rules(name, sg, peers) + self._client_rules(name, sg, peers[1:])
        if args.spec.efa_enabled:
            rules += self._efa_rules(name, sg)
        return rules

    def _server_rules(
        self, name: str, sg: pulumi.Output[str], peers: list[tuple[str, pulumi.Input[str]]]
    ) -> list[pulumi.Resource]:
        """The file servers' group: the Lustre ports in from and out to itself and each client group."""
        child = pulumi.ResourceOptions(parent=self)
        rules: list[pulumi.Resource] = []
        for peer, group in peers:
            for ports in LUSTRE_PORT_RANGES:
                label = port_label(ports)
                rules.append(
                    aws.vpc.SecurityGroupIngressRule(
                        child_name(name, "sg", "in", peer, label),
                        aws.vpc.SecurityGroupIngressRuleArgs(
                            security_group_id=sg,
                            referenced_security_group_id=group,
                            ip_protocol="tcp",
                            from_port=ports[0],
                            to_port=ports[1],
                            description=f"Lustre TCP {label} from {peer}",
                        ),
                        opts=child,
                    )
                )
                rules.append(
                    aws.vpc.SecurityGroupEgressRule(
                        child_name(name, "sg", "out", peer, label),
                        aws.vpc.SecurityGroupEgressRuleArgs(
                            security_group_id=sg,
                            referenced_security_group_id=group,
                            ip_protocol="tcp",
                            from_port=ports[0],
                            to_port=ports[1],
                            description=f"Lustre TCP {label} to {peer}",
                        ),
                        opts=child,
                    )
                )
        return rules

    def _client_rules(
        self, name: str, sg: pulumi.Output[str], clients: list[tuple[str, pulumi.Input[str]]]
    ) -> list[pulumi.Resource]:
        """Each client group: the Lustre ports in from the file servers."""
        child = pulumi.ResourceOptions(parent=self)
        rules: list[pulumi.Resource] = []
        # Client side: file servers also open LNet connections to clients (lock callbacks, reconnects), and a
        # group admits only replies to what its own side opened, so each client group admits the file system's
        # group on the Lustre ports (User Guide, "File system access control with Amazon VPC", client rules).
        for peer, group in clients:
            for ports in LUSTRE_PORT_RANGES:
                label = port_label(ports)
                rules.append(
                    aws.vpc.SecurityGroupIngressRule(
                        child_name(name, "client-sg", "in", peer, label),
                        aws.vpc.SecurityGroupIngressRuleArgs(
                            security_group_id=group,
                            referenced_security_group_id=sg,
                            ip_protocol="tcp",
                            from_port=ports[0],
                            to_port=ports[1],
                            description=f"Lustre TCP {label} from the FSx file system",
                        ),
                        opts=child,
                    )
                )
        return rules

    def _efa_rules(self, name: str, sg: pulumi.Output[str]) -> list[pulumi.Resource]:
        """EFA traffic is not TCP: the file servers' group admits all of it to and from itself."""
        child = pulumi.ResourceOptions(parent=self)
        rules: list[pulumi.Resource] = []
        rules.append(
            aws.vpc.SecurityGroupIngressRule(
                child_name(name, "sg", "in", "self", "efa-all"),
                aws.vpc.SecurityGroupIngressRuleArgs(
                    security_group_id=sg,
                    referenced_security_group_id=sg,
                    ip_protocol="-1",
                    description="EFA: all traffic from itself",
                ),
                opts=child,
            )
        )
        rules.append(
            aws.vpc.SecurityGroupEgressRule(
                child_name(name, "sg", "out", "self", "efa-all"),
                aws.vpc.SecurityGroupEgressRuleArgs(
                    security_group_id=sg,
                    referenced_security_group_id=sg,
                    ip_protocol="-1",
                    description="EFA: all traffic to itself",
                ),
                opts=child,
            )
        )
        return rules
