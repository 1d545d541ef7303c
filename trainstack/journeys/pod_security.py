"""The Pod Security Standards a namespace enforces, checked on a pod as the admission plugin checks it.

One function per check of kubernetes/pod-security-admission v0.36.2 (the library Kubernetes v1.36.2 vendors),
`policy/check_*.go`, at the newest version of each check up to 1.36; `baseline` runs the baseline checks,
`restricted` runs those plus the restricted ones (a restricted check that overrides a baseline one replaces it:
capabilities, seccomp). Each check visits containers, init containers and ephemeral containers
(`visitContainers`) and returns the reason the plugin gives, or nothing. Checks of fields no trainstack pod can
carry without a team writing them (Windows host process, AppArmor, SELinux, procMount, sysctls) are included, so a
pod spec that sets them is judged, not waved through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from trainstack.journeys.resources import Pod

SOURCE = "kubernetes/pod-security-admission v0.36.2 policy/check_*.go"

LEVELS = ("privileged", "baseline", "restricted")
# check_capabilities_baseline.go capabilities_allowed_1_0.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_restrictedVolumes.go: the volume sources restricted admits.
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
# check_sysctls.go (1.32 list): the safe sysctls baseline admits.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})

Check = Callable[[Pod], str | None]


def _containers(pod: Pod) -> Iterator[dict[str, Any]]:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        yield from pod.get(key, [])


def _context(container: dict[str, Any]) -> dict[str, Any]:
    return container.get("securityContext") or {}


def _pod_context(pod: Pod) -> dict[str, Any]:
    return pod.get("securityContext") or {}


def _names(containers: list[dict[str, Any]]) -> str:
    return ", ".join(f'"{c["name"]}"' for c in containers)


# ------------------------------------------------------------------------------------------------ baseline


def host_namespaces(pod: Pod) -> str | None:
    on = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if pod.get(field)]
    return f"host namespaces ({', '.join(on)})" if on else None


def privileged(pod: Pod) -> str | None:
    bad = [c for c in _containers(pod) if _context(c).get("privileged")]
    return f"privileged (containers {_names(bad)} must not set securityContext.privileged=true)" if bad else None


def capabilities_baseline(pod: Pod) -> str | None:
    added = sorted({cap for c in _containers(pod) for cap in _context(c).get("capabilities", {}).get("add", [])})
    bad = [cap for cap in added if cap not in BASELINE_CAPABILITIES]
    return f"non-default capabilities ({', '.join(bad)})" if bad else None


def host_path_volumes(pod: Pod) -> str | None:
    bad = [v["name"] for v in pod.get("volumes", []) if "hostPath" in v]
    return f"hostPath volumes ({', '.join(bad)})" if bad else None


def host_ports(pod: Pod) -> str | None:
    bad = [p["hostPort"] for c in _containers(pod) for p in c.get("ports", []) if p.get("hostPort")]
    return f"hostPort ({', '.join(map(str, bad))})" if bad else None


def host_probes(pod: Pod) -> str | None:
    """check_hostProbesAndhostLifecycle.go (1.34): probes and lifecycle handlers may not name a host."""
    handlers = [c.get(key, {}) for c in _containers(pod) for key in ("livenessProbe", "readinessProbe", "startupProbe")]
    handlers += [h for c in _containers(pod) for h in (c.get("lifecycle") or {}).values()]
    bad = [h for h in handlers if any((h.get(kind) or {}).get("host") for kind in ("httpGet", "tcpSocket"))]
    return "probe or lifecycle host" if bad else None


def seccomp_baseline(pod: Pod) -> str | None:
    contexts = [_pod_context(pod), *(_context(c) for c in _containers(pod))]
    bad = any((ctx.get("seccompProfile") or {}).get("type") == "Unconfined" for ctx in contexts)
    return "seccompProfile (type Unconfined)" if bad else None


def app_armor(pod: Pod) -> str | None:
    contexts = [_pod_context(pod), *(_context(c) for c in _containers(pod))]
    bad = any((ctx.get("appArmorProfile") or {}).get("type") == "Unconfined" for ctx in contexts)
    return "forbidden AppArmor profile (Unconfined)" if bad else None


def se_linux(pod: Pod) -> str | None:
    for ctx in [_pod_context(pod), *(_context(c) for c in _containers(pod))]:
        options = ctx.get("seLinuxOptions") or {}
        if options.get("type", "") not in SELINUX_TYPES or options.get("user") or options.get("role"):
            return "seLinuxOptions"
    return None


def proc_mount(pod: Pod) -> str | None:
    bad = [c for c in _containers(pod) if _context(c).get("procMount", "Default") != "Default"]
    return f"procMount (containers {_names(bad)})" if bad else None


def sysctls(pod: Pod) -> str | None:
    bad = [s["name"] for s in _pod_context(pod).get("sysctls", []) if s["name"] not in SAFE_SYSCTLS]
    return f"forbidden sysctls ({', '.join(bad)})" if bad else None


def windows_host_process(pod: Pod) -> str | None:
    contexts = [_pod_context(pod), *(_context(c) for c in _containers(pod))]
    bad = any((ctx.get("windowsOptions") or {}).get("hostProcess") for ctx in contexts)
    return "hostProcess" if bad else None


# ---------------------------------------------------------------------------------------------- restricted


def restricted_volumes(pod: Pod) -> str | None:
    bad = [v["name"] for v in pod.get("volumes", []) if not set(v) - {"name"} <= RESTRICTED_VOLUMES]
    return f"restricted volume types ({', '.join(bad)})" if bad else None


def allow_privilege_escalation(pod: Pod) -> str | None:
    bad = [c for c in _containers(pod) if _context(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return f"allowPrivilegeEscalation != false (containers {_names(bad)} must set it false)"


def run_as_non_root(pod: Pod) -> str | None:
    pod_value = _pod_context(pod).get("runAsNonRoot")
    if pod_value is False:
        return "runAsNonRoot != true (pod sets it false)"
    explicit = [c for c in _containers(pod) if _context(c).get("runAsNonRoot") is False]
    implicit = [c for c in _containers(pod) if _context(c).get("runAsNonRoot") is None and pod_value is not True]
    if explicit:
        return f"runAsNonRoot != true (containers {_names(explicit)} set it false)"
    if implicit:
        return f"runAsNonRoot != true (pod or containers {_names(implicit)} must set it true)"
    return None


def run_as_user(pod: Pod) -> str | None:
    if _pod_context(pod).get("runAsUser") == 0:
        return "runAsUser=0 (pod)"
    bad = [c for c in _containers(pod) if _context(c).get("runAsUser") == 0]
    return f"runAsUser=0 (containers {_names(bad)})" if bad else None


def seccomp_restricted(pod: Pod) -> str | None:
    valid = ("RuntimeDefault", "Localhost")
    pod_type = (_pod_context(pod).get("seccompProfile") or {}).get("type")
    if pod_type is not None and pod_type not in valid:
        return f"seccompProfile (pod must not set type {pod_type})"
    explicit: list[dict[str, Any]] = []
    implicit: list[dict[str, Any]] = []
    for container in _containers(pod):
        container_type = (_context(container).get("seccompProfile") or {}).get("type")
        if container_type is not None and container_type not in valid:
            explicit.append(container)
        elif container_type is None and pod_type is None:
            implicit.append(container)
    if explicit:
        return f"seccompProfile (containers {_names(explicit)} must not set type Unconfined)"
    if implicit:
        return f"seccompProfile (pod or containers {_names(implicit)} must set type RuntimeDefault or Localhost)"
    return None


def capabilities_restricted(pod: Pod) -> str | None:
    not_dropped = [c for c in _containers(pod) if "ALL" not in _context(c).get("capabilities", {}).get("drop", [])]
    added = sorted(
        {
            cap
            for c in _containers(pod)
            for cap in _context(c).get("capabilities", {}).get("add", [])
            if cap != "NET_BIND_SERVICE"
        }
    )
    problems: list[str] = []
    if not_dropped:
        problems.append(f'containers {_names(not_dropped)} must set securityContext.capabilities.drop=["ALL"]')
    if added:
        problems.append(f"must not add {', '.join(added)}")
    return f"unrestricted capabilities ({'; '.join(problems)})" if problems else None


BASELINE: dict[str, Check] = {
    "hostNamespaces": host_namespaces,
    "privileged": privileged,
    "capabilities_baseline": capabilities_baseline,
    "hostPathVolumes": host_path_volumes,
    "hostPorts": host_ports,
    "hostProbesAndhostLifecycle": host_probes,
    "seccompProfile_baseline": seccomp_baseline,
    "appArmorProfile": app_armor,
    "seLinuxOptions": se_linux,
    "procMount": proc_mount,
    "sysctls": sysctls,
    "windowsHostProcess": windows_host_process,
}
RESTRICTED: dict[str, Check] = {
    "restrictedVolumes": restricted_volumes,
    "allowPrivilegeEscalation": allow_privilege_escalation,
    "runAsNonRoot": run_as_non_root,
    "runAsUser": run_as_user,
    "seccompProfile_restricted": seccomp_restricted,
    "capabilities_restricted": capabilities_restricted,
}
# A restricted check that replaces a baseline one (OverrideCheckIDs).
OVERRIDES = {"capabilities_restricted": "capabilities_baseline", "seccompProfile_restricted": "seccompProfile_baseline"}


def checks(level: str) -> dict[str, Check]:
    """The checks a namespace enforcing `level` runs."""
    if level == "privileged":
        return {}
    if level == "baseline":
        return dict(BASELINE)
    replaced = set(OVERRIDES.values())
    return {**{k: v for k, v in BASELINE.items() if k not in replaced}, **RESTRICTED}


def violations(pod: Pod, level: str) -> list[str]:
    """Every reason the `level` refuses the pod, in check order; empty when it admits it."""
    return [reason for check in checks(level).values() if (reason := check(pod)) is not None]
