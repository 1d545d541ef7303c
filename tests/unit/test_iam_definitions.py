"""parliament on the recorded IAM definitions (trainstack/contracts/iam.py, record_iam_definitions.py): the file is
the installed parliament's own entries for the recorded services, it covers every shipped stack's policies, and
for a document it covers parliament finds exactly what it finds with every service's definitions; any other
document is linted with all of them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stacks.load import load_file
from tests.conftest import ROOT, STACKS, program_recording, recording
from trainstack.contracts import iam, record_iam_definitions
from trainstack.contracts.iam import DOCUMENTS, PolicyKind
from trainstack.engine import Recording

IDENTITY = PolicyKind.IDENTITY
EXAMPLES = sorted((ROOT / "stacks" / "examples").glob("*.yaml"))


def _doc(*statements: Any) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _allow(action: Any, resource: Any = "*", **more: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **more}


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """parliament imported afresh through the contract (its modules and the contract's caches restored after)."""
    for name in [m for m in sys.modules if m == "parliament" or m.startswith("parliament.")]:
        monkeypatch.delitem(sys.modules, name)
    caches = (iam._parliament, iam._widened)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def _documents(rec: Recording) -> list[str]:
    return [
        r.inputs[DOCUMENTS[r.type][0]]
        for r in rec.resources
        if r.type in DOCUMENTS and isinstance(r.inputs.get(DOCUMENTS[r.type][0]), str)
    ]


def _prefixes(text: str) -> set[str]:
    statements = json.loads(text)["Statement"]
    found: set[str] = set()
    for statement in statements if isinstance(statements, list) else [statements]:
        for key in ("Action", "NotAction"):
            actions = statement.get(key, [])
            found |= {a.split(":")[0].lower() for a in (actions if isinstance(actions, list) else [actions])}
    return found


# ------------------------------------------------------------------------------------------------ the file


def test_the_recorded_file_is_the_installed_parliaments_entries_for_the_recorded_services() -> None:
    # Fails after a parliament upgrade that changes a recorded service: re-run the recorder (its docstring).
    text = iam.DEFINITIONS.read_text(encoding="utf-8")
    assert text == record_iam_definitions.render(record_iam_definitions.record())
    every = json.loads(record_iam_definitions.every_service().read_bytes())
    recorded = json.loads(text)
    assert recorded == [s for s in every if s["prefix"] in iam.SERVICES]  # whole, in order
    assert {s["prefix"] for s in recorded} == set(iam.SERVICES)  # each service exists


def test_the_recorder_check_fails_on_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "iam_definitions.json"
    stale.write_text("[]\n", encoding="utf-8")
    monkeypatch.setattr(record_iam_definitions, "DEFINITIONS", stale)
    assert record_iam_definitions.main(["--check"]) == 1
    assert record_iam_definitions.main([]) == 0
    assert record_iam_definitions.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == iam.DEFINITIONS.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_the_recorded_services_cover_every_policy_of_the_committed_stacks(stack: str) -> None:
    documents = _documents(recording(stack))
    assert documents and all(iam._covered(text) for text in documents)
    assert set().union(*map(_prefixes, documents)) <= set(iam.SERVICES)


@pytest.mark.e2e
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_recorded_services_cover_every_policy_of_the_examples(path: Path) -> None:
    stack = load_file(path)
    documents = _documents(program_recording(stack, stack.environment.value))
    assert documents and all(iam._covered(text) for text in documents)


# ------------------------------------------------------------------------------------------------ loading


@pytest.mark.usefixtures("fresh")
def test_parliament_loads_only_the_recorded_services_and_not_pkg_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pkg_resources", raising=False)
    linter = iam._parliament()
    assert [s["prefix"] for s in linter.iam_definition] == list(iam.SERVICES)
    assert "pkg_resources" not in sys.modules  # the stand-in is gone, and the real one was never imported
    assert linter.config["UNKNOWN_ACTION"]["severity"]  # its own config.yaml was still read
    assert sys.modules["parliament.statement"].iam_definition is linter.iam_definition


@pytest.mark.usefixtures("fresh")
def test_a_loaded_pkg_resources_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = type(sys)("pkg_resources")
    monkeypatch.setitem(sys.modules, "pkg_resources", sentinel)
    iam._parliament()
    assert sys.modules["pkg_resources"] is sentinel


# ------------------------------------------------------------------------------------------------ the same findings

CRAFTED = [
    _doc(_allow("s3:GetObject", "arn:aws:s3:::data/*")),
    _doc(_allow("s3:GetObjectz", "arn:aws:s3:::data/*")),  # UNKNOWN_ACTION
    _doc(_allow("logs:DescribeLogGroups", "arn:aws:s3:::data/*")),  # RESOURCE_MISMATCH
    _doc(_allow("ec2:Describe*")),  # a wildcard within a recorded service
    _doc(_allow("EC2:RunInstances")),  # parliament lowers the prefix in one lookup, not the other
    _doc(_allow("kms:*", Condition={"StringEquals": {"kms:ViaServices": "s3.us-east-1.amazonaws.com"}})),
    _doc(_allow("ec2:CreateTags", Condition={"StringEquals": {"ec2:CreateAction": "RunInstances"}})),
    _doc({"Effect": "Deny", "NotAction": ["sts:AssumeRole", "eks:DescribeCluster"], "Resource": "*"}),
]


def _findings(texts: list[str]) -> list[list[str]]:
    """Every finding parliament makes (not only those the contract refuses), as the security review reads them."""
    return [
        sorted(
            json.dumps([f.issue, f.detail, f.location], default=str, sort_keys=True)
            for f in iam.linter_for(text).analyze_policy_string(text, ignore_private_auditors=True).findings
        )
        for text in texts
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("fresh")
def test_for_a_covered_document_the_recorded_services_find_what_all_of_them_find() -> None:
    texts = CRAFTED + _documents(recording("prod"))
    assert all(iam._covered(text) for text in texts)
    recorded = _findings(texts)
    assert len(iam._parliament().iam_definition) == len(iam.SERVICES)  # nothing widened it
    iam._widened()
    assert len(iam._parliament().iam_definition) > 400
    assert _findings(texts) == recorded
    assert all(recorded[1:3]), "the crafted documents include findings, so the comparison compares something"
    assert any(json.loads(f)[0] == "RESOURCE_STAR" for findings in recorded for f in findings)  # not refused


@pytest.mark.usefixtures("fresh")
def test_a_document_naming_another_service_is_linted_with_every_service() -> None:
    unknown_there = _doc(_allow("sqs:SendMessagez"))
    assert not iam._covered(unknown_there)
    assert list(iam.linter_problems(unknown_there, IDENTITY)) == [
        ("sqs:SendMessagez", "UNKNOWN_ACTION: Unknown action sqs:SendMessagez")  # not UNKNOWN_PREFIX
    ]
    assert len(iam._parliament().iam_definition) > 400  # widened in place, for every later document too
    assert list(iam.linter_problems(_doc(_allow("nosuch:Thing")), IDENTITY)) == [
        ("nosuch:Thing", "UNKNOWN_PREFIX: Unknown prefix nosuch")
    ]


@pytest.mark.parametrize(
    ("text", "covered"),
    [
        (_doc(_allow("s3:GetObject")), True),
        (_doc(_allow(["s3:GetObject", "kms:Decrypt"])), True),
        (json.dumps({"Version": "2012-10-17", "Statement": _allow("S3:GetObject")}), True),  # one statement object
        (_doc({"Effect": "Deny", "NotAction": "iam:PassRole", "Resource": "*"}), False),  # iam is not recorded
        (_doc(_allow(["s3:GetObject", "sqs:SendMessage"])), False),
        (_doc(_allow("*")), False),  # expands over every service
        (_doc(_allow("*:GetObject")), False),
        (_doc(_allow("s3GetObject")), False),
        (_doc(_allow(7)), False),
        (_doc("not a statement"), False),
        ("not json", False),
        ("[]", False),
        (_doc({"Effect": "Allow", "Resource": "*"}), True),  # no action at all: nothing to look up
    ],
)
def test_which_documents_the_recorded_services_cover(text: str, covered: bool) -> None:
    assert iam._covered(text) is covered
