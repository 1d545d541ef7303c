"""The stack-wide rules (policies/rules/stack.py) one branch at a time, on hand-built resources: cost tags from a
resource's own tags and its provider's default tags (both shapes), the launch templates' propagated tags, the GPU
budget at its edge, `protect`, the stack's name against its environment, and the deletion safeguards' partial
inputs. The waiver rules' cases are in tests/policy/test_waivers.py; the whole-program cases in test_rules.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi_policy import PolicyProviderResource

from policies.facts_generated import BUCKET_OBJECT, BUCKET_V2, EKS_CLUSTER, KMS_KEY, LAUNCH_TEMPLATE, NODE_GROUP, VPC
from policies.rules.stack import (
    cost_tags,
    deletion_safeguards,
    gpu_budget,
    lt_instance_tags,
    prod_protect,
    stack_environment,
)
from tests.policy.test_direct import judge_resource, judge_stack, resource

_TAGS = {"project": "trainstack", "env": "prod", "cost-center": "ml-42", "owner": "platform"}
_CONFIG = {"requiredTags": list(_TAGS), "environment": "prod"}


def _provider(default_tags: Any) -> PolicyProviderResource:
    return PolicyProviderResource(
        "pulumi:providers:aws",
        {"defaultTags": default_tags},
        "urn:pulumi:prod::trainstack::pulumi:providers:aws::aws",
        "aws",
    )


# ------------------------------------------------------------------------------------------------ cost-tags


@pytest.mark.parametrize(
    ("tags", "problems"),
    [
        (_TAGS, None),
        ({**_TAGS, "owner": ""}, "'owner'"),  # set but empty is not set
        ({k: v for k, v in _TAGS.items() if k not in ("owner", "project")}, "'project', 'owner'"),
        ({**_TAGS, "env": "dev"}, "env='dev' (expected 'prod')"),
        ([{"key": k, "value": v} for k, v in _TAGS.items()], None),  # aws-native: a list of {key, value}
        ([{"key": "project", "value": "trainstack"}, {"value": "no key"}], "'env', 'cost-center', 'owner'"),
    ],
)
def test_a_resource_carries_every_cost_tag_and_its_environment(tags: Any, problems: str | None) -> None:
    messages = judge_resource(cost_tags, VPC, {"tags": tags}, _CONFIG).messages
    assert messages == (
        [] if problems is None else [f"tags (with the provider's default tags) lack or mis-set {problems}."]
    )


def test_without_a_configured_environment_any_env_tag_passes() -> None:
    assert (
        judge_resource(cost_tags, VPC, {"tags": {**_TAGS, "env": "dev"}}, {"requiredTags": list(_TAGS)}).reports == []
    )


@pytest.mark.parametrize("as_json", [True, False])
def test_the_providers_default_tags_count_and_the_resources_own_tags_win(as_json: bool) -> None:
    defaults = {"tags": {"project": "trainstack", "cost-center": "ml-42", "env": "dev"}}
    provider = _provider(json.dumps(defaults) if as_json else defaults)
    own = {"env": "prod", "owner": "platform"}
    assert judge_resource(cost_tags, VPC, {"tags": own}, _CONFIG, provider=provider).reports == []
    messages = judge_resource(cost_tags, VPC, {"tags": {"owner": "platform"}}, _CONFIG, provider=provider).messages
    assert messages == ["tags (with the provider's default tags) lack or mis-set env='dev' (expected 'prod')."]
    assert len(judge_resource(cost_tags, VPC, {"tags": own}, _CONFIG).reports) == 1  # no provider: no defaults


def _spec(kind: str, tags: dict[str, str]) -> dict[str, Any]:
    return {"resourceType": kind, "tags": tags}


def test_launch_templates_tag_instances_volumes_and_interfaces() -> None:
    specs = [_spec(k, _TAGS) for k in ("instance", "volume", "network-interface")]
    assert judge_resource(lt_instance_tags, LAUNCH_TEMPLATE, {"tagSpecifications": specs}, _CONFIG).reports == []


def test_a_launch_template_missing_a_kind_or_a_tag_is_reported_per_kind() -> None:
    specs = [_spec("instance", {**_TAGS, "owner": ""}), _spec("network-interface", {**_TAGS, "env": "dev"})]
    messages = judge_resource(lt_instance_tags, LAUNCH_TEMPLATE, {"tagSpecifications": specs}, _CONFIG).messages
    assert messages == [
        "tagSpecifications 'instance' lacks or mis-sets 'owner'.",
        "tagSpecifications has no 'volume' entry.",
        "tagSpecifications 'network-interface' lacks or mis-sets env='dev' (expected 'prod').",
    ]


# --------------------------------------------------------------------------------------------- gpu-budget


def _gpus(max_size: int) -> list[Any]:
    return [resource(NODE_GROUP, "p5", {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": max_size}})]


def test_the_gpu_budget_is_not_applicable_without_accelerators() -> None:
    cpu = resource(NODE_GROUP, "cpu", {"instanceTypes": ["m7i.xlarge"], "scalingConfig": {"maxSize": 9}})
    assert judge_stack(gpu_budget, [cpu], {"maxGpus": 0}).skipped


@pytest.mark.parametrize(("budget", "reported"), [(16, False), (17, False), (15, True), (0, True)])
def test_the_gpus_at_maximum_size_stay_within_the_budget(budget: int, reported: bool) -> None:
    verdict = judge_stack(gpu_budget, _gpus(2), {"maxGpus": budget})  # 2 x 8 GPUs
    assert verdict.skipped is None
    assert verdict.messages == (
        [f"the stack can reach 16 accelerators (p5 16), over the budget of {budget}."] if reported else []
    )


def test_an_environment_without_a_gpu_budget_is_reported() -> None:
    assert judge_stack(gpu_budget, _gpus(1), {}).messages == [
        "no maxGpus budget is configured for this environment (policies/config/<env>.json)."
    ]


# ------------------------------------------------------------------------------------------ prod-protect


def test_data_and_the_cluster_are_protected() -> None:
    assert judge_resource(prod_protect, KMS_KEY, {}, protect=True).reports == []
    assert len(judge_resource(prod_protect, KMS_KEY, {}, protect=False).reports) == 1


# -------------------------------------------------------------------------------------- stack-environment


def test_the_stack_environment_is_not_applicable_to_an_empty_stack() -> None:
    assert judge_stack(stack_environment, [], {"environment": "prod"}).skipped


def test_a_config_without_an_environment_is_reported_once() -> None:
    verdict = judge_stack(stack_environment, [resource(VPC, "a", stack="qa"), resource(VPC, "b")], {})
    assert verdict.messages == ["no environment is configured for this policy config (policies/config/<env>.json)."]


def test_each_stack_name_maps_to_the_configs_environment() -> None:
    stacks = [resource(VPC, "a", stack="prod-eu"), resource(VPC, "b", stack="prod")]
    assert judge_stack(stack_environment, stacks, {"environment": "prod"}).reports == []
    wrong = [resource(VPC, "a", stack="staging"), resource(VPC, "b", stack="qa"), resource(VPC, "c", stack="prod")]
    messages = judge_stack(stack_environment, wrong, {"environment": "prod"}).messages
    assert len(messages) == 2
    assert messages[0].startswith("stack 'qa' maps to no environment") and "policies/config/<env>.json" in messages[0]
    assert (
        messages[1].startswith("stack 'staging' is a staging stack") and "policies/config/staging.json" in messages[1]
    )


# ------------------------------------------------------------------------------------ deletion-safeguards

_WINDOW = {"minKeyDeletionWindowDays": 30}


def test_deletion_safeguards_are_not_applicable_without_a_cluster_data_bucket_or_key() -> None:
    scripts = resource(BUCKET_V2, "lifecycle-scripts", {"forceDestroy": True})
    script = resource(BUCKET_OBJECT, "on-create.sh", {}, {"bucket": [scripts]})
    assert judge_stack(deletion_safeguards, [scripts, script], _WINDOW).skipped  # its objects are the stack's own


@pytest.mark.parametrize(("protection", "reported"), [(True, False), (False, True), (None, True)])
def test_the_cluster_has_deletion_protection(protection: bool | None, reported: bool) -> None:
    cluster = resource(EKS_CLUSTER, "eks", {} if protection is None else {"deletionProtection": protection})
    verdict = judge_stack(deletion_safeguards, [cluster], _WINDOW)
    assert verdict.skipped is None and verdict.urns == ([cluster.urn] if reported else [])


@pytest.mark.parametrize(("force", "reported"), [(True, True), ("true", True), (False, False), (None, False)])
def test_a_data_bucket_is_not_force_destroyed(force: Any, reported: bool) -> None:
    bucket = resource(BUCKET_V2, "checkpoints", {} if force is None else {"forceDestroy": force})
    verdict = judge_stack(deletion_safeguards, [bucket], _WINDOW)
    assert verdict.skipped is None and verdict.urns == ([bucket.urn] if reported else [])


@pytest.mark.parametrize(
    ("window", "floor", "shown"),
    [(30, 30, None), (29, 30, "29 days"), (None, 30, "unset"), (7, 7, None), (6, 7, "6 days"), (30, 7, None)],
)
def test_kms_keys_wait_at_least_the_deletion_window_floor(window: int | None, floor: int, shown: str | None) -> None:
    key = resource(KMS_KEY, "data-key", {} if window is None else {"deletionWindowInDays": window})
    verdict = judge_stack(deletion_safeguards, [key], {"minKeyDeletionWindowDays": floor})
    assert verdict.messages == (
        [] if shown is None else [f"KMS key data-key: deletionWindowInDays is {shown}; the floor here is {floor}."]
    )
