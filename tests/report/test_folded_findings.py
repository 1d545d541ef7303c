"""Findings folded for reading (issue 37): advisories one line per rule, journeys that hold one line per kind,
while every mandatory violation and every broken journey stays on its own; prod's text report fits 120 lines at
100 columns even with dozens of journeys."""

from __future__ import annotations

import dataclasses

from tests.report.helpers import report, scenario
from trainstack.journeys import ALERTS, DEPLOY, DESTROY, TEAM_JOB, Journey, Step
from trainstack.model import verdict
from trainstack.model.names import urn_name
from trainstack.report import markdown, text
from trainstack.report.findings import journey_kinds, rule_groups, where
from trainstack.review import Review, Violation

PLAIN = text.Style(color=False)
HOLDS = Step("Kueue admits the workload", True, "ClusterQueue p5-train covers every resource", "kueue v0.14.8 a.go")
FAILS = Step("the pods get their images", False, "the registry refuses pulls from this VPC", "ECR guide, endpoints")
PER_RANK = {"CPU per rank": "23.9", "memory per rank": "245 GiB", "/dev/shm": "64 GiB"}


def _team_jobs(teams: int, broken: int) -> tuple[Journey, ...]:
    """Dozens of team journeys, as the families will walk them: one per team and runtime, per-rank figures."""
    found = [
        Journey(TEAM_JOB, f"team t{i}: {runtime} TrainJob on p5-train", (HOLDS,), PER_RANK)
        for i in range(teams)
        for runtime in ("torch", "mpi")
    ]
    found += [Journey(TEAM_JOB, f"team b{i}: torch TrainJob on p5-train", (HOLDS, FAILS)) for i in range(broken)]
    found += [Journey(DEPLOY, "Helm release kueue", (HOLDS,), {"images": "1"}), Journey(ALERTS, "Xid 79", (HOLDS,))]
    return tuple(found)


def test_prod_fits_120_lines_at_100_columns_with_dozens_of_journeys() -> None:
    shown = report("prod")  # what `plan --stack prod` prints: its example values add a risk and an advisory
    r = dataclasses.replace(shown, journeys=_team_jobs(24, 0))
    lines = text.render(r, PLAIN, width=100).splitlines()
    assert len(lines) <= 120, len(lines)
    assert max(len(line) for line in lines) <= 100
    assert len(text.render(shown, PLAIN, width=100).splitlines()) <= 120


def test_journeys_that_hold_fold_per_kind_and_broken_ones_stay_whole() -> None:
    journeys = _team_jobs(20, 2)
    r = dataclasses.replace(report("prod"), journeys=journeys)
    out = text.render(r, PLAIN, width=100)
    section = out[out.index("Journeys: ") : out.index("\nNetwork and platform")]
    assert section.startswith("Journeys: 42 of 44 hold (deploy 1, team job 42, alerts 1)")
    assert section.count("BROKEN team job: team b") == 2 and section.count("the registry refuses pulls") == 2
    assert "team job: 40 hold; what each gets:" in section
    # What each rank gets, once per runtime and group: the 20 teams on the same group fold into one row each.
    assert "    torch TrainJob on p5-train: CPU per rank 23.9" in section
    assert "    mpi TrainJob on p5-train: CPU per rank 23.9" in section
    assert "team t7" not in section  # the rest are counted, not listed
    kinds = journey_kinds(journeys)
    assert [(k.kind, len(k.holding), len(k.broken)) for k in kinds] == [
        (DEPLOY, 1, 0),
        (TEAM_JOB, 40, 2),
        (ALERTS, 1, 0),
    ]
    comment = markdown.render(r)
    md = comment[comment.index("### Journeys") : comment.index("### Policy review")]
    assert md.index("| **broken** | team job | team b0") < md.index("<details><summary>42 journey(s) hold</summary>")
    assert md.count("| holds | team job |") == 40  # every one, folded
    assert verdict.assess(r).status == verdict.REFUSED


def test_advisories_fold_by_rule_with_a_count_and_the_first_example() -> None:
    r, _, _ = scenario("prod")  # as the CLI plans it: the example values are stack-level advisories
    assert r.policy is not None
    groups = rule_groups(r.policy)
    assert sum(g.count for g in groups) == len(r.policy.violations)
    assert all(g.example is g.violations[0] for g in groups)
    assert [g.count for g in groups] == sorted((g.count for g in groups), reverse=True)  # no mandatory in prod
    digest = next(g for g in groups if g.policy == "k8s-image-digest")
    assert sum(n for _, n in digest.messages) == digest.count and len(digest.messages) < digest.count
    out = text.render(r, PLAIN, width=100)
    section = out[out.index("\nPolicy review") : out.index("\nNetwork and platform")]
    advisory = [line for line in section.splitlines() if line.startswith("  advisory ")]
    assert len(advisory) == len(groups)  # one line (and at most one more) per rule
    assert f"k8s-image-digest x{digest.count}: {digest.example.message[:30]}" in section.replace("\n            ", " ")
    assert "(on stack;" in section  # a stack-level rule names the stack, never an empty name
    comment = markdown.render(r)
    assert "``" not in comment.replace("```", "")  # no empty code span for a stack-level row


def test_figure_rows_fold_teams_only_where_they_get_the_same() -> None:
    same = {"CPU per rank": "23.9"}
    rows = text.figure_rows(
        (
            Journey(TEAM_JOB, "team a: torch TrainJob on p5", (HOLDS,), same),
            Journey(TEAM_JOB, "team b: torch TrainJob on p5", (HOLDS,), same),
            Journey(TEAM_JOB, "team c: torch TrainJob on p5", (HOLDS,), {"CPU per rank": "7.4"}),
            Journey(DEPLOY, "Helm release kueue", (HOLDS,), {"images": "1"}),
        )
    )
    assert rows == [
        ("torch TrainJob on p5", "CPU per rank 23.9"),
        ("torch TrainJob on p5", "CPU per rank 7.4"),
        ("Helm release kueue", "images 1"),
    ]


# ------------------------------------------------------------------- the folding itself, over hand-made findings

URN = "urn:pulumi:prod::trainstack::trainstack:k8s:Platform$kubernetes:helm.sh/v3:Release::trainstack-prod-kueue"


def _violation(policy: str, level: str, message: str, urn: str = URN) -> Violation:
    return Violation(policy, level, "medium", urn, "kubernetes:helm.sh/v3:Release", urn_name(urn), message)


def _review(*violations: Violation) -> Review:
    return Review("prod", "prod", True, 40, violations)


def test_a_mandatory_rule_comes_first_even_when_an_advisory_is_more_frequent() -> None:
    groups = rule_groups(
        _review(
            _violation("k8s-image-digest", "advisory", "no digest"),
            _violation("k8s-image-digest", "advisory", "no digest"),
            _violation("k8s-image-digest", "advisory", "no digest"),
            _violation("eks-private-endpoint", "mandatory", "public endpoint"),
            _violation("b-rule", "advisory", "b"),
            _violation("a-rule", "advisory", "a"),
        )
    )
    # mandatory first; then the most frequent; rules of one count by name
    assert [(g.level, g.policy, g.count) for g in groups] == [
        ("mandatory", "eks-private-endpoint", 1),
        ("advisory", "k8s-image-digest", 3),
        ("advisory", "a-rule", 1),
        ("advisory", "b-rule", 1),
    ]


def test_one_rule_at_two_levels_is_two_groups_and_its_messages_are_counted_most_frequent_first() -> None:
    first = _violation("k8s-image-digest", "advisory", "kueue: no digest")
    groups = rule_groups(
        _review(
            first,
            _violation("k8s-image-digest", "advisory", "gpu-operator: no digest"),
            _violation("k8s-image-digest", "advisory", "gpu-operator: no digest"),
            _violation("k8s-image-digest", "mandatory", "trainer: no digest"),
        )
    )
    assert [(g.level, g.count) for g in groups] == [("mandatory", 1), ("advisory", 3)]
    advisory = groups[1]
    assert advisory.messages == (("gpu-operator: no digest", 2), ("kueue: no digest", 1))
    assert advisory.example is first
    assert rule_groups(_review()) == ()


def test_a_finding_is_placed_at_its_resource_short_or_on_the_stack() -> None:
    on_resource = _violation("k8s-image-digest", "advisory", "no digest")
    on_stack = _violation("stack-example-values", "advisory", "example account id", urn="")
    assert where(on_resource, "trainstack-prod") == "kueue"
    assert where(on_stack, "trainstack-prod") == "stack"
    [resource_group, stack_group] = sorted(rule_groups(_review(on_resource, on_stack)), key=lambda g: g.policy)
    assert resource_group.where("trainstack-prod") == "kueue"
    assert stack_group.where("trainstack-prod") == "stack"


def test_journeys_fold_in_the_reports_order_of_kinds_with_unknown_kinds_last_by_name() -> None:
    journeys = (
        Journey("zeta", "z", (HOLDS,)),
        Journey(DESTROY, "destroy the stack", (FAILS,)),
        Journey("alpha", "a", (FAILS,)),
        Journey(TEAM_JOB, "team a", (HOLDS,)),
        Journey(DEPLOY, "Helm release kueue", (HOLDS, FAILS)),
        Journey(TEAM_JOB, "team b", (HOLDS, FAILS)),
        Journey(TEAM_JOB, "team c", (HOLDS,)),
    )
    kinds = journey_kinds(journeys)
    assert [k.kind for k in kinds] == [DEPLOY, TEAM_JOB, DESTROY, "alpha", "zeta"]
    by_kind = {k.kind: k for k in kinds}
    team = by_kind[TEAM_JOB]
    assert [j.subject for j in team.holding] == ["team a", "team c"]
    assert [j.subject for j in team.broken] == ["team b"]
    assert team.total == 3
    assert (len(by_kind[DEPLOY].holding), len(by_kind[DEPLOY].broken), by_kind[DEPLOY].total) == (0, 1, 1)
    assert (len(by_kind["zeta"].holding), by_kind["zeta"].total) == (1, 1)
    assert journey_kinds(()) == ()
