"""What a node of each HyperPod Slurm instance group runs at creation, and what it needs, from its
provisioning_parameters.json: the steps of components/sagemaker/lifecycle/slurm/on_create.sh, in its order and under its
conditions (tests/unit/test_slurm_lifecycle.py holds the two together). The plan shows it per group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SQUASH_IDENTITY_DEFAULT = "65534:65534"  # node_config.py's identity for the /fsx step where nothing is squashed


@dataclass(frozen=True)
class Step:
    name: str  # on_create.sh's step name, as in the lifecycle log
    detail: str


def role_of(params: Mapping[str, Any], group: str) -> str:
    if group == params.get("controller_group"):
        return "controller"
    return "login" if group == params.get("login_group") else "compute"


def node_steps(params: Mapping[str, Any], group: str) -> list[Step]:
    """The lifecycle steps a node of `group` runs, in order."""
    role = role_of(params, group)
    settings: Mapping[str, Any] = params.get("trainstack") or {}
    fsx = bool(params.get("fsx_dns_name"))
    squash = params.get("fsx_root_squash")
    steps = [Step("node-config", "its group and role by its address in HyperPod's resource_config.json")]
    if fsx and settings.get("hold_lustre_client"):
        steps.append(Step("hold-packages", "apt-mark hold on the Lustre client and the kernel meta-packages"))
    if fsx:
        steps.append(Step("mount-fsx", "mount FSx for Lustre at /fsx, in /etc/fstab for reboots"))
    if role == "controller":
        steps.append(Step("slurm-conf", "wait for HyperPod's agent to write slurm.conf"))
        if settings.get("accounting"):
            steps.append(
                Step("accounting", "MariaDB and slurmdbd; the database restored from /fsx after a replacement")
            )
    users = [u["name"] for u in settings.get("users") or []]
    steps.append(Step("users", f"ubuntu and {len(users)} configured user(s), the same uid and gid on every node"))
    if fsx:
        identity = squash or SQUASH_IDENTITY_DEFAULT
        homes = "homes made by their users, " if settings.get("homes_on_lustre") else ""
        steps.append(Step("fsx-layout", f"/fsx as root squash's identity {identity}: {homes}/fsx/.trainstack"))
        steps.append(Step("ssh-known-hosts", "host keys published on /fsx and trusted by ssh"))
    if settings.get("containers"):
        gpu = "; nvidia-container-cli" if group in (settings.get("nvidia_groups") or []) else ""
        steps.append(Step("containers", f"enroot and pyxis (built against /opt/slurm/include){gpu}"))
    daemon = {"controller": "slurmctld", "login": "slurmd fetches the configuration and exits"}.get(
        role, "slurmd --conf-server, after /fsx is mounted" if fsx else "slurmd --conf-server"
    )
    steps.append(Step("start-slurm", daemon))
    if role == "controller" and settings.get("accounting"):
        steps.append(Step("accounting-users", "the cluster and its users in sacctmgr"))
        steps.append(Step("accounting-backup", "hourly dump of the database to /fsx/.trainstack"))
    steps.append(Step("validation-jobs", "the NCCL sbatch jobs into /opt/trainstack/validation"))
    return steps


def node_needs(params: Mapping[str, Any], group: str, no_squash_nids: tuple[str, ...] = ()) -> list[str]:
    """What the steps need from outside the node for `group`'s nodes to come up."""
    settings: Mapping[str, Any] = params.get("trainstack") or {}
    needs: list[str] = []
    if params.get("fsx_dns_name"):
        needs.append("FSx for Lustre reachable on TCP 988 and 1018-1023 (the EFA security group)")
        if params.get("fsx_root_squash"):
            hosts = ", ".join(no_squash_nids) or "an exempt host"
            needs.append(f"/fsx mode 1777, set once as root from {hosts} (root squash {params['fsx_root_squash']})")
    if role_of(params, group) == "controller":
        needs.append("HyperPod's slurm.conf within 5 minutes")
    if settings.get("containers"):
        needs.append("GitHub (enroot packages, pyxis source) and the Ubuntu mirrors, through the NAT gateway")
        if group in (settings.get("nvidia_groups") or []):
            needs.append("nvidia.github.io when the AMI lacks nvidia-container-cli")
    return needs
