"""The fleet's Grafana dashboards as code (grafana-foundation-sdk builders, not hand-written JSON).

Four dashboards, one per place a person looks when training slows or fails: GPUs (DCGM and the node
monitoring agent's conditions), fabric (EFA hardware counters), storage (FSx for Lustre), queues (Kueue).
Every query reads the Amazon Managed Service for Prometheus data source the Grafana release provisions
(`DATASOURCE_UID`), and only metrics the managed collector scrapes (`fleet_metrics.scraped_metric_names`),
which the tests check. `components/health/observability.py` ships each as a ConfigMap for Grafana's dashboard sidecar.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from components.fleet_metrics import EFA_METRIC, FSX_PERIOD_S, yace_metric
from components.health.alert_rules import AGENT_CONDITIONS

DATASOURCE_UID = "amp"
_DATASOURCE = DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)


def _query(expr: str, legend: str, ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref)


def _series(title: str, unit: str, *queries: prometheus.Dataquery) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).unit(unit).datasource(_DATASOURCE).span(12).height(8)
    for query in queries:
        panel = panel.with_target(query)
    return panel


def _stat(title: str, unit: str, query: prometheus.Dataquery) -> stat.Panel:
    return stat.Panel().title(title).unit(unit).datasource(_DATASOURCE).span(6).height(4).with_target(query)


def _dashboard(uid: str, title: str, rows: list[tuple[str, list[Any]]]) -> dict[str, Any]:
    builder = Dashboard(title).uid(uid).tags(["trainstack"]).refresh("1m").time("now-6h", "now")
    panel_id = 1
    for row_title, panels in rows:
        builder = builder.with_row(Row(row_title).id(panel_id))
        panel_id += 1
        for panel in panels:
            builder = builder.with_panel(panel.id(panel_id))
            panel_id += 1
    return json.loads(JSONEncoder(sort_keys=True).encode(builder.build()))


def gpu_dashboard() -> dict[str, Any]:
    return _dashboard(
        "trainstack-gpu",
        "trainstack / GPUs",
        [
            ("Fleet health", _fleet_health_panels()),
            ("Utilisation and memory", _utilisation_panels()),
            ("Errors, power and thermal", _error_panels()),
        ],
    )


def _fleet_health_panels() -> list[Any]:
    """The fleet at a glance: nodes the monitoring agent marks failing, GPUs reporting, ECC and Xid."""
    conditions = "|".join(AGENT_CONDITIONS)
    return [
        _stat(
            "Nodes with a failing condition",
            "none",
            _query(
                f'count(kube_node_status_condition{{condition=~"{conditions}",status="false"}} == 1) or vector(0)',
                "unhealthy",
            ),
        ),
        _stat(
            "GPUs reporting",
            "none",
            _query("count(DCGM_FI_DEV_GPU_TEMP)", "GPUs"),
        ),
        _stat(
            "Double-bit ECC (1h)",
            "none",
            _query("sum(increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]))", "DBE"),
        ),
        _stat("Last Xid", "none", _query("max(DCGM_FI_DEV_XID_ERRORS)", "Xid")),
        _series(
            "Node conditions from the monitoring agent",
            "none",
            _query(
                f'kube_node_status_condition{{condition=~"{conditions}",status="false"}} == 1',
                "{{node}} {{condition}}",
            ),
        ),
    ]


def _utilisation_panels() -> list[Any]:
    return [
        _series("GPU utilisation", "percent", _query("avg by (node) (DCGM_FI_DEV_GPU_UTIL)", "{{node}}")),
        _series(
            "Tensor pipe active",
            "percentunit",
            _query("avg by (node) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)", "{{node}}"),
        ),
        _series(
            "Framebuffer used",
            "percentunit",
            _query(
                "sum by (node) (DCGM_FI_DEV_FB_USED) / sum by (node) (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
                "{{node}}",
            ),
        ),
    ]


def _error_panels() -> list[Any]:
    return [
        _series("Xid (last code)", "none", _query("DCGM_FI_DEV_XID_ERRORS > 0", "{{node}} GPU {{gpu}}")),
        _series(
            "NVLink CRC errors",
            "cps",
            _query(
                "sum by (node) (rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[5m]))",
                "{{node}}",
            ),
        ),
        _series(
            "NVLink bandwidth",
            "Bps",
            _query("sum by (node) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL[5m]))", "{{node}}"),
        ),
        _series("Power", "watt", _query("sum by (node) (DCGM_FI_DEV_POWER_USAGE)", "{{node}}")),
        _series("GPU temperature", "celsius", _query("max by (node) (DCGM_FI_DEV_GPU_TEMP)", "{{node}}")),
        _series(
            "Thermal throttling",
            "percentunit",
            _query("sum by (node) (rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m])) / 1e6", "{{node}}"),
        ),
    ]


def fabric_dashboard() -> dict[str, Any]:
    def counter_rate(counter: str, legend: str = "{{node}} {{device}}") -> prometheus.Dataquery:
        return _query(f'rate({EFA_METRIC}{{counter="{counter}"}}[5m])', legend)

    return _dashboard(
        "trainstack-fabric",
        "trainstack / EFA fabric",
        [
            (
                "Throughput per device",
                [
                    _series("EFA transmit", "Bps", counter_rate("tx_bytes")),
                    _series("EFA receive", "Bps", counter_rate("rx_bytes")),
                    _series(
                        "RDMA read and write",
                        "Bps",
                        _query(
                            f'sum by (node) (rate({EFA_METRIC}{{counter=~"rdma_read_bytes|rdma_write_bytes"}}[5m]))',
                            "{{node}}",
                        ),
                    ),
                    _series(
                        "ENA transmit (TCP: NCCL's fallback)",
                        "Bps",
                        _query('sum by (node) (rate(node_network_transmit_bytes_total{device!="lo"}[5m]))', "{{node}}"),
                    ),
                ],
            ),
            (
                "Retransmits and errors",
                [
                    _series("Retransmitted packets", "pps", counter_rate("retrans_pkts")),
                    _series("Retransmit timeouts", "cps", counter_rate("retrans_timeout_events")),
                    _series(
                        "Unresponsive or impaired peers",
                        "cps",
                        _query(
                            f'rate({EFA_METRIC}{{counter=~"unresponsive_remote_events|impaired_remote_conn_events"}}[5m])',
                            "{{node}} {{device}} {{counter}}",
                        ),
                    ),
                    _series("Receive drops", "pps", counter_rate("rx_drops")),
                ],
            ),
        ],
    )


def storage_dashboard() -> dict[str, Any]:
    read, write = yace_metric("DataReadBytes", "Sum"), yace_metric("DataWriteBytes", "Sum")
    return _dashboard(
        "trainstack-storage",
        "trainstack / FSx for Lustre",
        [
            (
                "Throughput and metadata",
                [
                    _series(
                        "Read and write throughput",
                        "Bps",
                        _query(f"sum({read}) / {FSX_PERIOD_S}", "read", "A"),
                        _query(f"sum({write}) / {FSX_PERIOD_S}", "write", "B"),
                    ),
                    _series(
                        "Metadata operations",
                        "ops",
                        _query(f"sum({yace_metric('MetadataOperations', 'Sum')}) / {FSX_PERIOD_S}", "metadata"),
                    ),
                    _series(
                        "Data operations",
                        "ops",
                        _query(
                            f"(sum({yace_metric('DataReadOperations', 'Sum')}) + "
                            f"sum({yace_metric('DataWriteOperations', 'Sum')})) / {FSX_PERIOD_S}",
                            "read + write",
                        ),
                    ),
                ],
            ),
            (
                "Capacity",
                [
                    _stat(
                        "Free capacity",
                        "bytes",
                        _query(f"min({yace_metric('FreeDataStorageCapacity', 'Average')})", "free"),
                    ),
                    _series(
                        "Free share seen by clients",
                        "percentunit",
                        _query(
                            'min by (device) (node_filesystem_avail_bytes{fstype="lustre"} / '
                            'node_filesystem_size_bytes{fstype="lustre"})',
                            "{{device}}",
                        ),
                    ),
                ],
            ),
        ],
    )


def queue_dashboard() -> dict[str, Any]:
    accelerators = 'resource=~"nvidia.com/gpu|aws.amazon.com/neuron"'
    return _dashboard(
        "trainstack-queues",
        "trainstack / Kueue queues",
        [
            (
                "Workloads",
                [
                    _series(
                        "Pending workloads",
                        "none",
                        _query(
                            "sum by (cluster_queue, status) (kueue_pending_workloads)", "{{cluster_queue}} {{status}}"
                        ),
                    ),
                    _series(
                        "Admitted, running workloads",
                        "none",
                        _query("sum by (cluster_queue) (kueue_admitted_active_workloads)", "{{cluster_queue}}"),
                    ),
                ],
            ),
            (
                "Quota",
                [
                    _series(
                        "Accelerator quota in use",
                        "percentunit",
                        _query(
                            f"sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{{accelerators}}}) / "
                            f"sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{accelerators}}})",
                            "{{cluster_queue}}",
                        ),
                    ),
                ],
            ),
        ],
    )


def dashboards(fsx: bool) -> dict[str, dict[str, Any]]:
    """Every dashboard by file name; the storage one only with a Lustre file system."""
    found = {"gpu.json": gpu_dashboard(), "fabric.json": fabric_dashboard(), "queues.json": queue_dashboard()}
    if fsx:
        found["storage.json"] = storage_dashboard()
    return found
