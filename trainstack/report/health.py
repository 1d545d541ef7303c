"""The plan's Health section as lines, which the text and Markdown renderers wrap (the data:
trainstack/model/health.py)."""

from __future__ import annotations

from trainstack.model.health import NMA_ADDON, HealthSummary


def lines(health: HealthSummary) -> list[str]:
    """The section's lines, without indentation or markup (text and Markdown renderers wrap them)."""
    out = [
        f"Node monitoring agent: {NMA_ADDON} {health.node_monitoring_agent}"
        if health.node_monitoring_agent
        else "Node monitoring agent: not planned"
    ]
    out += [f"{r.path} {r.group}: {r.repair}" for r in health.repairs]
    if health.metrics_backend:
        charts = ", ".join(e.split(" ", 1)[0] for e in health.exporters)  # "chart version": the Helm line has versions
        out.append(f"Metrics: {health.metrics_backend}, every {health.scrape_interval_s}s; {charts}")
        out.append(f"Alerts ({len(health.alerts)}) to {health.alert_destination}: {', '.join(health.alerts)}")
        out.append(f"Dashboards (Grafana in trainstack-monitoring): {', '.join(health.dashboards)}")
    else:
        out.append("Metrics, alerts and dashboards: off (health.metrics)")
    out += [f"Resume {line}" for line in health.resume]
    return out
