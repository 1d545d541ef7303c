"""The fleet's alert rules: one source for what the stack ships to Amazon Managed Service for Prometheus and
for what `promtool test rules` checks in CI.

`rule_groups(fsx_throughput_mb_s)` builds the rules; `rules_yaml` renders them in Prometheus's rule-file
format, which is also what an AMP rule groups namespace takes (AMP User Guide, "Rules files"). The file
`monitoring/rules.yaml` is the rendering with `REFERENCE_FSX_THROUGHPUT_MB_S`; a test proves it equal to
this module's output, and `monitoring/rules.test.yaml` gives every alert a firing and a non-firing case.
Each stack ships the same rules with its own provisioned Lustre throughput.

Thresholds and why:
- Xid: NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors) marks 48 (double-bit ECC), 63/64 (row
  remapping), 74 (NVLink), 79 (fallen off the bus), 92/94/95 (ECC), 119/120 (GSP) and 140 as hardware or
  driver faults that need the node drained; 13, 31, 43 are application faults and do not page.
- A GPU whose dcgm-exporter series disappear while the node still advertises it is off the bus (Xid 79 is
  not always reported before the device vanishes).
- Node conditions: EKS auto repair acts after 10 minutes (AcceleratedHardwareReady) or 30 minutes (the
  others); a condition still false after 45 minutes means repair did not act (a repair limit, or no capacity
  in the reservation) and a person must look (EKS User Guide, "Automatically repair nodes in EKS clusters").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from components.fleet_metrics import EFA_METRIC, FSX_PERIOD_S, yace_metric

# Hardware and driver Xids that mean the node must be drained (see module docstring).
HARDWARE_XIDS: tuple[int, ...] = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140)
XID_FALLEN_OFF_BUS = 79
# Node conditions the EKS node monitoring agent sets (EKS User Guide, "Detect node health issues").
AGENT_CONDITIONS: tuple[str, ...] = (
    "AcceleratedHardwareReady",
    "NetworkingReady",
    "StorageReady",
    "KernelReady",
    "ContainerRuntimeReady",
)
ACCELERATOR_RESOURCES = "nvidia.com/gpu|aws.amazon.com/neuron"
LUSTRE_FREE_FRACTION = 0.10
LUSTRE_SATURATION_FRACTION = 0.90
REFERENCE_FSX_THROUGHPUT_MB_S = 30469.0  # prod's file system: 124,800 GiB x 250 MB/s/TiB


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    for_: str
    severity: str  # critical: pages; warning: a ticket
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict[str, str])

    def to_rule(self) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity, **self.labels},
            "annotations": {"summary": self.summary, "description": self.description},
        }


def _xid_match(codes: tuple[int, ...]) -> str:
    return " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {code}" for code in codes)


def gpu_alerts() -> list[Alert]:
    hardware = tuple(c for c in HARDWARE_XIDS if c != XID_FALLEN_OFF_BUS)
    return [
        Alert(
            "GpuHardwareXid",
            _xid_match(hardware),
            "1m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported hardware Xid {{ $value }}",
            "A hardware or driver Xid: the node monitoring agent marks AcceleratedHardwareReady false and auto "
            "repair reboots or replaces the node; the job restarts from its last checkpoint.",
        ),
        Alert(
            "GpuDoubleBitEcc",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "0m",
            "critical",
            "Double-bit ECC errors on GPU {{ $labels.gpu }} of {{ $labels.node }}",
            "Uncorrectable memory errors corrupt results; the GPU needs a reset or a row remap.",
        ),
        Alert(
            "GpuFallenOffBus",
            f"DCGM_FI_DEV_XID_ERRORS == {XID_FALLEN_OFF_BUS} or on(node) ("
            'max by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"}) '
            "> count by (node) (DCGM_FI_DEV_GPU_TEMP))",
            "5m",
            "critical",
            "A GPU of {{ $labels.node }} has fallen off the bus",
            "Xid 79, or fewer GPUs report to DCGM than the node advertises.",
        ),
        Alert(
            "GpuNvlinkErrors",
            "increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[15m]) > 100",
            "15m",
            "warning",
            "NVLink CRC errors keep rising on GPU {{ $labels.gpu }} of {{ $labels.node }}",
            "A degrading NVLink slows every collective on the node; drain it at the next checkpoint.",
        ),
    ]


def efa_alerts() -> list[Alert]:
    errors = "retrans_timeout_events|unresponsive_remote_events|impaired_remote_conn_events"
    return [
        Alert(
            "EfaDeviceErrors",
            f'sum by (node, device) (increase({EFA_METRIC}{{counter=~"{errors}"}}[10m])) > 0',
            "5m",
            "warning",
            "EFA device {{ $labels.device }} on {{ $labels.node }} reports timeouts or unresponsive peers",
            "Retransmit timeouts and unresponsive remotes point at a degraded link or peer node.",
        ),
        Alert(
            "TrainingOverSockets",
            "avg by (node) (DCGM_FI_DEV_GPU_UTIL) > 50"
            f' and on(node) sum by (node) (rate({EFA_METRIC}{{counter=~"tx_bytes|rdma_write_bytes"}}[5m])) < 1e6'
            ' and on(node) sum by (node) (rate(node_network_transmit_bytes_total{device!="lo"}[5m])) > 1e9',
            "10m",
            "warning",
            "{{ $labels.node }} is busy on GPUs and the network but not on EFA",
            "NCCL fell back to TCP sockets: the pod asked for no vpc.amazonaws.com/efa devices or no hugepages.",
        ),
    ]


def lustre_alerts(fsx_throughput_mb_s: float) -> list[Alert]:
    read, write = yace_metric("DataReadBytes", "Sum"), yace_metric("DataWriteBytes", "Sum")
    limit_bytes_s = LUSTRE_SATURATION_FRACTION * fsx_throughput_mb_s * 1e6
    return [
        Alert(
            "LustreNearlyFull",
            'min by (device) (node_filesystem_avail_bytes{fstype="lustre"} / '
            f'node_filesystem_size_bytes{{fstype="lustre"}}) < {LUSTRE_FREE_FRACTION}',
            "15m",
            "warning",
            "FSx for Lustre {{ $labels.device }} has under 10% free",
            "Checkpoints fail when it fills: delete old ones or raise storage_capacity_gib.",
        ),
        Alert(
            "LustreThroughputSaturated",
            f"(sum({read}) + sum({write})) / {FSX_PERIOD_S} > {limit_bytes_s:.0f}",
            "30m",
            "warning",
            "FSx for Lustre throughput is above 90% of what is provisioned",
            f"Provisioned {fsx_throughput_mb_s:,.0f} MB/s; data loading and checkpoints queue behind each other.",
        ),
    ]


def node_alerts() -> list[Alert]:
    conditions = "|".join(AGENT_CONDITIONS)
    return [
        Alert(
            "NodeUnhealthyNotRepaired",
            f'kube_node_status_condition{{condition=~"{conditions}",status="false"}} == 1',
            "45m",
            "critical",
            "{{ $labels.node }} has been {{ $labels.condition }}=false for 45 minutes",
            "Auto repair should have acted: a repair limit stopped it or the reservation has no free capacity.",
        ),
        Alert(
            "NodeNotReady",
            'kube_node_status_condition{condition="Ready",status="true"} == 0',
            "45m",
            "critical",
            "{{ $labels.node }} has not been Ready for 45 minutes",
            "Auto repair replaces NotReady nodes after 30 minutes; this one is stuck.",
        ),
    ]


def queue_alerts() -> list[Alert]:
    resources = f'resource=~"{ACCELERATOR_RESOURCES}"'
    return [
        Alert(
            "WorkloadsPendingDespiteQuota",
            'sum by (cluster_queue) (kueue_pending_workloads{status="active"}) > 0 and on(cluster_queue) '
            f"(sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{{resources}}}) < "
            f"sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{resources}}}))",
            "30m",
            "warning",
            "Workloads wait in {{ $labels.cluster_queue }} while its accelerator quota is not used up",
            "Quota is free but nothing is admitted: nodes are missing, unhealthy or cordoned.",
        ),
    ]


def alert_groups(fsx_throughput_mb_s: float | None, gpus: bool = True) -> dict[str, list[Alert]]:
    """The alerts by rule group; the GPU and EFA groups only where dcgm-exporter runs (the GPU Operator on the
    EKS cluster's NVIDIA nodes: a stack whose GPUs are all Slurm HyperPod nodes has no series for them), the
    Lustre group only with a file system."""
    groups = {"gpu": gpu_alerts(), "efa": efa_alerts()} if gpus else {}
    groups |= {"nodes": node_alerts(), "queues": queue_alerts()}
    if fsx_throughput_mb_s is not None:
        groups["lustre"] = lustre_alerts(fsx_throughput_mb_s)
    return groups


def alerts(fsx_throughput_mb_s: float | None, gpus: bool = True) -> list[Alert]:
    """Every alert the stack ships."""
    return [alert for group in alert_groups(fsx_throughput_mb_s, gpus).values() for alert in group]


def rule_groups(fsx_throughput_mb_s: float | None, gpus: bool = True) -> dict[str, Any]:
    return {
        "groups": [
            {"name": f"trainstack-{name}", "rules": [a.to_rule() for a in members]}
            for name, members in alert_groups(fsx_throughput_mb_s, gpus).items()
        ]
    }


def rules_yaml(fsx_throughput_mb_s: float | None, gpus: bool = True) -> str:
    header = "# Generated by components/health/alert_rules.py (python -m components.health.alert_rules); do not edit.\n"
    return header + yaml.safe_dump(rule_groups(fsx_throughput_mb_s, gpus), sort_keys=False, width=200)


if __name__ == "__main__":
    print(rules_yaml(REFERENCE_FSX_THROUGHPUT_MB_S), end="")
