"""Inputs for the policy tests: the real program per stack, with config variations and single-resource edits.

- `scenario(name)`: the whole program run once per session (shared by xdist workers) on a committed stack with
  one config edit, for rules a config change can break.
- `mutated(recording, match, edit)`: a real recording with one resource's recorded inputs (or options,
  dependencies) changed, for rules the schema and the components never let a config break: it stands in for
  a code regression in a component, starting from exactly what the program registers.
- `without(recording, predicate)`: the same recording minus some resources, for not-applicable cases.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pulumi_policy import Policy

from policies.rules import BY_NAME, POLICIES
from stacks.load import environment_of_stack
from tests import tiers
from tests.conftest import edited_config, program_recording, recording
from trainstack.engine import RecordedResource, Recording
from trainstack.review import Review, Violation, resolve_config, review, run_policies

Edit = Callable[[dict[str, Any]], None]


def _gpu(raw: dict[str, Any], **changes: Any) -> None:
    raw["gpu_node_groups"][0].update(changes)


SCENARIOS: dict[str, tuple[str, Edit]] = {
    "prod-public-endpoint": (
        "prod",
        lambda raw: raw["eks"].update(endpoint_public_access=True, public_access_cidrs=["203.0.113.0/24"]),
    ),
    "prod-three-log-types": (
        "prod",
        lambda raw: raw["eks"].update(control_plane_log_types=["api", "audit", "authenticator"]),
    ),
    "prod-extended-support": ("prod", lambda raw: raw["eks"].update(support_type="EXTENDED")),
    "prod-config-map-auth": ("prod", lambda raw: raw["eks"].update(authentication_mode="API_AND_CONFIG_MAP")),
    "prod-hop-limit-2": ("prod", lambda raw: _gpu(raw, imds_hop_limit=2)),
    "prod-slow-lustre": ("prod", lambda raw: raw["storage"]["fsx"].update(throughput_mb_s_per_tib=125)),
    "prod-over-budget": ("prod", lambda raw: (raw["cost"].update(max_gpus=512), _gpu(raw, max_size=40))),
    "dev-min-one": ("dev", lambda raw: _gpu(raw, min_size=1, desired_size=1)),
    "dev-second-az": (
        "dev",
        lambda raw: raw["gpu_node_groups"].append(
            {
                "name": "g6e",
                "instance_type": "g6e.xlarge",
                "availability_zone": "us-east-1b",
                "efa_enabled": False,
                "min_size": 0,
                "desired_size": 0,
                "max_size": 2,
            }
        ),
    ),
    "staging-no-placement": ("staging", lambda raw: _gpu(raw, placement="none")),
    "staging-reject-flow-logs": ("staging", lambda raw: raw["network"].update(flow_logs_traffic_type="REJECT")),
    "prod-mixed-bottlerocket": (
        "prod",
        lambda raw: raw["gpu_node_groups"].append(
            {
                "name": "g6e-br",
                "instance_type": "g6e.xlarge",
                "availability_zone": "us-east-1a",
                "efa_enabled": False,
                "ami_family": "BOTTLEROCKET_x86_64_NVIDIA",
                "min_size": 0,
                "desired_size": 0,
                "max_size": 2,
            }
        ),
    ),
    # EFA-enabled Lustre at 1000 MB/s/TiB comes in steps of 4800 GiB.
    "staging-fsx-efa": (
        "staging",
        lambda raw: raw["storage"]["fsx"].update(efa_enabled=True, storage_capacity_gib=9600),
    ),
    # Two ml.g5.2xlarge (no EFA) for evaluation on HyperPod in prod: InstanceStress only, and nothing refuses it.
    "prod-hyperpod-eval": (
        "prod",
        lambda raw: raw.update(
            sagemaker={
                "hyperpod": {
                    "enabled": True,
                    "orchestrator": "eks",
                    "instance_groups": [{"name": "eval", "instance_type": "ml.g5.2xlarge", "instance_count": 2}],
                }
            }
        ),
    ),
    "staging-bottlerocket": ("staging", lambda raw: _gpu(raw, ami_family="BOTTLEROCKET_x86_64_NVIDIA")),
    # Staging's HyperPod on Slurm with a login group: the login nodes run as a role of their own.
    "staging-hyperpod-slurm": (
        "staging",
        lambda raw: (
            raw["storage"]["fsx"].update(no_squash_nids=["10.20.0.10@tcp"])
            or raw["sagemaker"]["hyperpod"].update(
                orchestrator="slurm",
                instance_groups=[
                    {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
                    {"name": "login", "instance_type": "ml.m5.4xlarge", "instance_count": 1, "role": "login"},
                    {"name": "workers", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
                ],
            )
        ),
    ),
    # A team with a member role: its EKS access entry maps it to the team's Kubernetes group.
    "prod-team-member": (
        "prod",
        lambda raw: next(t for t in raw["kubernetes"]["teams"] if t["name"] == "research").update(
            member_role_arns=["arn:aws:iam::210987654321:role/research"]
        ),
    ),
}


def scenario(name: str, preview: bool = False) -> Recording:
    """A fresh copy of the scenario's recording; the program runs once per session (tests.conftest)."""
    stack, edit = SCENARIOS[name]
    return program_recording(edited_config(stack, edit), stack, preview)


def shipped(stack: str, preview: bool = False) -> Recording:
    return recording(stack, preview)


def matches(resource: RecordedResource, match: str) -> bool:
    return f"-{resource.name}".endswith(match) or resource.type == match  # match: a whole name or its "-..." tail


def mutated(
    source: Recording,
    match: str,
    edit: Edit | None = None,
    *,
    protect: bool | None = None,
    dependencies: Callable[[dict[str, tuple[str, ...]]], None] | None = None,
    only_first: bool = True,
) -> Recording:
    """`source` with the resource(s) named (or typed) `match` changed; fails when nothing matches."""
    resources: list[RecordedResource] = []
    hit = 0
    for resource in source.resources:
        if matches(resource, match) and (hit == 0 or not only_first):
            hit += 1
            inputs = copy.deepcopy(resource.inputs)
            if edit is not None:
                edit(inputs)
            deps = dict(resource.property_dependencies)
            if dependencies is not None:
                dependencies(deps)
            resource = replace(
                resource,
                inputs=inputs,
                property_dependencies=deps,
                protect=resource.protect if protect is None else protect,
            )
        resources.append(resource)
    assert hit, f"no resource matches {match!r}"
    return Recording(stack=source.stack, preview=source.preview, resources=resources, outputs=source.outputs)


def without(source: Recording, drop: Callable[[RecordedResource], bool]) -> Recording:
    kept = [r for r in source.resources if not drop(r)]
    assert len(kept) < len(source.resources), "nothing was removed"
    return Recording(stack=source.stack, preview=source.preview, resources=kept, outputs=source.outputs)


def urn_of(source: Recording, match: str) -> str:
    found = [r.urn for r in source.resources if matches(r, match)]
    assert found, f"no resource matches {match!r}"
    return found[0]


def found(result: Review, policy: str) -> list[Violation]:
    """Real violations of `policy` (not "can't run during preview" diagnostics)."""
    return [v for v in result.violations if v.policy == policy and "during preview" not in v.message]


def messages(policy: str, source: Recording) -> list[str]:
    """What `policy` alone, enforced, reports on `source`: for tests that break one thing and name the check
    that must see it."""
    config = resolve_config({policy: {"enforcementLevel": "mandatory"}})
    violations, _, _ = run_policies(source, config, [BY_NAME[policy]])
    return [v.message for v in violations]


def run(source: Recording, environment: str | None = None, policies: Iterable[Policy] = POLICIES) -> Review:
    """The review of `source` with the policy config of `environment`, by default the one its stack maps to;
    `policies` narrows it to the rules a test is about (the config is still validated for the whole pack)."""
    return review(source, environment or _environment(source.stack), policies=policies)


@tiers.cache
def shipped_review(stack: str, preview: bool = False) -> Review:
    """`run(shipped(stack, preview))`, once per process: many tests read the whole pack's review of a committed
    stack's own recording. A Review is frozen data (tuples of frozen violations), so sharing it is safe; a review
    of an edited recording is never cached."""
    return run(shipped(stack, preview))


def _environment(stack: str) -> str:
    environment = environment_of_stack(stack)
    assert environment is not None, f"stack {stack!r} maps to no environment"
    return environment.value


def with_resource(source: Recording, type_: str, name: str, inputs: dict[str, Any]) -> Recording:
    """`source` with one more custom resource at the stack's root (what an edit outside the program would add)."""
    project = source.resources[0].urn.split("::")[1]
    added = RecordedResource(
        type=type_,
        name=name,
        urn=f"urn:pulumi:{source.stack}::{project}::{type_}::{name}",
        parent="",
        custom=True,
        inputs=inputs,
        dependencies=(),
        property_dependencies={},
        protect=False,
        retain_on_delete=False,
        provider="",
    )
    return Recording(
        stack=source.stack, preview=source.preview, resources=[*source.resources, added], outputs=source.outputs
    )
