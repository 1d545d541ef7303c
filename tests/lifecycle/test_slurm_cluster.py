"""A HyperPod Slurm cluster from the real lifecycle and real daemons: a controller and a compute node, each a box
(box.py) on one network, /fsx shared and squashing root. Debian's Slurm 22.05 (slurmctld, slurmd configless,
slurmdbd), MariaDB and munge run as the lifecycle configured them; a user's job is submitted with sbatch, runs on
the compute node through the SPANK plugin the lifecycle built, and is read back from accounting with sacct; then the
controller is replaced, as HyperPod replaces a failed node, and the job is still in accounting.

One test, because the steps are one journey and each costs seconds of daemons: the assertions say which step failed.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.lifecycle.box import Box, link
from tests.lifecycle.cluster import ADDRESSES, CLUSTER_NAME, PYXIS, Node, hostname, hyperpod_spec, lustre_server

pytestmark = pytest.mark.e2e
COMPUTE = hostname(ADDRESSES["p5"])


def wait_for(what: str, probe: Callable[[], str | None], timeout_s: float = 60) -> str:
    """Poll `probe` until it returns a value; fail naming `what` and its last output."""
    deadline = time.monotonic() + timeout_s
    last: str | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None:
            return last
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def ok(node: Node) -> None:
    result = node.on_create()
    assert result.returncode == 0, f"on_create on {node.box.hostname} failed:\n{result.stdout[-4000:]}{result.stderr}"


def sacct_row(box: Box, job: str) -> str | None:
    row = box.run("sacct", "-j", job, "-X", "-n", "-P", "-o", "JobID,User,State,ExitCode").stdout.strip()
    return row if row.endswith(("COMPLETED|0:0", "FAILED|1:0")) else None


def test_a_cluster_comes_up_runs_a_job_and_keeps_its_accounting_across_a_controller_replacement(
    tmp_path: Path, nodes: Callable[..., Node]
) -> None:
    spec = hyperpod_spec()
    lustre = lustre_server(tmp_path / "lustre")
    controller, compute = nodes("controller", spec, lustre), nodes("p5", spec, lustre)
    link([controller.box, compute.box])

    # 1. The controller: MariaDB, slurmdbd and slurmctld from HyperPod's slurm.conf (`Include accounting.conf`).
    ok(controller)
    etc = controller.box.path("/opt/slurm/etc")
    accounting = (etc / "accounting.conf").read_text()
    assert f"AccountingStorageHost={ADDRESSES['controller']}\n" in accounting
    assert "AccountingStoragePort=6819\n" in accounting and "AccountingStorageTRES=gres/gpu\n" in accounting
    dbd = (etc / "slurmdbd.conf").stat()
    assert (stat.S_IMODE(dbd.st_mode), dbd.st_uid) == (0o600, _uid(controller.box, "slurm"))
    password = (etc / "slurmdbd.conf").read_text().split("StoragePass=")[1].split()[0]
    assert len(password) == 48 and password not in controller.log()
    config = controller.box.run("scontrol", "show", "config").stdout
    assert "gres/gpu" in _config(config, "AccountingStorageTRES")
    assert _config(config, "AccountingStorageType") == "accounting_storage/slurmdbd"
    clusters = controller.box.run("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster").stdout.split()
    assert clusters == [CLUSTER_NAME]
    users = controller.box.run("sacctmgr", "-n", "-P", "show", "association", "format=user,account").stdout.split()
    assert {"ubuntu|root", "alice|root"} <= set(users), users

    # 2. The compute node: configless slurmd, which waits for /fsx, registers and goes idle.
    ok(compute)
    drop_in = compute.box.path("/etc/systemd/system/slurmd.service.d/trainstack.conf").read_text()
    assert "RequiresMountsFor=/fsx" in drop_in and f"--conf-server {ADDRESSES['controller']}" in drop_in
    wait_for(
        f"{COMPUTE} idle in sinfo",
        lambda: (
            "idle" if controller.box.run("sinfo", "-h", "-n", COMPUTE, "-o", "%t").stdout.strip() == "idle" else None
        ),
    )

    # 3. alice's job: submitted on the controller, run on the compute node in her home on /fsx, with the plugin.
    submitted = controller.box.run(
        "sbatch", "--parsable", "-p", "p5", "-o", "/fsx/alice/job-%j.out",
        "--wrap", 'echo "probe=$TRAINSTACK_SPANK_PROBE user=$(id -un) host=$(hostname)"',
        user="alice",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    row = wait_for(f"job {job} in accounting", lambda: sacct_row(controller.box, job))
    assert row == f"{job}|alice|COMPLETED|0:0"
    output = (lustre / "alice" / f"job-{job}.out").read_text()
    assert output == f"probe=pyxis-stand-in {PYXIS} user=alice host={COMPUTE}\n"

    # 4. The hourly backup (what the timer runs), then the controller fails and HyperPod replaces it: a new root
    #    volume, the same /fsx. The new controller restores the database before slurmdbd starts.
    assert controller.box.run("systemctl", "is-active", "trainstack-accounting-backup.timer").returncode == 0
    backup = controller.box.run("systemctl", "start", "trainstack-accounting-backup.service")
    assert backup.returncode == 0, backup.stderr
    dump = lustre / ".trainstack" / "slurm-accounting" / f"{CLUSTER_NAME}.sql.gz"
    st = dump.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o600)  # root squash's identity, nobody else's
    controller.box.close()
    compute.box.close()
    replacement = nodes("controller", spec, lustre)
    link([replacement.box])
    ok(replacement)
    assert f"restored slurm_acct_db from /fsx/.trainstack/slurm-accounting/{CLUSTER_NAME}.sql.gz" in replacement.log()
    assert sacct_row(replacement.box, job) == f"{job}|alice|COMPLETED|0:0"


def _config(show_config: str, key: str) -> str:
    [value] = [line.split("=", 1)[1].strip() for line in show_config.splitlines() if line.startswith(f"{key} ")]
    return value


def _uid(box: Box, user: str) -> int:
    [line] = [ln for ln in box.path("/etc/passwd").read_text().splitlines() if ln.startswith(f"{user}:")]
    return int(line.split(":")[2])
