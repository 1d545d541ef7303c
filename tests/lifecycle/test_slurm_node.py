"""One HyperPod Slurm node in a box (box.py), its daemons stand-in processes: what the lifecycle does to the node and
to /fsx, with the real tools (gcc and make, useradd, setpriv, apt-mark and dpkg-query over the node's dpkg database,
ssh-keygen, MariaDB for the accounting check) and /fsx a root-owned directory that the lifecycle's /fsx step reaches
as root squash's identity (uid 65534, no privilege over files), as FSx lets a squashed root reach the file system.

Three of these tests are the failures a review found in the scripts before them (each fails on those scripts):
pyxis's build (CPPFLAGS on make's command line), root squash (root-owned writes on /fsx), and HyperPod's own
`Include accounting.conf` line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.lifecycle.box import link
from tests.lifecycle.cluster import (
    ALICE_KEY,
    CLUSTER_NAME,
    FSX_DNS,
    FSX_MOUNT,
    PYXIS,
    SQUASH,
    Node,
    hostname,
    hyperpod_spec,
    lustre_server,
    slurm_conf,
)

pytestmark = pytest.mark.e2e
LIFECYCLE = "/var/lib/hyperpod/lifecycle"
SQUASHED = 65534


@pytest.fixture
def compute(tmp_path: Path, nodes: Callable[..., Node]) -> Node:
    """A p5 node (NVIDIA) of the default spec with /fsx prepared (root's, 1777), on its own network."""
    node = nodes("p5", hyperpod_spec(), lustre_server(tmp_path / "lustre"), daemons=False)
    link([node.box])
    return node


def succeeds(node: Node) -> str:
    result = node.on_create()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    return result.stdout


def fails_at(node: Node, step: str) -> str:
    result = node.on_create()
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert f"on_create (slurm) FAILED: step {step} exited" in out, out[-3000:]
    assert "on_create (slurm) done" not in out
    assert f"step {step} exited" in node.log()  # in the lifecycle log, which reaches CloudWatch
    return out


def walk(top: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            yield Path(directory) / name


def owner(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_uid, stat.S_IMODE(st.st_mode)


# ------------------------------------------------------------------------------------ the three failures


def test_pyxis_builds_with_its_own_cppflags_and_the_slurm_headers(compute: Node) -> None:
    """pyxis's Makefile defines PYXIS_VERSION in its own CPPFLAGS and appends the caller's: the plugin built from a
    Makefile of that pattern (fixtures/spank_probe) carries the version, and is installed where plugstack.conf says."""
    out = succeeds(compute)
    assert '-DPYXIS_VERSION=\\"0.19.0\\" -I /opt/slurm/include' in out  # make's own flags, then the caller's
    plugin = compute.box.path("/usr/local/lib/slurm/spank_pyxis.so")
    assert f"pyxis-stand-in {PYXIS}".encode() in plugin.read_bytes()
    assert compute.box.path("/usr/local/share/pyxis/pyxis.conf").read_text() == (
        "required /usr/local/lib/slurm/spank_pyxis.so\n"
    )
    etc = compute.box.path("/opt/slurm/etc")
    assert (etc / "plugstack.conf").read_text() == "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf\n"
    assert os.readlink(etc / "plugstack.conf.d/pyxis.conf") == "/usr/local/share/pyxis/pyxis.conf"
    assert "ConstrainDevices=yes" in (etc / "cgroup.conf").read_text().splitlines()


def test_the_fsx_steps_leave_nothing_of_roots_on_fsx(compute: Node, tmp_path: Path) -> None:
    """Under root squash root is uid 65534 on /fsx and may not chmod or chown what it does not own: every entry the
    lifecycle leaves there belongs to a user or to the squash identity, none to root, and /fsx keeps its mode."""
    succeeds(compute)
    lustre = tmp_path / "lustre"
    assert owner(lustre) == (0, 0o1777)  # untouched: root could not have changed it
    entries = {path.relative_to(lustre).as_posix(): owner(path) for path in walk(lustre)}
    assert not {name: o for name, o in entries.items() if o[0] == 0}, entries
    assert entries[".trainstack"] == (SQUASHED, 0o755)
    assert entries["enroot"] == (SQUASHED, 0o1777)
    assert entries["alice"] == (2001, 0o700) and entries["ubuntu"] == (1000, 0o700)
    assert entries["alice/.ssh/authorized_keys"] == (2001, 0o600)
    generated = (lustre / "alice/.ssh/id_ed25519.pub").read_text().strip()
    assert (lustre / "alice/.ssh/authorized_keys").read_text().splitlines() == [generated, ALICE_KEY]
    assert (lustre / "ubuntu/.bashrc").is_file()  # ubuntu's node-local home came along
    passwd = compute.box.run("getent", "passwd", "alice", "ubuntu").stdout.splitlines()
    assert passwd == ["alice:x:2001:2001::/fsx/alice:/bin/bash", "ubuntu:x:1000:1000::/fsx/ubuntu:/bin/bash"]


def test_hyperpods_include_line_is_recognised(tmp_path: Path, nodes: Callable[..., Node]) -> None:
    """HyperPod's slurm.conf includes accounting.conf as `Include accounting.conf` (AWS's HyperPod workshop,
    Troubleshooting): accounting is configured against it, with the real MariaDB."""
    controller = nodes("controller", hyperpod_spec(), lustre_server(tmp_path / "lustre"), daemons=False)
    assert "\nInclude accounting.conf\n" in controller.box.path("/opt/slurm/etc/slurm.conf").read_text()
    result = controller.box.sh(f"cd {LIFECYCLE} && bash setup_accounting.sh configure")
    assert result.returncode == 0, result.stdout + result.stderr
    accounting = controller.box.path("/opt/slurm/etc/accounting.conf").read_text().splitlines()
    assert {"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageTRES=gres/gpu"} <= set(accounting)
    assert "GresTypes=gpu" in accounting  # slurm.conf declares no GRES types of its own


# --------------------------------------------------------------------------------- accounting's checks


@pytest.mark.parametrize(
    ("line", "accepted"),
    [
        ("include /opt/slurm/etc/accounting.conf", True),  # the full path, lower case
        ("INCLUDE ./accounting.conf  # ours", True),
        ("#Include accounting.conf", False),  # commented out
        ("Include accounting.conf.disabled", False),
    ],
)
def test_the_include_check_reads_slurm_conf_as_slurm_does(
    tmp_path: Path, nodes: Callable[..., Node], line: str, accepted: bool
) -> None:
    controller = nodes("controller", hyperpod_spec(), lustre_server(tmp_path / "lustre"), daemons=False)
    conf = slurm_conf(["10.0.0.30"]).replace("Include accounting.conf", line) + "GresTypes=gpu\n"
    controller.box.write("/opt/slurm/etc/slurm.conf", conf)
    result = controller.box.sh(f"cd {LIFECYCLE} && bash setup_accounting.sh configure")
    if accepted:
        assert result.returncode == 0, result.stdout + result.stderr
        # slurm.conf has GresTypes already: a second declaration would be an error in slurmctld's log.
        assert "GresTypes" not in controller.box.path("/opt/slurm/etc/accounting.conf").read_text()
    else:
        assert result.returncode == 1
        assert "does not include accounting.conf: accounting settings would be ignored" in result.stderr


# ------------------------------------------------------------------------------------------ /fsx


def test_an_unprepared_fsx_under_root_squash_fails_with_the_one_command_that_prepares_it(
    tmp_path: Path, nodes: Callable[..., Node]
) -> None:
    lustre = lustre_server(tmp_path / "lustre", mode=0o755)  # FSx's root as created: root's, not world-writable
    node = nodes("p5", hyperpod_spec(), lustre, daemons=False)
    link([node.box])
    out = fails_at(node, "mount-fsx")
    assert f"FSx squashes root to {SQUASH}" in out and "storage.fsx.no_squash_nids" in out and "chmod 1777" in out
    assert owner(lustre) == (0, 0o755) and not list(lustre.iterdir())


def test_without_root_squash_the_node_prepares_fsx_itself(tmp_path: Path, nodes: Callable[..., Node]) -> None:
    lustre = lustre_server(tmp_path / "lustre", mode=0o755)
    node = nodes("p5", hyperpod_spec(), lustre, daemons=False, root_squash=None)  # dev: squash off
    link([node.box])
    out = succeeds(node)
    assert "/fsx was mode 755, now 1777 (no root squash on this file system)" in out
    assert owner(lustre) == (0, 0o1777) and owner(lustre / ".trainstack") == (SQUASHED, 0o755)


@pytest.mark.parametrize(
    ("squatted", "message"),
    [
        ("alice", "/fsx/alice exists but belongs to uid 2002, not alice (2001)"),
        (".trainstack", "/fsx/.trainstack belongs to uid 2002 with mode 755, not to the nodes' root (uid 65534"),
    ],
)
def test_what_another_user_created_first_on_fsx_is_refused(
    compute: Node, tmp_path: Path, squatted: str, message: str
) -> None:
    path = tmp_path / "lustre" / squatted
    path.mkdir(mode=0o755)
    os.chown(path, 2002, 2002)
    assert message in fails_at(compute, "fsx-layout")


def test_a_second_run_changes_nothing(compute: Node, tmp_path: Path) -> None:
    """update-cluster-software runs the lifecycle again on a node: it must succeed and add nothing twice."""
    succeeds(compute)
    lustre = tmp_path / "lustre"
    keys = (lustre / "alice/.ssh/authorized_keys").read_text()
    succeeds(compute)
    assert (lustre / "alice/.ssh/authorized_keys").read_text() == keys
    fstab = compute.box.path("/etc/fstab").read_text().splitlines()
    assert sum(" /fsx " in line for line in fstab) == 1
    assert compute.box.path("/opt/slurm/etc/plugstack.conf").read_text().count("include") == 1
    assert (lustre / ".trainstack/ssh_known_hosts").read_text().count(hostname("10.0.0.30")) == 1


# ------------------------------------------------------------------------------------------ the node


def test_the_lustre_client_and_the_kernel_meta_packages_are_held(compute: Node) -> None:
    succeeds(compute)
    held = compute.box.run("apt-mark", "showhold").stdout.split()
    assert held == ["linux-aws", "linux-headers-aws", "linux-image-aws", "lustre-client-modules-aws"]  # real apt-mark
    assert "linux-image-6.8.0-1021-aws" not in held  # the running kernel's own package never upgrades by itself


def test_fsx_mounts_at_boot_and_slurmd_waits_for_it(compute: Node) -> None:
    succeeds(compute)
    [line] = [ln.split() for ln in compute.box.path("/etc/fstab").read_text().splitlines() if " /fsx " in ln]
    source, mount_point, fstype, options, *_ = line
    assert (source, mount_point, fstype) == ("fs-0abc.fsx.us-east-1.amazonaws.com@tcp:/mnt1234", "/fsx", "lustre")
    # Units an fstab line may require on the Ubuntu-based AMI: systemd.special(7) targets (no network.service).
    opts = options.split(",")
    assert {"_netdev", "x-systemd.automount", "flock", "x-systemd.requires=network-online.target"} <= set(opts)
    assert compute.box.path("/etc/modules-load.d/trainstack-lustre.conf").read_text().split() == ["lnet", "lustre"]
    drop_in = compute.box.path("/etc/systemd/system/slurmd.service.d/trainstack.conf").read_text()
    assert drop_in.startswith("[Unit]\nRequiresMountsFor=/fsx\n")
    # systemd (its stand-in) refuses to start slurmd while /fsx is not mounted.
    assert compute.box.run("umount", "/fsx").returncode == 0
    restart = compute.box.run("systemctl", "restart", "slurmd")
    assert restart.returncode == 1 and "A dependency job for slurmd.service failed" in restart.stderr


def test_ssh_between_nodes_trusts_the_keys_the_nodes_publish(compute: Node, tmp_path: Path) -> None:
    succeeds(compute)
    public = compute.box.path("/etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
    known = (tmp_path / "lustre/.trainstack/ssh_known_hosts").read_text().splitlines()
    assert f"{hostname('10.0.0.30')},10.0.0.30 {public[0]} {public[1]}" in known
    config = compute.box.run("ssh", "-G", hostname("10.0.0.30")).stdout.splitlines()  # the real ssh's view
    assert (
        "globalknownhostsfile /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2 /fsx/.trainstack/ssh_known_hosts"
        in config
    )
    assert "stricthostkeychecking ask" in config or "stricthostkeychecking true" in config  # checking stays on


def test_gpu_nodes_get_nvidia_container_cli_from_nvidias_repository(compute: Node) -> None:
    succeeds(compute)
    listing = compute.box.path("/etc/apt/sources.list.d/nvidia-container-toolkit.list").read_text()
    assert "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit-keyring.gpg] https://" in listing
    assert compute.box.path("/etc/apt/keyrings/nvidia-container-toolkit-keyring.gpg").stat().st_size > 0
    assert compute.box.run("nvidia-container-cli", "--version").returncode == 0


def test_containers_wait_for_the_instance_store(compute: Node) -> None:
    """dlami-nvme.service mounts the instance store; enroot's runtime and data go there once it has."""
    compute.box.units(
        {
            "munge": {"exec": ["/usr/sbin/munged"], "pidfile": "/run/munge/munged.pid", "user": "munge"},
            "slurmd": {"exec": ["/usr/bin/sleep", "infinity"]},
            "dlami-nvme": {"state": {"ActiveState": "active", "ExecMainStatus": "0"}},
        }
    )
    compute.box.path("/opt/dlami/nvme").mkdir(parents=True)
    assert compute.box.sh("mount -t tmpfs nvme /opt/dlami/nvme").returncode == 0
    succeeds(compute)
    conf = compute.box.path("/etc/enroot/enroot.conf").read_text()
    assert "ENROOT_DATA_PATH           /opt/dlami/nvme/enroot/data/user-$(id -u)" in conf
    assert "ENROOT_CACHE_PATH          /fsx/enroot/user-$(id -u)" in conf  # each user's own cache, on /fsx


# ------------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("stub", "step", "message"),
    [
        ("modprobe", "mount-fsx", "modprobe lnet failed"),
        ("lctl", "mount-fsx", "lctl network up failed"),
        ("mount", "mount-fsx", "could not mount fs-0abc.fsx.us-east-1.amazonaws.com@tcp:/mnt1234"),
        ("curl", "containers", "download failed: https://"),
        ("apt-get", "containers", "apt-get update failed 5 times"),
    ],
)
def test_a_failed_step_fails_node_creation_with_its_name(compute: Node, stub: str, step: str, message: str) -> None:
    compute.box.fail(stub)
    out = fails_at(compute, step)
    assert message in out
    assert "slurmd" not in compute.box.path("/run/box/systemd/calls").read_text()  # never joined Slurm


def test_a_uid_taken_on_the_node_fails_the_users_step(compute: Node) -> None:
    taken = compute.box.run("useradd", "--uid", "2001", "--no-user-group", "--no-create-home", "someone")
    assert taken.returncode == 0, taken.stderr
    assert "uid 2001 of user alice already belongs to someone" in fails_at(compute, "users")


def test_a_node_without_the_lustre_client_fails_before_mounting(compute: Node) -> None:
    status = compute.box.path("/var/lib/dpkg/status")
    status.write_text(status.read_text().replace("Package: lustre-client-modules-aws\n", "Package: lustre-gone\n"))
    assert "lustre-client-modules-aws is not installed" in fails_at(compute, "hold-packages")


def test_a_missing_slurm_conf_fails_the_controller(tmp_path: Path, nodes: Callable[..., Node]) -> None:
    controller = nodes("controller", hyperpod_spec(), lustre_server(tmp_path / "lustre"), daemons=False)
    link([controller.box])
    controller.box.path("/opt/slurm/etc/slurm.conf").unlink()
    assert "slurm.conf missing: HyperPod did not write" in fails_at(controller, "slurm-conf")


def test_the_backup_refuses_a_dump_root_did_not_write(tmp_path: Path, nodes: Callable[..., Node]) -> None:
    """A user may write under /fsx's sticky root; a dump there that is not the nodes' root's is never loaded."""
    lustre = lustre_server(tmp_path / "lustre")
    controller = nodes("controller", hyperpod_spec(), lustre, daemons=False)
    area = lustre / ".trainstack"
    area.mkdir(mode=0o755)
    os.chown(area, SQUASHED, SQUASHED)
    (area / "slurm-accounting").mkdir(mode=0o777)
    planted = area / "slurm-accounting" / f"{CLUSTER_NAME}.sql.gz"
    planted.write_bytes(b"")
    planted.chmod(0o644)
    os.chown(planted, 2001, 2001)
    mount = f"modprobe lnet && modprobe lustre && lctl network up && mount -t lustre {FSX_DNS}@tcp:/{FSX_MOUNT} /fsx"
    assert controller.box.sh(mount).returncode == 0
    result = controller.box.sh(f"cd {LIFECYCLE} && bash setup_accounting.sh configure")
    assert result.returncode == 1
    assert "belongs to uid 2001 with mode 644, not to the nodes' root (uid 65534) with mode 600" in result.stderr
