"""The contract tier's hook: every plan runs `trainstack.contracts.check`, every format shows what it found,
and a refusal makes the plan exit 4 (it wins over a policy violation's 1)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import recording
from trainstack import contracts
from trainstack.cli import EXIT_CONTRACT, EXIT_OK, main
from trainstack.contracts import ContractViolation, check, render_value
from trainstack.engine import Recording


def refuse_vpc(rec: Recording) -> list[ContractViolation]:
    return [
        ContractViolation(
            urn=r.urn,
            path="cidrBlock",
            value=render_value(r.inputs.get("cidrBlock")),
            rule="test rule",
            source="test source",
        )
        for r in rec.by_type("aws:ec2/vpc:Vpc")
    ]


pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def test_check_sorts_and_deduplicates() -> None:
    rec = recording("dev")
    found = check(rec, [refuse_vpc, refuse_vpc])
    assert len(found) == len(rec.by_type("aws:ec2/vpc:Vpc")) == 1
    assert found[0].name.endswith("vpc")


def test_render_value_is_bounded() -> None:
    assert render_value("x" * 10_000).endswith("...")
    assert len(render_value(list(range(10_000)))) == contracts.VALUE_WIDTH


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_a_refusal_fails_the_plan_in_every_format(
    fmt: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(contracts, "_contracts", lambda: (refuse_vpc,))
    code = main(["plan", "--stack", "dev", "--format", fmt, "--no-color"])
    out, err = capsys.readouterr()
    assert code == EXIT_CONTRACT
    assert "contract check: 1 input(s)" in err
    assert "test rule" in out and "test source" in out
    if fmt == "json":
        assert json.loads(out)["trainstack"]["contracts"][0]["path"] == "cidrBlock"


def test_shipped_stack_passes_with_no_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "dev", "--format", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["trainstack"]["contracts"] == []
