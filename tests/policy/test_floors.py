"""Floors at their edges that the rule cases (tests/policy/test_rules.py) do not reach: a pack run without its
environment's config, and how the fleet-health floor reads Kueue's controller configuration (the YAML block
`waitForPodsReady` and its Go duration), one reading at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.rules import BY_NAME
from policies.rules.health import _seconds, _yaml_block
from tests.policy.helpers import found, messages, mutated, run, shipped, without
from tests.policy.test_rules import (
    CLUSTER,
    FSX,
    LOCK,
    NAT,
    P5_TRAIN_LT,
    P5_TRAIN_NG,
    S3,
    _kueue_timeout,
    _restart_backoff,
    of_type,
    prod_unlinked,
    set_path,
)
from trainstack.engine import Recording
from trainstack.review import resolve_config, run_policies


def test_a_pack_run_without_its_environments_config_says_so_once() -> None:
    """Without policies/config/<env>.json nothing says which environment the stack must be: one finding names the
    missing config, and no stack is judged against an environment of None."""
    assert messages("stack-environment", shipped("dev")) == [
        "no environment is configured for this policy config (policies/config/<env>.json)."
    ]


KUEUE_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  timeout: 600s
  requeuingStrategy:
    backoffLimitCount: 5
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
"""


def test_the_waitforpodsready_block_is_read_with_its_scalars_only() -> None:
    """Its nested mappings are not its own scalars, and the next block's `enable` is not its `enable`."""
    assert _yaml_block(KUEUE_CONFIG, "waitForPodsReady") == {"enable": "true", "timeout": "600s"}


def test_a_configuration_without_the_block_reads_as_none_of_it() -> None:
    assert _yaml_block("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n", "waitForPodsReady") == {}
    assert _yaml_block("", "waitForPodsReady") == {}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("600s", 600), ("10m", 600), ("1h", 3600), ("0s", 0), (None, None), ("", None), ("s", None), ("10d", None),
     ("1.5h", None), ("10", None)],
)  # fmt: skip
def test_a_timeout_is_whole_seconds_minutes_or_hours(text: str | None, seconds: float | None) -> None:
    assert _seconds(text) == seconds


def _prod() -> Recording:
    return shipped("prod")


def _lifecycle(days: int, status: str) -> Callable[[], Recording]:
    def edit(inputs: dict[str, Any]) -> None:
        set_path("rules.0.noncurrentVersionExpiration.noncurrentDays", days)(inputs)
        set_path("rules.0.status", status)(inputs)

    def source() -> Recording:
        return mutated(_prod(), "-checkpoints-lifecycle", edit)

    return source


def _update(config: dict[str, int]) -> Callable[[], Recording]:
    return lambda: mutated(_prod(), P5_TRAIN_NG, set_path("updateConfig", config))


def _small_group(max_size: int, max_unavailable: int) -> Callable[[], Recording]:
    """A GPU group of `max_size` nodes at most, updated `max_unavailable` nodes at a time."""

    def edit(inputs: dict[str, Any]) -> None:
        inputs["scalingConfig"]["maxSize"] = max_size
        inputs["updateConfig"] = {"maxUnavailable": max_unavailable}

    return lambda: mutated(_prod(), P5_TRAIN_NG, edit)


SYSTEM_MIN_1 = (
    "system node groups (eks-system) keep at least 1 node(s) (eks.system_node_group.min_size); the floor here is 2, "
    "so DNS and job admission survive the loss of a node."
)
LINKED = (
    "lustre-fs: linked to S3 by a data repository association, yet asks for {}; FSx takes no backups of a linked "
    "file system: set storage.fsx.automatic_backup_retention_days to 0 and keep what must outlive the file system "
    "in S3."
)
NO_NAT = (
    "private subnet network-private-{az} in {az} has no NAT gateway in its AZ (NAT gateways in ['us-east-1a']); set "
    "network.nat_gateways per_az, so one AZ's outage does not take the others' egress with it."
)
NO_LUSTRE = (
    "there is no Lustre file system (storage.fsx) for 25,600 MB/s of GPU read demand: 0% coverage, below the floor of "
    "90%. Raise storage.fsx.storage_capacity_gib or throughput_mb_s_per_tib."
)

LIFECYCLE_3 = (
    "bucket data-checkpoints: lifecycle rule 'expire-noncurrent-versions' deletes noncurrent versions "
    "after 3 days (storage.buckets.noncurrent_version_expiration_days); the floor here is 30 days, so an "
    "overwritten checkpoint can still be restored."
)
BACKUPS_6 = (
    "lustre-fs: storage.fsx.automatic_backup_retention_days is 6 (automaticBackupRetentionDays); the "
    "floor here is 7 daily backups, so a corrupted or deleted file system can be restored."
)
CONTROL_PLANE_30 = (
    "EKS control-plane (audit) logs /aws/eks/trainstack-prod/cluster are kept 30 days "
    "(eks.log_retention_days); the floor here is 365 days."
)
FLOW_90 = (
    "VPC flow logs /aws/vpc-flow-logs/trainstack-prod are kept 90 days "
    "(network.flow_logs_retention_days); the floor here is 365 days."
)


def _budget(percent: int, count: int) -> str:
    return (
        f"node group gpu-p5-train-ng may replace {percent}% of its 16 nodes at once (gpu_node_groups[].max_unavailable "
        f"{count}); the floor here allows 25%."
    )


# Each finding on prod (its config: the strictest floors), on the resource it is about, naming the stack key, the
# value and the floor; and the values on each side of a floor. Resource names are the recorded ones.
FINDINGS: list[tuple[str, str, Callable[[], Recording], list[tuple[str, str]]]] = [
    (
        "s3 lifecycle below the floor",
        "s3-noncurrent-version-floor",
        _lifecycle(3, "Enabled"),
        [
            (
                "data-checkpoints",
                LIFECYCLE_3,
            )
        ],
    ),
    ("s3 lifecycle at the floor", "s3-noncurrent-version-floor", _lifecycle(30, "Enabled"), []),
    ("a disabled lifecycle rule deletes nothing", "s3-noncurrent-version-floor", _lifecycle(3, "Disabled"), []),
    (
        "a system group below the floor",
        "system-nodes-floor",
        lambda: mutated(_prod(), "-eks-system", set_path("scalingConfig.minSize", 1)),
        [("eks-system", SYSTEM_MIN_1)],
    ),
    (
        "a system group at the floor",
        "system-nodes-floor",
        lambda: mutated(_prod(), "-eks-system", set_path("scalingConfig.minSize", 2)),
        [],
    ),
    (
        "no Lustre for prod's GPUs",
        "storage-throughput-floor",
        lambda: without(_prod(), of_type(FSX)),
        [("gpu-p5-train-ng", NO_LUSTRE)],
    ),
    (
        "no Lustre, but a GPU group that can hold no node",
        "storage-throughput-floor",
        lambda: mutated(without(_prod(), of_type(FSX)), P5_TRAIN_NG, set_path("scalingConfig.maxSize", 0)),
        [],
    ),
    (
        "backups asked of a linked file system",
        "fsx-backup-floor",
        lambda: mutated(_prod(), FSX, set_path("automaticBackupRetentionDays", 1)),
        [("lustre-fs", LINKED.format("1 days of automatic backups"))],
    ),
    (
        "a final backup asked of a linked file system",
        "fsx-backup-floor",
        lambda: mutated(_prod(), FSX, set_path("skipFinalBackup", False)),
        [("lustre-fs", LINKED.format("a final backup"))],
    ),
    (
        "an unlinked file system one day below the floor",
        "fsx-backup-floor",
        lambda: prod_unlinked(6, skip_final=False),
        [
            (
                "lustre-fs",
                BACKUPS_6,
            )
        ],
    ),
    (
        "an unlinked file system without a final backup",
        "fsx-backup-floor",
        lambda: prod_unlinked(7, skip_final=True),
        [("lustre-fs", "lustre-fs: skipFinalBackup is not false; deleting it would leave no backup.")],
    ),
    (
        "a cluster without deletion protection",
        "deletion-safeguards",
        lambda: mutated(_prod(), CLUSTER, set_path("deletionProtection", False)),
        [("eks-cluster", "EKS cluster eks-cluster has no deletionProtection.")],
    ),
    (
        "a key's window a day short",
        "deletion-safeguards",
        lambda: mutated(_prod(), "-data-key", set_path("deletionWindowInDays", 29)),
        [("data-key", "KMS key data-key: deletionWindowInDays is 29 days; the floor here is 30.")],
    ),
    (
        "a key without a window",
        "deletion-safeguards",
        lambda: mutated(_prod(), "-data-key", lambda inputs: inputs.pop("deletionWindowInDays") and None),
        [("data-key", "KMS key data-key: deletionWindowInDays is unset; the floor here is 30.")],
    ),
    (
        "control-plane logs below a year",
        "log-retention-floor",
        lambda: mutated(_prod(), "-eks-cluster-logs", set_path("retentionInDays", 30)),
        [
            (
                "eks-cluster-logs",
                CONTROL_PLANE_30,
            )
        ],
    ),
    (
        "control-plane logs never expiring",
        "log-retention-floor",
        lambda: mutated(_prod(), "-eks-cluster-logs", set_path("retentionInDays", 0)),
        [],
    ),
    (
        "flow logs below a year",
        "log-retention-floor",
        lambda: mutated(_prod(), "-network-flow-logs", set_path("retentionInDays", 90)),
        [
            (
                "network-flow-logs",
                FLOW_90,
            )
        ],
    ),
    (
        "every GPU node at once",
        "node-update-budget",
        _update({"maxUnavailable": 16}),
        [("gpu-p5-train-ng", _budget(100, 16))],
    ),
    (
        "one node over a quarter",
        "node-update-budget",
        _update({"maxUnavailable": 5}),
        [("gpu-p5-train-ng", _budget(31, 5))],
    ),
    ("a quarter of the nodes", "node-update-budget", _update({"maxUnavailable": 4}), []),
    (
        "a percentage over the floor",
        "node-update-budget",
        _update({"maxUnavailablePercentage": 26}),
        [("gpu-p5-train-ng", _budget(26, 0))],
    ),
    ("a percentage at the floor", "node-update-budget", _update({"maxUnavailablePercentage": 25}), []),
    ("one node is always allowed", "node-update-budget", _update({"maxUnavailable": 1}), []),
    ("one node of two is allowed though half", "node-update-budget", _small_group(2, 1), []),
    (
        "two nodes of four are half",
        "node-update-budget",
        _small_group(4, 2),
        [
            (
                "gpu-p5-train-ng",
                "node group gpu-p5-train-ng may replace 50% of its 4 nodes at once (gpu_node_groups[].max_unavailable "
                "2); the floor here allows 25%.",
            )
        ],
    ),
    (
        "one NAT gateway for three AZs",
        "nat-per-az",
        lambda: without(_prod(), lambda r: r.type == NAT and not r.name.endswith("us-east-1a")),
        [
            ("network-private-us-east-1b", NO_NAT.format(az="us-east-1b")),
            ("network-private-us-east-1c", NO_NAT.format(az="us-east-1c")),
        ],
    ),
]


def _without_efa(max_size: int) -> Callable[[], Recording]:
    return lambda: mutated(
        mutated(_prod(), P5_TRAIN_LT, set_path("networkInterfaces", [])),
        P5_TRAIN_NG,
        set_path("scalingConfig.maxSize", max_size),
    )


def _quota(hard: dict[str, str]) -> Callable[[], Recording]:
    return lambda: mutated(_prod(), "-team-research-quota", set_path("spec.hard", hard))


def _lock(retention: dict[str, Any]) -> Callable[[], Recording]:
    return lambda: mutated(_prod(), LOCK, set_path("rule.defaultRetention", retention))


def _over_capacity(key: str) -> str:
    return (
        f"team 'research' may request 129 accelerators ({key}; kubernetes.teams[].gpu_quota), more than the 128 the "
        "cluster can hold: a quota above capacity limits nothing; use at most 128."
    )


def _locked_for(days: int) -> str:
    return (
        f"Object Lock on data-checkpoints-object-lock keeps each new version {days} days (trainstack's checkpoints "
        "lock: security.checkpoint_lock.retention_days); the floor here is 7 days."
    )


# prod holds 16 p5.48xlarge nodes of 8 GPUs: 128 accelerators.
FINDINGS += [
    ("two EFA-capable nodes without EFA", "efa-on-capable-groups", _without_efa(2), [(
        "gpu-p5-train-ng",
        "node group gpu-p5-train-ng runs up to 2 p5.48xlarge nodes without EFA (gpu_node_groups[].efa_enabled false): "
        "multi-node jobs would fall back to TCP sockets. Enable EFA, or keep the group to one node.",
    )]),
    ("one EFA-capable node without EFA", "efa-on-capable-groups", _without_efa(1), []),
    ("a cluster without deletion protection, alone", "deletion-safeguards",
     lambda: mutated(without(_prod(), of_type("aws:kms/key:Key", *S3)), CLUSTER, set_path("deletionProtection", False)),
     [("eks-cluster", "EKS cluster eks-cluster has no deletionProtection.")]),
    ("no NCCL validation job", "fabric-validation",
     lambda: without(_prod(), of_type("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob")), [(
        "gpu-p5-train-ng",
        "no NCCL validation job proves node group gpu-p5-train-ng's EFA fabric: set kubernetes.validation.enabled "
        "true.",
    )]),
    ("a quota of every GPU", "team-quota-fits-capacity", _quota({"requests.nvidia.com/gpu": "128"}), []),
    ("a quota of one GPU more", "team-quota-fits-capacity", _quota({"requests.nvidia.com/gpu": "129"}),
     [("scheduling-team-research-quota", _over_capacity("requests.nvidia.com/gpu"))]),
    ("a Neuron quota over capacity", "team-quota-fits-capacity", _quota({"requests.aws.amazon.com/neuron": "129"}),
     [("scheduling-team-research-quota", _over_capacity("requests.aws.amazon.com/neuron"))]),
    ("a quota on CPU only", "team-quota-fits-capacity", _quota({"requests.cpu": "100000"}), []),
    ("a lock of a year", "object-lock-retention-floor", _lock({"mode": "COMPLIANCE", "years": 1}), []),
    ("a lock of 7 days", "object-lock-retention-floor", _lock({"mode": "GOVERNANCE", "days": 7}), []),
    ("a lock of 6 days", "object-lock-retention-floor", _lock({"mode": "GOVERNANCE", "days": 6}),
     [("data-checkpoints-object-lock", _locked_for(6))]),
    ("a lock of no period", "object-lock-retention-floor", _lock({"mode": "GOVERNANCE"}),
     [("data-checkpoints-object-lock", _locked_for(0))]),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "source", "expected"), [pytest.param(*f[1:], id=f[0]) for f in FINDINGS])
def test_each_floor_names_the_resource_the_value_and_the_floor(
    policy: str, source: Callable[[], Recording], expected: list[tuple[str, str]]
) -> None:
    result = run(source(), policies=[BY_NAME[policy]])
    assert [(v.urn.rsplit("::", 1)[-1], v.message) for v in found(result, policy)] == expected


def _fleet(match: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[], Recording]:
    return lambda: mutated(_prod(), match, edit)


REPAIR = "nodeRepairConfig"
MAX_RESTARTS = "spec.template.spec.failurePolicy.maxRestarts"

# prod's fleet-health floor (policies/config/prod.json): at most 2 nodes repaired at once, repair stops above 50%
# unhealthy, 1 to 10 restarts, at least 10 s before a restart, waitForPodsReady within 1800 s. Each bound is held
# on its own: the value at the bound passes, one step past it is the one finding.
FLEET_BOUNDS: list[tuple[str, Callable[[], Recording], str | None]] = [
    # repair off is the one finding: the bounds of a repair that never runs are not judged too
    ("repair off, no bounds", _fleet(P5_TRAIN_NG, set_path(REPAIR, {"enabled": False})), "has no auto repair"),
    ("2 repaired at once", _fleet(P5_TRAIN_NG, set_path(f"{REPAIR}.maxParallelNodesRepairedCount", 2)), None),
    ("3 repaired at once", _fleet(P5_TRAIN_NG, set_path(f"{REPAIR}.maxParallelNodesRepairedCount", 3)), "repairs 3 "),
    (
        "a share repaired at once, not a count",
        _fleet(P5_TRAIN_NG, lambda i: i[REPAIR].pop("maxParallelNodesRepairedCount") and None),
        "repairs an unset number of nodes at once",
    ),
    (
        "stops at 50% unhealthy",
        _fleet(P5_TRAIN_NG, set_path(f"{REPAIR}.maxUnhealthyNodeThresholdPercentage", 50)),
        None,
    ),
    (
        "stops at 51% unhealthy",
        _fleet(P5_TRAIN_NG, set_path(f"{REPAIR}.maxUnhealthyNodeThresholdPercentage", 51)),
        "until 51% of it is unhealthy",
    ),
    (
        "no unhealthy threshold",
        _fleet(P5_TRAIN_NG, lambda i: i[REPAIR].pop("maxUnhealthyNodeThresholdPercentage") and None),
        "until an unset number of% of it",
    ),
    ("1 restart", _fleet("training-runtimes-p5-train-torch", set_path(MAX_RESTARTS, 1)), None),
    ("10 restarts", _fleet("training-runtimes-p5-train-torch", set_path(MAX_RESTARTS, 10)), None),
    (
        "11 restarts",
        _fleet("training-runtimes-p5-train-torch", set_path(MAX_RESTARTS, 11)),
        "restarts a failed job 11 ",
    ),
    ("10 s before a restart", _fleet("training-runtimes-p5-train-torch", _restart_backoff("10")), None),
    ("9 s before a restart", _fleet("training-runtimes-p5-train-torch", _restart_backoff("9")), "waits 9 s before"),
    ("pods ready within 1800s", _fleet("scheduling-kueue", _kueue_timeout("timeout: 1800s")), None),
    ("pods ready within 30m", _fleet("scheduling-kueue", _kueue_timeout("timeout: 30m")), None),
    ("pods ready within 1801s", _fleet("scheduling-kueue", _kueue_timeout("timeout: 1801s")), "at most 1800 s"),
    ("pods ready without a timeout", _fleet("scheduling-kueue", _kueue_timeout("")), "at most 1800 s"),
]


@pytest.mark.parametrize(("source", "says"), [pytest.param(*b[1:], id=b[0]) for b in FLEET_BOUNDS])
def test_the_fleet_health_floor_holds_each_bound_alone(source: Callable[[], Recording], says: str | None) -> None:
    messages = [v.message for v in found(run(source(), policies=[BY_NAME["fleet-health-floor"]]), "fleet-health-floor")]
    if says is None:
        assert messages == []
    else:
        assert len(messages) == 1 and says in messages[0], messages


def test_the_gpu_metrics_requirement_turned_off_lets_a_gpu_operator_without_dcgm_exporter_pass() -> None:
    """requireGpuMetrics is the switch: off, a GPU Operator without dcgm-exporter is not judged at all."""
    source = _fleet("gpu-operator-release", set_path("values.dcgmExporter.enabled", False))()

    def findings(require: bool) -> list[str]:
        settings = {"enforcementLevel": "mandatory", "requireGpuMetrics": require}
        violations, _, _ = run_policies(
            source, resolve_config({"fleet-health-floor": settings}), [BY_NAME["fleet-health-floor"]]
        )
        return [v.message for v in violations]

    assert findings(False) == []
    assert ["runs no dcgm-exporter" in m for m in findings(True)] == [True]


def test_a_runtime_without_the_framework_label_is_not_a_training_runtime() -> None:
    """The validation job's runtime carries no framework label: it restarts nothing and is not judged."""

    def unlabel(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["labels"].pop("trainer.kubeflow.org/framework")
        set_path(MAX_RESTARTS, 0)(inputs)

    source = mutated(_prod(), "training-runtimes-p5-train-torch", unlabel)
    assert found(run(source, policies=[BY_NAME["fleet-health-floor"]]), "fleet-health-floor") == []
