"""The journeys tier's model and how every view shows a broken journey: the verdict refuses, the text and
Markdown name the failing step and its source, the JSON carries it (and validates), the CLI exits 6."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import jsonschema
import pytest

from tests.conftest import recording, stack_config
from trainstack import cli, journeys
from trainstack.journeys import DEPLOY, TEAM_JOB, Journey, Step, Trip, walk
from trainstack.model import verdict
from trainstack.model.report import Report, build_report
from trainstack.report import json_report, markdown, text

HOLDS = Step("ClusterQueue covers the pods' resources", True, "covers cpu, memory", "kueue v0.14.8 a.go")
FAILS = Step("Kueue admits the workload", False, "ephemeral-storage is not covered", "kueue v0.14.8 b.go")
LATER = Step("ranks get their CPU", False, "1 CPU per rank", "guide")


def test_a_journey_holds_only_when_every_step_holds() -> None:
    assert Journey(TEAM_JOB, "t", (HOLDS, HOLDS)).holds
    assert not Journey(TEAM_JOB, "t", (HOLDS, FAILS)).holds
    assert Journey(TEAM_JOB, "t", ()).holds  # nothing to meet on the way


def test_the_broken_step_is_the_first_that_fails() -> None:
    assert Journey(TEAM_JOB, "t", (HOLDS, FAILS, LATER)).broken_step == FAILS
    assert Journey(TEAM_JOB, "t", (HOLDS, LATER, FAILS)).broken_step == LATER
    assert Journey(TEAM_JOB, "t", (HOLDS,)).broken_step is None


def test_to_dict_carries_every_step_and_the_broken_one() -> None:
    j = Journey(TEAM_JOB, "team a: torch on p5", (HOLDS, FAILS), {"CPU per rank": "23.9"})
    d = j.to_dict()
    assert d["holds"] is False
    assert d["broken_step"] == FAILS.to_dict()
    assert [s["name"] for s in d["steps"]] == [HOLDS.name, FAILS.name]
    assert d["figures"] == {"CPU per rank": "23.9"}
    assert Journey(DEPLOY, "x", (HOLDS,)).to_dict()["broken_step"] is None


@pytest.mark.slow
def test_walk_orders_by_kind_and_keeps_each_familys_order() -> None:
    def late(trip: Trip) -> Iterator[Journey]:
        yield Journey(TEAM_JOB, "b", ())
        yield Journey(TEAM_JOB, "a", ())

    def early(trip: Trip) -> Iterator[Journey]:
        assert trip.stack.name  # each family gets the stack and the recording
        yield Journey(DEPLOY, "z", ())

    walked = walk(recording("dev"), stack_config("dev"), families=[late, early])
    assert [(j.kind, j.subject) for j in walked] == [(DEPLOY, "z"), (TEAM_JOB, "b"), (TEAM_JOB, "a")]


def _with_journeys(*found: Journey) -> Report:
    report = build_report(stack_config("dev"), recording("dev"))
    return dataclasses.replace(report, journeys=found)


@pytest.mark.slow
def test_a_broken_journey_refuses_the_verdict_and_shows_in_every_view() -> None:
    broken = Journey(TEAM_JOB, "team a: torch TrainJob on g5", (HOLDS, FAILS))
    held = Journey(DEPLOY, "Helm release kueue", (HOLDS,), {"images": "1"})
    report = _with_journeys(held, broken)

    v = verdict.assess(report)
    assert v.status == verdict.REFUSED
    assert any(r.title == "journey team job: team a: torch TrainJob on g5" for r in v.risks)
    assert {f.label: f.value for f in v.figures}["journeys"] == "1 of 2 hold"

    out = text.render(report, text.Style(color=False))
    assert "Journeys: 1 of 2 hold" in out
    assert "BROKEN team job: team a: torch TrainJob on g5" in out
    assert "Kueue admits the workload: ephemeral-storage is not covered" in out
    assert "source: kueue v0.14.8 b.go" in out
    assert "journeys 1 broken" in " ".join(out.splitlines()[-3:])  # the summary line, wrapped

    md = markdown.render(report)
    rows = [line for line in md.splitlines() if line.startswith("| **broken**") or line.startswith("| holds")]
    assert rows[0].startswith("| **broken** | team job |")  # broken first, even though walked second
    assert "kueue v0.14.8 b.go" in rows[0]

    document = json.loads(json_report.render(report))
    jsonschema.validate(document, json.loads(json_report.SCHEMA_PATH.read_text()))
    assert document["trainstack"]["journeys"][1]["broken_step"]["name"] == FAILS.name
    assert any(d["message"].startswith("journey team job: team a") for d in document["diagnostics"])


@pytest.mark.slow
def test_holding_journeys_leave_the_verdict_alone() -> None:
    report = _with_journeys(Journey(DEPLOY, "x", (HOLDS,)))
    assert verdict.assess(report).status == verdict.assess(dataclasses.replace(report, journeys=())).status
    assert "Journeys: 1 of 1 hold" in text.render(report, text.Style(color=False))


@pytest.mark.slow
@pytest.mark.usefixtures("shared_recordings")
def test_the_cli_exits_6_on_a_broken_journey_and_4_wins_over_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken_family(trip: Trip) -> Iterator[Journey]:
        yield Journey(TEAM_JOB, "team a", (FAILS,))

    monkeypatch.setattr(journeys, "_families", lambda: (broken_family,))
    assert cli.main(["plan", "--stack", "dev", "--format", "json"]) == cli.EXIT_JOURNEY
    assert "journeys: 1 broken" in capsys.readouterr().err

    from trainstack import contracts
    from trainstack.contracts import ContractViolation

    refusal = ContractViolation("urn:x", "a", "b", "rule", "source")
    monkeypatch.setattr(contracts, "_contracts", lambda: (lambda recording: [refusal],))
    assert cli.main(["plan", "--stack", "dev", "--format", "json"]) == cli.EXIT_CONTRACT
