"""The EKS lifecycle script, run for real against a temporary root with stub commands (the Slurm lifecycle runs in
boxes against real daemons: tests/lifecycle/).

Each test copies the lifecycle bundle into a temporary directory and runs `on_create.sh` with TRAINSTACK_ROOT
pointing at a temporary root and a PATH of two directories only: stubs for every command that touches the machine
(mount, systemctl, ...), which record their arguments and fail on demand (STUB_FAIL_<command>=1), and links to a
short list of harmless real tools (bash, python3, grep, awk, cp, ...). Any other command is "not found" and fails
the run, so a script cannot reach the host even though tests may run as root.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.sagemaker.hyperpod import LIFECYCLE_ROOT
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
  nvidia-ctk) cfg=; prev=; for a in "$@"; do [[ $a == --config=* ]] && cfg=${a#--config=}; done
      mkdir -p "$(dirname "$cfg")"; [[ -n ${STUB_NVIDIA_CTK_NOOP:-} ]] && exit 0
      for a in "$@"; do [[ $prev == --set ]] && echo "${a%%=*} = ${a#*=}" >>"$cfg"; prev=$a; done ;;
esac
"""
STUBS = (
    "mount", "mountpoint", "systemctl", "modprobe", "lctl", "curl", "apt-get", "apt-mark", "dpkg", "dpkg-query",
    "tar", "make", "useradd", "usermod", "chown", "id", "getent", "ssh-keygen", "mysql", "sacctmgr", "sleep",
    "sync", "hostname", "nvidia-ctk",
)  # fmt: skip


@dataclass
class Node:
    root: Path
    bundle: Path
    state: Path
    env: dict[str, str]

    def run(self, **fail: str) -> subprocess.CompletedProcess[str]:
        require("e2e", LIFECYCLE_COST)
        env = self.env | {f"STUB_FAIL_{name.replace('-', '_')}": "1" for name in fail}
        return subprocess.run(
            ["bash", str(self.bundle / "on_create.sh")], env=env, capture_output=True, text=True, timeout=60
        )

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


def _node(tmp_path: Path) -> Node:
    root, bundle, state = tmp_path / "root", tmp_path / "bundle", tmp_path / "state"
    state.mkdir()
    shutil.copytree(LIFECYCLE_ROOT / "eks", bundle)
    env = {
        "PATH": _sandbox_path(tmp_path),
        "HOME": str(tmp_path),
        "TRAINSTACK_ROOT": str(root),
        "TRAINSTACK_FAILURE_GRACE_SECONDS": "0",
        "STUB_STATE": str(state),
    }
    node = Node(root, bundle, state, env)
    (root / "opt/sagemaker").mkdir(parents=True)
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/kubeconfig").write_text("kubeconfig\n")
    (root / "var/lib/containerd").mkdir(parents=True)
    node.mounted("/opt/sagemaker")
    return node


def test_eks_moves_kubelet_and_containerd_behind_a_link_and_a_mount_requirement(tmp_path: Path) -> None:
    node = _node(tmp_path)
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    for path, service in (("var/lib/kubelet", "kubelet"), ("var/lib/containerd", "containerd")):
        link = node.root / path
        assert link.is_symlink() and os.readlink(link) == f"/opt/sagemaker/{path.rsplit('/', 1)[1]}"
        drop_in = node.root / f"etc/systemd/system/{service}.service.d/trainstack-disk.conf"
        assert "RequiresMountsFor=/opt/sagemaker" in drop_in.read_text()
    assert (node.root / "opt/sagemaker/kubelet/kubeconfig").read_text() == "kubeconfig\n"  # the state moved
    assert not (node.root / "etc/fstab").exists()  # no bind mount (with or without nofail) hides kubelet state


def test_eks_fails_when_the_volume_is_not_mounted(tmp_path: Path) -> None:
    node = _node(tmp_path)
    (node.state / "mounts").unlink()
    result = node.run()
    assert result.returncode != 0 and "/opt/sagemaker is not mounted" in result.stdout
    assert (node.root / "var/lib/kubelet").is_dir() and not (node.root / "var/lib/kubelet").is_symlink()


def test_eks_fails_when_a_service_cannot_be_stopped(tmp_path: Path) -> None:
    node = _node(tmp_path)
    result = node.run(systemctl="1")
    assert result.returncode != 0 and "could not stop kubelet" in result.stdout


RUNTIME_CONFIG = "etc/nvidia-container-runtime/config.toml"


def test_eks_gpu_nodes_keep_gpus_behind_the_device_plugin(tmp_path: Path) -> None:
    node = _node(tmp_path)
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    config = (node.root / RUNTIME_CONFIG).read_text().splitlines()
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in config
    assert "accept-nvidia-visible-devices-as-volume-mounts = true" in config


def test_eks_fails_when_the_runtime_settings_do_not_land(tmp_path: Path) -> None:
    node = _node(tmp_path)
    node.env["STUB_NVIDIA_CTK_NOOP"] = "1"
    result = node.run()
    assert result.returncode != 0
    assert "lacks accept-nvidia-visible-devices-envvar-when-unprivileged=false" in result.stdout
    assert node.run(**{"nvidia-ctk": "1"}).returncode != 0


def test_eks_cpu_nodes_without_the_toolkit_skip_the_runtime_settings(tmp_path: Path) -> None:
    node = _node(tmp_path)
    (tmp_path / "stubs" / "nvidia-ctk").unlink()
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (node.root / RUNTIME_CONFIG).exists()
