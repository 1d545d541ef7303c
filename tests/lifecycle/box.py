"""A HyperPod node in a box: a chroot in its own mount, network and UTS namespaces, in which the Slurm lifecycle runs
unchanged, as root, against Debian's real tools and daemons.

The box's root is a temporary directory: its own /etc (a copy of this machine's, without its secrets), /opt, /var,
/run, /home, /root, /tmp and /usr/local; this machine's /usr (read-only), /dev, /sys and a /proc. The hostname is
the node's (ip-10-0-0-10, as HyperPod names nodes), and its one network interface carries the node's address on a
veth link shared with the other boxes of the cluster, so slurmctld, slurmd, slurmdbd and munge use their default
ports without meeting another test's daemons. Nothing in the box is visible from outside it, and nothing outside
but the shared /fsx directory (the "Lustre server") is writable from inside.

Stand-ins only for what cannot exist here (stubs/, on the box's PATH before the real tools): `systemctl`
(systemd, run by systemctl.py, which starts and stops the real daemons), the Lustre client (`mount -t lustre`
binds the shared directory; `modprobe lnet|lustre`, `lctl`), apt's network (`apt-get`; `apt-mark` and
`dpkg-query` are real, over the box's own dpkg database) and the internet (`curl` serves files the test
registered). Each refuses what the real one refuses, and fails on demand (`box.fail(name)`).

Every process a box started is found by its network namespace and ended when the box closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUBS = HERE / "stubs"
FIXTURES = HERE / "fixtures"
BOX_BIN = "/opt/box/bin"
PATH = f"{BOX_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
SLURM_CONF = "/opt/slurm/etc/slurm.conf"  # where HyperPod's Slurm (built with --sysconfdir=/opt/slurm/etc) reads it
UBUNTU_UID = 1000  # the HyperPod AMI's default user
# Host secrets that stay out of the box's copy of /etc.
PRIVATE = ("ssh_host_", "shadow", "gshadow", "private")
TOOLS = (
    "slurmctld", "slurmd", "slurmdbd", "sbatch", "sacct", "sacctmgr", "munged", "mariadbd", "mariadb-install-db",
    "mysqldump", "gcc", "make", "setpriv", "unshare", "nsenter", "ip", "ssh-keygen", "apt-mark", "dpkg-deb", "gpg",
)  # fmt: skip


def missing_tools() -> list[str]:
    """What this machine lacks to run boxes (`make slurm-tools` installs it)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not Path("/usr/include/slurm/spank.h").is_file():
        missing.append("/usr/include/slurm/spank.h (libslurm-dev)")
    return missing


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _copy_etc(target: Path) -> None:
    subprocess.run(["cp", "-a", "/etc", str(target)], check=True)  # owners kept: /etc/munge is munge's
    for path in sorted(target.rglob("*"), reverse=True):
        if path.name.startswith(PRIVATE) and not path.is_symlink():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    # System accounts only (this machine's users, 1000-59999 by Debian policy 9.2.2, are not the AMI's), no hashes.
    for name in ("passwd", "group"):
        lines = (target / name).read_text().splitlines()
        kept = [line for line in lines if not 1000 <= int(line.split(":")[2]) < 60000]
        _write(target / name, "".join(f"{line}\n" for line in kept))
        entries = [line.split(":", 1)[0] for line in kept]
        shadow, fields = ("shadow", ":!*:19000:0:99999:7:::") if name == "passwd" else ("gshadow", ":!::")
        _write(target / shadow, "".join(f"{entry}{fields}\n" for entry in entries), 0o640)


@dataclass
class Box:
    """One node. `run` executes a command inside it (as root, or as `user`), with the box's environment."""

    root: Path
    hostname: str
    address: str
    pid: int = 0
    env: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------- life cycle

    @classmethod
    def create(cls, root: Path, hostname: str, address: str, lustre: Path, hosts: Mapping[str, str]) -> Box:
        """A fresh node: the AMI's files, the box's namespaces, its hostname; `lustre` is the shared /fsx."""
        box = cls(root, hostname, address)
        box._lay_out(hosts)
        box._start(lustre)
        return box

    def _lay_out(self, hosts: Mapping[str, str]) -> None:
        r = self.root
        r.mkdir(parents=True)
        for name in ("usr", "proc", "sys", "dev", "opt", "var/log", "var/spool", "var/cache", "var/tmp", "run",
                     "home", "root", "srv", "mnt", "fsx", ".fsx-server", ".usr-local"):  # fmt: skip
            (r / name).mkdir(parents=True, exist_ok=True)
        (r / "tmp").mkdir(mode=0o1777)
        (r / "tmp").chmod(0o1777)
        for link in ("bin", "sbin", "lib", "lib64"):
            (r / link).symlink_to(f"usr/{link}")
        for sub in ("bin", "sbin", "lib", "share", "include", "etc", "src"):
            (r / ".usr-local" / sub).mkdir()
        _copy_etc(r / "etc")
        _write(r / "etc/hostname", f"{self.hostname}\n")
        _write(r / "etc/hosts", "127.0.0.1 localhost\n" + "".join(f"{ip} {name}\n" for name, ip in hosts.items()))
        # The box's stand-ins and their state.
        box_bin = r / BOX_BIN.lstrip("/")
        box_bin.mkdir(parents=True)
        for stub in STUBS.iterdir():
            shutil.copy(stub, box_bin / stub.name)
            (box_bin / stub.name).chmod(0o755)
        shutil.copy(HERE / "systemctl.py", box_bin / "systemctl")
        (box_bin / "systemctl").chmod(0o755)
        for name in ("fail", "systemd", "modules", "www"):
            (r / "run/box" / name).mkdir(parents=True, exist_ok=True)
        self.units({})
        # A dpkg database with what the HyperPod AMI has installed that the lifecycle asks about.
        dpkg = r / "var/lib/dpkg"
        for sub in ("info", "updates", "triggers", "alternatives"):
            (dpkg / sub).mkdir(parents=True)
        shutil.copy(FIXTURES / "dpkg-status", dpkg / "status")
        _write(dpkg / "available", "")
        _write(dpkg / "arch", "amd64\n")
        (r / "var/lib/apt/lists/partial").mkdir(parents=True)
        (r / "var/cache/apt/archives/partial").mkdir(parents=True)
        self.env = {
            "PATH": PATH,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "SLURM_CONF": SLURM_CONF,
            "TRAINSTACK_FAILURE_GRACE_SECONDS": "0",
        }

    def _start(self, lustre: Path) -> None:
        script = r"""
set -euo pipefail
r=$1
mount --rbind /usr "$r/usr"
mount -o remount,bind,ro "$r/usr"
mount --bind "$r/.usr-local" "$r/usr/local"
mount --rbind /dev "$r/dev"
mount --rbind /sys "$r/sys"
mount -t proc proc "$r/proc"
mount --bind "$3" "$r/.fsx-server"
hostname "$2"
ip link set lo up
exec chroot "$r" /usr/bin/sleep infinity
"""
        anchor = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--net",
                "--uts",
                "--propagation",
                "private",
                "--",
                "bash",
                "-c",
                script,
                "_",
                str(self.root),
                self.hostname,
                str(lustre),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pid = anchor.pid
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{self.pid}/root") != str(self.root):
            if anchor.poll() is not None:
                raise RuntimeError(f"box {self.hostname} did not start: {anchor.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise RuntimeError(f"box {self.hostname} did not start in 10 s")
            time.sleep(0.01)

    def close(self) -> None:
        """End every process in the box (found by its network namespace), the anchor last."""
        try:
            namespace = os.readlink(f"/proc/{self.pid}/ns/net")
        except OSError:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            members = list(_members(namespace))
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 5
            while members and time.monotonic() < deadline:
                members = list(_members(namespace))
                time.sleep(0.05)
            if not members:
                break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    # -------------------------------------------------------------------------------------------- commands

    def run(
        self,
        *argv: str,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        environment = [f"{k}={v}" for k, v in {**self.env, **(env or {})}.items()]
        command = list(argv)
        if user is not None:
            command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *command]
        return subprocess.run(
            [
                "nsenter",
                f"--target={self.pid}",
                "--mount",
                "--net",
                "--uts",
                "--root",
                "--wd",
                "--",
                "/usr/bin/env",
                "-i",
                *environment,
                *command,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def sh(self, script: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.run("bash", "-c", script, **kwargs)  # type: ignore[arg-type]

    def path(self, inside: str) -> Path:
        """The host path of a path inside the box (not for /dev, /sys, /proc, /fsx or /usr but /usr/local)."""
        if inside == "/usr/local" or inside.startswith("/usr/local/"):
            return self.root / ".usr-local" / inside.removeprefix("/usr/local").lstrip("/")
        return self.root / inside.lstrip("/")

    def write(self, inside: str, text: str, mode: int = 0o644) -> Path:
        return _write(self.path(inside), text, mode)

    # ----------------------------------------------------------------------------------------- stand-ins

    def units(self, units: Mapping[str, Mapping[str, object]]) -> None:
        """The systemd units this node has (systemctl.py): name -> {exec, pidfile, user, ready_socket, state}."""
        self.write("/run/box/units.json", json.dumps(units, indent=1))

    def fail(self, *stubs: str) -> None:
        """The named stand-ins fail from now on, as when the real command fails."""
        for name in stubs:
            self.write(f"/run/box/fail/{name}", "")

    def serve(self, url: str, source: Path) -> None:
        """`curl` answers `url` with a copy of `source` (any other URL is a 404)."""
        target = self.path(f"/run/box/www/{len(list(self.path('/run/box/www').iterdir()))}")
        shutil.copy(source, target)
        with self.path("/run/box/www.map").open("a") as index:
            index.write(f"{url} /run/box/www/{target.name}\n")

    def lustre(self, source: str) -> None:
        """The Lustre file system this node's `mount -t lustre` reaches: <dns>@tcp:/<mount name>."""
        self.write("/run/box/lustre-source", source + "\n")


def _members(namespace: str) -> Iterable[int]:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/ns/net") == namespace:
                yield int(entry.name)
        except OSError:
            continue


def link(boxes: Iterable[Box]) -> None:
    """One network for the boxes: each gets eth0 with its address, the peers joined through a bridge-less mesh of
    veth pairs (two boxes) or, for one box, a veth pair of its own."""
    members = list(boxes)
    if len(members) > 2:
        raise ValueError("link() joins one or two boxes")
    if len(members) == 1:
        [box] = members
        _ip(
            "link", "add", "eth0", "netns", str(box.pid), "type", "veth", "peer", "name", "peer0", "netns", str(box.pid)
        )
    else:
        a, b = members
        _ip("link", "add", "eth0", "netns", str(a.pid), "type", "veth", "peer", "name", "eth0", "netns", str(b.pid))
    for box in members:
        script = f"ip addr add {box.address}/16 dev eth0 && ip link set eth0 up && ip route add default dev eth0"
        if len(members) == 1:
            script += " && ip link set peer0 up"
        result = box.sh(script)
        if result.returncode != 0:
            raise RuntimeError(f"network of {box.hostname}: {result.stderr}")


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


def owner_of(path: Path) -> tuple[int, int, int]:
    """uid, gid and permission bits of a host path."""
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)
