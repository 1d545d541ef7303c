"""Pure user data for GPU nodes: nodeadm (AL2023) and Bottlerocket, both merged by EKS managed node groups.

The launch template names no AMI, so EKS picks the accelerated AMI from the node group's `ami_type` and merges
its own cluster bootstrap (cluster name, endpoint, CA) with what is here. Ours only adds the node-local parts:

- containerd, kubelet and pod logs on the instance-store NVMe as one RAID0 array (p5: 8 x 3.84 TB), instead of
  the EBS root volume that model images and checkpoints would fill. AL2023: nodeadm `NodeConfig`
  `spec.instance.localStorage.strategy: RAID0` (awslabs/amazon-eks-ami `nodeadm/api/v1alpha1`
  `LocalStorageOptions`; strategies RAID0, RAID10, Mount). Bottlerocket: bootstrap commands
  `apiclient ephemeral-storage init` (RAID0 over all instance-store disks) and `... bind --dirs ...`
  (bottlerocket.dev, "Bootstrap Commands"; `apiclient ephemeral-storage`).
- 2 MiB hugepages pre-allocated for libfabric's EFA buffers; pods that request `hugepages-2Mi` stay Pending on
  nodes without them. AL2023: a shell part sets `vm.nr_hugepages`; cloud-init runs it before kubelet starts,
  because `nodeadm-run.service` is ordered `After=cloud-final.service` (amazon-eks-ami
  `templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service`), so kubelet reports the pages as
  allocatable. Bottlerocket: `settings.kernel.sysctl."vm.nr_hugepages"`.

- on NVIDIA nodes (AL2023), GPUs only through a GPU request: the AMI makes the NVIDIA runtime containerd's default,
  and that runtime hands every GPU to any container whose environment says NVIDIA_VISIBLE_DEVICES=all (CUDA
  images set it). A shell part sets the runtime's `accept-nvidia-visible-devices-envvar-when-unprivileged = false`
  and `accept-nvidia-visible-devices-as-volume-mounts = true` with `nvidia-ctk config --in-place --set`, and the
  GPU Operator's device plugin passes the devices it allocates as volume mounts (`DEVICE_LIST_STRATEGY`
  volume-mounts: components/k8s/gpu_operator.py); NVIDIA/k8s-device-plugin README, "Preventing unprivileged access
  to GPUs in Kubernetes"; NVIDIA/nvidia-container-toolkit `internal/config/config.go` (the two keys). Privileged
  containers (the operator's own operands, in `gpu-operator`) still read the variable; team namespaces cannot
  run privileged pods (Pod Security baseline).

Both formats are the same on x86_64 and arm64 (NVIDIA Grace, p6e-gb200): the AL2023 ARM_64 NVIDIA AMI runs
nodeadm too, and Bottlerocket's aarch64 variants take the same settings. Both EKS images run 4 KiB base pages on
arm64, so the default hugepage size is 2 MiB there as well; the AL2023 script checks it before reserving pages.

Bottlerocket's `settings.kubernetes.*` (cluster name, API server, CA, labels, taints) are filled in by the
managed node group from the cluster and the node group's own labels and taints, so none are repeated here.

A custom AMI (`gpu_node_groups[].ami_id`) changes one thing: EKS merges no bootstrap into its user data ("When
specifying an AMI, Amazon EKS doesn't merge any user data", EKS User Guide, "Customize managed nodes with launch
templates"), so ours carries the whole join (`ClusterJoin`): nodeadm's `spec.cluster` (name, apiServerEndpoint,
certificateAuthority, cidr: awslabs/amazon-eks-ami nodeadm `ClusterDetails`) and the node group's labels and taints
as kubelet flags (`--node-labels`, `--register-with-taints`); Bottlerocket's `settings.kubernetes` (cluster-name,
api-server, cluster-certificate, node-labels, node-taints: bottlerocket.dev "Kubernetes settings").

The output is deterministic (fixed MIME boundary, fixed key order), so a re-run plans no diff.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

MIME_BOUNDARY = "//trainstack//"
NODEADM_API_VERSION = "node.eks.aws/v1alpha1"
NODEADM_CONTENT_TYPE = "application/node.eks.aws"  # nodeadm's MIME part type (awslabs.github.io/amazon-eks-ami/nodeadm)
LOCAL_STORAGE_DIRS = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
HUGEPAGES_SYSCTL_FILE = "/etc/sysctl.d/90-trainstack-hugepages.conf"
HUGEPAGE_SIZE_KB = 2048  # the `hugepages-2Mi` size pods request


@dataclass(frozen=True)
class ClusterJoin:
    """What a node of a custom AMI needs to join the cluster, which EKS otherwise merges in itself."""

    name: str
    endpoint: str
    certificate_authority: str  # base64 PEM bundle, as EKS returns it
    service_cidr: str
    labels: Mapping[str, str] = field(default_factory=dict[str, str])
    taints: Sequence[tuple[str, str, str]] = ()  # (key, value, Kubernetes effect)

    def kubelet_flags(self) -> list[str]:
        flags: list[str] = []
        if self.labels:
            flags.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())))
        if self.taints:
            flags.append("--register-with-taints=" + ",".join(f"{k}={v}:{e}" for k, v, e in self.taints))
        return flags


def nodeadm_config(*, instance_store: bool, join: ClusterJoin | None = None) -> dict[str, object]:
    """The nodeadm NodeConfig trainstack adds; EKS merges in the cluster details, except on a custom AMI (`join`)."""
    spec: dict[str, object] = {}
    if join is not None:
        spec["cluster"] = {
            "name": join.name,
            "apiServerEndpoint": join.endpoint,
            "certificateAuthority": join.certificate_authority,
            "cidr": join.service_cidr,
        }
        if flags := join.kubelet_flags():
            spec["kubelet"] = {"flags": flags}
    if instance_store:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": NODEADM_API_VERSION, "kind": "NodeConfig", "spec": spec}


def hugepages_script(hugepages_2mi: int) -> str:
    """A boot script that reserves `hugepages_2mi` 2 MiB pages now and on every later boot."""
    return "\n".join(
        [
            "#!/bin/bash",
            "set -o errexit -o nounset -o pipefail",
            "# 2 MiB hugepages for libfabric/EFA buffers; set before nodeadm starts kubelet.",
            "# vm.nr_hugepages counts default-size pages: 2 MiB on x86_64 and on arm64 with 4 KiB base pages.",
            "# A 64 KiB-page arm64 kernel would make them 512 MiB each; refuse rather than reserve those.",
            "size_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)",
            f'if [ "$size_kb" != "{HUGEPAGE_SIZE_KB}" ]; then',
            f'  echo "trainstack: default hugepage size is $size_kb kB, not {HUGEPAGE_SIZE_KB}; none reserved" >&2',
            "  exit 1",
            "fi",
            f"echo 'vm.nr_hugepages = {hugepages_2mi}' > {HUGEPAGES_SYSCTL_FILE}",
            f"sysctl -p {HUGEPAGES_SYSCTL_FILE}",
            "allocated=$(cat /proc/sys/vm/nr_hugepages)",
            f'if [ "$allocated" -lt {hugepages_2mi} ]; then',
            f'  echo "trainstack: only $allocated of {hugepages_2mi} 2MiB hugepages allocated" >&2',
            "fi",
            "",
        ]
    )


# The NVIDIA container runtime's settings that keep GPUs behind the device plugin (module docstring).
NVIDIA_RUNTIME_CONFIG = "/etc/nvidia-container-runtime/config.toml"
NVIDIA_RUNTIME_SETTINGS = (
    ("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),
    ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
)


def nvidia_runtime_script() -> str:
    """A boot script that makes the NVIDIA runtime ignore NVIDIA_VISIBLE_DEVICES in unprivileged containers and
    take the device plugin's volume mounts instead; it fails loudly when the settings did not land."""
    sets = " ".join(f"--set {key}={value}" for key, value in NVIDIA_RUNTIME_SETTINGS)
    lines = [
        "#!/bin/bash",
        "set -o errexit -o nounset -o pipefail",
        "# GPUs only through a GPU request: ignore NVIDIA_VISIBLE_DEVICES unless privileged, read the device",
        "# plugin's volume mounts. The runtime reads its config on every container start: no restart needed.",
        f"nvidia-ctk config --in-place --config={NVIDIA_RUNTIME_CONFIG} {sets}",
    ]
    for key, value in NVIDIA_RUNTIME_SETTINGS:
        lines += [
            f"if ! grep -Eq '^{key} *= *{value}$' {NVIDIA_RUNTIME_CONFIG}; then",
            f'  echo "trainstack: {key} is not {value} in {NVIDIA_RUNTIME_CONFIG}" >&2',
            "  exit 1",
            "fi",
        ]
    return "\n".join([*lines, ""])


def nodeadm_user_data(
    *, hugepages_2mi: int, instance_store: bool, nvidia: bool = False, join: ClusterJoin | None = None
) -> str:
    """AL2023 user data: a MIME multi-part document with a NodeConfig part and, if asked, a hugepages script and
    (NVIDIA nodes) the runtime script that keeps GPUs behind the device plugin."""
    node_config = yaml.safe_dump(nodeadm_config(instance_store=instance_store, join=join), sort_keys=False)
    parts = [(NODEADM_CONTENT_TYPE, "---\n" + node_config)]
    if hugepages_2mi > 0:
        parts.append(('text/x-shellscript; charset="us-ascii"', hugepages_script(hugepages_2mi)))
    if nvidia:
        parts.append(('text/x-shellscript; charset="us-ascii"', nvidia_runtime_script()))
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    lines += [f"--{MIME_BOUNDARY}--", ""]
    return "\n".join(lines)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_array(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def bottlerocket_user_data(*, hugepages_2mi: int, instance_store: bool, join: ClusterJoin | None = None) -> str:
    """Bottlerocket user data (TOML settings) with the same effect as `nodeadm_user_data`."""
    lines: list[str] = []
    if join is not None:
        lines += [
            "[settings.kubernetes]",
            f"cluster-name = {_toml_string(join.name)}",
            f"api-server = {_toml_string(join.endpoint)}",
            f"cluster-certificate = {_toml_string(join.certificate_authority)}",
            "",
        ]
        if join.labels:
            lines += ["[settings.kubernetes.node-labels]"]
            lines += [f"{_toml_string(k)} = {_toml_string(v)}" for k, v in sorted(join.labels.items())] + [""]
        if join.taints:
            by_key: dict[str, list[str]] = {}
            for key, value, effect in join.taints:
                by_key.setdefault(key, []).append(f"{value}:{effect}")
            lines += ["[settings.kubernetes.node-taints]"]
            lines += [f"{_toml_string(k)} = {_toml_array(v)}" for k, v in by_key.items()] + [""]
    if hugepages_2mi > 0:
        lines += ["[settings.kernel.sysctl]", f'"vm.nr_hugepages" = {_toml_string(str(hugepages_2mi))}', ""]
    if instance_store:
        commands = [
            ("apiclient", "ephemeral-storage", "init"),
            ("apiclient", "ephemeral-storage", "bind", "--dirs", *LOCAL_STORAGE_DIRS),
        ]
        lines += [
            "[settings.bootstrap-commands.trainstack-local-storage]",
            "commands = [" + ", ".join(_toml_array(c) for c in commands) + "]",
            "essential = true",  # a node without its RAID0 would fill the EBS data volume: do not let it join
            'mode = "always"',  # instance store is blank after every stop/start
            "",
        ]
    return "\n".join(lines)


def encode(user_data: str) -> str:
    """Launch templates take user data base64-encoded."""
    return base64.b64encode(user_data.encode()).decode()
