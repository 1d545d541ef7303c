"""The Kubernetes side of FSx for Lustre: the FSx CSI driver add-on, and a statically provisioned
PersistentVolume + PersistentVolumeClaim in each team namespace.

One PV per namespace: a PersistentVolume binds to exactly one PersistentVolumeClaim, and a claim lives in
one namespace, so one PV cannot serve several teams. Each team gets its own PV (cluster-scoped, named after
the team) with the same `volumeHandle`, DNS name and mount name -- every team mounts the same file system --
pre-bound to that team's claim through `claimRef`, so no other claim can take it. The FSx CSI driver is not
attachable (no VolumeAttachment), so several PVs naming one file system mount independently. Reclaim policy
Retain: deleting a claim or a PV never touches the data.

IAM: a Pod Identity role for the controller's service account (`kube-system/fsx-csi-controller-sa`, as the
issue asks and as the driver's other installs do) that can only describe file systems. The driver's AWS
permissions exist "to create/delete file systems and volumes on the user's behalf" (kubernetes-sigs/
aws-fsx-csi-driver, docs/install.md: fsx:CreateFileSystem, DeleteFileSystem, DescribeFileSystems,
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
CLAIM_NAME = "fsx-lustre"  # the same claim name in every team namespace, so job specs are portable
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


def volume_name(team_namespace: str) -> str:
    """The cluster-scoped PV name for one team's view of the file system."""
    return f"fsx-lustre-{team_namespace}"


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
) -> k8s.core.v1.PersistentVolumeSpecArgs:
    """A static FSx for Lustre PV pre-bound to `namespace/fsx-lustre`."""
    return k8s.core.v1.PersistentVolumeSpecArgs(
        capacity={"storage": capacity_quantity(capacity_gib)},
        volume_mode="Filesystem",
        access_modes=["ReadWriteMany"],
        persistent_volume_reclaim_policy="Retain",
        storage_class_name="",  # static: no StorageClass, no dynamic provisioner
        mount_options=list(MOUNT_OPTIONS),
        claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=namespace, name=CLAIM_NAME),
        csi=k8s.core.v1.CSIPersistentVolumeSourceArgs(
            driver=CSI_DRIVER,
            volume_handle=file_system_id,
            volume_attributes={"dnsname": dns_name, "mountname": mount_name},
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
    """Team namespace -> name of its claim on the file system."""
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
        for namespace in args.namespaces:
            pv_name = volume_name(namespace)
            volume = k8s.core.v1.PersistentVolume(
                child_name(name, "pv", namespace),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=pv_name, labels=self._labels(namespace)),
                spec=persistent_volume_spec(
                    namespace=namespace,
                    file_system_id=args.file_system_id,
                    dns_name=args.dns_name,
                    mount_name=args.mount_name,
                    capacity_gib=args.capacity_gib,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.addon]),
            )
            k8s.core.v1.PersistentVolumeClaim(
                child_name(name, "pvc", namespace),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=CLAIM_NAME, namespace=namespace, labels=self._labels(namespace)
                ),
                spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                    access_modes=["ReadWriteMany"],
                    storage_class_name="",
                    volume_name=volume.metadata.name,
                    resources=k8s.core.v1.VolumeResourceRequirementsArgs(
                        requests={"storage": capacity_quantity(CLAIM_REQUEST_GIB)}
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[volume, *args.depends_on]),
            )
            self.claims[namespace] = CLAIM_NAME
            self.volume_names[namespace] = pv_name

        self.addon_arn = self.addon.arn
        self.register_outputs({"addon_arn": self.addon_arn, "claims": self.claims, "volume_names": self.volume_names})

    @staticmethod
    def _labels(namespace: str) -> dict[str, Any]:
        return {
            "app.kubernetes.io/part-of": "trainstack",
            "trainstack.io/storage": "fsx-lustre",
            "trainstack.io/team": namespace,
        }
