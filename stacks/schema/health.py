"""`health`: node monitoring, auto repair, metrics, dashboards and alerts for the EKS GPU fleet.

Defaults suit a reserved fleet; `metrics` decides whether the metrics stack exists and defaults by
environment (on in staging and prod, off in dev), so dev pays only for the node monitoring agent.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from stacks.schema.base import Email, Spec
from stacks.schema.kubernetes import CHART_VERSION, PinnedImage

ADDON_VERSION = r"^v\d+\.\d+\.\d+-eksbuild\.\d+$"

# eks-node-monitoring-agent: UNCONFIRMED for EKS 1.36. v1.6.2-eksbuild.1 is the newest build a public config
# pins (ministryofjustice analytical-platform, next to EKS 1.35); the agent's module is at v1.7.0
# (pkg.go.dev, 2026-08-04). Check: aws eks describe-addon-versions --addon-name eks-node-monitoring-agent
# --kubernetes-version 1.36.
NODE_MONITORING_AGENT_VERSION = "v1.6.2-eksbuild.1"
# Chart pins, read from the charts' Chart.yaml at these tags (prometheus-community/helm-charts tags
# prometheus-node-exporter-4.56.1, kube-state-metrics-8.4.0, prometheus-yet-another-cloudwatch-exporter-0.47.0;
# grafana/helm-charts tag grafana-10.5.15, Grafana 12.3.1).
NODE_EXPORTER_CHART = "4.56.1"
KUBE_STATE_METRICS_CHART = "8.4.0"
YACE_CHART = "0.47.0"
GRAFANA_CHART = "10.5.15"


class NodeRepairSpec(Spec):
    """EKS managed node group auto repair on every GPU and Trainium group (EKS API NodeRepairConfig).

    EKS replaces or reboots a node whose condition from the node monitoring agent stays unhealthy (10 minutes
    for AcceleratedHardwareReady, 30 for the others). On a reservation the replacement launches into the same
    ODCR or Capacity Block, whose slot the terminated instance frees, so repair is paced one node at a time
    and stops when many nodes fail at once: that is a fabric, AMI or driver problem, not a bad GPU."""

    enabled: bool = Field(default=True, description="Auto repair GPU and Trainium node groups.")
    max_parallel_nodes_repaired_count: int = Field(
        default=1,
        ge=1,
        description="Nodes repaired at once (EKS maxParallelNodesRepairedCount, at least 1). One keeps a "
        "reserved group's free slot for the replacement and the rest of the job's nodes untouched.",
    )
    max_unhealthy_node_threshold_percentage: int = Field(
        default=20,
        ge=1,
        le=100,
        description="Stop repairing when more than this percentage of a group is unhealthy (EKS "
        "maxUnhealthyNodeThresholdPercentage, 1-100): many failures at once mean something larger is wrong.",
    )


class HealthSpec(Spec):
    """Fleet health: the EKS node monitoring agent, auto repair, and the metrics, dashboards and alerts."""

    node_monitoring_agent_version: str = Field(
        default=NODE_MONITORING_AGENT_VERSION,
        pattern=ADDON_VERSION,
        description="eks-node-monitoring-agent add-on build (vX.Y.Z-eksbuild.N).",
    )
    node_repair: NodeRepairSpec = Field(default_factory=NodeRepairSpec, description="Auto repair limits.")
    metrics: bool | None = Field(
        default=None,
        description="Amazon Managed Service for Prometheus with its managed collector, exporters, Grafana "
        "dashboards and alert rules. Default: on in staging and prod, off in dev.",
    )
    scrape_interval_s: int = Field(
        default=30, ge=30, le=300, description="Managed collector scrape interval (AMP's minimum is 30 seconds)."
    )
    alert_emails: list[Email] = Field(
        default_factory=list,
        description="E-mail addresses subscribed to the alerts' SNS topic (with health.metrics on: without "
        "metrics there is no topic, and no subscription is made).",
    )
    node_exporter_chart: str = Field(
        default=NODE_EXPORTER_CHART,
        pattern=CHART_VERSION,
        description="Version of the prometheus-node-exporter chart (node metrics; its sidecar adds the EFA counters).",
    )
    kube_state_metrics_chart: str = Field(
        default=KUBE_STATE_METRICS_CHART,
        pattern=CHART_VERSION,
        description="Version of the kube-state-metrics chart (node conditions and pod states as metrics).",
    )
    yace_chart: str = Field(
        default=YACE_CHART,
        pattern=CHART_VERSION,
        description="Version of the YACE chart (prometheus-yet-another-cloudwatch-exporter): FSx CloudWatch metrics.",
    )
    grafana_chart: str = Field(
        default=GRAFANA_CHART,
        pattern=CHART_VERSION,
        description="Version of the grafana chart that serves the dashboards, reading the Prometheus workspace.",
    )
    efa_sidecar_image: PinnedImage = Field(
        default="public.ecr.aws/docker/library/busybox:1.37.0",
        description="Image of node-exporter's EFA counter sidecar (a POSIX shell is all it needs).",
    )

    @model_validator(mode="after")
    def _emails_unique(self) -> Self:
        if len(set(self.alert_emails)) != len(self.alert_emails):
            raise ValueError(f"health.alert_emails has duplicates: {self.alert_emails}")
        return self
