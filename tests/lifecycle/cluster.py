"""HyperPod Slurm nodes in boxes (box.py), laid out as the HyperPod AMI and HyperPod's agent leave them before the
lifecycle runs, and the lifecycle bundle trainstack uploads.

What the AMI has is what AWS's HyperPod reference lifecycle scripts rely on (aws-samples/awsome-distributed-training,
1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config): Slurm under /opt/slurm (here Debian's 22.05
binaries, with SLURM_CONF pointing at /opt/slurm/etc as HyperPod's build does), its headers in /opt/slurm/include,
/opt/slurm/etc/slurmdbd.conf.template with ${SLURM_DB_USER} and ${SLURM_DB_PASSWORD}, MariaDB initialized and
stopped, munge running with the cluster's key, the `ubuntu` user (uid 1000), the Lustre client package. HyperPod's
agent writes /opt/slurm/etc/slurm.conf on the controller in its own form (slurm_conf() below) and
/opt/ml/config/resource_config.json on every node.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from components.sagemaker.hyperpod import LIFECYCLE_ROOT, PROVISIONING_PARAMETERS, provisioning_parameters
from components.sagemaker.slurm_validation import validation_scripts
from stacks.schema import HyperPodSpec
from tests.lifecycle.box import FIXTURES, UBUNTU_UID, Box

FSX_DNS = "fs-0abc.fsx.us-east-1.amazonaws.com"
FSX_MOUNT = "mnt1234"
ENROOT = "3.4.1"
PYXIS = "0.19.0"
CLUSTER_NAME = "trainstack-test"
SQUASH = "65534:65534"
ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAlicesLaptopKeyForTests alice@laptop"
AMI_PACKAGES = ("squashfs-tools", "parallel", "fuse-overlayfs", "squashfuse")
MARIADB_OPTIONS = (
    "--skip-networking", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M",
    "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--skip-log-bin",
)  # fmt: skip


def hyperpod_spec(**slurm: object) -> HyperPodSpec:
    """A controller, a login node and a two-node p5 partition, with one user who brings a key."""
    settings: dict[str, object] = {"users": [{"name": "alice", "uid": 2001, "ssh_public_keys": [ALICE_KEY]}]}
    settings |= slurm
    return HyperPodSpec.model_validate(
        {
            "enabled": True,
            "orchestrator": "slurm",
            "instance_groups": [
                {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
                {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
            ],
            "slurm": settings,
        }
    )


# Addresses and HyperPod's host names (ip-<address with dashes>) of the nodes the tests make.
ADDRESSES = {"controller": "10.0.0.10", "p5": "10.0.0.30"}
SECOND_P5 = "10.0.0.31"


def hostname(address: str) -> str:
    return "ip-" + address.replace(".", "-")


def slurm_conf(compute: list[str]) -> str:
    """slurm.conf as HyperPod's agent writes it, as far as the lifecycle reads it: the controller as
    `SlurmctldHost=<host name>(<address>)` and accounting through `Include accounting.conf` (AWS's HyperPod workshop,
    Troubleshooting, restores exactly that line). The rest is what Debian's Slurm 22.05 needs to run here:
    linuxproc process tracking and no task plugin (HyperPod uses cgroup plugins, which need a cgroup hierarchy
    this machine does not delegate), configless operation for the compute nodes' slurmd --conf-server."""
    controller = ADDRESSES["controller"]
    nodes = "".join(f"NodeName={hostname(ip)} NodeAddr={ip} CPUs=1 RealMemory=500 State=UNKNOWN\n" for ip in compute)
    return f"""# slurm.conf in HyperPod's form (a test fixture)
ClusterName={CLUSTER_NAME}
SlurmctldHost={hostname(controller)}({controller})
SlurmctldParameters=enable_configless
AuthType=auth/munge
CredType=cred/munge
SlurmUser=slurm
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
ReturnToService=2
{nodes}PartitionName=p5 Nodes={",".join(hostname(ip) for ip in compute)} Default=YES State=UP

# ACCOUNTING
Include accounting.conf
"""


SLURMDBD_TEMPLATE = """# slurmdbd.conf.template as the HyperPod AMI ships it (a test fixture)
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=${SLURM_DB_USER}
StoragePass=${SLURM_DB_PASSWORD}
"""


@dataclass
class Artifacts:
    """What the nodes download or start from: built once per test session."""

    mariadb: Path  # an initialized MariaDB data directory (the AMI's), copied into every controller
    munge_key: bytes
    downloads: dict[str, Path]  # URL -> file the box's curl serves


@cache
def artifacts(directory: Path) -> Artifacts:
    directory.mkdir(parents=True, exist_ok=True)
    datadir = directory / "mysql"
    (directory / "tmp").mkdir()  # its own: temporary tables of two bootstraps at once must not meet in /tmp
    installed = subprocess.run(
        [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={datadir}",
            "--user=root",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            f"--tmpdir={directory / 'tmp'}",
            *MARIADB_OPTIONS,
        ],
        capture_output=True,
        text=True,
    )
    if installed.returncode != 0:
        raise RuntimeError(f"mariadb-install-db failed: {installed.stdout[-2000:]}{installed.stderr[-2000:]}")
    downloads: dict[str, Path] = {}
    release = f"https://github.com/NVIDIA/enroot/releases/download/v{ENROOT}"
    for package in ("enroot", "enroot+caps"):
        root = directory / package
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN/control").write_text(
            f"Package: {package}\nVersion: {ENROOT}-1\nArchitecture: amd64\nMaintainer: trainstack tests\n"
            "Description: stand-in for NVIDIA's package (no files)\n"
        )
        deb = directory / f"{package}_{ENROOT}-1_amd64.deb"
        subprocess.run(
            ["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)], check=True, capture_output=True
        )
        downloads[f"{release}/{deb.name}"] = deb
    pyxis = directory / "pyxis.tar.gz"
    with tarfile.open(pyxis, "w:gz") as tar:
        tar.add(FIXTURES / "spank_probe", arcname=f"pyxis-{PYXIS}")
    downloads[f"https://github.com/NVIDIA/pyxis/archive/refs/tags/v{PYXIS}.tar.gz"] = pyxis
    key = directory / "nvidia.gpgkey"
    subprocess.run(
        ["gpg", "--batch", "--enarmor", "--output", str(key), "-"], input=secrets.token_bytes(64), check=True
    )
    downloads["https://nvidia.github.io/libnvidia-container/gpgkey"] = key
    listing = directory / "nvidia-container-toolkit.list"
    listing.write_text("deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n")
    downloads["https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list"] = listing
    return Artifacts(mariadb=datadir, munge_key=secrets.token_bytes(1024), downloads=downloads)


@dataclass
class Node:
    box: Box
    group: str

    def on_create(self) -> subprocess.CompletedProcess[str]:
        """HyperPod's run of the lifecycle: the bundle in a directory of its own, on_create.sh from there."""
        return self.box.run("bash", "/var/lib/hyperpod/lifecycle/on_create.sh", timeout=300)

    def log(self) -> str:
        return self.box.path("/var/log/provision/provisioning.log").read_text()


def lustre_server(path: Path, mode: int = 0o1777) -> Path:
    """The directory standing for the FSx file system's root: root's, world-writable and sticky once prepared."""
    path.mkdir(parents=True)
    path.chmod(mode)
    return path


def make_node(
    tmp: Path,
    group: str,
    spec: HyperPodSpec,
    lustre: Path,
    artifacts: Artifacts,
    *,
    address: str | None = None,
    root_squash: str | None = SQUASH,
    daemons: bool = True,
    compute: tuple[str, ...] = (ADDRESSES["p5"],),
    bundle: Path = LIFECYCLE_ROOT / "slurm",
) -> Node:
    """A node of `group` as HyperPod hands it to the lifecycle, not yet on a network (box.link). `daemons` false:
    slurmctld, slurmd and slurmdbd are stand-in processes (the node's own steps are under test, not Slurm's)."""
    address = address or ADDRESSES[group]
    layout = {"controller": [ADDRESSES["controller"]], "p5": list(compute)}
    hosts = {hostname(ip): ip for ips in layout.values() for ip in ips}
    root = tmp / hostname(address)
    replaced = 1
    while root.exists():  # a node that replaces an earlier one with its address gets a new root volume
        replaced += 1
        root = tmp / f"{hostname(address)}-{replaced}"
    box = Box.create(root, hostname(address), address, lustre, hosts)
    try:
        controller = group == "controller"
        _ami(box, artifacts, controller)
        box.units(_units(controller, daemons))
        box.lustre(f"{FSX_DNS}@tcp:/{FSX_MOUNT}")
        # HyperPod's agent.
        resources = {
            "InstanceGroups": [
                {"Name": name, "Instances": [{"CustomerIpAddress": ip} for ip in ips]} for name, ips in layout.items()
            ]
        }
        box.write("/opt/ml/config/resource_config.json", json.dumps(resources))
        if controller:
            box.write("/opt/slurm/etc/slurm.conf", slurm_conf(list(compute)))
            box.write("/opt/slurm/etc/accounting.conf", "")
        # The lifecycle bundle as trainstack uploads it.
        target = box.path("/var/lib/hyperpod/lifecycle")
        shutil.copytree(bundle, target, ignore=shutil.ignore_patterns("__pycache__"))
        params = provisioning_parameters(spec, FSX_DNS, FSX_MOUNT, root_squash)
        (target / PROVISIONING_PARAMETERS).write_text(json.dumps(params))
        for name, body in validation_scripts(spec).items():
            (target / name).write_text(body)
        result = box.sh("systemctl start munge")
        if result.returncode != 0:
            raise RuntimeError(f"munge did not start in {box.hostname}: {result.stderr}")
    except BaseException:
        box.close()
        raise
    return Node(box, group)


def _ami(box: Box, artifacts: Artifacts, controller: bool) -> None:
    result = box.run("useradd", "--uid", str(UBUNTU_UID), "--create-home", "--shell", "/bin/bash", "ubuntu")
    if result.returncode != 0:
        raise RuntimeError(f"ubuntu in {box.hostname}: {result.stderr}")
    shutil.copytree("/usr/include/slurm", box.path("/opt/slurm/include/slurm"))
    box.write("/opt/slurm/etc/cgroup.conf", "CgroupPlugin=autodetect\n")
    box.path("/opt/sagemaker").mkdir(parents=True)
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            f"root@{box.hostname}",
            "-f",
            str(box.path("/etc/ssh/ssh_host_ed25519_key")),
        ],
        check=True,
    )
    key = box.path("/etc/munge/munge.key")
    key.write_bytes(artifacts.munge_key)
    script = """
set -e
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
"""
    if controller:
        shutil.copytree(artifacts.mariadb, box.path("/var/lib/mysql"), symlinks=True)
        box.write("/opt/slurm/etc/slurmdbd.conf.template", SLURMDBD_TEMPLATE)
        script += (
            "chown -R mysql:mysql /var/lib/mysql\ninstall -d -o mysql -g mysql -m 0755 /run/mysqld /var/log/mysql\n"
        )
    result = box.sh(script)
    if result.returncode != 0:
        raise RuntimeError(f"AMI state of {box.hostname}: {result.stderr}")
    box.write("/run/box/apt-available", "".join(f"{p}\n" for p in AMI_PACKAGES))
    for url, path in artifacts.downloads.items():
        box.serve(url, path)


def _units(controller: bool, daemons: bool) -> dict[str, dict[str, object]]:
    """The systemd units of the AMI (systemctl.py): the real daemons, or stand-in processes."""
    stand_in: dict[str, object] = {"exec": ["/usr/bin/sleep", "infinity"]}
    units: dict[str, dict[str, object]] = {
        "munge": {"exec": ["/usr/sbin/munged"], "pidfile": "/run/munge/munged.pid", "user": "munge"},
        "slurmd": {"exec": ["/usr/sbin/slurmd", "$SLURMD_OPTIONS"], "pidfile": "/run/slurmd.pid"}
        if daemons
        else stand_in,
        "slurmctld": {"exec": ["/usr/sbin/slurmctld"], "pidfile": "/run/slurmctld.pid"} if daemons else stand_in,
    }
    if controller:
        units["mariadb"] = {
            "exec": ["/usr/sbin/mariadbd", "--user=mysql", *MARIADB_OPTIONS],
            "pidfile": "/run/mysqld/mysqld.pid",
            "ready_socket": "/run/mysqld/mysqld.sock",
        }
        units["slurmdbd"] = (
            {"exec": ["/usr/sbin/slurmdbd"], "pidfile": "/run/slurmdbd.pid", "ready_port": 6819}
            if daemons
            else stand_in
        )
    return units
