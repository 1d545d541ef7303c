"""The offline review: shipped stacks pass, dangerous edits block (also in preview), config resolves like the CLI."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity, StackValidationPolicy

from policies.rules import POLICIES
from stacks.load import ConfigError
from tests.conftest import STACKS, edited_config, recording
from tests.policy.helpers import found, mutated, scenario, shipped_review, without
from trainstack.review import (
    PolicyConfigError,
    PolicyRunError,
    Review,
    Violation,
    load_config,
    mandatory,
    resolve_config,
    review,
    run_policies,
)

STACK_POLICIES = [p.name for p in POLICIES if isinstance(p, StackValidationPolicy)]


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_shipped_stacks_have_no_mandatory_violation(stack_name: str, preview: bool) -> None:
    result = shipped_review(stack_name, preview)
    assert result.environment == stack_name
    assert result.passed, [(v.policy, v.name, v.message) for v in result.mandatory]
    assert result.policies_run >= 30


def test_preview_keeps_stack_rules_enforcing(stack_name: str) -> None:
    """Stack rules join through the dependency graph, never through computed ids, so preview cannot blind them."""
    result = shipped_review(stack_name, preview=True)
    blind = [v for v in result.violations if v.policy in STACK_POLICIES and "during preview" in v.message]
    assert not blind, blind


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("staging-no-placement", "efa-cluster-placement"),
        ("prod-public-endpoint", "eks-endpoint-not-public"),
        ("prod-over-budget", "gpu-budget"),
    ],
)
@pytest.mark.e2e
def test_dangerous_edit_blocks_in_preview(name: str, policy: str) -> None:
    source = scenario(name, preview=True)
    result = review(source, source.stack)
    assert [v.level for v in found(result, policy)] and {v.level for v in found(result, policy)} == {"mandatory"}
    assert not result.passed


@pytest.mark.parametrize(
    ("policy", "edit"),
    [
        ("gpu-taint", lambda r: mutated(r, "-gpu-p5-train-ng", lambda i: i.pop("taints"))),
        ("efa-sg-self-all", lambda r: without(r, lambda x: x.name.endswith("network-efa-self-egress"))),
        ("fsx-lustre-ports", lambda r: without(r, lambda x: "lustre-sg-in-" in x.name and x.name.endswith("988"))),
        ("efa-interface-count", lambda r: mutated(r, "-gpu-p5-train-lt", lambda i: i["networkInterfaces"].pop())),
    ],
)
def test_stack_rules_block_on_a_preview_recording(policy: str, edit: Any) -> None:
    result = review(edit(recording("prod", preview=True)), "prod")
    assert {v.level for v in found(result, policy)} == {"mandatory"}


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            lambda raw: raw["storage"].update(fsx={"deployment_type": "SCRATCH_2", "storage_capacity_gib": 122400}),
            "SCRATCH_2 is for dev only",
        ),
        (
            lambda raw: raw["gpu_node_groups"][0]["capacity"].update(
                type="spot", reservation_id=None, reservation_availability_zone=None
            ),
            "spot",
        ),
        (lambda raw: raw["eks"].update(endpoint_public_access=True, public_access_cidrs=["0.0.0.0/0"]), "0.0.0.0/0"),
        (
            lambda raw: raw["kubernetes"]["validation"].update(
                nccl_tests_image="public.ecr.aws/hpc-cloud/nccl-tests:latest"
            ),
            "latest",
        ),
        (
            lambda raw: (
                raw["gpu_node_groups"].append(
                    {
                        **raw["gpu_node_groups"][0],
                        "name": "p5-b",
                        "availability_zone": "us-east-1b",
                        "capacity": {"type": "on_demand"},
                        "min_size": 0,
                        "desired_size": 0,
                        "max_size": 2,
                    }
                ),
                raw["storage"]["fsx"].update(efa_enabled=True, storage_capacity_gib=134400),
            ),
            "Lustre over EFA reaches clients in its own subnet only",
        ),
    ],
    ids=["scratch-in-prod", "spot-efa", "world-endpoint", "latest-image", "lustre-efa-with-efa-groups-in-two-azs"],
)
def test_schema_refuses_some_dangerous_edits_first(edit: Any, reason: str) -> None:
    """These never reach the policies: the plan stops with exit 2 before any resource is registered."""
    with pytest.raises(ConfigError, match=reason):
        edited_config("prod", edit)


def test_review_api() -> None:
    result = review(mutated(recording("prod"), "-gpu-p5-train-ng", lambda i: i.pop("taints")), "prod")
    assert isinstance(result, Review)
    assert result.counts["mandatory"] == len(result.mandatory) == len(mandatory(result.violations)) >= 1
    assert result.counts["advisory"] == len(result.advisory)
    assert not result.passed
    assert [v.level for v in result.violations] == sorted(
        (v.level for v in result.violations), key=lambda level: level != "mandatory"
    )
    document = json.loads(result.to_json())
    assert document["counts"] == result.counts
    assert document["passed"] is False
    assert document["violations"][0].keys() == {"policy", "level", "severity", "urn", "type", "name", "message"}
    taint = next(v for v in result.violations if v.policy == "gpu-taint")
    assert taint.type == "aws:eks/nodeGroup:NodeGroup" and taint.name.endswith("gpu-p5-train-ng")
    assert taint.severity == "medium"


def test_violation_severity_comes_from_the_rule() -> None:
    result = shipped_review("staging")
    by_name = {p.name: p for p in POLICIES}
    for v in result.violations:
        assert v.severity == by_name[v.policy].severity.value


# --------------------------------------------------------------------------------------------- config


def test_each_config_file_validates_against_the_rule_schemas(stack_name: str) -> None:
    config = load_config(stack_name)
    assert set(config.levels) == {p.name for p in POLICIES}


def test_config_entries_always_name_their_level(stack_name: str) -> None:
    """An entry object without enforcementLevel silently resets the rule to advisory in the CLI."""
    from trainstack.review import config_path

    document = json.loads(config_path(stack_name).read_text())
    assert document.get("all") == "advisory"
    assert set(document) - {"all"} == {p.name for p in POLICIES}
    for name, entry in document.items():
        if isinstance(entry, dict):
            assert "enforcementLevel" in entry, name


def test_levels_resolve_like_the_cli() -> None:
    config = resolve_config(
        {
            "all": "mandatory",
            "gpu-taint": "disabled",
            "gpu-budget": {"maxGpus": 8},  # no enforcementLevel: advisory
            "lt-imdsv2": {"enforcementLevel": "remediate"},
        }
    )
    assert config.levels["eks-secrets-kms"] is EnforcementLevel.MANDATORY
    assert config.levels["gpu-taint"] is EnforcementLevel.DISABLED
    assert config.levels["gpu-budget"] is EnforcementLevel.ADVISORY
    assert config.levels["lt-imdsv2"] is EnforcementLevel.REMEDIATE
    assert config.properties["gpu-budget"] == {"maxGpus": 8}
    assert config.properties["lt-imds-hop-limit"] == {"maxHopLimit": 1}  # the schema default
    assert resolve_config({}).levels["eks-secrets-kms"] is EnforcementLevel.ADVISORY  # the pack default


def test_remediate_is_reported_as_mandatory() -> None:
    config = resolve_config({"lt-imdsv2": {"enforcementLevel": "remediate"}})
    source = mutated(
        recording("prod"), "-gpu-p5-train-lt", lambda i: i["metadataOptions"].update(httpTokens="optional")
    )
    violations, _, _ = run_policies(source, config)
    assert {v.level for v in violations if v.policy == "lt-imdsv2"} == {"mandatory"}


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ({"gpu-tiant": "mandatory"}, "'gpu-tiant' is not a policy"),
        ({"all": "blocking"}, "'all' is 'blocking'"),
        ({"gpu-budget": {"enforcementLevel": "mandatory", "maxGpu": 8}}, "gpu-budget"),
        ({"lt-imds-hop-limit": {"enforcementLevel": "mandatory", "maxHopLimit": 0}}, "lt-imds-hop-limit.maxHopLimit"),
        ({"eks-control-plane-logs": {"requiredLogTypes": ["kubelet"]}}, "eks-control-plane-logs.requiredLogTypes"),
        ({"gpu-taint": 3}, "gpu-taint: expected a level or an object, got 3"),
        ({"gpu-taint": "blocking"}, "gpu-taint: level 'blocking'; valid: advisory, mandatory, remediate, disabled"),
        ({"gpu-taint": ["mandatory"]}, r"gpu-taint: expected a level or an object, got \['mandatory'\]"),
    ],
)
def test_bad_config_is_refused(document: dict[str, Any], complaint: str) -> None:
    with pytest.raises(PolicyConfigError, match=complaint):
        resolve_config(document)


def test_missing_environment_config_is_refused() -> None:
    with pytest.raises(PolicyConfigError, match="does not exist"):
        load_config("qa")


def test_a_config_file_cannot_lower_a_floor_or_its_thresholds(tmp_path: Path) -> None:
    """What the served pack holds in code (policies/enforcement.py), the offline review holds too."""
    from trainstack.review import config_path

    document = json.loads(config_path("prod").read_text())
    document["fsx-backup-floor"] = {"enforcementLevel": "advisory", "minBackupRetentionDays": 1}
    document["gpu-budget"] = {"enforcementLevel": "advisory", "maxGpus": 4}
    path = tmp_path / "prod.json"
    path.write_text(json.dumps(document))
    config = load_config("prod", path)
    assert config.levels["fsx-backup-floor"] is EnforcementLevel.MANDATORY
    assert config.properties["fsx-backup-floor"] == {"minBackupRetentionDays": 7, "requireFinalBackup": True}
    assert config.properties["gpu-budget"] == {"maxGpus": 4}  # not a floor: the file decides


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ('["all"]', "expected a JSON object"),
        ("{", "Expecting property name"),
        (b"\xff", "cannot read"),
    ],
)
def test_a_config_file_that_is_not_a_json_object_is_refused_naming_it(
    tmp_path: Path, content: str | bytes, complaint: str
) -> None:
    path = tmp_path / "prod.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(PolicyConfigError, match=rf"^policy config {re.escape(str(path))}: .*{complaint}"):
        load_config("prod", path)


def test_a_crashing_rule_fails_the_review() -> None:
    def broken(args: Any, report: Any) -> None:
        raise KeyError("oops")

    policy = ResourceValidationPolicy(name="broken", description="crashes", validate=broken, severity=Severity.LOW)
    with pytest.raises(PolicyRunError, match="broken"):
        run_policies(recording("dev"), resolve_config({}, [policy]), [policy])


def _reporting(name: str, level: EnforcementLevel, *, asynchronous: bool = False) -> ResourceValidationPolicy:
    """A rule reporting every VPC at `level`; `asynchronous`: as an async function, which the analyzer awaits."""

    def validate(args: Any, report: Any) -> None:
        if args.resource_type == "aws:ec2/vpc:Vpc":
            report(f"{name} saw {args.name}")

    async def validate_later(args: Any, report: Any) -> None:
        validate(args, report)

    return ResourceValidationPolicy(
        name=name,
        description=name,
        validate=validate_later if asynchronous else validate,
        enforcement_level=level,
        severity=Severity.LOW,
    )


def test_mandatory_violations_come_first_whatever_their_rules_names() -> None:
    policies = [
        _reporting("a-advisory", EnforcementLevel.ADVISORY),
        _reporting("z-mandatory", EnforcementLevel.MANDATORY),
    ]
    result = review(recording("dev"), "dev", policies=policies)
    assert [(v.policy, v.level) for v in result.violations] == [
        ("z-mandatory", "mandatory"),
        ("a-advisory", "advisory"),
    ]


def test_an_async_rule_is_awaited_on_a_loop_of_its_own_that_is_closed_after(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _reporting("later", EnforcementLevel.MANDATORY, asynchronous=True)
    loops: list[asyncio.AbstractEventLoop] = []

    def new_event_loop() -> asyncio.AbstractEventLoop:
        loops.append(asyncio.SelectorEventLoop())
        return loops[-1]

    source, config = recording("dev"), resolve_config({}, [policy])
    monkeypatch.setattr(asyncio, "new_event_loop", new_event_loop)
    violations, _, ran = run_policies(source, config, [policy])
    assert ran == 1 and [v.message for v in violations] == ["later saw network-vpc"]
    assert loops and all(loop.is_closed() for loop in loops)  # one per awaited rule call, none left open


def test_a_rule_sees_each_resources_options_as_the_engine_gives_them() -> None:
    seen: dict[str, Any] = {}

    def record(args: Any, report: Any) -> None:
        seen[args.urn] = args.opts

    policy = ResourceValidationPolicy(name="options", description="records", validate=record, severity=Severity.LOW)
    source = recording("prod")
    run_policies(source, resolve_config({}, [policy]), [policy])
    for resource in source.resources:
        opts = seen[resource.urn]
        assert opts.parent == (resource.parent or None) and opts.protect == resource.protect
        timeouts = opts.custom_timeouts  # the recording has none: the engine sends zeros
        assert (timeouts.create_seconds, timeouts.update_seconds, timeouts.delete_seconds) == (0, 0, 0)
    assert all(any(getattr(o, flag) for o in seen.values()) for flag in ("parent", "protect"))  # both are seen


def test_disabled_rules_do_not_run() -> None:
    config = resolve_config({"all": "disabled"})
    violations, skipped, ran = run_policies(recording("dev"), config)
    assert (violations, skipped, ran) == ([], [], 0)


def test_not_applicable_is_recorded_not_reported() -> None:
    result = shipped_review("dev")
    reasons = {name: reason for name, _, reason in result.not_applicable}
    assert reasons["efa-cluster-placement"] == "no node group with EFA interfaces"
    assert not found(result, "efa-cluster-placement")


def test_the_waivers_table_lists_each_committed_waiver_or_says_there_is_none(tmp_path: Path) -> None:
    from trainstack.review import waivers_table

    assert waivers_table(tmp_path) == "No committed stack waives a rule."
    rows = waivers_table().splitlines()
    assert rows[0] == "| Stack | Rule | Resource | Reason | Owner | Expires |"
    assert any(
        row.startswith("| `staging` | `nat-per-az` | `network-private-us-east-1b` | Staging runs") for row in rows
    )


def test_every_stack_has_a_config() -> None:
    for stack in STACKS:
        assert load_config(stack).levels


def _violation(level: str) -> Violation:
    return Violation("p", level, "low", "", "", "", "m")


def test_mandatory_helper() -> None:
    assert mandatory([_violation("advisory"), _violation("mandatory")]) == (_violation("mandatory"),)
