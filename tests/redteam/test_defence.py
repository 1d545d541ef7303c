"""The pieces the corpus relies on, tested directly: the environment/stack tie (loader, CLI, program, pack),
patterns explained in words, and waivers (what they may waive, and that every format shows them)."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import jsonschema
import pytest
import yaml
from pulumi_policy import Policy

from policies.rules import BY_NAME
from policies.rules.base import environment_of_stack as pack_environment_of_stack
from stacks.load import FULL_KEY, PATTERNS, ConfigError, check_stack, environment_of_stack
from stacks.schema import json_schema
from stacks.schema.waivers import WaiverSpec
from tests.conftest import ROOT, recording, stack_config, stack_document
from trainstack.cli import EXIT_BAD_INPUT, main
from trainstack.engine import run_program
from trainstack.model.report import build_report
from trainstack.report import json_report, markdown, text
from trainstack.review import review

NAMES = ["dev", "staging", "prod", "prod-eu-west-1", "staging-bench", "dev-", "qa", "prod2", "production", "", "Prod"]


def test_the_pack_maps_stack_names_like_the_loader() -> None:
    for name in NAMES:
        mapped = environment_of_stack(name)
        assert pack_environment_of_stack(name) == (mapped.value if mapped else None), name
    assert environment_of_stack("prod-eu-west-1") is not None and environment_of_stack("prod2") is None


def test_a_stack_file_cannot_choose_another_environment() -> None:
    with pytest.raises(ConfigError) as raised:
        check_stack("prod", stack_config("staging"), "test")
    (problem,) = raised.value.problems
    assert problem.key == f"{FULL_KEY}.environment" and problem.value == "staging"
    assert "stack 'prod' is a prod stack" in problem.message
    with pytest.raises(ConfigError, match="maps to no environment"):
        check_stack("qa", stack_config("dev"), "test")
    assert check_stack("prod-eu-west-1", stack_config("prod"), "test") is stack_config("prod")


def test_the_plan_refuses_a_flipped_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = stack_document("prod")
    document["config"][FULL_KEY]["environment"] = "dev"
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["plan", "--config", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{FULL_KEY}.environment (got 'dev')" in err and "must be 'prod'" in err


@pytest.mark.e2e
def test_the_program_refuses_a_flipped_environment() -> None:
    """`__main__.py` under the real CLI gets `pulumi.get_stack()`: the same tie holds there."""
    with pytest.raises(Exception, match="is a prod stack"):
        run_program(stack_config("staging"), stack_name="prod")


def test_every_schema_pattern_is_explained_in_words() -> None:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "pattern" in node:
                found.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json_schema())
    assert found and found <= set(PATTERNS), sorted(found - set(PATTERNS))
    assert all(" such as " in text for text in PATTERNS.values())


REASON = "approved by the platform team for the evaluation quarter, with an owner"
ON = date(2026, 12, 1)


def _waiver(rule: str, resource: str, reason: str = REASON) -> WaiverSpec:
    return WaiverSpec.model_validate(
        {
            "rule": rule,
            "resource": resource,
            "reason": reason,
            "owner": "ml@example.com",
            "expires": "2027-03-01",
            "environment": "staging",
        }
    )


def _rules(waivers: list[WaiverSpec]) -> list[Policy]:
    """The rules the waivers name: the ledger judges every waiver whatever rules run."""
    return [BY_NAME[w.rule] for w in waivers]


def test_a_waiver_exempts_one_rule_on_one_resource() -> None:
    """The offline review screens violations with the served pack's own ledger (policies/waivers.py)."""
    subnet, runtime = "network-private-us-east-1b", "training-runtimes-p5-torch"
    waivers = [_waiver("nat-per-az", subnet), _waiver("k8s-image-digest", runtime)]
    result = review(recording("staging"), "staging", waivers=waivers, on=ON, policies=_rules(waivers))
    waived = [(w.violation.policy, w.violation.name, w.reason, w.owner, w.expires, w.floor) for w in result.waived]
    assert waived == [
        ("k8s-image-digest", runtime, REASON, "ml@example.com", date(2027, 3, 1), False),
        ("k8s-image-digest", runtime, REASON, "ml@example.com", date(2027, 3, 1), False),
        ("nat-per-az", subnet, REASON, "ml@example.com", date(2027, 3, 1), True),  # nat-per-az is a floor
    ]
    exempted = {("nat-per-az", subnet), ("k8s-image-digest", runtime)}
    assert not [v for v in result.violations if (v.policy, v.name) in exempted]
    assert [v for v in result.violations if v.policy == "k8s-image-digest"]  # the rule still judges the others


@pytest.mark.parametrize(
    ("waiver", "key", "says"),
    [
        (_waiver("no-such-rule", "a"), "waivers.0.rule", "no such policy rule"),
        (_waiver("sg-no-world-ingress", "a"), "waivers.0.rule", "critical rule"),
        (_waiver("nat-per-az", "zzz"), "waivers.0.resource", "waives nothing"),
    ],
)
def test_a_waiver_that_cannot_stand_is_refused(waiver: WaiverSpec, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        review(recording("staging"), "staging", waivers=[waiver], on=ON, policies=_rules([_waiver("nat-per-az", "a")]))
    assert any(p.key == f"{FULL_KEY}.{key}" and says in p.message for p in raised.value.problems)


def test_a_reason_must_be_written() -> None:
    with pytest.raises(ValueError, match="too short"):
        _waiver("nat-per-az", "a", reason="ok")


def test_every_format_shows_the_waivers() -> None:
    cluster = stack_config("staging")
    assert cluster.waivers, "the staging stack carries a waiver"
    result = review(recording("staging"), "staging", waivers=cluster.waivers, on=ON)
    (waived,) = result.waived
    assert waived.violation.policy == "nat-per-az" and waived.reason.startswith("Staging runs one NAT gateway")
    assert waived.owner == "ml-platform@example.com" and waived.expires == date(2027, 6, 30) and waived.floor
    subnet = recording("staging").by_urn()[waived.violation.urn]  # the waived violation names its resource whole
    assert (waived.violation.type, waived.violation.name) == (subnet.type, "network-private-us-east-1b") != ("", "")
    report = build_report(cluster, recording("staging"), result)
    rendered = text.render(report, text.Style(color=False), tree=False)
    assert "waived    floor nat-per-az on network-private-us-east-1b" in rendered
    assert "waived floor nat-per-az on network-private-us-east-1b: owner" in rendered  # a risk of the verdict
    assert "| waived floor (advisory) | nat-per-az |" in markdown.render(report)
    document = json.loads(json_report.render(report))
    schema = json.loads((ROOT / "trainstack" / "report" / "plan.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    [shown] = document["trainstack"]["policy"]["waived"]
    assert (shown["reason"], shown["expires"], shown["floor"]) == (waived.reason, "2027-06-30", True)
    assert shown["owner"] == "ml-platform@example.com"
    [risk] = [r for r in document["trainstack"]["risks"] if r["title"].startswith("waived floor")]
    assert risk["severity"] == "medium" and "until 2027-06-30" in risk["why"]


@pytest.mark.parametrize(
    ("expires", "says"),
    [
        (date(2027, 1, 15), "is unquoted: Pulumi (Go yaml.v3) reads it as a time"),
        ("2027-01-15 00:00:00 +0000 UTC", "is not a day as YYYY-MM-DD"),
        ("15/01/2027", "is not a day as YYYY-MM-DD"),
    ],
)
def test_an_expiry_is_a_quoted_day(expires: object, says: str) -> None:
    """Pulumi hands the program an unquoted date as Go's text of a time: only a quoted day reads the same in the
    plan and under the CLI, so the schema asks for it by name."""
    raw = {"rule": "nat-per-az", "resource": "a", "reason": REASON, "owner": "a@example.com", "environment": "dev"}
    with pytest.raises(ValueError, match=re.escape(says)):
        WaiverSpec.model_validate({**raw, "expires": expires})
    assert WaiverSpec.model_validate({**raw, "expires": "2027-01-15"}).expires == date(2027, 1, 15)
