"""What the fleet exports to Prometheus, as data: the DCGM fields we ask the exporter for, the EFA hardware
counters, the Kubernetes namespace of the exporters, and the scrape configuration of the Amazon Managed
Service for Prometheus collector (pure; `components/observability.py` ships it).

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

from typing import Any

import yaml

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

# Pod-role jobs keep only the pods of one exporter, and label every series with its node.
_NODE_RELABEL = {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"}


def _pod_job(name: str, namespace: str, app_label: str, app: str, port: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [namespace]}}],
        "relabel_configs": [
            {"source_labels": [f"__meta_kubernetes_pod_label_{app_label}"], "regex": app, "action": "keep"},
            {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": port, "action": "keep"},
            _NODE_RELABEL,
        ],
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
        _pod_job("dcgm-exporter", GPU_OPERATOR_NAMESPACE, "app", "nvidia-dcgm-exporter", "metrics"),
        _pod_job(
            "node-exporter", MONITORING_NAMESPACE, "app_kubernetes_io_name", "prometheus-node-exporter", "metrics"
        ),
        _pod_job("kube-state-metrics", MONITORING_NAMESPACE, "app_kubernetes_io_name", "kube-state-metrics", "http"),
        {
            **_pod_job("kueue", KUEUE_NAMESPACE, "control_plane", "controller-manager", "metrics"),
            "scheme": "https",
            "authorization": {
                "type": "Bearer",
                "credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            },
            "tls_config": {"insecure_skip_verify": True},
        },
    ]
    if fsx:
        jobs.append(
            _pod_job("yace", MONITORING_NAMESPACE, "app_kubernetes_io_name", "yet-another-cloudwatch-exporter", "http")
        )
    return {"global": {"scrape_interval": f"{scrape_interval_s}s"}, "scrape_configs": jobs}


def scrape_configuration_yaml(scrape_interval_s: int, fsx: bool) -> str:
    return yaml.safe_dump(scrape_configuration(scrape_interval_s, fsx), sort_keys=False)


def yace_config(region: str) -> str:
    """YACE's configuration: the AWS/FSx metrics of the region's file systems, found by their tags."""
    config = {
        "apiVersion": "v1alpha1",
        "sts-region": region,
        "discovery": {
            "jobs": [
                {
                    "type": "AWS/FSx",
                    "regions": [region],
                    "period": FSX_PERIOD_S,
                    "length": 5 * FSX_PERIOD_S,
                    "metrics": [{"name": name, "statistics": [stat]} for name, stat in FSX_METRICS],
                }
            ]
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


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
