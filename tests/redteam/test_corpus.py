"""The red-team corpus (`corpus.yaml`): every dangerous edit of a committed stack file is refused for the reason
it names, and every legitimate edit plans clean.

A case runs the way `python -m trainstack plan --stack <stack>` does: the schema, the environment/stack tie,
the real program under the mock engine (cached per config for the session, tests/conftest.py), the policy
review with the stack's waivers and, for a legitimate edit (the only kind that must pass it), the contract
check. A schema refusal is matched by the key path of a problem and a fragment of its message; a policy
refusal by a mandatory violation's rule and message.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.rules import POLICIES
from stacks.load import FULL_KEY, ConfigError, check_stack, validate_object
from stacks.schema import StackConfig
from tests.conftest import program_recording, stack_document
from trainstack.contracts import check
from trainstack.engine import Recording
from trainstack.review import Review, review

CORPUS = yaml.safe_load((Path(__file__).parent / "corpus.yaml").read_text())
# The day the corpus's waivers are judged on: their expiries are dates around it, so the cases do not age.
CORPUS_DAY = date(2026, 12, 1)


def _step(key: str) -> str | int:
    return int(key) if key.isdigit() else key


def _parent(document: Any, path: str) -> tuple[Any, str | int]:
    *parents, last = [_step(k) for k in path.split(".")]
    node = document
    for step in parents:
        node = node[step] if isinstance(step, int) else node.setdefault(step, {})
    return node, last


def apply(document: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    """`document` with the case's `set`, `unset` and `append` edits applied (a copy)."""
    out = copy.deepcopy(document)
    for path, value in (edit.get("set") or {}).items():
        node, last = _parent(out, path)
        node[last] = copy.deepcopy(value)
    for path in edit.get("unset") or []:
        node, last = _parent(out, path)
        del node[last]
    for path, item in (edit.get("append") or {}).items():
        node, last = _parent(out, path)
        node.setdefault(last, []).append(copy.deepcopy(item))
    return out


@dataclass(frozen=True)
class Outcome:
    problems: tuple[tuple[str, str], ...] = ()  # (key, message) of a refusal with exit 2
    review: Review | None = None
    recording: Recording | None = None  # for the contract check, which only a legitimate edit must pass


def plan(case: dict[str, Any], rule: str | None = None) -> Outcome:
    """The case planned; with `rule`, the review runs that rule and the rules the stack's waivers name (a waiver
    stands or falls by its own rule's violations alone), so it decides what the whole pack's review would about
    `rule` and about the waivers, for a fraction of the CPU."""
    stack = case["stack"]
    try:
        cluster = _validated(case)
        recording = program_recording(cluster, stack)
        policies = POLICIES
        if rule is not None:
            named = {rule, *(w.rule for w in cluster.waivers)}
            policies = [p for p in POLICIES if p.name in named]
        result = review(recording, cluster.environment.value, waivers=cluster.waivers, policies=policies, on=CORPUS_DAY)
    except ConfigError as error:
        return Outcome(problems=tuple((p.key, p.message) for p in error.problems))
    return Outcome(review=result, recording=recording)


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [case["id"] for case in cases]


def test_the_corpus_is_large_and_sourced() -> None:
    dangerous, legitimate = CORPUS["dangerous"], CORPUS["legitimate"]
    assert len(dangerous) >= 40 and len(legitimate) >= 10
    ids = _ids(dangerous + legitimate)
    assert len(set(ids)) == len(ids), "case ids are unique"
    for case in dangerous + legitimate:
        assert str(case["source"]).startswith("https://github.com/"), case["id"]
        assert case["stack"] in {"dev", "staging", "prod"}, case["id"]
    for case in dangerous:
        refused = case["refused"]
        assert set(refused) in ({"key", "says"}, {"policy", "says"}), case["id"]


def _validated(case: dict[str, Any]) -> StackConfig:
    """The case's edited stack through the schema and the environment/stack tie (ConfigError when refused)."""
    stack = case["stack"]
    raw = apply(stack_document(stack)["config"][FULL_KEY], case.get("edit") or {})
    return check_stack(stack, validate_object(raw, f"corpus {case['id']}"), f"corpus {case['id']}")


def _dangerous(case: dict[str, Any]) -> Any:
    """A case the schema refuses plans nothing and stays in the gate (a validation costs milliseconds); one it
    accepts plans its own stack, for the policies or the waiver check to refuse: e2e."""
    try:
        _validated(case)
    except ConfigError:
        return pytest.param(case, id=case["id"])
    return pytest.param(case, id=case["id"], marks=[pytest.mark.e2e])


@pytest.mark.parametrize("case", [_dangerous(case) for case in CORPUS["dangerous"]])
def test_dangerous_edit_is_refused_for_its_reason(case: dict[str, Any]) -> None:
    refused = case["refused"]
    outcome = plan(case, refused.get("policy"))
    says = refused["says"].lower()
    if "key" in refused:
        matches = [(k, m) for k, m in outcome.problems if k.startswith(refused["key"]) and says in m.lower()]
        assert matches, f"expected a problem at {refused['key']} saying {refused['says']!r}; got {outcome.problems}"
        return
    assert outcome.review is not None, f"refused by the schema instead: {outcome.problems}"
    mandatory = [v for v in outcome.review.mandatory if v.policy == refused["policy"]]
    assert any(says in v.message.lower() for v in mandatory), (
        f"expected a mandatory {refused['policy']} saying {refused['says']!r}; got "
        f"{[(v.policy, v.message) for v in outcome.review.mandatory]} from {outcome.review.policies_run} rules"
    )


@pytest.mark.parametrize("case", CORPUS["legitimate"], ids=_ids(CORPUS["legitimate"]))
@pytest.mark.e2e
def test_legitimate_edit_plans_clean(case: dict[str, Any]) -> None:
    outcome = plan(case)
    assert not outcome.problems, outcome.problems
    assert outcome.review is not None
    assert not outcome.review.mandatory, [(v.policy, v.message) for v in outcome.review.mandatory]
    assert outcome.recording is not None
    violations = check(outcome.recording)
    assert not violations, violations
    assert sorted({w.violation.policy for w in outcome.review.waived}) == sorted(case.get("waived", []))


def test_apply_sets_unsets_and_appends() -> None:
    document = {"a": {"b": [1, 2]}, "c": 1}
    edited = apply(document, {"set": {"a.b.1": 5}, "unset": ["c"], "append": {"a.b": 7, "d": {"x": 1}}})
    assert edited == {"a": {"b": [1, 5, 7]}, "d": [{"x": 1}]}
    assert document == {"a": {"b": [1, 2]}, "c": 1}
