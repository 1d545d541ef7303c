"""The rules by area, and the floors marked on their rules (`floor=<environment>`, policies/rules/base.py) and held
from that environment on (policies/enforcement.py): the sets each environment holds mandatory, pinned."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pulumi_policy import Severity

from policies import enforcement, waivers
from policies.enforcement import FLOORS, MANDATORY_FLOORS, floor_level, floor_settings, mandatory_floors
from policies.facts import ENVIRONMENTS
from policies.rules import BY_NAME, DOMAINS, POLICIES
from policies.rules.base import floor_of, resource_rule, stack_rule

EVERYWHERE = {"stack-environment", "stack-waivers"}
# Not held in staging: a staging cluster is not kept, one NAT gateway is its cost, its fleet is a rehearsal.
FROM_PROD = {"deletion-safeguards", "nat-per-az", "fleet-health-floor"}
FROM_STAGING = {
    "fsx-backup-floor",
    "s3-noncurrent-version-floor",
    "log-retention-floor",
    "system-nodes-floor",
    "node-update-budget",
    "efa-on-capable-groups",
    "fabric-validation",
    "storage-throughput-floor",
    "team-quota-fits-capacity",
    "object-lock-retention-floor",
}


def test_each_environment_holds_its_floors_and_every_earlier_ones() -> None:
    assert ENVIRONMENTS == ("dev", "staging", "prod")  # the order `floor=` counts from
    assert FLOORS == EVERYWHERE | FROM_STAGING | FROM_PROD
    assert MANDATORY_FLOORS == {
        "dev": EVERYWHERE,
        "staging": EVERYWHERE | FROM_STAGING,
        "prod": EVERYWHERE | FROM_STAGING | FROM_PROD,
    }
    assert {name: floor_of(BY_NAME[name]) for name in FROM_PROD} == dict.fromkeys(FROM_PROD, "prod")


def test_an_unknown_environment_holds_prods_floors() -> None:
    assert mandatory_floors(None) == mandatory_floors("qa") == MANDATORY_FLOORS["prod"]


@pytest.mark.parametrize("configured", ["advisory", "disabled"])
def test_a_floor_is_raised_to_mandatory_from_its_environment_on(configured: str) -> None:
    assert floor_level("nat-per-az", "staging", configured) == configured
    assert floor_level("nat-per-az", "prod", configured) == "mandatory"
    assert floor_level("nat-per-az", None, configured) == "mandatory"
    assert floor_level("fsx-backup-floor", "dev", configured) == configured
    assert floor_level("fsx-backup-floor", "staging", configured) == "mandatory"
    assert floor_level("stack-waivers", "dev", configured) == "mandatory"


def test_a_rule_that_is_no_floor_keeps_its_configured_level_and_thresholds() -> None:
    assert floor_of(BY_NAME["sg-no-world-ingress"]) is None
    assert floor_level("sg-no-world-ingress", "prod", "advisory") == "advisory"
    assert floor_level("nat-per-az", "prod", "remediate") == "remediate"  # stronger than mandatory: kept
    assert floor_settings("sg-no-world-ingress", "prod") is None
    assert floor_settings("fsx-backup-floor", "prod") == {"minBackupRetentionDays": 7, "requireFinalBackup": True}


@pytest.mark.parametrize("decorator", ["resource", "stack"])
def test_a_floor_that_names_no_environment_is_refused_with_the_valid_ones(decorator: str) -> None:
    with pytest.raises(ValueError, match=r"rule x-floor: floor 'production' is not an environment; valid: dev, "):
        if decorator == "resource":
            resource_rule(
                name="x-floor", description="-", severity=Severity.LOW, types=["aws:ec2/vpc:Vpc"], floor="production"
            )
        else:
            stack_rule(name="x-floor", description="-", severity=Severity.LOW, floor="production")


def test_the_rules_modules_are_the_components_areas_and_the_stack() -> None:
    """One set of area names: `policies/rules/<area>.py` for each `trainstack:<area>:<Type>` the components
    register, and `stack.py` for the rules of no one area."""
    components = Path(__file__).resolve().parents[2] / "components"
    areas = {
        match
        for path in components.rglob("*.py")
        for match in re.findall(r'"trainstack:([a-z0-9]+):[A-Za-z]+"', path.read_text(encoding="utf-8"))
    }
    assert areas and set(DOMAINS.values()) == areas | {"stack"}


def test_stack_waivers_runs_last_to_judge_what_every_other_rule_reported() -> None:
    assert POLICIES[-1].name == "stack-waivers"


# --------------------------------------------------------------------------------------------- floor thresholds


def _config_dir(tmp_path: Path, environment: str, text: str) -> Path:
    (tmp_path / f"{environment}.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_floors_thresholds_are_its_environments_without_the_level(tmp_path: Path) -> None:
    entry = {"enforcementLevel": "advisory", "minRetentionDays": 30, "classes": ["a"]}
    config_dir = _config_dir(tmp_path, "staging", json.dumps({"log-retention-floor": entry}))
    assert floor_settings("log-retention-floor", "staging", config_dir) == {"minRetentionDays": 30, "classes": ["a"]}


def test_an_unknown_environment_reads_prods_committed_thresholds(tmp_path: Path) -> None:
    config_dir = _config_dir(tmp_path, "prod", json.dumps({"log-retention-floor": {"minRetentionDays": 365}}))
    assert floor_settings("log-retention-floor", None, config_dir) == {"minRetentionDays": 365}
    assert floor_settings("log-retention-floor", None) == floor_settings("log-retention-floor", "prod")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(None, id="no-config-file"),
        pytest.param("{", id="not-json"),
        pytest.param("[]", id="not-an-object"),
        pytest.param("{}", id="the-floor-not-set"),
        pytest.param(json.dumps({"log-retention-floor": "mandatory"}), id="the-entry-not-an-object"),
    ],
)
def test_a_config_that_does_not_set_a_floor_gives_no_thresholds(tmp_path: Path, text: str | None) -> None:
    config_dir = tmp_path if text is None else _config_dir(tmp_path, "staging", text)
    assert floor_settings("log-retention-floor", "staging", config_dir) is None


def test_a_rule_that_is_no_floor_takes_no_thresholds_even_where_a_config_sets_some(tmp_path: Path) -> None:
    config_dir = _config_dir(tmp_path, "prod", json.dumps({"sg-no-world-ingress": {"allowedPorts": [443]}}))
    assert floor_settings("sg-no-world-ingress", "prod", config_dir) is None


# ------------------------------------------------------------------------------------------- the pack's stack


@pytest.mark.parametrize(
    ("stack", "environment"), [("prod", "prod"), ("staging-eu", "staging"), ("qa", None), (None, None)]
)
def test_the_pack_knows_its_environment_from_the_stack_it_serves(stack: str | None, environment: str | None) -> None:
    environ = {} if stack is None else {"PULUMI_STACK": stack}
    assert enforcement.environment(environ) == environment


def test_prod_never_waives_its_floors_or_any_rule_of_high_severity() -> None:
    floors, severe = enforcement.prod_never_waived()
    assert floors == MANDATORY_FLOORS["prod"]
    assert severe and severe == {name for name, policy in BY_NAME.items() if policy.severity == Severity.HIGH}


def test_a_review_without_a_day_judges_waivers_on_today() -> None:
    before = waivers.today()
    with enforcement.applying([], "dev") as ledger:
        assert before <= ledger.on <= waivers.today() and waivers.active() is ledger
    assert waivers.active() is not ledger
