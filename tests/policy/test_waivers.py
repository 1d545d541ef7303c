"""Waivers, one rule for the served pack and the offline review (policies/waivers.py), and the `stack-waivers`
rule's three cases (compliant, violated, not applicable).

The pack reads the waivers from `PULUMI_CONFIG`, the stack's config map as the Python language host hands it
over: every value a string, `trainstack:cluster` the JSON of the object (pulumi/pulumi v3.259.0,
pulumi-language-python RunPlugin; sdk/go/common/resource/config Plaintext.marshalText). `pulumi_config` below
builds that map from a stack file the way the CLI does.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from policies import enforcement, waivers
from policies.rules import BY_NAME, POLICIES
from stacks.load import FULL_KEY, ConfigError
from tests.conftest import stack_config, stack_document
from tests.policy.helpers import shipped
from trainstack.review import resolve_config, review, run_policies

REASON = "approved by the platform team for the evaluation quarter, with an owner"
OWNER = "ml-platform@example.com"
ON = date(2026, 12, 1)  # the day these tests judge waivers on
SOON = date(2027, 3, 31)


def waiver(rule: str, resource: str, environment: str = "staging", expires: date = SOON) -> waivers.Waiver:
    return waivers.Waiver(rule, resource, REASON, OWNER, expires, environment)


def pulumi_config(document: dict[str, Any]) -> dict[str, str]:
    """A stack file's `config:` as the CLI hands it to a policy pack in PULUMI_CONFIG: strings stay as they are,
    anything else is its JSON (Go's json.Marshal: compact, map keys sorted)."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
        for key, value in document["config"].items()
    }


def test_the_pack_reads_the_waivers_pulumi_hands_it() -> None:
    document = stack_document("staging")
    environ = {"PULUMI_CONFIG": json.dumps(pulumi_config(document)), "PULUMI_STACK": "staging"}
    read = waivers.from_environment(environ)
    expected = stack_config("staging").waivers
    assert read and [(w.rule, w.resource, w.owner, w.expires, w.environment) for w in read] == [
        (w.rule, w.resource, w.owner, w.expires, w.environment.value) for w in expected
    ]
    assert all(w.reason == " ".join(e.reason.split()) for w, e in zip(read, expected, strict=True))


@pytest.mark.parametrize("missing", ["owner", "expires", "environment"])
def test_a_waiver_without_owner_expiry_or_environment_exempts_nothing(missing: str) -> None:
    """The pack fails closed: an entry it cannot read whole is no waiver (the program's schema refuses it first)."""
    document = stack_document("staging")
    del document["config"][FULL_KEY]["waivers"][0][missing]
    assert waivers.from_environment({"PULUMI_CONFIG": json.dumps(pulumi_config(document))}) == ()


def test_an_unreadable_expiry_exempts_nothing() -> None:
    document = stack_document("staging")
    document["config"][FULL_KEY]["waivers"][0]["expires"] = "next spring"
    assert waivers.from_environment({"PULUMI_CONFIG": json.dumps(pulumi_config(document))}) == ()


@pytest.mark.parametrize(
    "environ",
    [{}, {"PULUMI_CONFIG": "not json"}, {"PULUMI_CONFIG": "[]"}, {"PULUMI_CONFIG": json.dumps({FULL_KEY: "{"})}],
)
def test_no_or_unreadable_config_waives_nothing(environ: dict[str, str]) -> None:
    assert waivers.from_environment(environ) == ()


def test_a_waiver_exempts_one_rule_on_one_resource_and_never_a_stack_wide_violation() -> None:
    ledger = waivers.Ledger((waiver("nat-per-az", "a"),), "staging", ON)
    assert ledger.screen("nat-per-az", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::a", "m")
    assert not ledger.screen("nat-per-az", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::b", "m")
    assert not ledger.screen("log-retention-floor", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::a", "m")
    assert not ledger.screen("nat-per-az", "", "m")  # a stack-wide violation names no resource
    assert ledger.used == {0} and [(w.resource, w.owner, w.expires) for w in ledger.waived] == [("a", OWNER, SOON)]


@pytest.mark.parametrize(
    ("given", "environment", "on", "applies"),
    [
        (waiver("nat-per-az", "a"), "staging", ON, True),
        (waiver("nat-per-az", "a", expires=ON), "staging", ON, True),  # holds through its expiry day
        (waiver("nat-per-az", "a", expires=ON), "staging", date(2026, 12, 2), False),  # then stops
        (waiver("nat-per-az", "a"), "prod", ON, False),  # a staging waiver in a prod stack
        (waiver("nat-per-az", "a", "prod"), "prod", ON, False),  # a floor in prod
        (waiver("nat-per-az", "a", "prod"), None, ON, False),  # an unknown environment is held to prod's rules
        (waiver("fsx-team-isolation", "a", "prod"), "prod", ON, False),  # high severity: not in prod
        (waiver("fsx-team-isolation", "a", "dev"), "dev", ON, True),  # but in dev
        (waiver("k8s-image-tag-pinned", "a", "prod"), "prod", ON, True),  # medium, not a floor: prod may waive it
    ],
)
def test_a_waiver_applies_only_in_its_environment_until_it_expires_and_never_to_a_prod_floor(
    given: waivers.Waiver, environment: str | None, on: date, applies: bool
) -> None:
    floors, severe = enforcement.prod_never_waived()
    assert "nat-per-az" in floors and "fsx-team-isolation" in severe and "k8s-image-tag-pinned" not in severe | floors
    ledger = waivers.Ledger((given,), environment, on, floors, severe)
    assert ledger.screen(given.rule, f"urn:pulumi:s::trainstack::t::{given.resource}", "m") is applies
    assert ledger.applies(0) is applies


# ------------------------------------------------------------------------------------------------ stack-waivers


def _stack_waivers(recorded: Any, given: list[waivers.Waiver], environment: str = "staging") -> list[str]:
    """What the pack's rules report with `given` in force, as the served pack runs them: every rule, then
    `stack-waivers` last."""
    config = resolve_config({"all": "mandatory"})
    with enforcement.applying(given, environment, ON):
        violations, skipped, _ = run_policies(recorded, config)
    assert POLICIES[-1].name == "stack-waivers"  # it judges what the others reported, so it runs last
    skipped_here = [reason for name, _, reason in skipped if name == "stack-waivers"]
    return [v.message for v in violations if v.policy == "stack-waivers"] or skipped_here


@pytest.mark.slow
def test_stack_waivers_compliant() -> None:
    """Staging's own waiver exempts a real violation: nothing to report."""
    given = [
        waivers.Waiver(w.rule, w.resource, w.reason, w.owner, w.expires, w.environment.value)
        for w in stack_config("staging").waivers
    ]
    assert _stack_waivers(shipped("staging"), given) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("waiver", "says"),
    [
        (waiver("no-such-rule", "a"), "waivers.0.rule ('no-such-rule'): no such policy rule"),
        (waiver("sg-no-world-ingress", "a"), "a critical rule cannot be waived"),
        (waiver("nat-per-az", "zzz"), "waivers.0.resource ('zzz'): waives nothing"),
        (waiver("nat-per-az", "network-private-us-east-1b", "prod"), "waivers.0.environment ('prod'): this waiver"),
        (
            waiver("nat-per-az", "network-private-us-east-1b", expires=date(2027, 12, 2)),
            "waivers.0.expires ('2027-12-02'): more than 365 days ahead",
        ),
    ],
)
def test_stack_waivers_violated(waiver: waivers.Waiver, says: str) -> None:
    [message] = _stack_waivers(shipped("staging"), [waiver])
    assert says in message and message.startswith(f"{FULL_KEY}.waivers.0.")


@pytest.mark.slow
def test_stack_waivers_not_applicable() -> None:
    assert _stack_waivers(shipped("staging"), []) == ["the stack waives nothing"]


@pytest.mark.slow
def test_the_offline_review_refuses_what_the_pack_rule_reports() -> None:
    """The same problems, from the same function: the pack reports them under `stack-waivers` (mandatory in
    code), the offline plan refuses the stack file with them (exit 2)."""
    from stacks.schema.waivers import WaiverSpec

    bad = WaiverSpec.model_validate(
        {
            "rule": "nat-per-az",
            "resource": "zzz",
            "reason": REASON,
            "owner": OWNER,
            "expires": SOON.isoformat(),
            "environment": "staging",
        }
    )
    with pytest.raises(ConfigError) as raised:
        review(shipped("staging"), "staging", waivers=[bad], on=ON)
    [problem] = raised.value.problems
    [message] = _stack_waivers(shipped("staging"), [waiver(bad.rule, bad.resource)])
    assert message == f"{problem.key} ({problem.value!r}): {problem.message}"


def test_the_waiver_rule_is_critical_and_a_floor_everywhere() -> None:
    from policies.enforcement import floor_level

    assert BY_NAME["stack-waivers"].severity is not None and BY_NAME["stack-waivers"].severity.value == "critical"
    for environment in ("dev", "staging", "prod", None):
        assert floor_level("stack-waivers", environment, "disabled") == "mandatory"


@pytest.mark.slow
def test_prod_waives_no_floor() -> None:
    [message] = _stack_waivers(shipped("prod"), [waiver("log-retention-floor", "a", "prod")], "prod")
    assert message.startswith(f"{FULL_KEY}.waivers.0.rule ('log-retention-floor'): log-retention-floor is a floor")
    [message] = _stack_waivers(shipped("prod"), [waiver("fsx-team-isolation", "a", "prod")], "prod")
    assert "fsx-team-isolation is a rule of high severity, which prod never waives" in message


def _waiver_expired(given: list[waivers.Waiver], on: date) -> tuple[list[str], list[str]]:
    """`waiver-expired`'s reports and not-applicable reasons on staging with `given` in force on day `on`."""
    config = resolve_config({"all": "mandatory"})
    with enforcement.applying(given, "staging", on):
        violations, skipped, _ = run_policies(shipped("staging"), config, [BY_NAME["waiver-expired"]])
    return [v.message for v in violations], [reason for name, _, reason in skipped if name == "waiver-expired"]


@pytest.mark.slow
def test_waiver_expired_compliant_violated_and_not_applicable() -> None:
    current = waiver("nat-per-az", "network-private-us-east-1b", expires=date(2026, 12, 1))
    assert _waiver_expired([current], ON) == ([], [])  # holds through its expiry day
    [message], _ = _waiver_expired([current], date(2026, 12, 2))
    assert message.startswith(f"{FULL_KEY}.waivers.0.expires ('2026-12-01'): the waiver of nat-per-az")
    not_applicable = ([], ["the stack has no waiver of its environment"])
    assert _waiver_expired([], ON) == not_applicable
    other = waiver("nat-per-az", "network-private-us-east-1b", "prod", expires=date(2026, 1, 1))
    assert _waiver_expired([other], ON) == not_applicable  # another environment's waiver is stack-waivers' concern


@pytest.mark.slow
def test_an_expired_waiver_exempts_nothing_and_is_named() -> None:
    """Staging's waiver past its day: the violation it covered stands, `waiver-expired` names it, and it is not a
    `stack-waivers` problem (it is not stale: it lapsed)."""
    lapsed = waiver("nat-per-az", "network-private-us-east-1b", expires=date(2026, 11, 30))
    config = resolve_config({"all": "mandatory"})
    with enforcement.applying([lapsed], "staging", ON) as ledger:
        violations, _, _ = run_policies(shipped("staging"), config)
    by_rule = {v.policy: v.message for v in violations}
    assert "nat-per-az" in by_rule and not ledger.waived
    assert by_rule["waiver-expired"].startswith(f"{FULL_KEY}.waivers.0.expires ('2026-11-30'): the waiver of nat")
    assert "(owner ml-p" in by_rule["waiver-expired"] and "stack-waivers" not in by_rule  # addresses shown masked


def test_the_served_pack_judges_a_copied_staging_file_as_prod(monkeypatch: pytest.MonkeyPatch) -> None:
    """The staging file deployed as stack prod: its waiver was granted for staging, so it exempts nothing."""
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(pulumi_config(stack_document("staging"))))
    monkeypatch.setenv("PULUMI_STACK", "prod")
    ledger = enforcement.served()
    assert ledger.environment == "prod" and ledger.waivers and ledger.prod_never_waives("nat-per-az") == "a floor"
    assert not ledger.applies(0)
    assert not ledger.screen("nat-per-az", "urn:pulumi:prod::trainstack::t::network-private-us-east-1b", "m")


def test_the_ledger_in_force_is_the_reviews_then_the_served_one_then_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ledger served (a process that is not the pack): no waiver in force. The pack serves its stack's; a review's
    own stands above it for its duration, and the served one is back after."""
    monkeypatch.setattr(waivers, "_SERVED", list(waivers._SERVED))
    assert waivers.active().waivers == () and waivers.active().environment is None
    served = waivers.Ledger((waiver("nat-per-az", "a", "staging"),), "staging", ON)
    waivers.serve(served)
    assert waivers.active() is served
    with enforcement.applying([waiver("k8s-image-tag-pinned", "b", "dev")], "dev", ON) as reviewing:
        assert waivers.active() is reviewing and reviewing.environment == "dev" and reviewing.on == ON
        assert "nat-per-az" in reviewing.floors and "fsx-team-isolation" in reviewing.severe
    assert waivers.active() is served


def _waiver_entry(**changes: object) -> dict[str, object]:
    """One `waivers` entry of a stack file, as its YAML reads, with `changes` applied."""
    entry: dict[str, object] = {
        "rule": "nat-per-az",
        "resource": "network-private-us-east-1b",
        "reason": REASON,
        "owner": OWNER,
        "expires": SOON.isoformat(),
        "environment": "staging",
    }
    return entry | changes


def test_a_reason_at_both_minimums_is_a_written_reason() -> None:
    """Five words and thirty characters are enough: the minimums are inclusive."""
    from stacks.schema.waivers import MIN_REASON_CHARS, MIN_REASON_WORDS, WaiverSpec

    reason = "abcde fghij klmno pqrst uvwxyz"
    assert (len(reason), len(reason.split())) == (MIN_REASON_CHARS, MIN_REASON_WORDS)
    assert WaiverSpec.model_validate(_waiver_entry(reason=reason)).reason == reason


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param("abcde fghij klmno pqrst uvwxy", id="five-words-29-characters"),
        pytest.param("abcdefghij klmnopqrst uvwxyzabcd efghij", id="four-words-39-characters"),
        pytest.param("a b c d e f g h i j", id="ten-words-19-characters"),
        pytest.param("ok     because      we     said   so", id="spacing-does-not-count"),
    ],
)
def test_a_reason_short_of_either_minimum_is_refused(reason: str) -> None:
    """A reason is a sentence: too few characters or too few words each refuse it, and padding with spaces does
    not make a token longer."""
    from pydantic import ValidationError

    from stacks.schema.waivers import WaiverSpec

    with pytest.raises(ValidationError, match="is too short"):
        WaiverSpec.model_validate(_waiver_entry(reason=reason))


def test_an_expiry_reads_only_as_a_quoted_day() -> None:
    """An unquoted YAML day arrives as a date (as a time under Pulumi) and is refused with the quoting hint; text
    must be YYYY-MM-DD; a quoted day reads as that day."""
    from pydantic import ValidationError

    from stacks.schema.waivers import WaiverSpec

    assert WaiverSpec.model_validate(_waiver_entry(expires="2027-06-30")).expires == date(2027, 6, 30)
    with pytest.raises(ValidationError, match=r'is unquoted: .*quote it: "2027-06-30"'):
        WaiverSpec.model_validate(_waiver_entry(expires=date(2027, 6, 30)))
    for text in ("2027-6-30", "30/06/2027", "2027-06-30T00:00:00Z", "20270630"):
        with pytest.raises(ValidationError, match="is not a day as YYYY-MM-DD"):
            WaiverSpec.model_validate(_waiver_entry(expires=text))


# ------------------------------------------------------------------------------------ reading a config's waivers


def test_the_waivers_of_a_config_object_are_read_as_well_as_of_its_json() -> None:
    """The offline review and a config map whose value is already an object read the same waivers as the JSON the
    CLI hands over; an entry that is no mapping is skipped, the rest still read."""
    entry = _waiver_entry(reason="  approved   by the platform\nteam for the quarter ")
    cluster = {"waivers": ["not a waiver", entry]}
    from_object = waivers.from_stack_config({waivers.STACK_CONFIG_KEY: cluster})
    assert from_object == waivers.from_stack_config({waivers.STACK_CONFIG_KEY: json.dumps(cluster)})
    assert from_object == (
        waivers.Waiver(
            "nat-per-az",
            "network-private-us-east-1b",
            "approved by the platform team for the quarter",
            OWNER,
            SOON,
            "staging",
        ),
    )


@pytest.mark.parametrize(
    "cluster",
    [
        pytest.param({}, id="no-waivers-key"),
        pytest.param({"waivers": {"0": "x"}}, id="waivers-not-a-list"),
        pytest.param(["waivers"], id="cluster-not-an-object"),
        pytest.param({"waivers": [{}]}, id="an-empty-entry"),
    ],
)
def test_a_config_without_a_list_of_whole_waivers_waives_nothing(cluster: object) -> None:
    assert waivers.from_stack_config({waivers.STACK_CONFIG_KEY: cluster}) == ()
    assert waivers.from_stack_config({}) == ()


@pytest.mark.parametrize("field", ["rule", "resource", "reason", "owner", "environment"])
def test_a_waiver_with_a_text_field_that_is_not_text_exempts_nothing(field: str) -> None:
    assert waivers.from_stack_config({waivers.STACK_CONFIG_KEY: {"waivers": [_waiver_entry(**{field: 7})]}}) == ()


def test_the_day_waivers_are_judged_on_is_todays_date_in_utc() -> None:
    from datetime import UTC, datetime

    before = datetime.now(UTC).date()
    judged = waivers.today()
    assert isinstance(judged, date) and before <= judged <= datetime.now(UTC).date()


@pytest.mark.parametrize(
    ("urn", "resource"),
    [
        ("urn:pulumi:prod::trainstack::aws:ec2/subnet:Subnet::network-private-a", "network-private-a"),
        (
            "urn:pulumi:prod::trainstack::trainstack:network:Network$aws:ec2/subnet:Subnet::network-private-a",
            "network-private-a",
        ),
        ("", ""),
        (None, ""),
    ],
)
def test_a_violation_names_the_resource_by_the_last_part_of_its_urn(urn: str | None, resource: str) -> None:
    assert waivers.resource_of(urn) == resource


def test_the_first_waiver_of_a_rule_on_a_resource_is_the_one_that_matches() -> None:
    given = (waiver("nat-per-az", "b"), waiver("log-retention-floor", "a"), waiver("nat-per-az", "a"), waiver("x", "a"))
    assert waivers.match(given, "nat-per-az", "a") == 2
    assert waivers.match(given, "log-retention-floor", "a") == 1
    assert waivers.match(given, "nat-per-az", "c") is None
    assert waivers.match(given, "nat-per-az", "") is None


def test_a_waiver_naming_no_resource_never_exempts_a_stack_wide_violation() -> None:
    """The pack reads PULUMI_CONFIG itself, unvalidated: an entry with an empty resource must not match the empty
    resource of a violation that names none (a stack rule's)."""
    [read] = waivers.from_stack_config({waivers.STACK_CONFIG_KEY: {"waivers": [_waiver_entry(resource="")]}})
    assert waivers.match((read,), "nat-per-az", "") is None
    assert not _ledger(read).screen("nat-per-az", "", "one NAT gateway for the stack")


# --------------------------------------------------------------------------- what a ledger judges, one case each


def _ledger(
    *given: waivers.Waiver, environment: str | None = "staging", used: set[int] | None = None
) -> waivers.Ledger:
    """A ledger of `given`, judged on ON with the pack's own floors and high-severity rules; `used` the indexes
    that exempted a violation in this run."""
    floors, severe = enforcement.prod_never_waived()
    return waivers.Ledger(tuple(given), environment, ON, floors, severe, used=set(used or ()))


SEVERITY = {
    "nat-per-az": "medium",
    "fsx-team-isolation": "high",
    "k8s-image-tag-pinned": "medium",
    "sg-no-world-ingress": "critical",
}


def _problems(ledger: waivers.Ledger) -> list[tuple[int, str, str]]:
    return [(p.index, p.key, p.value) for p in ledger.problems(SEVERITY)]


def test_a_used_waiver_of_its_own_environment_within_a_year_is_no_problem() -> None:
    """A floor of prod waived in staging, exempting a violation, expiring in a year to the day: it stands."""
    assert _problems(_ledger(waiver("nat-per-az", "a", expires=date(2027, 12, 1)), used={0})) == []
    assert _problems(_ledger(waiver("k8s-image-tag-pinned", "a", "prod"), environment="prod", used={0})) == []


def test_a_waiver_expiring_a_day_past_a_year_is_refused_for_its_expiry() -> None:
    ledger = _ledger(waiver("nat-per-az", "a", expires=date(2027, 12, 2)), used={0})
    [problem] = ledger.problems(SEVERITY)
    assert (problem.index, problem.key, problem.value) == (0, "expires", "2027-12-02")
    assert "more than 365 days ahead (after 2027-12-01)" in problem.message


def test_a_waiver_that_exempts_nothing_is_refused_unless_it_lapsed() -> None:
    """Unused and current: stale, refused; unused and expired: not a problem (`waiver-expired` names it)."""
    ledger = _ledger(waiver("nat-per-az", "a"), waiver("nat-per-az", "b", expires=date(2026, 11, 30)), used=set())
    assert _problems(ledger) == [(0, "resource", "a")]
    assert ledger.problems(SEVERITY)[0].message.startswith("waives nothing: nat-per-az reports no violation")


def test_a_waiver_of_no_rule_of_the_pack_is_refused_first() -> None:
    [problem] = _ledger(waiver("no-such-rule", "a", "prod"), used={0}).problems(SEVERITY)
    assert (problem.key, problem.value) == ("rule", "no-such-rule") and "no such policy rule" in problem.message


def test_a_critical_rule_is_refused_in_every_environment() -> None:
    for environment in ("dev", "staging", "prod"):
        ledger = _ledger(waiver("sg-no-world-ingress", "a", environment), environment=environment, used={0})
        [problem] = ledger.problems(SEVERITY)
        assert (problem.key, problem.message) == ("rule", "a critical rule cannot be waived: fix the resource instead")


@pytest.mark.parametrize("environment", ["prod", None])
def test_prod_and_an_unknown_environment_refuse_a_floor_or_a_high_rule_waiver(environment: str | None) -> None:
    given = (waiver("nat-per-az", "a", "prod"), waiver("fsx-team-isolation", "b", "prod"))
    ledger = _ledger(*given, environment=environment, used={0, 1})
    found = ledger.problems(SEVERITY)
    assert [(p.index, p.key) for p in found] == [(0, "rule"), (1, "rule")]
    assert "nat-per-az is a floor, which prod never waives" in found[0].message
    assert "fsx-team-isolation is a rule of high severity, which prod never waives" in found[1].message


def test_staging_and_dev_may_waive_a_prod_floor_and_a_high_rule() -> None:
    for environment in ("dev", "staging"):
        given = (waiver("nat-per-az", "a", environment), waiver("fsx-team-isolation", "b", environment))
        assert _problems(_ledger(*given, environment=environment, used={0, 1})) == []


@pytest.mark.parametrize(
    ("granted", "environment", "in_words"),
    [
        ("staging", "dev", "this stack is dev:"),
        ("staging", "prod", "this stack is prod:"),
        ("staging", None, "this stack is of no known environment (held to prod's rules):"),
    ],
)
def test_another_environments_waiver_is_refused_naming_both(
    granted: str, environment: str | None, in_words: str
) -> None:
    [problem] = _ledger(waiver("k8s-image-tag-pinned", "a", granted), environment=environment, used={0}).problems(
        SEVERITY
    )
    assert (problem.key, problem.value) == ("environment", granted)
    assert f"this waiver was granted for {granted}, and {in_words}" in problem.message


def test_a_prod_waiver_is_the_own_waiver_of_a_stack_of_no_known_environment() -> None:
    ledger = _ledger(waiver("k8s-image-tag-pinned", "a", "prod"), environment=None, used={0})
    assert _problems(ledger) == [] and ledger.own() == [(0, ledger.waivers[0])] and ledger.applies(0)


def test_each_waiver_is_judged_and_named_by_its_index() -> None:
    ledger = _ledger(
        waiver("no-such-rule", "a"),
        waiver("nat-per-az", "b"),
        waiver("nat-per-az", "c", "dev"),
        waiver("nat-per-az", "d", expires=date(2028, 1, 1)),
        used={1, 3},
    )
    assert _problems(ledger) == [(0, "rule", "no-such-rule"), (2, "environment", "dev"), (3, "expires", "2028-01-01")]
    assert str(ledger.problems(SEVERITY)[1]) == (
        f"{FULL_KEY}.waivers.2.environment ('dev'): this waiver was granted for dev, and this stack is staging: a "
        "waiver applies only in its own environment, so it exempts nothing here; grant it again for this "
        "environment or remove it"
    )


def test_the_expired_waivers_are_this_environments_past_their_day() -> None:
    lapsed = waiver("nat-per-az", "a", expires=date(2026, 11, 30))
    ledger = _ledger(
        waiver("nat-per-az", "b", expires=ON), lapsed, waiver("nat-per-az", "c", "prod", expires=date(2026, 1, 1))
    )
    assert ledger.expired() == [(1, lapsed)]


def test_prod_never_waives_a_floor_or_a_high_rule_and_says_which() -> None:
    ledger = _ledger()
    assert ledger.prod_never_waives("nat-per-az") == "a floor"
    assert ledger.prod_never_waives("fsx-team-isolation") == "a rule of high severity"
    assert ledger.prod_never_waives("k8s-image-tag-pinned") is None


def test_a_screened_violation_is_recorded_with_its_waiver() -> None:
    urn = "urn:pulumi:staging::trainstack::aws:ec2/subnet:Subnet::a"
    ledger = _ledger(waiver("log-retention-floor", "b"), waiver("nat-per-az", "a"))
    assert ledger.screen("nat-per-az", urn, "one NAT gateway") is True
    assert ledger.used == {1}
    assert ledger.waived == [waivers.WaivedViolation("nat-per-az", "a", urn, "one NAT gateway", REASON, OWNER, SOON)]


def test_a_review_within_a_review_gives_the_ledger_back_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waivers, "_ACTIVE", [])
    outer, inner = _ledger(), _ledger(environment="dev")
    with waivers.in_force(outer):
        with waivers.in_force(inner) as given:
            assert given is inner and waivers.active() is inner
        assert waivers.active() is outer
    assert waivers._ACTIVE == []
