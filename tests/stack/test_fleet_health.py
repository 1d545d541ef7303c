"""Fleet health in each committed stack: the agent, auto repair on every accelerator group, and (outside dev)
the metrics stack, alerts and dashboards, and the plan's Health section."""

from __future__ import annotations

import json

from stacks.schema import Environment
from tests.conftest import recording, stack_config
from trainstack.model.health import summarize_health


def test_every_accelerator_group_is_auto_repaired_with_the_stack_limits(stack_name: str) -> None:
    limits = stack_config(stack_name).health.node_repair
    groups = [
        g
        for g in recording(stack_name).by_type("aws:eks/nodeGroup:NodeGroup")
        if "trainstack.io/accelerator" in g.inputs["labels"]
    ]
    assert groups
    for group in groups:
        config = group.inputs["nodeRepairConfig"]
        assert config["enabled"] is True
        assert config["maxParallelNodesRepairedCount"] == limits.max_parallel_nodes_repaired_count
        assert config["maxUnhealthyNodeThresholdPercentage"] == limits.max_unhealthy_node_threshold_percentage


def test_node_monitoring_agent_is_pinned_and_tolerates_every_taint(stack_name: str) -> None:
    (agent,) = [
        a
        for a in recording(stack_name).by_type("aws:eks/addon:Addon")
        if a.inputs["addonName"] == "eks-node-monitoring-agent"
    ]
    assert agent.inputs["addonVersion"] == stack_config(stack_name).health.node_monitoring_agent_version
    assert '"operator": "Exists"' in agent.inputs["configurationValues"]


def test_metrics_stack_follows_the_environment(stack_name: str) -> None:
    cluster = stack_config(stack_name)
    health = summarize_health(recording(stack_name))
    if cluster.environment is Environment.DEV:
        assert (
            health.metrics_backend is None
            and not health.alerts
            and not recording(stack_name).by_type("aws:amp/scraper:Scraper")
        )
        return
    assert health.metrics_backend and health.alert_destination
    assert "GpuHardwareXid" in health.alerts and "NodeUnhealthyNotRepaired" in health.alerts
    assert {"gpu.json", "fabric.json", "queues.json"} <= set(health.dashboards)
    operator = [
        r for r in recording(stack_name).by_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "gpu-operator"
    ]
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in operator[0].inputs["values"]["dcgmExporter"]["config"]["data"]


def test_training_service_account_per_team(stack_name: str) -> None:
    teams = {t.name for t in stack_config(stack_name).kubernetes.teams}
    accounts = {
        r.inputs["metadata"]["namespace"]
        for r in recording(stack_name).by_type("kubernetes:core/v1:ServiceAccount")
        if r.inputs["metadata"]["name"] == "training"
    }
    assert accounts == teams


def test_no_input_carries_a_stringified_output(stack_name: str) -> None:
    # An f-string over an Output records Pulumi's warning text instead of the value (a broken policy or name).
    for resource in recording(stack_name).resources:
        assert "Calling __str__ on an Output" not in json.dumps(resource.inputs, default=str), resource.urn
