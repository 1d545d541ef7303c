"""`python -m trainstack preflight` and `capacity` in this process: formats, --output, exit codes, the edit."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import stack_config
from tests.preflight import helpers as h
from trainstack import cli
from trainstack.preflight import render
from trainstack.preflight.aws import Account


def _account_for(monkeypatch: pytest.MonkeyPatch, caller: Any, overrides: dict[tuple[str, str], Any]) -> None:
    real = Account.__init__

    def build(self: Account, region: str, **_: object) -> None:
        real(self, region, session=caller, overrides=overrides)

    monkeypatch.setattr(Account, "__init__", build)


@pytest.mark.e2e
@pytest.mark.parametrize("format_", ["text", "json", "markdown"])
def test_a_matching_account_exits_0_in_every_format(
    moto: h.Moto, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, format_: str
) -> None:
    stack = stack_config("prod")
    _account_for(monkeypatch, h.seed(moto, stack, "prod"), h.answer_everything(stack)[0])
    out = tmp_path / f"preflight.{format_}"
    assert cli.main(["preflight", "--stack", "prod", "--format", format_, "--output", str(out)]) == 0
    text = out.read_text()
    if format_ == "json":
        document = json.loads(text)
        jsonschema.validate(document, json.loads(render.SCHEMA_PATH.read_text()))
        assert document["verdict"] == "passed" and document["account"] == "444455556666"
    elif format_ == "markdown":
        assert (
            "**Verdict: passed" in text and "| ok | reservation cr-0a1b2c3d4e5f67890 can hold group p5-train |" in text
        )
    else:
        assert text.splitlines()[2].startswith("Verdict: passed") and "Read-only" in text


@pytest.mark.e2e
def test_a_failing_account_exits_1(
    moto: h.Moto, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = stack_config("dev")
    _account_for(monkeypatch, h.seed(moto, stack, "dev", autoscaling=False), h.answer_everything(stack)[0])
    assert cli.main(["preflight", "--stack", "dev"]) == 1
    captured = capsys.readouterr()
    assert "FAIL  the EC2 Auto Scaling service-linked role exists" in captured.out
    assert "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com" in captured.out
    assert captured.err.strip() == "preflight failed: 1 failed, 15 passed, 1 skipped"


@pytest.mark.e2e
def test_capacity_lists_offerings_reservations_and_blocks_with_the_edit(
    moto: h.Moto, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = stack_config("staging")
    ec2, stub = h.stubbed("ec2", stack.region)
    held = h.capacity_reservation(
        "cr-0123456789abcdef0",
        "p5.48xlarge",
        "us-east-1c",
        count=4,
        available=2,
        reservation_type="capacity-block",
        state="scheduled",
        start=datetime.datetime(2027, 1, 4, 11, 30, tzinfo=datetime.UTC),
    )
    stub.add_response("describe_capacity_reservations", held)
    # DescribeCapacityBlockOfferings (EC2 API Reference, CapacityBlockOffering).
    stub.add_response(
        "describe_capacity_block_offerings",
        {
            "CapacityBlockOfferings": [
                {
                    "CapacityBlockOfferingId": "cb-0123456789abcdef0",
                    "InstanceType": "p5.48xlarge",
                    "AvailabilityZone": "us-east-1d",
                    "InstanceCount": 2,
                    "StartDate": datetime.datetime(2026, 12, 10, 11, 30, tzinfo=datetime.UTC),
                    "EndDate": datetime.datetime(2026, 12, 17, 11, 30, tzinfo=datetime.UTC),
                    "CapacityBlockDurationHours": 168,
                    "UpfrontFee": "7398.24",
                    "CurrencyCode": "USD",
                    "Tenancy": "default",
                }
            ]
        },
    )
    _account_for(monkeypatch, h.seed(moto, stack, "staging"), {("capacity", "ec2"): ec2})
    assert cli.main(["capacity", "--stack", "staging", "--group", "p5"]) == 0
    out = capsys.readouterr().out
    assert "on-demand" in out and "us-east-1e" in out  # moto's offerings: p5.48xlarge in a-f
    assert "cr-0123456789abcdef0: scheduled Capacity Block, 2 of 4 free, starts 2027-01-04" in out
    assert "capacity: {type: capacity_block, reservation_id: cr-0123456789abcdef0" in out
    assert "aws ec2 purchase-capacity-block --capacity-block-offering-id cb-0123456789abcdef0" in out
    assert "2026-12-10 11:30 to 2026-12-17 11:30 UTC, 7398.24 USD upfront" in out
    assert "add us-east-1d to network.availability_zones" in out


@pytest.mark.usefixtures("aws_env")
def test_capacity_refuses_an_unknown_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["capacity", "--stack", "staging", "--group", "p6"]) == 2
    assert "--group p6: no such gpu_node_groups entry; groups: p5" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["preflight", "capacity"])
def test_help_names_the_exit_codes_shared_with_plan(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "7 AWS could not be asked" in help_text and "1 a check failed" in help_text
    # 6 is the plan's broken journey (docs/cli.md): one set of codes, so preflight never uses it
    assert cli.EXIT_ACCOUNT == 7 and cli.EXIT_ACCOUNT != cli.EXIT_JOURNEY
