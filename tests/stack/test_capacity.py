"""Capacity over the whole program: every stack with a group that can grow plans an autoscaler, the scale-from-zero
ASG tags and an admission check on that group's queue; a fixed reservation is admitted without one; and the team
job's admission step holds per group kind (docs/capacity.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.conftest import STACKS, edited_config, program_recording, recording, stack_config
from trainstack.engine import Recording
from trainstack.journeys import team_job
from trainstack.model.capacity import capacity_plan
from trainstack.report.capacity import group_line

pytestmark = pytest.mark.usefixtures("shared_recordings")

ADMISSION = "the job's nodes exist or are provisioned, all of them, before Kueue admits it"
TAG = "aws:autoscaling/tag:Tag"
BLOCK = {
    "type": "capacity_block",
    "reservation_id": "cr-0a1b2c3d4e5f67890",
    "reservation_availability_zone": "us-east-1a",
    "window": {"starts_at": "2026-10-01T11:30:00Z", "ends_at": "2026-10-15T11:30:00Z"},
}


def kinds(rec: Recording, kind: str) -> dict[str, dict[str, Any]]:
    """Spec per object name of a Kubernetes kind."""
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.resources if r.type.endswith(f":{kind}")}


def autoscalers(rec: Recording) -> list[Any]:
    return [r for r in rec.resources if r.type.endswith(":Release") and r.inputs.get("chart") == "cluster-autoscaler"]


def admission_details(rec: Recording, stack: Any) -> dict[str, tuple[bool, str]]:
    found = team_job.walk(team_job.Trip(recording=rec, stack=stack))
    return {
        j.subject: next((s.holds, s.detail) for s in j.steps if s.name == ADMISSION)
        for j in found
        if any(s.name == ADMISSION for s in j.steps)
    }


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_groups_that_grow_get_the_autoscaler_tags_and_a_check(stack: str) -> None:
    config = stack_config(stack)
    rec = recording(stack)
    growing = [g.name for g in config.gpu_node_groups if g.min_size < g.max_size]
    releases = [
        r for r in rec.resources if r.type.endswith(":Release") and r.inputs.get("chart") == "cluster-autoscaler"
    ]
    assert len(releases) == (1 if growing else 0)
    queues = kinds(rec, "ClusterQueue")
    tagged = {
        r.inputs["tag"]["value"]
        for r in rec.by_type(TAG)
        if r.inputs["tag"]["key"].endswith("/label/trainstack.io/node-group")
    }
    assert tagged == set(growing)
    for group in config.gpu_node_groups:
        checks = queues[group.name].get("admissionChecks")
        assert checks == ([f"{group.name}-capacity"] if group.name in growing else None)
    assert all(holds for holds, _ in admission_details(rec, config).values())


@pytest.mark.slow
def test_prod_fixed_reservation_is_admitted_without_a_check_or_an_autoscaler() -> None:
    rec = recording("prod")
    assert not kinds(rec, "AdmissionCheck") and not rec.by_type(TAG)
    details = admission_details(rec, stack_config("prod"))
    assert details and all("no admission check" in d for _, d in details.values())


@pytest.mark.e2e
def test_a_capacity_block_queue_holds_jobs_until_the_window_and_the_plan_says_when() -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0] |= {"capacity": BLOCK, "min_size": 2, "desired_size": 2, "max_size": 2}

    config = edited_config("staging", edit)
    rec = program_recording(config, "staging")
    [config_spec] = kinds(rec, "ProvisioningRequestConfig").values()
    assert config_spec["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io"
    assert kinds(rec, "ClusterQueue")["p5"]["admissionChecks"] == ["p5-capacity"]
    # A fixed block is not scaled, so its ASG carries no node-template tags; the autoscaler still answers.
    assert not rec.by_type(TAG)
    assert autoscalers(rec)
    details = admission_details(rec, config)
    assert all(holds and "check-capacity" in d for holds, d in details.values())
    [line] = [group_line(g) for g in capacity_plan(config, datetime(2026, 9, 30, 11, 30, tzinfo=UTC))]
    assert "Capacity Block window" in line and "(future)" in line
    assert "waits up to 1d00h" in line  # a day to the start, plus one provisioning attempt and one retry


@pytest.mark.e2e
def test_prod_growing_past_its_reservation_gets_an_autoscaler_and_a_check() -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0] |= {"min_size": 8, "desired_size": 8}

    config = edited_config("prod", edit)
    rec = program_recording(config, "prod")
    assert kinds(rec, "ClusterQueue")["p5-train"]["admissionChecks"] == ["p5-train-capacity"]
    keys = {r.inputs["tag"]["key"].rsplit("node-template/", 1)[-1] for r in rec.by_type(TAG)}
    assert {"resources/nvidia.com/gpu", "resources/vpc.amazonaws.com/efa", "resources/hugepages-2Mi"} <= keys
    assert "taint/nvidia.com/gpu" in keys
    details = admission_details(rec, config)
    assert all(holds and "best-effort-atomic-scale-up" in d for holds, d in details.values())


@pytest.mark.slow
def test_every_format_shows_the_capacity_plan() -> None:
    """The Capacity section is in the text, the Markdown comment and the JSON (schema-valid), from one model."""
    import json

    import jsonschema

    from trainstack.model.report import build_report
    from trainstack.report import json_report, markdown, text

    report = build_report(stack_config("dev"), recording("dev"))
    assert [g.name for g in report.capacity] == ["g5"]
    line = group_line(report.capacity[0])
    assert "cluster-autoscaler, 0 to 2 node(s)" in line
    assert line in markdown.render(report)
    assert "Capacity" in text.render(report, text.Style(color=False))
    document = json.loads(json_report.render(report))
    jsonschema.validate(document, json.loads(json_report.SCHEMA_PATH.read_text()))
    assert document["trainstack"]["capacity"][0] == report.capacity[0].to_dict()
