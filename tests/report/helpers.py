"""Reports the reviewer-facing tests share: prod, staging, and prod with one more GPU group as a diff."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests import tiers
from tests.conftest import edited_config, program_recording, recording, stack_config
from tests.stack.test_plan_cli import add_p5_group
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import PlanDiff
from trainstack.model.plan import plan
from trainstack.model.report import Report


@tiers.cache
def report(stack: str) -> Report:
    """A committed stack's report exactly as the command line renders it (the plan pipeline: the stack's waivers
    and its example-value advisories included), once per process: the report, JSON and Markdown tests read it."""
    return plan(stack_config(stack), recording(stack)).report


@tiers.cache
def added_group_diff() -> tuple[Report, PlanDiff, Report]:
    """(after, diff, before): prod plus a 16-node p5 group on demand, the same config the CLI tests plan, as
    `plan --against stacks/Pulumi.prod.yaml` builds them (the diff's own violations added to the review)."""
    config = edited_config("prod", add_p5_group)
    baseline = (stack_config("prod"), recording("prod"), "stacks/Pulumi.prod.yaml")
    planned = plan(config, program_recording(config, "prod"), against=baseline)
    assert planned.diff is not None and planned.before is not None
    return planned.report, planned.diff, planned.before


def _own_physical_name(inputs: dict[str, Any], i: int) -> dict[str, Any]:
    """A clone's AWS names of its own (node group, launch template, placement group), as a real group would have:
    the contract tier refuses two resources of one type with one physical name."""
    return {k: f"{v}-x{i}" if k in ("name", "nodeGroupName") and isinstance(v, str) else v for k, v in inputs.items()}


def with_cloned_gpu_groups(source: Recording, copies: int, aws_names: bool = False) -> Recording:
    """`source` plus `copies` clones of its GPU group component (node group, launch template, component) under
    new names: a stack with many GPU groups without running the program again. `aws_names`: each clone's AWS
    names of its own too (a report runs the contract tier, which refuses two node groups of one name); without
    it the clones keep the original's node group name, which the diagram draws once."""
    component = next(r for r in source.resources if r.type == "trainstack:gpu:GpuNodeGroup")
    members = [component, *(r for r in source.resources if r.parent == component.urn)]
    extra: list[RecordedResource] = []
    for i in range(copies):

        def renamed(text: str, i: int = i) -> str:
            return text.replace(component.name, f"{component.name}-x{i}")

        def rewrite(value: Any, i: int = i) -> Any:
            if isinstance(value, str):
                return renamed(value, i)
            if isinstance(value, dict):
                return {k: rewrite(v, i) for k, v in value.items()}
            if isinstance(value, list):
                return [rewrite(v, i) for v in value]
            return value

        for r in members:
            extra.append(
                dataclasses.replace(
                    r,
                    name=renamed(r.name),
                    urn=renamed(r.urn),
                    parent=renamed(r.parent),
                    id=renamed(r.id) if r.id else r.id,
                    inputs=_own_physical_name(rewrite(r.inputs), i) if aws_names else rewrite(r.inputs),
                    dependencies=tuple(renamed(d) for d in r.dependencies),
                    property_dependencies={k: tuple(renamed(u) for u in v) for k, v in r.property_dependencies.items()},
                )
            )
    return Recording(source.stack, source.preview, (*source.resources, *extra), source.outputs)


# ------------------------------------------------------------------------------------- the reviewer's scenarios


def scale_up_and_team(cluster: dict[str, Any]) -> None:
    """prod's p5-train may grow from 16 to 24 nodes, and a team inference-eval gets 16 accelerators."""
    cluster["gpu_node_groups"][0]["max_size"] = 24
    cluster["kubernetes"]["teams"].append({"name": "inference-eval", "gpu_quota": 16})


def renamed(cluster: dict[str, Any]) -> None:
    """prod under a new base name: every physical name moves, the protected EKS cluster with it."""
    cluster["name"] = f"{cluster['name']}-b"


def eks_at_1_34(cluster: dict[str, Any]) -> None:
    """staging two minor versions back, with kube-proxy built for it: the baseline of an EKS skip to 1.36."""
    cluster["eks"].update(version="1.34", addons={**cluster["eks"]["addons"], "kube_proxy": "v1.34.0-eksbuild.1"})


SCENARIOS = ("prod", "scale-up-and-team", "rename", "eks-skip")


@tiers.cache
def scenario(name: str) -> tuple[Report, PlanDiff | None, Report | None]:
    """(after, diff, before) of a scenario as `plan --config ... --against ...` builds them (SCENARIOS)."""
    from trainstack.model.plan import plan

    if name == "prod":
        return plan(stack_config("prod"), program_recording(stack_config("prod"), "prod")).report, None, None
    stack, old, new = {
        "scale-up-and-team": ("prod", stack_config("prod"), edited_config("prod", scale_up_and_team)),
        "rename": ("prod", stack_config("prod"), edited_config("prod", renamed)),
        "eks-skip": ("staging", edited_config("staging", eks_at_1_34), stack_config("staging")),
    }[name]
    baseline = program_recording(old, stack)
    planned = plan(new, program_recording(new, stack), (old, baseline, f"stacks/Pulumi.{stack}.yaml"))
    return planned.report, planned.diff, planned.before
