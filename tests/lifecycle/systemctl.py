#!/usr/bin/env python3
"""systemctl for a box (tests/lifecycle/box.py): systemd cannot run there, so this starts and stops the real daemons.

The node's units are /run/box/units.json (what the AMI installs: name -> exec, pidfile, user, and for a unit whose
state is given, `state`; a start returns once the daemon is ready, as with systemd's Type=notify: its pid file
holds a live process, and its ready_socket exists or its ready_port listens) plus the unit files the lifecycle
writes under /etc/systemd/system (oneshot services: ExecStart runs to completion; timers: enabled and active). Drop-ins
(/etc/systemd/system/<unit>.d/*.conf) give Environment= for the command line and RequiresMountsFor=, which is
checked as systemd would: a path that is not a mount point fails the start. What systemctl refuses is refused
with its message and exit code: an unknown unit (5 for start, 1 for enable/disable), a failed start (1), an
inactive unit for is-active (3). `/run/box/fail/systemctl` makes every command fail.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

UNITS = Path("/run/box/units.json")
STATE = Path("/run/box/systemd")
UNIT_DIR = Path("/etc/systemd/system")
LOG_DIR = Path("/var/log/box")
START_TIMEOUT_S = 30.0


def canonical(name: str) -> str:
    return name if name.endswith((".service", ".timer")) else f"{name}.service"


def unit_file(unit: str) -> dict[str, list[str]]:
    """The key=value lines of a unit file and its drop-ins (systemd.unit(5)), each key's values in order."""
    values: dict[str, list[str]] = {}
    paths = [UNIT_DIR / unit] if (UNIT_DIR / unit).is_file() else []
    paths += sorted((UNIT_DIR / f"{unit}.d").glob("*.conf"))
    for path in paths:
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith(("#", ";", "[")):
                values.setdefault(key, []).append(value)
    return values


def known(unit: str) -> dict[str, object] | None:
    table: dict[str, dict[str, object]] = json.loads(UNITS.read_text())
    base = unit.removesuffix(".service")
    if base in table:
        return table[base]
    if (UNIT_DIR / unit).is_file():
        return {"file": True}
    return None


def pid_of(spec: dict[str, object]) -> int | None:
    pidfile = spec.get("pidfile")
    if not isinstance(pidfile, str):
        marker = STATE / f"{spec.get('name')}.pid"
        pidfile = str(marker)
    try:
        pid = int(Path(pidfile).read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    status = Path(f"/proc/{pid}/status").read_text()
    return None if "State:\tZ" in status else pid


def active(unit: str, spec: dict[str, object]) -> bool:
    if "state" in spec:
        return dict(spec["state"]).get("ActiveState") == "active"  # type: ignore[call-overload]
    if spec.get("file"):
        return (STATE / f"{unit}.active").exists()
    return pid_of({**spec, "name": unit}) is not None


def listening(port: int) -> bool:
    """Whether a socket of this network namespace listens on the TCP port (/proc/net/tcp, state 0A)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def environment(unit: str) -> dict[str, str]:
    env = dict(os.environ)
    for value in unit_file(unit).get("Environment", []):
        for item in shlex.split(value):
            key, _, val = item.partition("=")
            env[key] = val
    return env


def mounted(path: str) -> bool:
    """A mount point of this mount namespace (mountinfo's fifth field): os.path.ismount misses bind mounts."""
    points = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}
    return os.path.realpath(path) in points


def requirements_met(unit: str) -> bool:
    for value in unit_file(unit).get("RequiresMountsFor", []):
        for path in value.split():
            if not mounted(path):
                print(f"A dependency job for {unit} failed. See 'journalctl -xe' for details.", file=sys.stderr)
                return False
    return True


def start(unit: str, spec: dict[str, object]) -> int:
    if "state" in spec or active(unit, spec):
        return 0
    if not requirements_met(unit):
        return 1
    env = environment(unit)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    if spec.get("file"):
        if unit.endswith(".timer"):
            (STATE / f"{unit}.active").touch()
            return 0
        command = unit_file(unit).get("ExecStart", [""])[-1]
        code = subprocess.run(shlex.split(command), env=env).returncode
        if code != 0:
            return failed(unit)
        return 0
    argv = [re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), ""), a) for a in spec["exec"]]  # type: ignore[union-attr]
    argv = [a for part in argv for a in (shlex.split(part) if part != "" else [])]
    if spec.get("user"):
        argv = ["setpriv", f"--reuid={spec['user']}", f"--regid={spec['user']}", "--init-groups", "--", *argv]
    with (LOG_DIR / f"{unit}.log").open("a") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                   start_new_session=True)  # fmt: skip
    if not spec.get("pidfile"):
        (STATE / f"{unit}.pid").write_text(str(process.pid))
    deadline = time.monotonic() + START_TIMEOUT_S
    socket, port = spec.get("ready_socket"), spec.get("ready_port")
    while time.monotonic() < deadline:
        code = process.poll()
        if code not in (None, 0):
            return failed(unit)
        alive = pid_of({**spec, "name": unit}) is not None
        ready = (not isinstance(socket, str) or os.path.exists(socket)) and (
            not isinstance(port, int) or listening(port)
        )
        if alive and ready:
            return 0
        time.sleep(0.05)
    return failed(unit)


def failed(unit: str) -> int:
    print(
        f"Job for {unit} failed because the control process exited with error code.\n"
        f'See "systemctl status {unit}" and "journalctl -xeu {unit}" for details.',
        file=sys.stderr,
    )
    return 1


def stop(unit: str, spec: dict[str, object]) -> int:
    if spec.get("file"):
        (STATE / f"{unit}.active").unlink(missing_ok=True)
        return 0
    pid = pid_of({**spec, "name": unit})
    if pid is None:
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while pid_of({**spec, "name": unit}) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_of({**spec, "name": unit}) is not None:
        os.kill(pid, signal.SIGKILL)
    return 0


def show(unit: str, spec: dict[str, object] | None, properties: list[str], value_only: bool) -> int:
    state: dict[str, str] = {"LoadState": "not-found", "ActiveState": "inactive", "ExecMainStatus": "0"}
    if spec is not None:
        state["LoadState"] = "loaded"
        state["ActiveState"] = "active" if active(unit, spec) else "inactive"
        state.update({k: str(v) for k, v in dict(spec.get("state") or {}).items()})  # type: ignore[call-overload]
    for name in properties or list(state):
        print(state.get(name, "") if value_only else f"{name}={state.get(name, '')}")
    return 0


def main(argv: list[str]) -> int:
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "calls").open("a") as calls:
        calls.write(" ".join(argv) + "\n")
    if Path("/run/box/fail/systemctl").exists():
        print("stub systemctl: failing on demand", file=sys.stderr)
        return 1
    quiet = "--quiet" in argv or "-q" in argv
    now = "--now" in argv
    value_only = "--value" in argv
    properties: list[str] = []
    words: list[str] = []
    for arg in argv:
        if arg.startswith("--property="):
            properties += arg.split("=", 1)[1].split(",")
        elif not arg.startswith("-"):
            words.append(arg)
    if not words:
        return 1
    verb, names = words[0], [canonical(n) for n in words[1:]]
    if verb == "daemon-reload":
        return 0
    code = 0
    for unit in names:
        spec = known(unit)
        if verb == "show":
            code |= show(unit, spec, properties, value_only)
        elif spec is None:
            if verb == "is-active":
                print("inactive") if not quiet else None
                code = 3
            elif verb in ("enable", "disable"):
                print(f"Failed to {verb} unit: Unit file {unit} does not exist.", file=sys.stderr)
                code = 1
            else:
                print(f"Failed to {verb} {unit}: Unit {unit} not found.", file=sys.stderr)
                code = 5
        elif verb == "is-active":
            up = active(unit, spec)
            print("active" if up else "inactive") if not quiet else None
            code = code or (0 if up else 3)
        elif verb == "enable":
            (STATE / f"{unit}.enabled").touch()
            code |= start(unit, spec) if now else 0
        elif verb == "disable":
            (STATE / f"{unit}.enabled").unlink(missing_ok=True)
            code |= stop(unit, spec) if now else 0
        elif verb == "start":
            code |= start(unit, spec)
        elif verb == "stop":
            code |= stop(unit, spec)
        elif verb == "restart":
            stop(unit, spec)
            code |= start(unit, spec)
        else:
            print(f"stub systemctl: {verb} is not implemented", file=sys.stderr)
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
