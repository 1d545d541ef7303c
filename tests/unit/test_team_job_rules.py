"""The team-job journey's evaluators against upstream's behaviour, on cases taken from upstream's own tests at the
pinned versions (each test names its file), and the pieces the journey trusts: the docs' TrainJobs, the exit-code
entrypoint, the schema's refusal of a restricted team beside the MPI runtime."""

from __future__ import annotations

import re
import sys
import types
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.k8s.tenancy import device_policy_spec, registry_policy_spec
from components.k8s.training_runtimes import TORCHRUN_COMMAND, TORCHRUN_ENTRYPOINT, jobset_failure_policy
from stacks.load import ConfigError
from stacks.schema import TrainerRuntimesSpec
from tests.conftest import ROOT, edited_config, stack_config
from trainstack.engine import UNKNOWN
from trainstack.journeys import examples, kueue, pod_security, quantity
from trainstack.journeys import network_policy as netpol
from trainstack.journeys import resources as res
from trainstack.journeys.team_job import (
    _hosts,
    _identity,
    _known,
    jobset_action,
    pod_failure_rule,
    rank_exit_code,
    registry_refusal,
    submission,
    writable,
)

# ---------------------------------------------------------------------------------------------- quantities


@pytest.mark.parametrize(
    ("text", "value"),
    [("100m", Fraction(1, 10)), ("1", Fraction(1)), ("2Gi", Fraction(2 * 2**30)), ("1k", Fraction(1000)),
     ("1e3", Fraction(1000)), (".5", Fraction(1, 2)), (53.0, Fraction(53)), ("164096Mi", Fraction(164096 * 2**20))],
)  # fmt: skip
def test_quantities_parse_as_apimachinery_reads_them(text: Any, value: Fraction) -> None:
    assert quantity.parse(text) == value


def test_a_bad_quantity_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity.parse("2 GiB")


# ---------------------------------------------------------------------------------------------- LimitRange

LIMIT_RANGE = {
    "spec": {
        "limits": [
            {"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "256Mi"}, "default": {"cpu": "1"}},
            {"type": "Pod", "max": {"cpu": "64"}},
        ]
    }
}


def test_limitranger_fills_only_what_a_container_and_an_init_container_leave_out() -> None:
    """kubernetes plugin/pkg/admission/limitranger/admission_test.go TestMergePodResourceRequirements: an empty
    container gets the defaults; a stated value is kept; init containers are defaulted the same way."""
    pod = {
        "initContainers": [{"name": "init"}],
        "containers": [{"name": "a"}, {"name": "b", "resources": {"requests": {"cpu": "2"}}}],
    }
    filled, defaulted = res.apply_limit_range(pod, [LIMIT_RANGE])
    assert filled["initContainers"][0]["resources"] == {
        "limits": {"cpu": "1"},
        "requests": {"cpu": "100m", "memory": "256Mi"},
    }
    assert filled["containers"][1]["resources"]["requests"] == {"cpu": "2", "memory": "256Mi"}
    assert res.Defaulted("b", "requests", "cpu") not in defaulted
    assert pod["containers"][0] == {"name": "a"}  # the input is left alone


def test_kueue_uses_a_limit_for_a_missing_request_after_the_limitrange() -> None:
    """kueue v0.14.8 pkg/workload/resources_test.go TestAdjustResources: limits stand in for missing requests."""
    pod = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    view = res.kueue_view(pod, [LIMIT_RANGE])
    assert view["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi", "nvidia.com/gpu": "8"}


def test_a_pod_totals_its_containers_or_a_larger_init_container() -> None:
    """component-helpers resource/helpers_test.go TestPodResourceRequests: max(sum of containers, init)."""
    pod = {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "1"}}}],
    }  # fmt: skip
    assert res.pod_total(pod) == {"cpu": Fraction(3), "memory": Fraction(2**30)}
    pod["initContainers"][0]["restartPolicy"] = "Always"  # a sidecar runs beside the containers
    assert res.pod_total(pod)["cpu"] == Fraction(5)


def test_memory_emptydir_is_the_smallest_of_node_pod_limit_and_size_limit() -> None:
    pod = {"containers": [{"name": "a", "resources": {"limits": {"memory": "8Gi"}}}],
           "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}  # fmt: skip
    assert res.memory_volume_bytes(pod, "dshm", Fraction(64 * 2**30)) == 8 * 2**30
    pod["volumes"][0]["emptyDir"]["sizeLimit"] = "2Gi"
    assert res.memory_volume_bytes(pod, "dshm", Fraction(64 * 2**30)) == 2 * 2**30
    del pod["containers"][0]["resources"]  # no pod limit: node allocatable
    del pod["volumes"][0]["emptyDir"]["sizeLimit"]
    assert res.memory_volume_bytes(pod, "dshm", Fraction(64 * 2**30)) == 64 * 2**30


# ------------------------------------------------------------------------------------------- ResourceQuota


def test_a_quota_on_limits_needs_every_container_including_init_to_state_them() -> None:
    """kubernetes pkg/quota/v1/evaluator/core/pods_test.go TestPodEvaluatorConstraints (init container case)."""
    hard = {"limits.cpu": "10", "requests.memory": "10Gi"}
    stated = {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}
    pod = {"initContainers": [{"name": "i"}], "containers": [{"name": "a", "resources": stated}]}
    assert res.quota_missing(pod, hard) == ["limits.cpu", "requests.memory"]
    pod["initContainers"][0]["resources"] = {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}
    assert res.quota_missing(pod, hard) == []


def test_quota_usage_counts_pods_requests_limits_and_extended_resources() -> None:
    pod = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "8"},
                                                       "limits": {"cpu": "2", "nvidia.com/gpu": "8"}}}]}  # fmt: skip
    assert res.quota_over([(2, pod)], {"pods": "2", "requests.nvidia.com/gpu": "16", "limits.cpu": "4"}) == {}
    over = res.quota_over([(3, pod)], {"pods": "2", "requests.nvidia.com/gpu": "16"})
    assert set(over) == {"pods", "requests.nvidia.com/gpu"}


# ------------------------------------------------------------------------------------------------- Kueue


def test_hugepages_count_in_both_forms_and_efa_only_as_a_request() -> None:
    """pods.go podComputeUsageHelper: hugepages-* by name and as requests.*; extended resources as requests.* only."""
    pod = {"containers": [{"resources": {"requests": {"hugepages-2Mi": "1Gi", "vpc.amazonaws.com/efa": "32"}}}]}
    usage = res.quota_usage(pod)
    assert usage["hugepages-2Mi"] == usage["requests.hugepages-2Mi"] == Fraction(2**30)
    assert usage["requests.vpc.amazonaws.com/efa"] == 32 and "vpc.amazonaws.com/efa" not in usage
    assert res.quota_over([(2, pod)], {"requests.vpc.amazonaws.com/efa": "32"}) == {
        "requests.vpc.amazonaws.com/efa": (Fraction(64), Fraction(32))
    }


@pytest.mark.parametrize(
    ("operator", "values", "no_class", "system", "other"),
    [
        ("In", ["system-node-critical"], False, True, False),
        ("NotIn", ["system-node-critical"], True, False, True),  # no class: no label, which NotIn matches
        ("Exists", [], False, True, True),
        ("DoesNotExist", [], True, False, False),
    ],
)
def test_a_priority_class_scope_matches_as_a_label_selector(
    operator: str, values: list[str], no_class: bool, system: bool, other: bool
) -> None:
    """pods.go podMatchesScopeFunc / podMatchesSelector: the class is the value of a PriorityClass label."""
    spec = {
        "hard": {"pods": "0"},
        "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": operator, "values": values}]},
    }
    pod: dict[str, Any] = {"containers": [{}]}
    assert res.quota_applies(pod, spec) is no_class
    assert res.quota_applies({**pod, "priorityClassName": "system-node-critical"}, spec) is system
    assert res.quota_applies({**pod, "priorityClassName": "team-high"}, spec) is other


def test_scopes_the_model_does_not_know_are_refused_and_an_unscoped_quota_counts_everything() -> None:
    assert res.quota_applies({"containers": [{}]}, {"hard": {"pods": "1"}})
    assert res.quota_applies({"containers": [{}]}, {"scopes": ["BestEffort"]})
    assert not res.quota_applies({"containers": [{}], "activeDeadlineSeconds": 60}, {"scopes": ["NotTerminating"]})
    with pytest.raises(ValueError, match="CrossNamespacePodAffinity"):
        res.quota_applies({"containers": [{}]}, {"scopes": ["CrossNamespacePodAffinity"]})


def test_kueue_drops_excluded_prefixes_and_names_what_no_resource_group_covers() -> None:
    """kueue v0.14.8 pkg/workload/workload_test.go (excludeResourcePrefixes) and flavorassigner_test.go
    ("resource ... unavailable in ClusterQueue")."""
    pod = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "1Gi",
                                                                  "example.com/widget": "1"}}}]}  # fmt: skip
    queue = {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": []}]}
    assert kueue.uncovered(kueue.pod_requests(pod, [], ()), queue) == ["ephemeral-storage", "example.com/widget"]
    assert kueue.uncovered(kueue.pod_requests(pod, [], ("ephemeral-storage", "example.com/")), queue) == []


def test_kueue_reads_the_exclusion_from_its_controller_configuration() -> None:
    assert kueue.excluded_prefixes("resources:\n  excludeResourcePrefixes: [ephemeral-storage]\n") == (
        "ephemeral-storage",
    )
    assert kueue.excluded_prefixes("apiVersion: config.kueue.x-k8s.io/v1beta1\n") == ()


def test_a_cluster_queue_without_a_namespace_selector_admits_no_namespace() -> None:
    assert not kueue.selects_namespace({}, {"kubernetes.io/metadata.name": "a"})
    assert kueue.selects_namespace({"namespaceSelector": {}}, {"kubernetes.io/metadata.name": "a"})


# ------------------------------------------------------------------------------------------- pod security

ROOTLESS = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_OK = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
ADD_BIND = {**CONTAINER_OK, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}
ADD_CHOWN = {**CONTAINER_OK, "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}
UNCONFINED = {"runAsNonRoot": True, "seccompProfile": {"type": "Unconfined"}}
HOST_PATH = [{"name": "v", "hostPath": {"path": "/"}}]
CLAIM = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]
FROM_Y_A = {"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {"matchLabels": {"pod": "a"}}}
FROM_X_A = {"namespaceSelector": {"matchLabels": {"ns": "x"}}, "podSelector": {"matchLabels": {"pod": "a"}}}


def pod(container_context: dict[str, Any] | None = None, pod_context: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "securityContext": pod_context or {},
        "containers": [{"name": "a", "securityContext": container_context or {}}],
    }


@pytest.mark.parametrize(
    ("spec", "level", "reason"),
    [
        # check_runAsNonRoot_test.go: pod true and container unset passes; container false fails; nothing fails.
        (pod(CONTAINER_OK, ROOTLESS), "restricted", None),
        (pod({**CONTAINER_OK, "runAsNonRoot": False}, ROOTLESS), "restricted", "runAsNonRoot != true"),
        (pod(CONTAINER_OK, {"seccompProfile": {"type": "RuntimeDefault"}}), "restricted", "runAsNonRoot != true"),
        # check_runAsUser_test.go: runAsUser 0 fails even with runAsNonRoot.
        (pod(CONTAINER_OK, {**ROOTLESS, "runAsUser": 0}), "restricted", "runAsUser=0"),
        # check_allowPrivilegeEscalation_test.go: unset fails restricted.
        (pod({"capabilities": {"drop": ["ALL"]}}, ROOTLESS), "restricted", "allowPrivilegeEscalation"),
        # check_capabilities_restricted_test.go: drop ALL and add NET_BIND_SERVICE passes; add CHOWN fails.
        (pod(ADD_BIND, ROOTLESS), "restricted", None),
        (pod(ADD_CHOWN, ROOTLESS), "restricted", "unrestricted capabilities"),
        # check_capabilities_baseline_test.go: CHOWN is in the default set, SYS_ADMIN is not.
        (pod({"capabilities": {"add": ["CHOWN"]}}), "baseline", None),
        (pod({"capabilities": {"add": ["SYS_ADMIN"]}}), "baseline", "non-default capabilities"),
        # check_seccompProfile_restricted_test.go: Unconfined fails; baseline too.
        (pod(CONTAINER_OK, UNCONFINED), "restricted", "seccompProfile"),
        (pod({}, {"seccompProfile": {"type": "Unconfined"}}), "baseline", "seccompProfile"),
        # check_privileged_test.go and check_hostNamespaces_test.go.
        (pod({"privileged": True}), "baseline", "privileged"),
        ({**pod(), "hostNetwork": True}, "baseline", "host namespaces"),
        ({**pod(), "hostNetwork": True}, "privileged", None),
        # check_restrictedVolumes_test.go: hostPath fails, csi and persistentVolumeClaim pass.
        ({**pod(CONTAINER_OK, ROOTLESS), "volumes": HOST_PATH}, "restricted", "restricted volume types"),
        ({**pod(CONTAINER_OK, ROOTLESS), "volumes": CLAIM}, "restricted", None),
    ],
)  # fmt: skip
def test_pod_security_agrees_with_upstream_cases(spec: dict[str, Any], level: str, reason: str | None) -> None:
    found = pod_security.violations(spec, level)
    if reason is None:
        assert found == []
    else:
        assert any(reason in r for r in found), found


def test_init_containers_are_checked_too() -> None:
    """visitContainers visits init and ephemeral containers."""
    spec = pod(CONTAINER_OK, ROOTLESS)
    spec["initContainers"] = [{"name": "i", "securityContext": {"runAsNonRoot": False}}]
    assert any('"i"' in r for r in pod_security.violations(spec, "restricted"))


def two(a: dict[str, Any], b: dict[str, Any], pod_context: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod of containers "a" and "b" (b an init container) with these security contexts."""
    return {
        "securityContext": pod_context or {},
        "containers": [{"name": "a", "securityContext": a}],
        "initContainers": [{"name": "b", "securityContext": b}],
    }


def probe(handler: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "a", "readinessProbe": handler}]}


@pytest.mark.parametrize(
    ("check", "spec", "reason"),
    [(pod_security.host_namespaces, {"hostPID": True, "hostIPC": True}, "host namespaces (hostPID=true, hostIPC=true)"),
     (pod_security.host_namespaces, {"hostNetwork": False}, None),
     (pod_security.privileged, two({"privileged": False}, {"privileged": True}),
      'privileged (containers "b" must not set securityContext.privileged=true)'),
     (pod_security.privileged, two({}, {"privileged": False}), None),
     (pod_security.capabilities_baseline, two({"capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
                                              {"capabilities": {"add": ["NET_RAW", "SYS_ADMIN"]}}),
      "non-default capabilities (NET_RAW, SYS_ADMIN)"),
     (pod_security.capabilities_baseline, two({"capabilities": {"drop": ["ALL"]}}, {}), None),
     (pod_security.host_path_volumes, {"volumes": [{"name": "e", "emptyDir": {}}, {"name": "h", "hostPath": {}}]},
      "hostPath volumes (h)"),
     (pod_security.host_path_volumes, {"volumes": [{"name": "e", "emptyDir": {}}]}, None),
     (pod_security.host_ports, {"initContainers": [{"name": "i", "ports": [{"containerPort": 80, "hostPort": 0},
                                                                            {"hostPort": 8080}]}]}, "hostPort (8080)"),
     (pod_security.host_ports, {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}, None),
     (pod_security.host_probes, probe({"httpGet": {"host": "10.0.0.1", "port": 80}}), "probe or lifecycle host"),
     (pod_security.host_probes, probe({"tcpSocket": {"host": "10.0.0.1", "port": 80}}), "probe or lifecycle host"),
     (pod_security.host_probes, {"containers": [{"name": "a", "lifecycle": {"preStop": {"httpGet": {"host": "x"}}}}]},
      "probe or lifecycle host"),
     (pod_security.host_probes, probe({"httpGet": {"port": 80}, "exec": {"command": ["true"]}}), None),
     (pod_security.seccomp_baseline, two({}, {"seccompProfile": {"type": "Unconfined"}}),
      "seccompProfile (type Unconfined)"),
     (pod_security.seccomp_baseline, two({"seccompProfile": {"type": "Localhost"}}, {}), None),
     (pod_security.app_armor, two({}, {}, {"appArmorProfile": {"type": "Unconfined"}}),
      "forbidden AppArmor profile (Unconfined)"),
     (pod_security.app_armor, two({}, {"appArmorProfile": {"type": "Unconfined"}}),
      "forbidden AppArmor profile (Unconfined)"),
     (pod_security.app_armor, two({"appArmorProfile": {"type": "RuntimeDefault"}}, {}), None),
     (pod_security.se_linux, two({}, {}, {"seLinuxOptions": {"type": "spc_t"}}), "seLinuxOptions"),
     (pod_security.se_linux, two({}, {"seLinuxOptions": {"user": "system_u"}}), "seLinuxOptions"),
     (pod_security.se_linux, two({"seLinuxOptions": {"role": "sysadm_r"}}, {}), "seLinuxOptions"),
     (pod_security.se_linux, two({"seLinuxOptions": {"type": "container_init_t", "level": "s0:c1"}}, {}), None),
     (pod_security.proc_mount, two({"procMount": "Default"}, {"procMount": "Unmasked"}), 'procMount (containers "b")'),
     (pod_security.proc_mount, two({"procMount": "Default"}, {}), None),
     (pod_security.sysctls, {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"},
                                                             {"name": "kernel.msgmax", "value": "1"}]}},
      "forbidden sysctls (kernel.msgmax)"),
     (pod_security.sysctls, {"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}}, None),
     (pod_security.windows_host_process, two({}, {"windowsOptions": {"hostProcess": True}}), "hostProcess"),
     (pod_security.windows_host_process, two({"windowsOptions": {"hostProcess": False}}, {}), None),
     (pod_security.restricted_volumes, {"volumes": [{"name": "c", "configMap": {}}, {"name": "g", "gitRepo": {}},
                                                    {"name": "n"}]}, "restricted volume types (g)"),
     (pod_security.restricted_volumes, {"volumes": [{"name": "i", "image": {"reference": "x"}}]}, None),
     (pod_security.allow_privilege_escalation, two({"allowPrivilegeEscalation": False},
                                                   {"allowPrivilegeEscalation": True}),
      'allowPrivilegeEscalation != false (containers "b" must set it false)'),
     (pod_security.allow_privilege_escalation, two({"allowPrivilegeEscalation": False},
                                                   {"allowPrivilegeEscalation": False}), None),
     (pod_security.run_as_non_root, two({"runAsNonRoot": True}, {"runAsNonRoot": True}, {"runAsNonRoot": False}),
      "runAsNonRoot != true (pod sets it false)"),
     (pod_security.run_as_non_root, two({"runAsNonRoot": False}, {}),
      'runAsNonRoot != true (containers "a" set it false)'),  # explicit before implicit
     (pod_security.run_as_non_root, two({"runAsNonRoot": True}, {}),
      'runAsNonRoot != true (pod or containers "b" must set it true)'),
     (pod_security.run_as_non_root, two({"runAsNonRoot": True}, {"runAsNonRoot": True}), None),
     (pod_security.run_as_non_root, two({}, {}, {"runAsNonRoot": True}), None),
     (pod_security.run_as_user, two({"runAsUser": 1000}, {}, {"runAsUser": 0}), "runAsUser=0 (pod)"),
     (pod_security.run_as_user, two({"runAsUser": 1000}, {"runAsUser": 0}, {"runAsUser": 1000}),
      'runAsUser=0 (containers "b")'),
     (pod_security.run_as_user, two({"runAsUser": 1000}, {}), None),
     (pod_security.seccomp_restricted, two({}, {}, {"seccompProfile": {"type": "Unconfined"}}),
      "seccompProfile (pod must not set type Unconfined)"),
     (pod_security.seccomp_restricted, two({"seccompProfile": {"type": "Unconfined"}}, {}),
      'seccompProfile (containers "a" must not set type Unconfined)'),  # explicit before implicit
     (pod_security.seccomp_restricted, two({"seccompProfile": {"type": "Localhost"}}, {}),
      'seccompProfile (pod or containers "b" must set type RuntimeDefault or Localhost)'),
     (pod_security.seccomp_restricted, two({"seccompProfile": {"type": "Localhost"}},
                                           {"seccompProfile": {"type": "RuntimeDefault"}}), None),
     (pod_security.seccomp_restricted, two({}, {}, {"seccompProfile": {"type": "Localhost"}}), None),
     (pod_security.capabilities_restricted, two({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
                                                {"capabilities": {"drop": ["NET_RAW"], "add": ["CHOWN"]}}),
      'unrestricted capabilities (containers "b" must set securityContext.capabilities.drop=["ALL"]; '
      "must not add CHOWN)"),
     (pod_security.capabilities_restricted, two({"capabilities": {"drop": ["ALL"]}},
                                                {"capabilities": {"drop": ["ALL"], "add": ["SYS_TIME"]}}),
      "unrestricted capabilities (must not add SYS_TIME)"),
     (pod_security.capabilities_restricted,
      two({"capabilities": {"drop": ["ALL"]}}, {"capabilities": {"drop": ["ALL"]}}), None)],
)  # fmt: skip
def test_each_pod_security_check_on_its_own(
    check: pod_security.Check, spec: dict[str, Any], reason: str | None
) -> None:
    """One branch of one check of policy/check_*.go at a time: the reason names the offending containers, init
    containers included, and a pod-level setting where the check reads one."""
    assert check(spec) == reason


def test_each_level_runs_its_checks_and_restricted_replaces_two_baseline_ones() -> None:
    """OverrideCheckIDs: capabilities_restricted and seccompProfile_restricted replace their baseline checks."""
    assert pod_security.checks("privileged") == {}
    assert list(pod_security.checks("baseline")) == list(pod_security.BASELINE)
    restricted = pod_security.checks("restricted")
    assert set(restricted) == (set(pod_security.BASELINE) | set(pod_security.RESTRICTED)) - {
        "capabilities_baseline",
        "seccompProfile_baseline",
    }
    # the violations come in check order, one per failing check
    spec = {**two({"privileged": True}, {}), "hostNetwork": True}
    assert pod_security.violations(spec, "baseline") == [
        "host namespaces (hostNetwork=true)",
        'privileged (containers "a" must not set securityContext.privileged=true)',
    ]
    assert pod_security.violations(spec, "privileged") == []


# ------------------------------------------------------------------------------------------ NetworkPolicy


def ns_pod(namespace: str, name: str) -> netpol.Endpoint:
    return netpol.Endpoint(namespace, {"ns": namespace, "kubernetes.io/metadata.name": namespace}, {"pod": name})


XA, YA, YB = ns_pod("x", "a"), ns_pod("y", "a"), ns_pod("y", "b")


def test_denying_egress_on_the_client_side_even_if_the_server_allows_it() -> None:
    """test/e2e/network/netpol/network_policy.go: "should support denying of egress traffic on the client side
    (even if the server explicitly allows this traffic)"."""
    policies = [
        netpol.Policy("x", "allow-to-ns-y-pod-a", {
            "podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
            "egress": [{"to": [FROM_Y_A]},
                       {"ports": [{"protocol": "UDP", "port": 53}]}]}),
        netpol.Policy("y", "allow-from-xa", {
            "podSelector": {}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [FROM_X_A]}]}),
    ]  # fmt: skip
    assert netpol.connection(policies, XA, YA, "TCP", (80, 80)).allowed
    assert not netpol.connection(policies, XA, YB, "TCP", (80, 80)).allowed
    assert not netpol.connection(policies, YB, YA, "TCP", (80, 80)).allowed  # y's ingress admits only x/a


def test_egress_on_one_port_denies_the_next() -> None:
    """network_policy.go "should enforce egress policy allowing traffic to a server in a different namespace
    based on PodSelector and NamespaceSelector": port 80 allowed, "validating that port 81 doesn't work"."""
    policies = [netpol.Policy("x", "p", {"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
                                         "egress": [{"ports": [{"port": 80}]}]})]  # fmt: skip
    assert netpol.connection(policies, XA, YA, "TCP", (80, 80)).allowed
    assert not netpol.connection(policies, XA, YA, "TCP", (81, 81)).allowed
    assert not netpol.connection(policies, XA, YA, "UDP", (80, 80)).allowed  # protocol defaults to TCP


def test_policies_add_up_and_end_port_makes_a_range() -> None:
    """network_policy.go "should enforce multiple egress policies with egress allow-all policy taking precedence"
    and "should support allow-all policy"; endPort (NetworkPolicyPort.endPort)."""
    low = netpol.Policy(
        "x",
        "low",
        {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 1000, "endPort": 1999}]}]},
    )
    high = netpol.Policy(
        "x",
        "high",
        {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 2000, "endPort": 3000}]}]},
    )
    assert not netpol.connection([low], XA, YA, "TCP", (1000, 3000)).allowed
    assert netpol.connection([low, high], XA, YA, "TCP", (1000, 3000)).allowed
    allow_all = netpol.Policy("x", "all", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})
    assert netpol.connection([low, allow_all], XA, YA, "TCP", (1, 65535)).allowed


def test_policy_types_default_and_an_unselected_pod_is_not_isolated() -> None:
    """NetworkPolicySpec.policyTypes: left out, Ingress always and Egress only with egress rules."""
    ingress_only = netpol.Policy("y", "deny", {"podSelector": {"matchLabels": {"pod": "a"}}})
    assert not netpol.connection([ingress_only], XA, YA, "TCP", (80, 80)).allowed
    assert netpol.connection([ingress_only], YA, XA, "TCP", (80, 80)).allowed  # y/a's egress is not isolated
    assert netpol.connection([ingress_only], XA, YB, "TCP", (80, 80)).allowed  # y/b is not selected


def test_ip_blocks_match_external_addresses_outside_their_exceptions() -> None:
    https = netpol.Policy("x", "https", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}], "ports": [{"port": 443}]}]})  # fmt: skip
    assert netpol.connection([https], XA, netpol.Endpoint(address="52.216.0.10"), "TCP", (443, 443)).allowed
    assert not netpol.connection([https], XA, netpol.Endpoint(address="10.1.2.3"), "TCP", (443, 443)).allowed
    assert not netpol.connection([https], XA, YA, "TCP", (443, 443)).allowed  # a pod is not an ipBlock address


@pytest.mark.parametrize(
    ("expression", "labels", "selected"),
    [({"key": "pod", "operator": "In", "values": ["a", "b"]}, {"pod": "b"}, True),
     ({"key": "pod", "operator": "In", "values": ["a"]}, {"pod": "b"}, False),
     ({"key": "pod", "operator": "In", "values": ["a"]}, {}, False),
     ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {"pod": "b"}, True),
     ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {}, True),
     ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {"pod": "a"}, False),
     ({"key": "pod", "operator": "Exists"}, {"pod": ""}, True),
     ({"key": "pod", "operator": "Exists"}, {"role": "x"}, False),
     ({"key": "pod", "operator": "DoesNotExist"}, {"role": "x"}, True),
     ({"key": "pod", "operator": "DoesNotExist"}, {"pod": "a"}, False)],
)  # fmt: skip
def test_each_match_expression_operator_selects_as_label_selectors_define(
    expression: dict[str, Any], labels: dict[str, str], selected: bool
) -> None:
    """apimachinery LabelSelectorRequirement: In/NotIn against `values`, Exists/DoesNotExist on the key alone;
    NotIn selects a pod without the key."""
    assert netpol.selects({"matchExpressions": [expression]}, labels) is selected
    # one failing requirement among passing ones is enough to refuse (requirements are ANDed)
    both = {"matchExpressions": [{"key": "team", "operator": "Exists"}, expression]}
    assert netpol.selects(both, {**labels, "team": "t"}) is selected


def test_every_match_label_must_match_and_an_empty_selector_selects_all() -> None:
    assert netpol.selects({"matchLabels": {"pod": "a", "team": "t"}}, {"pod": "a", "team": "t", "x": "1"})
    assert not netpol.selects({"matchLabels": {"pod": "a", "team": "t"}}, {"pod": "a", "team": "u"})
    assert not netpol.selects({"matchLabels": {"pod": "a", "team": "t"}}, {"pod": "b", "team": "t"})
    assert netpol.selects({}, {}) and netpol.selects(None, {"pod": "a"})
    assert netpol.selects({"matchLabels": {}, "matchExpressions": []}, {"pod": "a"})


def egress_to(*peers: dict[str, Any], ports: list[dict[str, Any]] | None = None) -> netpol.Policy:
    rule: dict[str, Any] = {"to": list(peers)}
    if ports is not None:
        rule["ports"] = ports
    return netpol.Policy("x", "out", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [rule]})


def test_a_pod_selector_peer_alone_means_the_policys_own_namespace() -> None:
    """NetworkPolicyPeer.podSelector without namespaceSelector: pods in the policy's namespace."""
    same = [egress_to({"podSelector": {"matchLabels": {"pod": "a"}}})]
    assert netpol.connection(same, XA, ns_pod("x", "a"), "TCP", (80, 80)).allowed
    assert not netpol.connection(same, XA, YA, "TCP", (80, 80)).allowed


def test_any_peer_of_a_rule_may_match() -> None:
    rule = [egress_to({"podSelector": {"matchLabels": {"pod": "z"}}}, FROM_Y_A)]
    assert netpol.connection(rule, XA, YA, "TCP", (80, 80)).allowed
    assert not netpol.connection(rule, XA, YB, "TCP", (80, 80)).allowed


def test_a_namespace_selector_peer_never_matches_an_address_outside_the_cluster() -> None:
    """A peer with namespaceSelector {} selects every pod of every namespace, and no ipBlock address."""
    everywhere = [egress_to({"namespaceSelector": {}})]
    assert netpol.connection(everywhere, XA, YB, "TCP", (443, 443)).allowed
    assert not netpol.connection(everywhere, XA, netpol.Endpoint(address="52.216.0.10"), "TCP", (443, 443)).allowed


def test_an_ip_block_excludes_addresses_outside_its_cidr_and_in_any_exception() -> None:
    """IPBlock: `cidr` (host bits allowed: the API reference's own example is "192.168.1.1/24") minus every
    `except` range (k8s.io/api networking/v1 types.go IPBlock)."""
    block = [egress_to({"ipBlock": {"cidr": "52.216.7.9/15", "except": ["52.216.1.0/24", "52.217.0.1/24"]}})]
    allowed = [a for a in ("52.216.0.10", "52.217.1.5", "8.8.8.8", "52.216.1.2", "52.217.0.200")
               if netpol.connection(block, XA, netpol.Endpoint(address=a), "TCP", (443, 443)).allowed]  # fmt: skip
    assert allowed == ["52.216.0.10", "52.217.1.5"]


def test_an_ip_block_admits_a_source_outside_the_cluster() -> None:
    """A source outside the cluster has no egress side: only the destination's ingress decides."""
    ingress = netpol.Policy("y", "in", {"podSelector": {}, "policyTypes": ["Ingress"],
                                        "ingress": [{"from": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]}]})  # fmt: skip
    verdict = netpol.connection([ingress], netpol.Endpoint(address="203.0.113.9"), YA, "TCP", (22, 22))
    assert verdict == netpol.Verdict(True, ["outside the cluster"], ["in"])
    assert not netpol.connection([ingress], netpol.Endpoint(address="198.51.100.9"), YA, "TCP", (22, 22)).allowed
    assert netpol.connection([], netpol.Endpoint(address="198.51.100.9"), YA, "TCP", (22, 22)).allowed


def test_policy_types_left_out_isolate_egress_when_the_policy_has_egress_rules() -> None:
    """NetworkPolicySpec.policyTypes: "Egress" is added when the policy has any egress rule."""
    dns_only = netpol.Policy("x", "dns", {"podSelector": {}, "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]})
    assert netpol.policy_types(dns_only.spec) == {"Ingress", "Egress"}
    assert not netpol.connection([dns_only], XA, YA, "TCP", (80, 80)).allowed
    assert netpol.connection([dns_only], XA, YA, "UDP", (53, 53)).allowed
    assert netpol.policy_types({"podSelector": {}, "policyTypes": ["Egress"]}) == {"Egress"}


def test_a_policy_of_another_namespace_does_not_isolate_the_pod() -> None:
    deny_all = netpol.Policy("y", "deny", {"podSelector": {}, "policyTypes": ["Egress"]})
    assert not netpol.connection([deny_all], YA, XA, "TCP", (80, 80)).allowed
    assert netpol.connection([deny_all], XA, YA, "TCP", (80, 80)) == netpol.Verdict(
        True, ["not isolated"], ["not isolated"]
    )


@pytest.mark.parametrize(
    ("ports", "asked", "allowed"),
    [(None, (1, 65535), True),  # no ports: every port
     ([{"protocol": "UDP"}], (1, 65535), False),  # a port entry without a number: every port of its protocol
     ([{"protocol": "TCP"}], (1, 65535), True),
     ([{"port": "http"}], (8080, 8080), True),  # a name resolves on the server pod's container ports
     ([{"port": "http"}], (80, 80), False),
     ([{"port": "metrics"}], (8080, 8080), False),  # a name the server lacks allows nothing
     ([{"port": "8080"}], (8080, 8080), True),  # a number written as text is a number
     ([{"port": 80}], (80, 81), False),  # every asked port must be covered
     ([{"port": 80}, {"port": 81}], (80, 81), True),
     ([{"port": 80, "endPort": 90}, {"port": 92, "endPort": 99}], (80, 99), False),  # a gap in the middle
     ([{"port": 92, "endPort": 99}, {"port": 80, "endPort": 91}], (80, 99), True)],
)  # fmt: skip
def test_the_asked_ports_must_be_covered_by_the_rules_port_ranges(
    ports: list[dict[str, Any]] | None, asked: tuple[int, int], allowed: bool
) -> None:
    """NetworkPolicyPort: protocol (TCP by default), port number or named container port, endPort."""
    server = netpol.Endpoint("y", {"ns": "y"}, {"pod": "a"}, {"http": 8080})
    policy = egress_to(FROM_Y_A, ports=ports)
    assert netpol.connection([policy], XA, server, "TCP", asked).allowed is allowed


def test_the_verdict_names_only_the_policies_whose_rules_allowed_the_side() -> None:
    udp = netpol.Policy("x", "udp", {"podSelector": {}, "policyTypes": ["Egress"],
                                     "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]})  # fmt: skip
    web = egress_to(ports=[{"port": 80}])
    other = netpol.Policy("x", "b-web", web.spec)
    verdict = netpol.connection([udp, web, other], XA, YA, "TCP", (80, 80))
    assert verdict == netpol.Verdict(True, ["b-web", "out"], ["not isolated"])


# ------------------------------------------------------------------------------------ registry admission

POLICY = registry_policy_spec(["public.ecr.aws/"])


def pod_object(*images: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "t"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "spec": {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]}}


def test_create_admits_approved_images_and_refuses_the_rest() -> None:
    assert registry_refusal(POLICY, pod_object("public.ecr.aws/x:1"), None) is None
    refusal = registry_refusal(POLICY, pod_object("public.ecr.aws/x:1", "docker.io/y:1"), None)
    assert refusal is not None and "public.ecr.aws/" in refusal


def test_image_volumes_are_judged_like_containers() -> None:
    pod = pod_object("public.ecr.aws/x:1")
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}, {"name": "w", "image": {"reference": "docker.io/w:1"}}]
    refusal = registry_refusal(POLICY, pod, None)
    assert refusal is not None and "public.ecr.aws/" in refusal
    pod["spec"]["volumes"][1]["image"]["reference"] = "public.ecr.aws/w:1"
    assert registry_refusal(POLICY, pod, None) is None
    pod["spec"]["volumes"][1]["image"] = {"pullPolicy": "Always"}  # no reference: nothing to judge
    assert registry_refusal(POLICY, pod, None) is None


def test_update_judges_only_images_the_pod_did_not_have() -> None:
    old = pod_object("retired.example/x:1", finalizers=["batch.kubernetes.io/job-tracking"])
    assert registry_refusal(POLICY, pod_object("retired.example/x:1", finalizers=[]), old) is None
    assert registry_refusal(POLICY, pod_object("docker.io/y:1"), old) is not None  # an image swap is refused
    with_debug = pod_object("retired.example/x:1")
    with_debug["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "docker.io/busybox:1"}]
    assert registry_refusal(POLICY, with_debug, old) is not None  # pods/ephemeralcontainers adds an image


# ------------------------------------------------------------------------------------ device admission

DEVICES = device_policy_spec()
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_pod(
    *,
    env: list[dict[str, str]] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    limits: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if env is not None:
        container["env"] = env
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    if resources:
        container["resources"] = resources
    body: dict[str, Any] = {"containers": [container], **spec}
    if tolerations is not None:
        body["tolerations"] = tolerations
    meta: dict[str, Any] = {"name": "p", "namespace": "t"}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, "spec": body}


def test_the_gpu_thief_of_the_review_is_refused_twice() -> None:
    """NVIDIA_VISIBLE_DEVICES=all, a GPU toleration and a node selector, no GPU request: the review's HIGH."""
    thief = gpu_pod(
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
        tolerations=[GPU_TOLERATION],
        nodeSelector={"trainstack.io/node-group": "p5"},
    )
    refusal = registry_refusal(DEVICES, thief, None)
    assert refusal is not None and "NVIDIA_VISIBLE_DEVICES" in refusal
    del thief["spec"]["containers"][0]["env"]
    assert (
        registry_refusal(DEVICES, thief, None)
        == "a pod tolerating the nvidia.com/gpu taint must request nvidia.com/gpu"
    )


@pytest.mark.parametrize("name", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_IMEX_CHANNELS"])
@pytest.mark.parametrize("where", ["containers", "initContainers", "ephemeralContainers"])
def test_a_device_variable_is_refused_in_any_container(name: str, where: str) -> None:
    pod = gpu_pod(limits={"nvidia.com/gpu": "8"})
    pod["spec"][where] = [
        *pod["spec"].get(where, []),
        {"name": "x", "image": "x", "env": [{"name": name, "value": "0"}]},
    ]
    assert registry_refusal(DEVICES, pod, None) is not None


def test_other_nvidia_variables_and_gpu_requests_pass() -> None:
    pod = gpu_pod(
        env=[
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
            {"name": "NCCL_DEBUG", "value": "INFO"},
        ],
        tolerations=[GPU_TOLERATION],
        limits={"nvidia.com/gpu": "8"},
    )
    assert registry_refusal(DEVICES, pod, None) is None
    requested = gpu_pod(tolerations=[GPU_TOLERATION], requests={"nvidia.com/gpu": "1"})
    assert registry_refusal(DEVICES, requested, None) is None
    assert registry_refusal(DEVICES, gpu_pod(), None) is None  # a CPU pod without tolerations


def test_a_wildcard_toleration_counts_as_every_accelerator_taint() -> None:
    pod = gpu_pod(tolerations=[{"operator": "Exists"}])
    assert registry_refusal(DEVICES, pod, None) is not None
    # ...and a GPU request does not cover Neuron nodes, which the wildcard also reaches.
    pod = gpu_pod(tolerations=[{"operator": "Exists"}], limits={"nvidia.com/gpu": "8"})
    assert registry_refusal(DEVICES, pod, None) == (
        "a pod tolerating the aws.amazon.com/neuron taint must request aws.amazon.com/neuron"
    )
    other = gpu_pod(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert registry_refusal(DEVICES, other, None) is None


def test_only_the_mpi_launcher_tolerates_the_gpu_taint_without_a_request() -> None:
    launcher = gpu_pod(tolerations=[GPU_TOLERATION], labels={"jobset.sigs.k8s.io/replicatedjob-name": "launcher"})
    assert registry_refusal(DEVICES, launcher, None) is None
    node = gpu_pod(tolerations=[GPU_TOLERATION], labels={"jobset.sigs.k8s.io/replicatedjob-name": "node"})
    assert registry_refusal(DEVICES, node, None) is not None


@pytest.mark.parametrize(
    ("priority", "refused"), [("system-node-critical", True), ("system-cluster-critical", True), ("team-high", False)]
)
def test_system_priority_classes_are_the_platforms(priority: str, refused: bool) -> None:
    pod = gpu_pod(priorityClassName=priority)
    assert (registry_refusal(DEVICES, pod, None) is not None) is refused


# ----------------------------------------------------------------------------------------------- exit codes


def test_what_each_launcher_exits_with_when_a_rank_exits_78() -> None:
    assert rank_exit_code(TORCHRUN_COMMAND, 78) == 78
    assert rank_exit_code(["torchrun", "train.py"], 78) == 1
    assert rank_exit_code(["python", "-m", "torch.distributed.run", "train.py"], 78) == 1
    assert rank_exit_code(["/opt/amazon/openmpi/bin/mpirun", "python3", "train.py"], 78) == 78
    assert rank_exit_code(["/bin/bash", "-c", "train.sh"], 78) is None
    assert rank_exit_code([], 78) is None


def test_pod_failure_rules_match_in_order_by_container_and_operator() -> None:
    """kubernetes pkg/controller/job/pod_failure_policy_test.go: first matching rule; NotIn; containerName."""
    rules = [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]},
             {"action": "Ignore", "onExitCodes": {"containerName": "other", "operator": "In", "values": [78]}},
             {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 78]}},
             {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [2, 78]}}]  # fmt: skip
    assert pod_failure_rule(rules, "node", 78) == 2
    assert pod_failure_rule(rules, "node", 1) == 3
    assert pod_failure_rule(rules[:3], "node", 1) is None


def test_jobset_fails_on_a_fatal_code_and_restarts_on_a_drain() -> None:
    runtime = {"template": {"spec": {"failurePolicy": jobset_failure_policy(TrainerRuntimesSpec())}}}
    fatal = "Container node for pod t/j-node-0-0 failed with exit code 78 matching FailJob rule at index 1"
    drained = "Pod t/j-node-0-0 has condition DisruptionTarget matching FailJob rule at index 0"
    assert jobset_action(runtime, "PodFailurePolicy", fatal) == "FailJobSet"
    assert jobset_action(runtime, "PodFailurePolicy", drained) == "RestartJobSetAndIgnoreMaxRestarts"
    assert jobset_action(runtime, "BackoffLimitExceeded", "") == "RestartJobSet"


def _run_entrypoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, exitcode: int | None) -> int | None:
    """TORCHRUN_ENTRYPOINT against a stand-in for torch's elastic API, shaped as pytorch v2.7.1 defines it:
    `torch.distributed.run.main(args)` raises `ChildFailedError`, whose `get_first_failure()` returns (rank,
    ProcessFailure) with `exitcode` negative for a signal (torch/distributed/elastic/multiprocessing/errors).
    The real torch cannot be installed here (no CUDA-free 2.7.1 wheel on PyPI)."""

    class ChildFailedError(Exception):
        def get_first_failure(self) -> tuple[int, Any]:
            return 3, types.SimpleNamespace(exitcode=exitcode)

    def main(args: list[str]) -> None:
        assert args == ["train.py", "--lr", "1e-4"]
        if exitcode is not None:
            raise ChildFailedError("trainer FAILED")

    errors = types.ModuleType("torch.distributed.elastic.multiprocessing.errors")
    errors.ChildFailedError = ChildFailedError  # type: ignore[attr-defined]
    run = types.ModuleType("torch.distributed.run")
    run.main = main  # type: ignore[attr-defined]
    for name in (
        "torch",
        "torch.distributed",
        "torch.distributed.elastic",
        "torch.distributed.elastic.multiprocessing",
    ):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, errors.__name__, errors)
    monkeypatch.setitem(sys.modules, run.__name__, run)
    checkpoint = tmp_path / "checkpoints" / "job"
    monkeypatch.setenv("TRAINSTACK_CHECKPOINT_DIR", str(checkpoint))
    monkeypatch.setattr(sys, "argv", ["-c", "train.py", "--lr", "1e-4"])
    try:
        exec(compile(TORCHRUN_ENTRYPOINT, "<entrypoint>", "exec"), {})
    except SystemExit as stop:
        assert checkpoint.is_dir()
        return int(stop.code) if stop.code is not None else 0
    assert checkpoint.is_dir()
    return None


@pytest.mark.parametrize(
    ("rank_exit", "container_exit"), [(78, 78), (2, 2), (1, 1), (-9, 137), (-15, 143), (0, 1), (None, None)]
)
def test_the_entrypoint_exits_with_the_first_failed_ranks_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rank_exit: int | None, container_exit: int | None
) -> None:
    assert _run_entrypoint(monkeypatch, tmp_path, rank_exit) == container_exit


# ------------------------------------------------------------------------------------ docs and the schema


def test_the_docs_show_exactly_the_trainjobs_the_journey_walks() -> None:
    text = (ROOT / "docs" / "validate.md").read_text()
    shown = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    assert [doc for doc in shown if doc.get("kind") == "TrainJob"] == list(examples.EXAMPLES.values())


def test_for_team_changes_only_namespace_queue_runtime_and_size() -> None:
    job = examples.for_team("mpi", "research", "g5", "trainstack-mpi-g5", 2)
    assert job["metadata"]["namespace"] == "research" and job["spec"]["runtimeRef"]["name"] == "trainstack-mpi-g5"
    assert job["spec"]["trainer"]["command"] == examples.MPI["spec"]["trainer"]["command"]
    assert examples.MPI["spec"]["trainer"]["numNodes"] == 4  # the example itself is untouched
    torch = examples.for_team("torch", "vision", "g6", "trainstack-torch-g6", 3)
    assert torch == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llama-pretrain", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "g6"}},
        "spec": {
            "runtimeRef": {"name": "trainstack-torch-g6"},
            "trainer": {"numNodes": 3, "args": ["train.py", "--config", "llama.yaml"]},
        },
    }
    assert examples.TORCH["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "p5-train"}  # untouched


def test_a_restricted_team_beside_the_mpi_runtime_is_refused_with_the_reason() -> None:
    def restrict(cluster: dict[str, Any]) -> None:
        cluster["kubernetes"]["teams"][1]["pod_security"] = "restricted"

    with pytest.raises(ConfigError) as error:
        edited_config("prod", restrict)
    assert "kubernetes.teams.1.pod_security restricted" in str(error.value.render())
    assert "runtimes.mpi false" in str(error.value.render())

    def torch_only(cluster: dict[str, Any]) -> None:
        restrict(cluster)
        cluster["kubernetes"]["training_operator"]["runtimes"] = {"mpi": False}

    assert edited_config("prod", torch_only).kubernetes.teams[1].pod_security == "restricted"


def test_the_team_directory_is_writable_by_its_owner_and_group_only() -> None:
    assert writable(65534, 65534, (65534, 65534), 0o770)
    assert writable(1000, 65534, (65534, 65534), 0o770)
    assert not writable(1000, 1000, (65534, 65534), 0o770)
    assert not writable(65534, 1, (65534, 65534), 0o570)  # owner without write
    assert writable(0, 0, (65534, 65534), 0o700)  # root, not squashed


def test_each_permission_class_is_chosen_by_the_owners_uid_then_its_gid() -> None:
    owner = (65534, 2000)
    assert writable(1000, 2000, owner, 0o070) and not writable(1000, 2000, owner, 0o700)  # group class
    assert not writable(1000, 65534, owner, 0o070)  # the owner's uid is not its gid
    assert writable(65534, 1, owner, 0o300) and not writable(65534, 1, owner, 0o100)  # write needs search too
    assert writable(1, 1, owner, 0o003) and not writable(1, 1, owner, 0o002) and not writable(1, 1, owner, 0o001)


def test_a_submission_takes_the_most_whole_nodes_the_quota_and_the_group_allow() -> None:
    stack = stack_config("prod")
    team, group = stack.kubernetes.teams[0], stack.gpu_node_groups[0]  # p5.48xlarge: 8 GPUs a node, 16 nodes

    def nodes(quota: int, max_size: int = 16) -> int:
        sized = team.model_copy(update={"gpu_quota": quota})
        return submission(sized, group.model_copy(update={"max_size": max_size}), "torch", "rt").nodes

    assert (nodes(4), nodes(8), nodes(15), nodes(16), nodes(512), nodes(512, max_size=2)) == (1, 1, 1, 2, 16, 2)
    job = submission(team, group, "mpi", "rt")
    assert job.namespace == team.name and job.trainjob["spec"]["runtimeRef"]["name"] == "rt"


def test_a_validation_must_yield_true_and_a_variable_sees_the_ones_before_it() -> None:
    chained = {
        "variables": [
            {"name": "names", "expression": "object.spec.containers.map(c, c.name)"},
            {"name": "count", "expression": "size(variables.names)"},
        ],
        "validations": [{"expression": "variables.count == 1", "message": "one container"}],
    }
    assert registry_refusal(chained, pod_object("x"), None) is None
    assert registry_refusal(chained, pod_object("x", "y"), None) == "one container"
    not_bool = {"validations": [{"expression": "size(object.spec.containers)"}]}  # 1: truthy, but not true
    assert registry_refusal(not_bool, pod_object("x"), None) == "size(object.spec.containers)"
    update_only = {
        "validations": [
            {"expression": "request.operation == 'UPDATE' && oldObject.metadata.name == object.metadata.name"}
        ]
    }
    assert registry_refusal(update_only, pod_object("x"), pod_object("x")) is None
    assert registry_refusal(update_only, pod_object("x"), None) is not None


def test_a_value_is_known_only_when_nothing_inside_it_is_unknown() -> None:
    assert _known({"a": [1, {"b": "x"}], "c": None}) and _known([])
    assert not _known(UNKNOWN) and not _known({"a": {"b": UNKNOWN}}) and not _known({"a": [1, UNKNOWN]})


def test_the_example_address_of_a_network_is_its_tenth_host() -> None:
    assert list(_hosts("10.0.0.0/16")) == ["10.0.0.10"] and list(_hosts("10.1.2.3/24")) == ["10.1.2.10"]


def test_a_container_runs_as_its_own_identity_else_the_pods_else_root() -> None:
    pod = {"securityContext": {"runAsUser": 1000, "runAsGroup": 2000}, "containers": []}
    assert _identity(pod, {"securityContext": {"runAsUser": 7}}) == (7, 2000)
    assert _identity(pod, {"securityContext": {"runAsGroup": 8}}) == (1000, 8)
    assert _identity({"containers": []}, {}) == (0, 0)


def test_a_rule_for_another_container_or_without_exit_codes_is_passed_over() -> None:
    def rule(action: str, container: str, code: int | str) -> dict[str, Any]:
        return {"action": action, "onExitCodes": {"containerName": container, "operator": "In", "values": [code]}}

    rules = [{"action": "FailJob"}, rule("Ignore", "sidecar", 2), rule("FailJob", "node", "2")]
    assert pod_failure_rule(rules, "node", 2) == 2 and pod_failure_rule(rules, "sidecar", 2) == 1
    assert pod_failure_rule(rules, "node", 3) is None


def test_a_jobset_rule_applies_only_when_its_reason_and_a_pattern_match() -> None:
    runtime = {"template": {"spec": {"failurePolicy": {"rules": [
        {"action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"],
         "onJobFailureMessagePatterns": ["code 2 "]},
        {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureMessagePatterns": ["DisruptionTarget"]},
        {"action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]},
    ]}}}}  # fmt: skip
    assert jobset_action(runtime, "PodFailurePolicy", "exit code 2 matching") == "FailJobSet"
    assert jobset_action(runtime, "PodFailurePolicy", "exit code 3 matching") == (
        "RestartJobSet (no rule: counted against maxRestarts)"
    )
    assert jobset_action(runtime, "BackoffLimitExceeded", "code 2 DisruptionTarget") == (
        "RestartJobSetAndIgnoreMaxRestarts"
    )
    assert jobset_action(runtime, "DeadlineExceeded", "") == "FailJobSet"
    assert jobset_action({"template": {"spec": {}}}, "PodFailurePolicy", "") == (
        "RestartJobSet (no rule: counted against maxRestarts)"
    )


def test_only_the_provisioning_request_crd_counts_as_installed() -> None:
    from trainstack.engine import RecordedResource, Recording
    from trainstack.journeys.team_job import Cluster
    from trainstack.tokens import CONFIG_FILE

    def config_file(url: str) -> RecordedResource:
        return RecordedResource(CONFIG_FILE, "crd", "urn::crd", "", True, {"file": url}, (), {}, False, False, "")

    crds = "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-1.36.1/cluster-autoscaler/apis/config/crd/"
    other = Recording("s", False, (config_file(crds + "autoscaling.x-k8s.io_capacitybuffers.yaml"),), {})
    assert not Cluster.of(other).capacity.provisioning_crd
    installed = Recording("s", False, (config_file(crds + "autoscaling.x-k8s.io_provisioningrequests.yaml"),), {})
    assert Cluster.of(installed).capacity.provisioning_crd


def test_an_expression_that_fails_to_evaluate_refuses_as_failure_policy_fail_does() -> None:
    missing_field = {"validations": [{"expression": "object.spec.nodeName == 'x'", "message": "never shown"}]}
    assert registry_refusal(missing_field, pod_object("x"), None) == "the expression failed to evaluate (CELEvalError)"
