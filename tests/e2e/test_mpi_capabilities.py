"""The MPI runtime's capability sets against Debian's real OpenSSH: sshd as root with exactly the worker's
capabilities (and no_new_privs, as `allowPrivilegeEscalation: false` sets it) accepts the launcher's ssh login, and
a rank's process writes the team directory (owned by the squash identity, mode 770); without any one of them the
login or the write fails. Each run is in a network namespace of its own, so sshd binds port 22 as the pod's does.

Skipped where it cannot run (not root, or `make slurm-tools` has not installed openssh-server), except under
TRAINSTACK_REQUIRE_SLURM=1 (CI), where that is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from components.k8s.training_runtimes import (
    MPI_LAUNCHER_CAPABILITIES,
    MPI_WORKER_CAPABILITIES,
    NOBODY_GID,
    NOBODY_UID,
    SSH_PORT,
)
from tests.tiers import require

TOOLS = ("sshd", "ssh", "ssh-keygen", "setpriv", "unshare", "ip")


@pytest.fixture(scope="module")
def sshd_available() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    reason = "needs root (port 22, setpriv, a directory of another owner)" if os.geteuid() != 0 else None
    reason = reason or (f"missing {', '.join(missing)} (make slurm-tools)" if missing else None)
    if reason is not None:
        if os.environ.get("TRAINSTACK_REQUIRE_SLURM") == "1":
            pytest.fail(f"TRAINSTACK_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)


def _bounding(capabilities: Sequence[str]) -> str:
    return ",".join(["-all", *(f"+{c.lower()}" for c in capabilities)])


def login_and_write(tmp: Path, worker: Sequence[str], launcher: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """sshd with `worker`'s capabilities, the launcher's ssh with `launcher`'s; the remote command writes a file
    into a team directory owned by the squash identity. Returns the run (stdout `written` on success)."""
    require("e2e", "starts sshd and ssh in a network namespace")
    for name in ("host_key", "id"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True)
    (tmp / "authorized_keys").write_text((tmp / "id.pub").read_text())
    (tmp / "authorized_keys").chmod(0o600)
    team = tmp / "team"
    team.mkdir()
    os.chown(team, NOBODY_UID, NOBODY_GID)
    team.chmod(0o770)
    (tmp / "sshd_config").write_text(
        textwrap.dedent(f"""\
            Port {SSH_PORT}
            ListenAddress 127.0.0.1
            HostKey {tmp}/host_key
            AuthorizedKeysFile {tmp}/authorized_keys
            PermitRootLogin prohibit-password
            PasswordAuthentication no
            PidFile {tmp}/sshd.pid
            StrictModes no
            """)
    )
    tmp.chmod(0o755)  # the pre-auth child reads nothing here, but the session's shell walks into it
    script = textwrap.dedent(f"""\
        ip link set lo up
        mkdir -p /run/sshd
        setpriv --no-new-privs --bounding-set {_bounding(worker)} --inh-caps -all \\
            /usr/sbin/sshd -D -e -f {tmp}/sshd_config 2> {tmp}/sshd.log &
        for _ in $(seq 50); do [ -s {tmp}/sshd.pid ] && break; grep -q . {tmp}/sshd.log && break; sleep 0.1; done
        setpriv --no-new-privs --bounding-set {_bounding(launcher)} --inh-caps -all \\
            ssh -p {SSH_PORT} -i {tmp}/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \\
            -o BatchMode=yes -o ConnectTimeout=5 root@127.0.0.1 \\
            'mkdir {team}/job-1 && echo step-100 > {team}/job-1/model.pt && echo written'
        status=$?
        kill %1 2>/dev/null; wait
        cat {tmp}/sshd.log >&2
        exit $status
        """)
    return subprocess.run(["unshare", "--net", "bash", "-c", script], capture_output=True, text=True, timeout=60)


@pytest.mark.e2e
def test_the_worker_and_launcher_capabilities_log_in_and_write_the_team_directory(
    sshd_available: None, tmp_path: Path
) -> None:
    run = login_and_write(tmp_path, MPI_WORKER_CAPABILITIES, MPI_LAUNCHER_CAPABILITIES)
    assert run.returncode == 0 and run.stdout.strip() == "written", run.stderr
    assert (tmp_path / "team" / "job-1" / "model.pt").read_text() == "step-100\n"


@pytest.mark.e2e
def test_the_launchers_ssh_needs_no_capability(sshd_available: None, tmp_path: Path) -> None:
    run = login_and_write(tmp_path, MPI_WORKER_CAPABILITIES, ())
    assert run.returncode == 0 and run.stdout.strip() == "written", run.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("dropped", "why"),
    [
        ("SETUID", "setresuid"),
        ("SETGID", "setgroups"),
        ("SYS_CHROOT", 'chroot("/run/sshd")'),
        ("NET_BIND_SERVICE", "Bind to port 22"),
        ("DAC_OVERRIDE", "Permission denied"),
    ],
)
def test_without_each_worker_capability_the_login_or_the_write_fails(
    sshd_available: None, tmp_path: Path, dropped: str, why: str
) -> None:
    worker = [c for c in MPI_WORKER_CAPABILITIES if c != dropped]
    run = login_and_write(tmp_path, worker, MPI_LAUNCHER_CAPABILITIES)
    assert run.returncode != 0 and "written" not in run.stdout
    assert not (tmp_path / "team" / "job-1").exists() or dropped == "DAC_OVERRIDE"
    assert why.lower() in run.stderr.lower(), run.stderr


def test_raw_sockets_are_not_among_them() -> None:
    assert "NET_RAW" not in MPI_WORKER_CAPABILITIES and "NET_RAW" not in MPI_LAUNCHER_CAPABILITIES
