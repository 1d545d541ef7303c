"""`--format json` for every committed stack: the `pulumi preview --json` shape, every recorded resource,
and the documented fields (trainstack/report/plan.schema.json)."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import pytest

from tests import tiers
from tests.conftest import recording, stack_config
from tests.report.helpers import report
from trainstack.model.report import build_report
from trainstack.report import json_report
from trainstack.report.text import hyperpod_lines


@functools.cache
def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(json_report.SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@tiers.cache
def plan_json(stack: str) -> dict[str, Any]:
    return json.loads(json_report.render(report(stack)))


def test_json_parses_and_lists_every_recorded_resource(stack_name: str) -> None:
    document = plan_json(stack_name)
    resources = recording(stack_name).resources
    _, *rest = document["steps"]
    assert [s["urn"] for s in rest] == [r.urn for r in resources]
    assert all(s["op"] == "create" and s["detailedDiff"] is None for s in document["steps"])
    assert document["changeSummary"] == {"create": len(resources) + 1}  # the root stack counts, as in Pulumi
    by_urn = {r.urn: r for r in resources}
    for step in rest:
        state, resource = step["newState"], by_urn[step["urn"]]
        assert (state["type"], state["parent"], state["protect"]) == (resource.type, resource.parent, resource.protect)
        assert state["inputs"] == resource.inputs


def test_json_validates_against_the_documented_schema(stack_name: str) -> None:
    errors = sorted(schema_validator().iter_errors(plan_json(stack_name)), key=lambda e: e.json_path)
    assert not errors, "\n".join(f"{e.json_path}: {e.message}" for e in errors[:10])


def test_the_schema_rejects_what_it_does_not_document() -> None:
    document = json.loads(json.dumps(plan_json("dev")))
    document["trainstack"]["summary"]["surprise"] = 1
    del document["steps"][0]["newState"]["inputs"]
    paths = {e.json_path for e in schema_validator().iter_errors(document)}
    assert "$.trainstack.summary" in paths and "$.steps[0].newState" in paths


def test_trainstack_section_agrees_with_the_config(stack_name: str) -> None:
    section = plan_json(stack_name)["trainstack"]
    config = stack_config(stack_name)
    summary = section["summary"]
    assert summary["gpusMax"] == sum(g.max_gpus for g in config.gpu_node_groups)
    assert summary["gpuBudget"] == config.cost.max_gpus
    hyperpod = config.sagemaker.hyperpod
    assert (summary["hyperpodGpus"] > 0) == (hyperpod.enabled and bool(hyperpod.instance_groups))
    assert summary["gpusMax"] + summary["hyperpodGpus"] <= config.cost.max_gpus
    assert section["cost"]["usdPerMonthDesired"] == pytest.approx(
        section["cost"]["usdPerHourDesired"] * config.cost.hours_per_month, rel=1e-3
    )
    assert section["policy"]["mandatory"] == 0  # the shipped stacks pass the pack
    protected = {s["urn"] for s in plan_json(stack_name)["steps"] if s["newState"]["protect"]}
    assert bool(protected) == config.protect_data


def test_prod_gpu_group_reports_one_subnet_the_gpu_taint_and_full_efa() -> None:
    report = build_report(stack_config("prod"), recording("prod"))
    [group] = [g for g in report.summary.node_groups if g.gpu]
    assert group.subnets == 1 and group.availability_zones == ("us-east-1a",)
    assert group.taints == ("nvidia.com/gpu=true:NO_SCHEDULE",)
    assert group.efa_interfaces == group.efa_max == 32
    assert group.placement_group is None and group.capacity.startswith("reservation")


def test_compute_lists_hyperpod_groups_with_their_accelerators() -> None:
    staging = build_report(stack_config("staging"), recording("staging"))
    assert hyperpod_lines(staging) == [
        "SageMaker HyperPod trainstack-staging-hyperpod/workers: 2 x ml.p5.48xlarge (16 x H100)"
    ]
    assert hyperpod_lines(build_report(stack_config("dev"), recording("dev"))) == []
