"""`FleetHealth`: what watches the EKS GPU fleet, and who is told.

- Always: the EKS node monitoring agent add-on (pinned; it tolerates every taint so it runs on GPU and
  Trainium nodes). It reads kernel, driver, DCGM and network logs and sets node conditions
  (AcceleratedHardwareReady, NetworkingReady, StorageReady, KernelReady, ContainerRuntimeReady); node auto
  repair on the node groups (components/gpu/gpu_nodes.py) acts on them. It needs no AWS permissions: it writes
  conditions and events through the Kubernetes API (EKS User Guide, "Detect node health issues").
- With metrics on: an Amazon Managed Service for Prometheus workspace fed by an AWS managed collector (no
  Prometheus server to run, size or upgrade; the collector scrapes from ENIs in the private subnets), the
  exporters it scrapes (dcgm-exporter from the GPU Operator, node-exporter with an EFA counter sidecar,
  kube-state-metrics, Kueue itself, YACE for the file system's CloudWatch metrics), the alert rules
  (components/health/alert_rules.py) with the workspace's alert manager routing them to an SNS topic, and an
  in-cluster Grafana that reads the workspace with SigV4 and loads the dashboards (components/health/dashboards.py)
  from ConfigMaps. Grafana runs in the cluster rather than as Amazon Managed Grafana because AMG needs IAM
  Identity Center (or SAML) and per-user licences before anyone sees a panel; the same dashboards import into
  AMG unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from components.fleet_metrics import (
    EFA_TEXTFILE_DIR,
    MONITORING_NAMESPACE,
    efa_textfile_script,
    scrape_configuration_yaml,
    yace_config,
)
from components.health.alert_rules import alerts, rules_yaml
from components.health.dashboards import DATASOURCE_UID, dashboards
from components.namespaces import system_namespace_labels
from components.naming import child_name, physical_name
from components.pod_identity import pod_identity_role
from components.security.telemetry_key import alert_topic_name
from components.storage.lustre import file_system_name
from stacks.schema import HealthSpec

NODE_MONITORING_AGENT = "eks-node-monitoring-agent"
PROMETHEUS_COMMUNITY = "https://prometheus-community.github.io/helm-charts"
GRAFANA_REPOSITORY = "https://grafana.github.io/helm-charts"
GRAFANA_SERVICE_ACCOUNT = "grafana"
YACE_SERVICE_ACCOUNT = "yace"
DASHBOARD_LABEL = "grafana_dashboard"
# Actions Grafana needs to query the workspace (AMP User Guide, "IAM permissions": AmazonPrometheusQueryAccess).
AMP_QUERY_ACTIONS = ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"]
# YACE's permissions (YACE README, "Authentication"): list and read metrics, find resources by tag.
YACE_ACTIONS = ["cloudwatch:GetMetricData", "cloudwatch:ListMetrics", "tag:GetResources"]


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """The add-on's configuration values: run on every node, whatever its taints (the agent's chart key
    `nodeAgent.tolerations`, EKS User Guide "Configure the Amazon EKS node monitoring agent")."""
    return {"nodeAgent": {"tolerations": [{"operator": "Exists"}]}}


def alert_manager_definition(topic_arn: str, region: str) -> str:
    """The workspace's alert manager: every alert to one SNS topic, grouped per alert and node, critical
    alerts repeated hourly until resolved (AMP User Guide, "Alert manager configuration": sns_configs)."""
    receiver = {
        "name": "sns",
        "sns_configs": [
            {
                "topic_arn": topic_arn,
                "sigv4": {"region": region},
                "subject": "trainstack {{ .CommonLabels.alertname }}",
                "attributes": {"severity": "{{ .CommonLabels.severity }}"},
            }
        ],
    }
    config = {
        "route": {
            "receiver": "sns",
            "group_by": ["alertname", "node"],
            "group_wait": "30s",
            "repeat_interval": "4h",
            "routes": [{"matchers": ['severity="critical"'], "receiver": "sns", "repeat_interval": "1h"}],
        },
        "receivers": [receiver],
    }
    return yaml.safe_dump({"alertmanager_config": yaml.safe_dump(config, sort_keys=False)}, sort_keys=False)


def topic_policy(topic_arn: str, workspace_arn: str, account_id: str) -> dict[str, Any]:
    """Only this account's workspace may publish to the alert topic (AMP User Guide, "Set up SNS")."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AmpAlertManagerPublishes",
                "Effect": "Allow",
                "Principal": {"Service": "aps.amazonaws.com"},
                "Action": ["sns:Publish", "sns:GetTopicAttributes"],
                "Resource": topic_arn,
                "Condition": {
                    "ArnEquals": {"aws:SourceArn": workspace_arn},
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            }
        ],
    }


def node_exporter_values(spec: HealthSpec) -> dict[str, Any]:
    """node-exporter on every node (all taints tolerated), its textfile collector reading the EFA sidecar's
    file. Keys from prometheus-node-exporter 4.56.1 values.yaml: tolerations, extraArgs, sidecars,
    sidecarVolumeMount (an emptyDir shared with node-exporter), sidecarHostVolumeMounts."""
    return {
        "tolerations": [{"operator": "Exists"}],
        "extraArgs": [f"--collector.textfile.directory={EFA_TEXTFILE_DIR}"],
        "sidecars": [
            {
                "name": "efa-counters",
                "image": spec.efa_sidecar_image,
                "command": ["/bin/sh", "-c", efa_textfile_script()],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
            }
        ],
        "sidecarVolumeMount": [{"name": "efa-textfile", "mountPath": EFA_TEXTFILE_DIR, "readOnly": False}],
        "sidecarHostVolumeMounts": [
            {"name": "host-sys", "hostPath": "/sys", "mountPath": "/host/sys", "readOnly": True}
        ],
    }


def workspace_endpoint(region: str, workspace_id: str) -> str:
    """The workspace's Prometheus-compatible endpoint (AMP User Guide, "Query your Prometheus metrics")."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}"


def grafana_values(endpoint: str, region: str) -> dict[str, Any]:
    """Grafana with the workspace as its default data source (SigV4 through Pod Identity) and the dashboard
    sidecar. Keys from grafana 10.5.15 values.yaml: serviceAccount, rbac, grafana.ini, datasources, sidecar.

    `rbac.namespaced`: the chart's default (false) gives the service account a ClusterRole that reads every Secret
    and ConfigMap of the cluster, for the sidecar; namespaced, a Role in Grafana's own namespace, where the
    dashboards' ConfigMaps are and where the sidecar looks when `searchNamespace` is unset."""
    return {
        "serviceAccount": {"create": True, "name": GRAFANA_SERVICE_ACCOUNT},
        "rbac": {"namespaced": True},
        "grafana.ini": {"auth": {"sigv4_auth_enabled": True}},
        "datasources": {
            "datasources.yaml": {
                "apiVersion": 1,
                "datasources": [
                    {
                        "name": "Amazon Managed Prometheus",
                        "uid": DATASOURCE_UID,
                        "type": "prometheus",
                        "url": endpoint,
                        "access": "proxy",
                        "isDefault": True,
                        "jsonData": {"sigV4Auth": True, "sigV4AuthType": "default", "sigV4Region": region},
                    }
                ],
            }
        },
        "sidecar": {"dashboards": {"enabled": True, "label": DASHBOARD_LABEL, "labelValue": "1"}},
    }


@dataclass
class FleetHealthArgs:
    spec: HealthSpec
    base_name: str
    """Physical base name of the stack."""
    region: str
    cluster_name: pulumi.Input[str]
    cluster_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    """Private subnets for the managed collector's ENIs."""
    security_group_ids: Sequence[pulumi.Input[str]]
    """The cluster security group: the collector reaches pods and the API like a node."""
    metrics: bool
    """Whether the metrics stack exists (`StackConfig.metrics_enabled`)."""
    fsx_throughput_mb_s: float | None = None
    """The Lustre file system's provisioned throughput, or None without one (no YACE, no Lustre alerts)."""
    gpu_metrics: bool = True
    """Whether dcgm-exporter runs on the cluster (the GPU Operator): without it, no GPU or EFA alerts."""
    alert_kms_key_arn: pulumi.Input[str] | None = None
    """The telemetry key (components/security/telemetry_key.py) the alert topic is encrypted with; its policy lets AMP
    publish."""
    after: list[pulumi.Resource] = field(default_factory=list[pulumi.Resource])
    """What must exist first: the system node group (Deployments) and the charts whose metrics are scraped."""


class FleetHealth(pulumi.ComponentResource):
    """The node monitoring agent, and with metrics on: AMP, its collector, exporters, alerts and Grafana."""

    node_monitoring_agent: aws.eks.Addon
    workspace_id: pulumi.Output[str] | None
    alert_topic_arn: pulumi.Output[str] | None
    alert_names: list[str]
    dashboard_titles: list[str]

    def __init__(self, name: str, args: FleetHealthArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:health:FleetHealth", name, None, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        self.node_monitoring_agent = aws.eks.Addon(
            child_name(name, "node-monitoring-agent"),
            aws.eks.AddonArgs(
                cluster_name=args.cluster_name,
                addon_name=NODE_MONITORING_AGENT,
                addon_version=spec.node_monitoring_agent_version,
                configuration_values=json.dumps(node_monitoring_agent_configuration()),
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
            ),
            opts=child,
        )
        self.workspace_id = None
        self.alert_topic_arn = None
        self.alert_names = []
        self.dashboard_titles = []
        if args.metrics:
            self._metrics(name, args, child)
        self.register_outputs(
            {
                "node_monitoring_agent": self.node_monitoring_agent.addon_version,
                "workspace_id": self.workspace_id,
                "alert_topic_arn": self.alert_topic_arn,
                "alert_names": self.alert_names,
                "dashboard_titles": self.dashboard_titles,
            }
        )

    def _metrics(self, name: str, args: FleetHealthArgs, child: pulumi.ResourceOptions) -> None:
        """The metrics pipeline, in the order its parts depend on each other: the AMP workspace and its alerting,
        the in-cluster exporters, the managed collector that scrapes them, then Grafana reading the workspace."""
        parent = pulumi.ResourceOptions(parent=self)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        fsx = args.fsx_throughput_mb_s is not None
        workspace = self._workspace_and_alerting(name, args, parent, account_id)
        namespace, exporters = self._exporters(name, args, child, parent, fsx)
        self._collector(name, args, workspace, exporters, fsx)
        self._grafana(name, args, workspace, namespace, parent, fsx)

    def _workspace_and_alerting(
        self, name: str, args: FleetHealthArgs, parent: pulumi.ResourceOptions, account_id: pulumi.Output[str]
    ) -> aws.amp.Workspace:
        """The AMP workspace, its alert rules and the Alertmanager that sends what fires to an SNS topic."""
        workspace = aws.amp.Workspace(
            child_name(name, "amp"), aws.amp.WorkspaceArgs(alias=physical_name(args.base_name, "metrics")), opts=parent
        )
        self.workspace_id = workspace.id
        self.alert_names = [alert.name for alert in alerts(args.fsx_throughput_mb_s, args.gpu_metrics)]
        aws.amp.RuleGroupNamespace(
            child_name(name, "alert-rules"),
            aws.amp.RuleGroupNamespaceArgs(
                name="trainstack-fleet",
                workspace_id=workspace.id,
                data=rules_yaml(args.fsx_throughput_mb_s, args.gpu_metrics),
            ),
            opts=parent,
        )
        # Encrypted with the telemetry key, whose policy lets AMP publish to this topic only: the AWS managed key for
        # SNS would lock AMP out (its policy cannot name aps.amazonaws.com).
        topic = aws.sns.Topic(
            child_name(name, "alerts"),
            aws.sns.TopicArgs(name=alert_topic_name(args.base_name), kms_master_key_id=args.alert_kms_key_arn),
            opts=parent,
        )
        self.alert_topic_arn = topic.arn
        policy = aws.sns.TopicPolicy(
            child_name(name, "alerts-policy"),
            aws.sns.TopicPolicyArgs(
                arn=topic.arn,
                policy=pulumi.Output.json_dumps(
                    pulumi.Output.all(topic.arn, workspace.arn, account_id).apply(lambda v: topic_policy(*v))
                ),
            ),
            opts=parent,
        )
        for index, email in enumerate(args.spec.alert_emails):
            aws.sns.TopicSubscription(
                child_name(name, f"alerts-email-{index}"),
                aws.sns.TopicSubscriptionArgs(topic=topic.arn, protocol="email", endpoint=email),
                opts=parent,
            )
        aws.amp.AlertManagerDefinition(
            child_name(name, "alert-manager"),
            aws.amp.AlertManagerDefinitionArgs(
                workspace_id=workspace.id,
                definition=topic.arn.apply(lambda arn: alert_manager_definition(arn, args.region)),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        return workspace

    def _exporters(
        self,
        name: str,
        args: FleetHealthArgs,
        child: pulumi.ResourceOptions,
        parent: pulumi.ResourceOptions,
        fsx: bool,
    ) -> tuple[k8s.core.v1.Namespace, list[pulumi.Resource]]:
        """The monitoring namespace and the exporters the collector scrapes: node and object state always, and
        FSx's CloudWatch metrics (through YACE, with a read-only pod identity) where the stack has Lustre."""
        spec = args.spec
        namespace = k8s.core.v1.Namespace(
            child_name(name, "ns"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=MONITORING_NAMESPACE,
                labels=system_namespace_labels(MONITORING_NAMESPACE),
            ),
            opts=child,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace, *args.after])
        exporters: list[pulumi.Resource] = [
            self._release(
                name,
                "node-exporter",
                "prometheus-node-exporter",
                spec.node_exporter_chart,
                PROMETHEUS_COMMUNITY,
                node_exporter_values(spec),
                in_namespace,
            ),
            self._release(
                name,
                "kube-state-metrics",
                "kube-state-metrics",
                spec.kube_state_metrics_chart,
                PROMETHEUS_COMMUNITY,
                {},
                in_namespace,
            ),
        ]
        if fsx:
            yace_role = pod_identity_role(
                child_name(name, "yace"),
                cluster_name=args.cluster_name,
                namespace=MONITORING_NAMESPACE,
                service_account=YACE_SERVICE_ACCOUNT,
                inline_policy={
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": YACE_ACTIONS, "Resource": "*"}],
                },
                opts=parent,
            )
            exporters.append(
                self._release(
                    name,
                    "yace",
                    "prometheus-yet-another-cloudwatch-exporter",
                    spec.yace_chart,
                    PROMETHEUS_COMMUNITY,
                    {
                        "serviceAccount": {"create": True, "name": YACE_SERVICE_ACCOUNT},
                        "config": yace_config(args.region, file_system_name(args.base_name)),
                    },
                    pulumi.ResourceOptions(parent=self, depends_on=[namespace, yace_role, *args.after]),
                )
            )
        return namespace, exporters

    def _collector(
        self,
        name: str,
        args: FleetHealthArgs,
        workspace: aws.amp.Workspace,
        exporters: list[pulumi.Resource],
        fsx: bool,
    ) -> None:
        """AMP's managed collector, writing what it scrapes into the workspace once the exporters are up."""
        # AMP gives the collector an EKS access entry of its own when it creates the scraper (API and
        # API_AND_CONFIG_MAP clusters, which are all trainstack allows): discovery objects and /metrics, read-only.
        aws.amp.Scraper(
            child_name(name, "collector"),
            aws.amp.ScraperArgs(
                alias=physical_name(args.base_name, "collector"),
                source=aws.amp.ScraperSourceArgs(
                    eks=aws.amp.ScraperSourceEksArgs(
                        cluster_arn=args.cluster_arn,
                        subnet_ids=list(args.subnet_ids),
                        security_group_ids=list(args.security_group_ids),
                    )
                ),
                destination=aws.amp.ScraperDestinationArgs(
                    amp=aws.amp.ScraperDestinationAmpArgs(workspace_arn=workspace.arn)
                ),
                scrape_configuration=scrape_configuration_yaml(args.spec.scrape_interval_s, fsx),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=exporters),
        )

    def _grafana(
        self,
        name: str,
        args: FleetHealthArgs,
        workspace: aws.amp.Workspace,
        namespace: k8s.core.v1.Namespace,
        parent: pulumi.ResourceOptions,
        fsx: bool,
    ) -> None:
        """Grafana, querying the workspace through its own pod identity, with the dashboards as labelled
        ConfigMaps its sidecar loads."""
        grafana_role = pod_identity_role(
            child_name(name, "grafana"),
            cluster_name=args.cluster_name,
            namespace=MONITORING_NAMESPACE,
            service_account=GRAFANA_SERVICE_ACCOUNT,
            inline_policy={
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": AMP_QUERY_ACTIONS, "Resource": workspace.arn}],
            },
            opts=parent,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace, *args.after])
        for file_name, dashboard in dashboards(fsx).items():
            self.dashboard_titles.append(dashboard["title"])
            k8s.core.v1.ConfigMap(
                child_name(name, f"dashboard-{file_name.removesuffix('.json')}"),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=f"trainstack-dashboard-{file_name.removesuffix('.json')}",
                    namespace=MONITORING_NAMESPACE,
                    labels={DASHBOARD_LABEL: "1"},
                ),
                data={file_name: json.dumps(dashboard, sort_keys=True)},
                opts=in_namespace,
            )
        self._release(
            name,
            "grafana",
            "grafana",
            args.spec.grafana_chart,
            GRAFANA_REPOSITORY,
            workspace.id.apply(
                lambda workspace_id: grafana_values(workspace_endpoint(args.region, workspace_id), args.region)
            ),
            pulumi.ResourceOptions(parent=self, depends_on=[namespace, grafana_role, *args.after]),
        )

    def _release(
        self,
        name: str,
        short: str,
        chart: str,
        version: str,
        repository: str,
        values: pulumi.Input[dict[str, Any]],
        opts: pulumi.ResourceOptions,
    ) -> k8s.helm.v3.Release:
        return k8s.helm.v3.Release(
            child_name(name, short),
            k8s.helm.v3.ReleaseArgs(
                name=short,
                chart=chart,
                version=version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository),
                namespace=MONITORING_NAMESPACE,
                values=values,
                atomic=True,
                cleanup_on_fail=True,
            ),
            opts=opts,
        )
