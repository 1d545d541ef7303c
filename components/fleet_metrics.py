"""What the fleet exports to Prometheus, as data: the DCGM fields we ask the exporter for, the EFA hardware
counters, the Kubernetes namespace of the exporters, and the scrape configuration of the Amazon Managed
Service for Prometheus collector (pure; `components/health/observability.py` ships it).

Metric sources and their names:
- GPUs: the GPU Operator's dcgm-exporter with our field list (`DCGM_FIELDS`, shipped as the operator's
  `dcgmExporter.config` ConfigMap, chart key `dcgmExporter.config.{name,create,data}` in gpu-operator v25.3.4
  values.yaml). Metric names are the DCGM field names; labels `gpu`, `UUID`, `Hostname`, `modelName`.
- EFA: the hardware counters the EFA kernel driver writes under
  /sys/class/infiniband/<device>/ports/<port>/hw_counters/ (tx_bytes, rx_bytes, retrans_*, ...; AWS EFA
  docs "Monitor an EFA"). A sidecar of node-exporter turns them into `efa_hw_counter_total{device,port,counter}`
  through node-exporter's textfile collector (node-exporter's own infiniband collector reads the InfiniBand
  `counters/` directory, which EFA devices do not have).
- Lustre: free and total bytes of the client mounts from node-exporter's filesystem collector
  (`node_filesystem_*{fstype="lustre"}`), and the file system's CloudWatch metrics (AWS/FSx) through YACE as
  `aws_fsx_<metric>_<statistic>` (YACE's naming: snake-cased metric name plus statistic).
- Scheduler: Kueue's own metrics (pkg/metrics/metrics.go at v0.14.3: `kueue_pending_workloads{cluster_queue,
  status}`, `kueue_cluster_queue_resource_usage` and `kueue_cluster_queue_nominal_quota{cohort,cluster_queue,
  flavor,resource}`, `kueue_admitted_active_workloads`) on its HTTPS metrics service (port 8443, authorized
  by a bearer token).
- Node conditions: kube-state-metrics `kube_node_status_condition{node,condition,status}`, which carries the
  conditions the EKS node monitoring agent sets (AcceleratedHardwareReady, NetworkingReady, ...).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from typing_extensions import override

MONITORING_NAMESPACE = "trainstack-monitoring"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
KUEUE_NAMESPACE = "kueue-system"
DCGM_CONFIG_MAP = "trainstack-dcgm-metrics"

# (DCGM field, Prometheus type, help): the field list dcgm-exporter exports (its CSV format: field, type, help).
# Field names are DCGM's (NVIDIA DCGM API reference, dcgm_fields.h).
DCGM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
)

EFA_METRIC = "efa_hw_counter_total"
EFA_TEXTFILE_DIR = "/run/efa-textfile"
EFA_SCRAPE_PERIOD_S = 15

# CloudWatch AWS/FSx metrics YACE exports for Lustre (FSx for Lustre User Guide, "Amazon FSx for Lustre
# metrics"): name and statistic. Sums are per `FSX_PERIOD_S` seconds.
FSX_METRICS: tuple[tuple[str, str], ...] = (
    ("DataReadBytes", "Sum"),
    ("DataWriteBytes", "Sum"),
    ("DataReadOperations", "Sum"),
    ("DataWriteOperations", "Sum"),
    ("MetadataOperations", "Sum"),
    ("FreeDataStorageCapacity", "Average"),
)
FSX_PERIOD_S = 60


def yace_metric(name: str, statistic: str) -> str:
    """YACE's Prometheus name for an AWS/FSx metric: `aws_fsx_` + snake_case name + `_` + statistic.

    >>> yace_metric("FreeDataStorageCapacity", "Average")
    'aws_fsx_free_data_storage_capacity_average'
    """
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    return f"aws_fsx_{snake}_{statistic.lower()}"


def dcgm_metrics_csv() -> str:
    """The dcgm-exporter field list in its CSV format (field, type, help)."""
    return "\n".join(f"{field}, {kind}, {help_text}" for field, kind, help_text in DCGM_FIELDS) + "\n"


def efa_textfile_script(interval_s: int = EFA_SCRAPE_PERIOD_S) -> str:
    """The sidecar's loop: every `interval_s` seconds, write every EFA device's hw_counters as one textfile
    (`efa.prom`), renamed into place so node-exporter never reads half a file. POSIX sh (busybox)."""
    return (
        "set -eu\n"
        f"out={EFA_TEXTFILE_DIR}/efa.prom\n"
        "while true; do\n"
        '  tmp="$out.$$"\n'
        f'  echo "# TYPE {EFA_METRIC} counter" > "$tmp"\n'
        "  for f in /host/sys/class/infiniband/*/ports/*/hw_counters/*; do\n"
        '    [ -f "$f" ] || continue\n'
        "    counter=${f##*/}; rest=${f%/hw_counters/*}; port=${rest##*/}; dev=${rest%/ports/*}; dev=${dev##*/}\n"
        f'    echo "{EFA_METRIC}{{device=\\"$dev\\",port=\\"$port\\",counter=\\"$counter\\"}} $(cat "$f")" >> "$tmp"\n'
        "  done\n"
        '  mv "$tmp" "$out"\n'
        f"  sleep {interval_s}\n"
        "done\n"
    )


# ---------------------------------------------------------------------------------------- scrape config

# The pod label each exporter's chart sets on its pods, at the pinned chart version (the facts in
# trainstack/contracts/facts/workloads/, rendered from the chart; the alerts journey holds these against them).
DCGM_POD_LABEL = ("app", "nvidia-dcgm-exporter")  # gpu-operator v25.3.4 assets/state-dcgm-exporter
NODE_EXPORTER_POD_LABEL = ("app.kubernetes.io/name", "prometheus-node-exporter")
KUBE_STATE_METRICS_POD_LABEL = ("app.kubernetes.io/name", "kube-state-metrics")
KUEUE_POD_LABEL = ("control-plane", "controller-manager")
YACE_POD_LABEL = ("app.kubernetes.io/name", "prometheus-yet-another-cloudwatch-exporter")


def _meta_label(label: str) -> str:
    """Prometheus's discovery label for a pod label: every character not valid in a label name becomes `_`
    (Prometheus docs, kubernetes_sd_config role pod: `__meta_kubernetes_pod_label_<labelname>`)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _pod_job(name: str, namespace: str, pod_label: tuple[str, str], port: str, per_node: bool) -> dict[str, Any]:
    """Keep the pods of one exporter (by its chart's pod label) and the container port it serves on. A per-node
    exporter (a DaemonSet reporting on its own node) labels its series with the pod's node; a cluster-wide one
    (kube-state-metrics) must not: its series carry the node they are about as their own `node` label, which a
    target label of the same name would overwrite (Prometheus docs, scrape_config `honor_labels`: a conflicting
    scraped label is renamed to `exported_node`)."""
    relabels: list[dict[str, Any]] = [
        {"source_labels": [_meta_label(pod_label[0])], "regex": pod_label[1], "action": "keep"},
        {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": port, "action": "keep"},
    ]
    if per_node:
        relabels.append({"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"})
    return {
        "job_name": name,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [namespace]}}],
        "relabel_configs": relabels,
    }


def scrape_configuration(scrape_interval_s: int, fsx: bool) -> dict[str, Any]:
    """The managed collector's Prometheus configuration: DCGM, node-exporter (with the EFA textfile),
    kube-state-metrics, Kueue, and YACE when a Lustre file system exists.

    AMP User Guide, "Using an AWS managed collector": on a cluster with API authentication the scraper gets
    an access entry policy for discovery and `/metrics`; the scrape interval may not be under 30 seconds; the
    only authorization allowed is a Bearer token read from the service-account token file. Kueue's metrics
    endpoint checks such a token, so that job sends it and skips verification of Kueue's self-signed serving
    certificate (the chart's own ServiceMonitor does the same).
    """
    jobs: list[dict[str, Any]] = [
        _pod_job("dcgm-exporter", GPU_OPERATOR_NAMESPACE, DCGM_POD_LABEL, "metrics", per_node=True),
        _pod_job("node-exporter", MONITORING_NAMESPACE, NODE_EXPORTER_POD_LABEL, "metrics", per_node=True),
        _pod_job("kube-state-metrics", MONITORING_NAMESPACE, KUBE_STATE_METRICS_POD_LABEL, "http", per_node=False),
        {
            **_pod_job("kueue", KUEUE_NAMESPACE, KUEUE_POD_LABEL, "metrics", per_node=False),
            "scheme": "https",
            "authorization": {
                "type": "Bearer",
                "credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            },
            "tls_config": {"insecure_skip_verify": True},
        },
    ]
    if fsx:
        jobs.append(_pod_job("yace", MONITORING_NAMESPACE, YACE_POD_LABEL, "http", per_node=False))
    return {"global": {"scrape_interval": f"{scrape_interval_s}s"}, "scrape_configs": jobs}


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: an object used twice is written twice. The managed collector's
    documentation describes a Prometheus scrape configuration and says nothing of YAML aliases, so none are sent
    (docs/health.md, "The collector's configuration")."""

    @override
    def ignore_aliases(self, data: Any) -> bool:
        return True


def plain_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False)


def scrape_configuration_yaml(scrape_interval_s: int, fsx: bool) -> str:
    return plain_yaml(scrape_configuration(scrape_interval_s, fsx))


def yace_config(region: str, file_system_name: str) -> str:
    """YACE's configuration: the AWS/FSx metrics of the stack's own file system only, found by its Name tag
    (YACE v0.67.0 pkg/config/scrapeconf.go: `searchTags`, each value a regular expression; without one a
    discovery job exports every file system in the region, and the alerts' sums add them all up)."""
    config = {
        "apiVersion": "v1alpha1",
        "sts-region": region,
        "discovery": {
            "jobs": [
                {
                    "type": "AWS/FSx",
                    "regions": [region],
                    "searchTags": [{"key": "Name", "value": f"^{re.escape(file_system_name)}$"}],
                    "period": FSX_PERIOD_S,
                    "length": 5 * FSX_PERIOD_S,
                    "metrics": [{"name": name, "statistics": [stat]} for name, stat in FSX_METRICS],
                }
            ]
        },
    }
    return plain_yaml(config)


def scraped_metric_names() -> frozenset[str]:
    """Every metric name the scrape configuration brings in that dashboards and alerts may use."""
    names = {field for field, _, _ in DCGM_FIELDS}
    names.add(EFA_METRIC)
    names |= {yace_metric(name, stat) for name, stat in FSX_METRICS}
    names |= {
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
        "node_network_transmit_bytes_total",
        "node_network_receive_bytes_total",
        "kube_node_status_condition",
        "kube_node_status_capacity",
        "kube_node_spec_unschedulable",
        "kueue_pending_workloads",
        "kueue_admitted_active_workloads",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_nominal_quota",
        "up",
    }
    return frozenset(names)
