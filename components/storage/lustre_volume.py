"""The Kubernetes side of FSx for Lustre: the FSx CSI driver add-on, and in each team namespace two statically
provisioned PersistentVolume + PersistentVolumeClaim pairs: the team's own directory, read-write, and the
datasets directory, read-only.

Isolation: a team's claim `fsx-lustre` mounts only `<team_directory>/<team>` of the file system, never its
root, so it cannot see another team's checkpoints; its claim `fsx-datasets` mounts the data repository
association's directory read-only. The driver mounts `<dnsname>@tcp:/<mountname>` and adds `ro` for a
read-only volume (kubernetes-sigs/aws-fsx-csi-driver v1.7.0, pkg/driver/node.go NodePublishVolume), so a
mountname of `<mount name>/<path>` is a Lustre subdirectory mount. Its CSIDriver declares no Ephemeral
lifecycle mode, so a pod cannot mount the root through an inline CSI volume; PVs are cluster-scoped, which
team RBAC does not grant. Root squash on the file system keeps root in a container from reading past file
permissions (components/storage/lustre.py). The team directories must exist with the team's ownership before the
first mount: docs/security.md says how an administrator creates them.

A PersistentVolume binds to exactly one claim, and a claim lives in one namespace, so each team gets its own
PVs (cluster-scoped, named after the team), pre-bound to that team's claims through `claimRef`, so no other
claim can take them. The FSx CSI driver is not attachable (no VolumeAttachment), so several PVs naming one
file system mount independently. Reclaim policy Retain: deleting a claim or a PV never touches the data.

IAM: a Pod Identity role for the controller's service account (`kube-system/fsx-csi-controller-sa`, as the
issue asks and as the driver's other installs do) that can only describe file systems. The driver's AWS
permissions exist "to create/delete file systems and volumes on the user's behalf" (kubernetes-sigs/
aws-fsx-csi-driver/docs/install.md: fsx:CreateFileSystem, DeleteFileSystem, DescribeFileSystems,
UpdateFileSystem, TagResource), i.e. for dynamic provisioning and expansion through a StorageClass.
trainstack provisions statically only (no StorageClass; `storageClassName: ""`): mounting a static volume is a
Lustre mount on the node from `dnsname` and `mountname`. The AmazonFSxFullAccess policy the EKS guide suggests
would let the controller delete every file system in the account, prod's included; describe-only keeps the
controller's AWS client working without that power.

Facts: driver name `fsx.csi.aws.com`, volume attributes `dnsname` and `mountname`, mount option `flock`
(kubernetes-sigs/aws-fsx-csi-driver, examples/kubernetes/static_provisioning). EKS add-on name
`aws-fsx-csi-driver` (EKS User Guide, "Deploy the FSx for Lustre driver").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.naming import child_name
from components.pod_identity import pod_identity_role

ADDON_NAME = "aws-fsx-csi-driver"
CSI_DRIVER = "fsx.csi.aws.com"
MOUNT_OPTIONS = ("flock",)  # POSIX locks across clients (training frameworks lock checkpoint files)
# A read-only volume mounts `ro` whatever the pod says: the driver's NodePublishVolume adds `ro` only when the pod's
# volume (or mount) is read-only, then appends the PV's mount options (kubernetes-sigs/aws-fsx-csi-driver
# pkg/driver/node.go), and `spec.csi.readOnly` alone is not enforced (kubernetes#69843). Mount options change in place.
READ_ONLY_MOUNT_OPTION = "ro"
CLAIM_NAME = "fsx-lustre"  # the same claim names in every team namespace, so job specs are portable
DATASETS_CLAIM_NAME = "fsx-datasets"
# What each claim requests: the smallest Lustre file system. Kubernetes binds a claim to a PV whose capacity
# is at least the request, and Lustre enforces no per-claim quota, so the request is nominal. Keeping it fixed
# matters: pulumi-kubernetes replaces a claim whose storage request changes, and a replaced claim leaves its
# Retain PV Released and the new claim Pending. The PV itself carries the real capacity.
CLAIM_REQUEST_GIB = 1200
CONTROLLER_NAMESPACE = "kube-system"
CONTROLLER_SERVICE_ACCOUNT = "fsx-csi-controller-sa"  # the add-on's controller (EKS User Guide, FSx CSI driver)
# Describe only: static volumes need no create, update or delete (module docstring).
CONTROLLER_POLICY: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "DescribeFileSystems", "Effect": "Allow", "Action": ["fsx:DescribeFileSystems"], "Resource": "*"}
    ],
}


# A team directory: its owner is the identity the team's processes reach Lustre as (the root squash UID:GID, which
# the torch runtime also runs as), read, write and enter for owner and group, nothing for others.
TEAM_DIRECTORY_MODE = 0o770


def team_directory_command(mount: str, team_directory: str, team_namespace: str, uid: int, gid: int) -> str:
    """What an administrator runs once per team, on a client exempt from root squash with the file system at
    `mount`, before the team's first job: the directory its claim mounts, owned by the team's Lustre identity."""
    path = f"{mount.rstrip('/')}{team_path(team_directory, team_namespace)}"
    return f"mkdir -p {path} && chown {uid}:{gid} {path} && chmod {TEAM_DIRECTORY_MODE:o} {path}"


def volume_name(team_namespace: str) -> str:
    """The cluster-scoped PV name of one team's directory. (Before team directories the PV was
    `fsx-lustre-<team>` on the root: a new name makes Pulumi replace PV and claim together.)"""
    return f"fsx-team-{team_namespace}"


def datasets_volume_name(team_namespace: str) -> str:
    """The cluster-scoped PV name of one team's read-only view of the datasets directory."""
    return f"fsx-datasets-{team_namespace}"


def team_path(team_directory: str, team_namespace: str) -> str:
    """The team's directory on Lustre, for example `/teams/research`."""
    return f"{team_directory.rstrip('/')}/{team_namespace}"


def subdirectory_mount_name(mount_name: str, path: str) -> str:
    """The `mountname` volume attribute that mounts `path` (absolute on the file system) instead of the root."""
    return f"{mount_name}{path}"


def capacity_quantity(capacity_gib: int) -> str:
    """A Kubernetes quantity for a capacity in GiB."""
    return f"{capacity_gib}Gi"


def persistent_volume_spec(
    *,
    namespace: str,
    file_system_id: pulumi.Input[str],
    dns_name: pulumi.Input[str],
    mount_name: pulumi.Input[str],
    capacity_gib: int,
    path: str,
    claim: str = CLAIM_NAME,
    read_only: bool = False,
) -> k8s.core.v1.PersistentVolumeSpecArgs:
    """A static FSx for Lustre PV of the directory `path`, pre-bound to `namespace/<claim>`."""
    return k8s.core.v1.PersistentVolumeSpecArgs(
        capacity={"storage": capacity_quantity(capacity_gib)},
        volume_mode="Filesystem",
        access_modes=["ReadOnlyMany" if read_only else "ReadWriteMany"],
        persistent_volume_reclaim_policy="Retain",
        storage_class_name="",  # static: no StorageClass, no dynamic provisioner
        mount_options=[*MOUNT_OPTIONS, *((READ_ONLY_MOUNT_OPTION,) if read_only else ())],
        claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=namespace, name=claim),
        csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
            driver=CSI_DRIVER,
            volume_handle=file_system_id,
            volume_attributes={
                "dnsname": dns_name,
                "mountname": pulumi.Output.from_input(mount_name).apply(
                    lambda name: subdirectory_mount_name(name, path)
                ),
            },
            read_only=read_only or None,
        ),
    )


@dataclass
class LustreVolumeArgs:
    """Spec (plain values from the config) and wiring (cluster and file system outputs)."""

    cluster_name: pulumi.Input[str]
    addon_version: str
    """The pinned `aws-fsx-csi-driver` add-on version (cluster.eks.addons.fsx_csi_driver)."""
    namespaces: Sequence[str]
    """Team namespaces (cluster.kubernetes.teams), created by the Kubernetes platform component."""
    file_system_id: pulumi.Input[str]
    dns_name: pulumi.Input[str]
    mount_name: pulumi.Input[str]
    capacity_gib: int
    depends_on: Sequence[pulumi.Input[pulumi.Resource]] = field(default_factory=tuple)
    """Resources the claims wait for (the team namespaces)."""
    team_directory: str = "/teams"
    """Lustre directory holding one subdirectory per team (storage.fsx.team_directory)."""
    datasets_path: str = "/datasets"
    """Lustre directory of the datasets (the data repository association's file_system_path)."""


class LustreVolume(pulumi.ComponentResource):
    """The FSx CSI driver add-on (a describe-only Pod Identity role: static volumes only) and one PV + PVC per
    team namespace.

    Children: `<name>-csi-pod-identity`, `<name>-csi-addon`, and per namespace
    `<name>-pv-<namespace>` and `<name>-pvc-<namespace>`. Pass `providers=` with the AWS and the Kubernetes
    providers; children inherit them.
    """

    addon_arn: pulumi.Output[str]
    """ARN of the EKS add-on."""
    claims: dict[str, str]
    """Team namespace -> name of its claim on its own directory."""
    datasets_claims: dict[str, str]
    """Team namespace -> name of its read-only claim on the datasets directory."""
    volume_names: dict[str, str]
    """Team namespace -> name of its PersistentVolume."""

    def __init__(self, name: str, args: LustreVolumeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:storage:LustreVolume", name, None, opts)
        if not args.namespaces:
            raise ValueError(f"{name}: at least one team namespace is needed for the claims")
        if len(set(args.namespaces)) != len(args.namespaces):
            raise ValueError(f"{name}: namespaces has duplicates: {list(args.namespaces)}")

        identity = pod_identity_role(
            child_name(name, "csi-pod-identity"),
            cluster_name=args.cluster_name,
            namespace=CONTROLLER_NAMESPACE,
            service_account=CONTROLLER_SERVICE_ACCOUNT,
            inline_policy=CONTROLLER_POLICY,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.addon = aws.eks.Addon(
            child_name(name, "csi-addon"),
            aws.eks.AddonArgs(
                cluster_name=args.cluster_name,
                addon_name=ADDON_NAME,
                addon_version=args.addon_version,
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
            ),
            # The controller starts with its credentials (the association exists first). Callers pass the system
            # node group in depends_on: an add-on without nodes never turns ACTIVE.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[identity, *args.depends_on]),
        )

        self.claims = {}
        self.volume_names = {}
        self.datasets_claims: dict[str, str] = {}
        for namespace in args.namespaces:
            # Logical names of the team pair predate the datasets pair; keep them (the PV name change replaces).
            self._pair(
                name,
                "",
                namespace,
                volume_name(namespace),
                CLAIM_NAME,
                team_path(args.team_directory, namespace),
                args,
                read_only=False,
            )
            self._pair(
                name,
                "datasets",
                namespace,
                datasets_volume_name(namespace),
                DATASETS_CLAIM_NAME,
                args.datasets_path,
                args,
                read_only=True,
            )
            self.claims[namespace] = CLAIM_NAME
            self.datasets_claims[namespace] = DATASETS_CLAIM_NAME
            self.volume_names[namespace] = volume_name(namespace)

        self.addon_arn = self.addon.arn
        self.register_outputs(
            {
                "addon_arn": self.addon_arn,
                "claims": self.claims,
                "datasets_claims": self.datasets_claims,
                "volume_names": self.volume_names,
            }
        )

    def _pair(
        self,
        name: str,
        kind: str,
        namespace: str,
        pv_name: str,
        claim: str,
        path: str,
        args: LustreVolumeArgs,
        *,
        read_only: bool,
    ) -> None:
        """A PV of `path` and the claim `claim` in `namespace` bound to it."""
        mode = "ReadOnlyMany" if read_only else "ReadWriteMany"
        volume = k8s.core.v1.PersistentVolume(
            child_name(name, *(p for p in ("pv", kind) if p), namespace),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=pv_name, labels=self._labels(namespace)),
            spec=persistent_volume_spec(
                namespace=namespace,
                file_system_id=args.file_system_id,
                dns_name=args.dns_name,
                mount_name=args.mount_name,
                capacity_gib=args.capacity_gib,
                path=path,
                claim=claim,
                read_only=read_only,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.addon]),
        )
        k8s.core.v1.PersistentVolumeClaim(
            child_name(name, *(p for p in ("pvc", kind) if p), namespace),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=claim, namespace=namespace, labels=self._labels(namespace)),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=[mode],
                storage_class_name="",
                volume_name=volume.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(
                    requests={"storage": capacity_quantity(CLAIM_REQUEST_GIB)}
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[volume, *args.depends_on]),
        )

    @staticmethod
    def _labels(namespace: str) -> dict[str, Any]:
        return {
            "app.kubernetes.io/part-of": "trainstack",
            "trainstack.io/storage": "fsx-lustre",
            "trainstack.io/team": namespace,
        }
