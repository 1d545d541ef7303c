"""The lifecycle scripts, run for real against a temporary root with stub commands.

Each test copies a lifecycle bundle (scripts, provisioning_parameters.json, the NCCL sbatch jobs) into a temporary
directory and runs `on_create.sh` with TRAINSTACK_ROOT pointing at a temporary root and a PATH of two directories
only: stubs for every command that touches the machine (mount, systemctl, lctl, modprobe, curl, apt-get, useradd,
mysql, sacctmgr, ...), which record their arguments and fail on demand (STUB_FAIL_<command>=1), and links to a
short list of harmless real tools (bash, python3, grep, awk, cp, ...). Any other command is "not found" and fails
the run, so a script cannot reach the host even though tests may run as root.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.hyperpod import LIFECYCLE_ROOT, PROVISIONING_PARAMETERS, provisioning_parameters
from components.slurm_validation import validation_scripts
from stacks.schema import HyperPodSpec
from tests.tiers import require

# Real bash processes, a few dozen per case (stubs, retries, python3 for the config helpers): about half a second
# of CPU each, which the tier guard cannot see from here (bash starts them): the e2e tier, declared.
pytestmark = pytest.mark.e2e
LIFECYCLE_COST = "runs the lifecycle scripts (a few dozen processes, python3 among them)"

SAFE_TOOLS = (
    "bash", "python3", "cat", "grep", "sed", "awk", "tee", "mkdir", "rm", "mv", "cp", "ln", "chmod", "touch",
    "date", "dirname", "basename", "seq", "tr", "cut", "readlink", "mktemp", "install", "flock",
    "nproc", "uname", "head", "env", "sort",
)  # fmt: skip
# One bash process per call and nothing else (the retry loops call sleep and sacctmgr dozens of times).
STUB = r"""#!/bin/bash
name=${0##*/}
echo "$name $*" >>"$STUB_STATE/calls"
fail="STUB_FAIL_${name//[-+.]/_}"
if [[ -n ${!fail:-} ]]; then echo "stub $name: failing on demand" >&2; exit 1; fi
case $name in
  mount) echo "${@: -1}" >>"$STUB_STATE/mounts" ;;
  mountpoint) grep -qxF "${@: -1}" "$STUB_STATE/mounts" ;;
  systemctl) [[ $1 != is-active ]] || ! grep -qxF "${@: -1}" "$STUB_STATE/inactive" 2>/dev/null ;;
  id) [[ $2 == ubuntu ]] && echo 1000 && exit 0
      line=$(grep "^$2 " "$STUB_STATE/passwd" 2>/dev/null) || exit 1; echo "${line#* }" ;;
  getent) grep -q " $2\$" "$STUB_STATE/passwd" 2>/dev/null ;;
  useradd) echo "${@: -1} $2" >>"$STUB_STATE/passwd" ;;
  dpkg-query) [[ $* == *Status* ]] && printf 'install ok installed' || printf '2.15.6-1' ;;
  dpkg) echo amd64 ;;
  apt-mark) [[ $1 == hold ]] && echo "$2" >>"$STUB_STATE/held"; [[ $1 == showhold ]] && cat "$STUB_STATE/held" ;;
  ssh-keygen) out=${@: -1}; echo "ssh-ed25519 AAAAstubkey generated" >"$out.pub"; echo private >"$out" ;;
  curl) while (($#)); do [[ $1 == --output ]] && touch "$2"; shift; done ;;
  mysql) cat >/dev/null ;;
  hostname) echo node-1 ;;
esac
"""
STUBS = (
    "mount", "mountpoint", "systemctl", "modprobe", "lctl", "curl", "apt-get", "apt-mark", "dpkg", "dpkg-query",
    "tar", "make", "useradd", "usermod", "chown", "id", "getent", "ssh-keygen", "mysql", "sacctmgr", "sleep",
    "sync", "hostname",
)  # fmt: skip
# Units an fstab line of ours may require: systemd.special(7) targets, present on every systemd system and so on
# the Ubuntu-based HyperPod AMI. network.service (the FSx guide's example) is a Red Hat / Amazon Linux unit.
HYPERPOD_AMI_UNITS = {"network-online.target", "remote-fs.target", "local-fs.target"}
ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAlice alice@laptop"
SLURM_CONF = """ClusterName=trainstack-test
SlurmctldHost=ip-10-0-0-10({controller})
include /opt/slurm/etc/accounting.conf
"""


def _this_address() -> str:
    spec = importlib.util.spec_from_file_location("node_config", LIFECYCLE_ROOT / "slurm" / "node_config.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.primary_address()


SPEC = HyperPodSpec.model_validate(
    {
        "enabled": True,
        "orchestrator": "slurm",
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
            {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
        ],
        "slurm": {"users": [{"name": "alice", "uid": 2001, "ssh_public_keys": [ALICE_KEY]}]},
    }
)


@dataclass
class Node:
    root: Path
    bundle: Path
    state: Path
    env: dict[str, str]

    def run(self, orchestrator: str = "slurm", **fail: str) -> subprocess.CompletedProcess[str]:
        require("e2e", LIFECYCLE_COST)
        env = self.env | {f"STUB_FAIL_{name.replace('-', '_')}": "1" for name in fail}
        return subprocess.run(
            ["bash", str(self.bundle / "on_create.sh")], env=env, capture_output=True, text=True, timeout=60
        )

    def run_script(self, script: str, *args: str) -> None:
        """One step script on its own, as on_create.sh runs it (from the bundle directory)."""
        require("e2e", LIFECYCLE_COST)
        subprocess.run(["bash", script, *args], cwd=self.bundle, env=self.env, check=True, capture_output=True)

    def calls(self) -> list[str]:
        path = self.state / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def mounted(self, path: str) -> None:
        with (self.state / "mounts").open("a") as mounts:
            mounts.write(f"{self.root}{path}\n")


def _real_tool(name: str) -> str | None:
    """The tool's binary. python3 is the interpreter that runs the tests, by its real path: on PATH it may be a
    version manager's shim (pyenv's is a bash script that starts a dozen processes per call, and the scripts
    call python3 often), and the scripts need only its standard library."""
    if name == "python3":
        return os.path.realpath(sys.executable)
    return shutil.which(name)


def _sandbox_path(tmp_path: Path) -> str:
    stubs, tools = tmp_path / "stubs", tmp_path / "tools"
    stubs.mkdir()
    tools.mkdir()
    for name in STUBS:
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(stat.S_IRWXU)
    for name in SAFE_TOOLS:
        real = _real_tool(name)
        assert real, f"{name} is needed to run the lifecycle scripts"
        (tools / name).symlink_to(real)
    return f"{stubs}:{tools}"


def _node(tmp_path: Path, orchestrator: str, role_group: str = "controller") -> Node:
    root, bundle, state = tmp_path / "root", tmp_path / "bundle", tmp_path / "state"
    state.mkdir()
    shutil.copytree(LIFECYCLE_ROOT / orchestrator, bundle)
    env = {
        "PATH": _sandbox_path(tmp_path),
        "HOME": str(tmp_path),
        "TRAINSTACK_ROOT": str(root),
        "TRAINSTACK_FAILURE_GRACE_SECONDS": "0",
        "STUB_STATE": str(state),
    }
    node = Node(root, bundle, state, env)
    if orchestrator == "eks":
        (root / "opt/sagemaker").mkdir(parents=True)
        (root / "var/lib/kubelet").mkdir(parents=True)
        (root / "var/lib/kubelet/kubeconfig").write_text("kubeconfig\n")
        (root / "var/lib/containerd").mkdir(parents=True)
        node.mounted("/opt/sagemaker")
        return node
    me, controller = _this_address(), "10.0.0.10"
    layout = {"controller": [controller], "p5": ["10.0.0.30"]}
    layout[role_group] = [me] + ([] if role_group == "controller" else layout[role_group])
    resources = {
        "InstanceGroups": [
            {"Name": name, "Instances": [{"CustomerIpAddress": ip} for ip in ips]} for name, ips in layout.items()
        ]
    }
    (root / "opt/ml/config").mkdir(parents=True)
    (root / "opt/ml/config/resource_config.json").write_text(json.dumps(resources))
    params = provisioning_parameters(SPEC, "fs-0abc.fsx.us-east-1.amazonaws.com", "mnt1234")
    (bundle / PROVISIONING_PARAMETERS).write_text(json.dumps(params))
    for name, body in validation_scripts(SPEC).items():
        (bundle / name).write_text(body)
    etc = root / "opt/slurm/etc"
    etc.mkdir(parents=True)
    (root / "opt/slurm/include").mkdir()
    (etc / "slurm.conf").write_text(SLURM_CONF.format(controller=layout["controller"][0]))
    (etc / "slurmdbd.conf.template").write_text("StorageUser=${SLURM_DB_USER}\nStoragePass=${SLURM_DB_PASSWORD}\n")
    (etc / "cgroup.conf").write_text("CgroupPlugin=autodetect\n")
    (root / "home/ubuntu/.ssh").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc/fstab").write_text("LABEL=cloudimg-rootfs / ext4 defaults 0 1\n")
    node.mounted("/opt/sagemaker")
    return node


@pytest.fixture
def controller(tmp_path: Path) -> Node:
    return _node(tmp_path, "slurm")


def fstab_line(node: Node, mount_point: str) -> list[str]:
    [line] = [ln.split() for ln in (node.root / "etc/fstab").read_text().splitlines() if f" {mount_point} " in ln]
    return line


def test_a_controller_comes_up_with_fsx_accounting_containers_users_and_jobs(controller: Node) -> None:
    result = controller.run()
    assert result.returncode == 0, result.stdout + result.stderr
    source, mount_point, fstype, options, *_ = fstab_line(controller, "/fsx")
    assert (source, mount_point, fstype) == ("fs-0abc.fsx.us-east-1.amazonaws.com@tcp:/mnt1234", "/fsx", "lustre")
    opts = options.split(",")
    assert {"_netdev", "x-systemd.automount", "flock"} <= set(opts)
    required = {o.split("=", 1)[1] for o in opts if o.startswith(("x-systemd.requires=", "x-systemd.after="))}
    assert required and required <= HYPERPOD_AMI_UNITS, required
    assert (controller.root / "etc/modules-load.d/trainstack-lustre.conf").read_text().split() == ["lnet", "lustre"]
    calls = controller.calls()
    assert {"modprobe lnet", "modprobe lustre", "lctl network up", "apt-mark hold lustre-client-modules-aws"} <= set(
        calls
    )
    assert calls.index("apt-mark hold lustre-client-modules-aws") < calls.index("lctl network up")
    assert "systemctl restart slurmctld" in calls and "systemctl enable --now slurmdbd" in calls
    etc = controller.root / "opt/slurm/etc"
    assert f"AccountingStorageHost={_this_address()}" in (etc / "accounting.conf").read_text()
    password = (etc / "slurmdbd.conf").read_text().split("StoragePass=")[1].strip()
    assert len(password) >= 32 and password not in result.stdout + result.stderr  # never logged
    assert stat.S_IMODE((etc / "slurmdbd.conf").stat().st_mode) == 0o600
    assert "sacctmgr --immediate add user alice account=root" in calls
    assert "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf" in (etc / "plugstack.conf").read_text()
    assert "ConstrainDevices=yes" in (etc / "cgroup.conf").read_text()
    assert "ENROOT_CACHE_PATH          /fsx/enroot/cache" in (controller.root / "etc/enroot/enroot.conf").read_text()
    assert "useradd --uid 2001 --user-group --no-create-home --home-dir /fsx/alice --shell /bin/bash alice" in calls
    assert "usermod --home /fsx/ubuntu ubuntu" in calls
    keys = (controller.root / "fsx/alice/.ssh/authorized_keys").read_text().splitlines()
    assert keys == ["ssh-ed25519 AAAAstubkey generated", ALICE_KEY]
    assert (controller.root / "opt/trainstack/validation/nccl-all-reduce-p5.sbatch").is_file()
    assert "on_create (slurm) done" in (controller.root / "var/log/provision/provisioning.log").read_text()


def test_a_compute_node_runs_slurmd_against_the_controller(tmp_path: Path) -> None:
    node = _node(tmp_path, "slurm", role_group="p5")
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    drop_in = node.root / "etc/systemd/system/slurmd.service.d/trainstack.conf"
    assert "SLURMD_OPTIONS=--conf-server 10.0.0.10" in drop_in.read_text()
    calls = node.calls()
    assert "systemctl restart slurmd" in calls and "systemctl restart slurmctld" not in calls
    assert not [c for c in calls if c.startswith(("mysql", "sacctmgr"))]  # accounting lives on the controller


@pytest.mark.parametrize(
    ("stub", "step", "message"),
    [
        # One failing command per step (each run stops at its step, so the list stays cheap).
        ("apt-mark", "hold-lustre-client", "could not hold lustre-client-modules-aws"),
        ("mount", "mount-fsx", "could not mount fs-0abc.fsx.us-east-1.amazonaws.com@tcp:/mnt1234"),
        ("lctl", "mount-fsx", "lctl network up failed"),
        ("mysql", "accounting", ""),
        ("useradd", "users", ""),
        ("curl", "containers", "download failed: https://github.com/NVIDIA/enroot/releases/download/v3.4.1/"),
        ("sacctmgr", "accounting-users", "slurmdbd did not answer"),
    ],
)
def test_a_failed_step_fails_node_creation_with_its_name(controller: Node, stub: str, step: str, message: str) -> None:
    result = controller.run(**{stub: "1"})
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"on_create (slurm) FAILED: step {step} exited 1" in out, out
    assert message in out
    assert "on_create (slurm) done" not in out
    log = (controller.root / "var/log/provision/provisioning.log").read_text()
    assert f"step {step} exited 1" in log  # the message reaches the lifecycle log (and CloudWatch)


def test_a_failed_mount_keeps_the_node_out_of_slurm(controller: Node) -> None:
    result = controller.run(mount="1")
    assert result.returncode != 0
    assert not [c for c in controller.calls() if "slurmctld" in c or "slurmd" in c]


def test_a_missing_slurm_conf_fails_the_controller(controller: Node) -> None:
    (controller.root / "opt/slurm/etc/slurm.conf").unlink()
    result = controller.run()
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "slurm.conf missing: HyperPod did not write" in out and "step slurm-conf exited 1" in out


def test_missing_cluster_layout_fails(controller: Node) -> None:
    (controller.root / "opt/ml/config/resource_config.json").unlink()
    result = controller.run()
    assert result.returncode != 0 and "HyperPod did not provide the cluster layout" in result.stdout


def test_a_rerun_keeps_one_fstab_line(controller: Node) -> None:
    for _ in range(2):
        controller.run_script("mount_fsx.sh", "fs-0abc.fsx.us-east-1.amazonaws.com", "mnt1234", "/fsx")
    assert sum(" /fsx " in ln for ln in (controller.root / "etc/fstab").read_text().splitlines()) == 1
    assert "LABEL=cloudimg-rootfs" in (controller.root / "etc/fstab").read_text()


def test_eks_moves_kubelet_and_containerd_behind_a_link_and_a_mount_requirement(tmp_path: Path) -> None:
    node = _node(tmp_path, "eks")
    result = node.run("eks")
    assert result.returncode == 0, result.stdout + result.stderr
    for path, service in (("var/lib/kubelet", "kubelet"), ("var/lib/containerd", "containerd")):
        link = node.root / path
        assert link.is_symlink() and os.readlink(link) == f"/opt/sagemaker/{path.rsplit('/', 1)[1]}"
        drop_in = node.root / f"etc/systemd/system/{service}.service.d/trainstack-disk.conf"
        assert "RequiresMountsFor=/opt/sagemaker" in drop_in.read_text()
    assert (node.root / "opt/sagemaker/kubelet/kubeconfig").read_text() == "kubeconfig\n"  # the state moved
    assert not (node.root / "etc/fstab").exists()  # no bind mount (with or without nofail) hides kubelet state


def test_eks_fails_when_the_volume_is_not_mounted(tmp_path: Path) -> None:
    node = _node(tmp_path, "eks")
    (node.state / "mounts").unlink()
    result = node.run("eks")
    assert result.returncode != 0 and "/opt/sagemaker is not mounted" in result.stdout
    assert (node.root / "var/lib/kubelet").is_dir() and not (node.root / "var/lib/kubelet").is_symlink()


def test_eks_fails_when_a_service_cannot_be_stopped(tmp_path: Path) -> None:
    node = _node(tmp_path, "eks")
    result = node.run("eks", systemctl="1")
    assert result.returncode != 0 and "could not stop kubelet" in result.stdout
