"""The IAM policy contract (trainstack/contracts/iam.py) on hand-written documents: the policy grammar one element
and one policy kind at a time, the size quotas at their limits, which of parliament's findings refuse a document,
and which resources' inputs are checked. Rules and sources are the module's own (GRAMMAR, MAX_CHARACTERS,
REFUSED); parliament is the pinned linter itself, not a stand-in."""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import pytest

from trainstack import tokens
from trainstack.contracts import iam
from trainstack.contracts.iam import GRAMMAR, MAX_CHARACTERS, PolicyKind, grammar_problems, size_problem
from trainstack.engine import UNKNOWN, RecordedResource, Recording

TRUST, IDENTITY, RESOURCE = PolicyKind.TRUST, PolicyKind.IDENTITY, PolicyKind.RESOURCE
ASSUME = {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
READ = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}
BUCKET = {**READ, "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}
VALID = {TRUST: ASSUME, IDENTITY: READ, RESOURCE: BUCKET}


def _doc(*statements: Any, **top: Any) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements), **top}


def _problems(document: Any, kind: PolicyKind) -> list[tuple[str, str]]:
    return list(grammar_problems(document, kind))


# ----------------------------------------------------------------------------------------- the grammar


@pytest.mark.parametrize("kind", list(PolicyKind))
def test_a_valid_document_of_each_kind_passes(kind: PolicyKind) -> None:
    assert _problems(_doc(VALID[kind]), kind) == []
    assert _problems({"Version": "2008-10-17", "Statement": VALID[kind]}, kind) == []  # one statement, unlisted


@pytest.mark.parametrize("document", [[READ], "policy", None, 1])
def test_a_document_that_is_not_an_object_is_said_once(document: Any) -> None:
    assert _problems(document, IDENTITY) == [("", "a policy document is a JSON object")]


def test_unknown_top_level_elements_are_named_with_the_valid_ones() -> None:
    problems = _problems(_doc(READ, Id="x", Statements=[], Foo=1), IDENTITY)
    assert [where for where, _ in problems] == ["Foo", "Statements"]
    assert problems[0][1] == "unknown top-level element 'Foo'; valid: Id, Statement, Version"


@pytest.mark.parametrize("version", [None, "2012-10-18", "", 2012])
def test_a_version_other_than_the_two_dated_ones_is_refused(version: Any) -> None:
    document = _doc(READ, Version=version) if version is not None else {"Statement": [READ]}
    assert _problems(document, IDENTITY) == [("Version", "Version must be one of 2012-10-17, 2008-10-17")]


@pytest.mark.parametrize("statements", [None, [], {}, "s3:GetObject", 1])
def test_a_missing_empty_or_scalar_statement_stops_the_check(statements: Any) -> None:
    document = {"Version": "2012-10-17"} if statements is None else {"Version": "2012-10-17", "Statement": statements}
    assert _problems(document, IDENTITY) == [
        ("Statement", "Statement must be an object or a non-empty list of objects")
    ]


def test_a_statement_that_is_not_an_object_is_said_and_the_next_is_still_checked() -> None:
    problems = _problems(_doc("s3:GetObject", {**READ, "Effect": "allow"}), IDENTITY)
    assert problems == [
        ("Statement[0]", "each statement is a JSON object"),
        ("Statement[1].Effect", "Effect must be Allow or Deny"),
    ]


def test_unknown_statement_elements_are_named() -> None:
    problems = _problems(_doc({**READ, "Actions": ["s3:GetObject"], "Condtion": {}}), IDENTITY)
    assert problems == [
        ("Statement[0].Actions", "unknown statement element 'Actions'"),
        ("Statement[0].Condtion", "unknown statement element 'Condtion'"),
    ]


@pytest.mark.parametrize("effect", ["Deny", "Allow"])
def test_allow_and_deny_are_the_effects(effect: str) -> None:
    assert _problems(_doc({**READ, "Effect": effect}), IDENTITY) == []
    without = {k: v for k, v in READ.items() if k != "Effect"}
    assert _problems(_doc(without), IDENTITY) == [("Statement[0].Effect", "Effect must be Allow or Deny")]


def test_a_statement_has_exactly_one_of_action_or_not_action() -> None:
    one = ("Statement[0]", "a statement has exactly one of Action or NotAction")
    not_action = {**{k: v for k, v in READ.items() if k != "Action"}, "NotAction": "s3:DeleteObject"}
    assert _problems(_doc(not_action), IDENTITY) == []
    assert _problems(_doc({**READ, "NotAction": "s3:DeleteObject"}), IDENTITY) == [one]
    neither = {k: v for k, v in READ.items() if k != "Action"}
    assert _problems(_doc(neither), IDENTITY) == [one]


def test_a_statement_has_at_most_one_of_resource_or_not_resource() -> None:
    not_resource = {**{k: v for k, v in READ.items() if k != "Resource"}, "NotResource": "arn:aws:s3:::logs/*"}
    assert _problems(_doc(not_resource), IDENTITY) == []
    both = {**READ, "NotResource": "arn:aws:s3:::logs/*"}
    assert _problems(_doc(both), IDENTITY) == [
        ("Statement[0]", "a statement has at most one of Resource or NotResource")
    ]


def _without(statement: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in statement.items() if k not in keys}


def test_a_trust_policy_names_a_principal_and_takes_no_resource() -> None:
    assert _problems(_doc(_without(ASSUME, "Principal")), TRUST) == [
        ("Statement[0]", "a role trust policy statement names a Principal")
    ]
    not_principal = {**_without(ASSUME, "Principal"), "NotPrincipal": {"AWS": "arn:aws:iam::123456789012:root"}}
    assert _problems(_doc(not_principal), TRUST) == []
    for key in ("Resource", "NotResource"):
        assert _problems(_doc({**ASSUME, key: "*"}), TRUST) == [
            ("Statement[0]", "a role trust policy takes no Resource or NotResource")
        ]


def test_a_permission_policy_takes_no_principal_and_needs_a_resource() -> None:
    for key in ("Principal", "NotPrincipal"):
        assert _problems(_doc({**READ, key: {"AWS": "*"}}), IDENTITY) == [
            ("Statement[0]", "a permission policy attached to a role takes no Principal")
        ]
    assert _problems(_doc(_without(READ, "Resource")), IDENTITY) == [
        ("Statement[0]", "a permission policy statement needs Resource or NotResource")
    ]


def test_a_resource_policy_names_a_principal_and_needs_a_resource() -> None:
    assert _problems(_doc(_without(BUCKET, "Principal")), RESOURCE) == [
        ("Statement[0]", "a resource policy statement names a Principal")
    ]
    assert _problems(_doc(_without(BUCKET, "Resource")), RESOURCE) == [
        ("Statement[0]", "a resource policy statement needs Resource or NotResource")
    ]
    not_resource = {**_without(BUCKET, "Resource"), "NotResource": "arn:aws:s3:::data/private/*"}
    assert _problems(_doc(not_resource), RESOURCE) == []


SID = ("Statement[0].Sid", "an IAM policy Sid takes ASCII letters and digits only")


@pytest.mark.parametrize("kind", [TRUST, IDENTITY])
def test_an_iam_sid_takes_letters_and_digits_only(kind: PolicyKind) -> None:
    assert _problems(_doc({**VALID[kind], "Sid": "ReadData2"}), kind) == []
    assert _problems(_doc({**VALID[kind], "Sid": ""}), kind) == []
    for sid in ("read-data", "read data", "Lesen\u00e4"):
        assert _problems(_doc({**VALID[kind], "Sid": sid}), kind) == [SID], sid


def test_a_resource_policy_sid_takes_more_characters_but_is_still_text() -> None:
    assert _problems(_doc({**BUCKET, "Sid": "Allow read-only access"}), RESOURCE) == []
    assert _problems(_doc({**BUCKET, "Sid": 7}), RESOURCE) == [SID]
    assert _problems(_doc({**READ, "Sid": 7}), IDENTITY) == [SID]


def test_each_repeated_sid_is_said_once() -> None:
    statements = [{**READ, "Sid": sid} for sid in ("B", "A", "C", "B", "A", "B")]
    assert _problems(_doc(*statements), IDENTITY) == [
        ("Statement", "Sid 'A' appears more than once; Sids are unique within a policy"),
        ("Statement", "Sid 'B' appears more than once; Sids are unique within a policy"),
    ]
    assert _problems(_doc({**READ, "Sid": "A"}, READ, READ), IDENTITY) == []  # a statement without a Sid is free


# ----------------------------------------------------------------------------------------- the size quotas


@pytest.mark.parametrize("quota", ["trust", "inline", "managed"])
def test_iam_counts_characters_without_whitespace_up_to_its_limit(quota: str) -> None:
    limit, _, source = MAX_CHARACTERS[quota]
    assert size_problem("x" * limit + " \n\t" * 50, quota) is None  # whitespace is not counted
    assert size_problem("x" * (limit + 1), quota) == (
        f"{limit + 1} characters without whitespace, over the limit of {limit}",
        source,
    )


@pytest.mark.parametrize("quota", ["kms", "s3"])
def test_kms_and_s3_count_bytes_whitespace_included(quota: str) -> None:
    limit, _, source = MAX_CHARACTERS[quota]
    assert size_problem("x" * limit, quota) is None
    assert size_problem("x" * (limit - 1) + " ", quota) is None
    assert size_problem("x" * limit + " ", quota) == (f"{limit + 1} bytes, over the limit of {limit}", source)
    assert size_problem("x" * (limit - 1) + "\u00e9", quota) is not None  # one character, two bytes


# ----------------------------------------------------------------------------------------- parliament's findings


def _lint(document: dict[str, Any], kind: PolicyKind) -> list[tuple[str, str]]:
    return list(iam.linter_problems(json.dumps(document), kind))


def test_the_linter_refuses_an_unknown_action_at_the_action() -> None:
    assert _lint(_doc({**READ, "Action": "s3:GetObjectz"}), IDENTITY) == [
        ("s3:GetObjectz", "UNKNOWN_ACTION: Unknown action s3:GetObjectz")
    ]


def test_a_structured_finding_is_rendered_as_json() -> None:
    document = _doc({**READ, "Action": "logs:DescribeLogGroups"})  # takes only "*", not a bucket's objects
    ((where, problem),) = _lint(document, IDENTITY)
    assert where == "" and problem.startswith("RESOURCE_MISMATCH: [{")
    assert json.loads(problem.removeprefix("RESOURCE_MISMATCH: "))[0]["action"] == "logs:DescribeLogGroups"


def test_least_privilege_findings_are_left_to_the_policy_pack() -> None:
    assert _lint(_doc({**READ, "Resource": "*"}), IDENTITY) == []  # parliament's RESOURCE_STAR


def test_a_missing_resource_is_refused_except_in_a_trust_policy() -> None:
    no_resource = _doc(_without(READ, "Resource"))
    assert _lint(no_resource, IDENTITY) == [("", "MALFORMED: Statement contains neither Resource nor NotResource")]
    assert _lint(no_resource, RESOURCE) == [("", "MALFORMED: Statement contains neither Resource nor NotResource")]
    assert _lint(_doc(ASSUME), TRUST) == []
    # Only that one finding is forgiven a trust policy: another MALFORMED or another finding is still refused.
    assert _lint(_doc({**ASSUME, "Effect": "allow"}), TRUST) == [
        ("allow", "MALFORMED: Unknown Effect used. Effect must be either Allow or Deny")
    ]
    assert _lint(_doc(ASSUME, Version="2012-10-18"), TRUST) == [("2012-10-18", "INVALID_VERSION: ")]
    # parliament stops at a statement without a Resource, so an unknown action in a trust policy goes unseen.
    assert _lint(_doc({**ASSUME, "Action": "sts:AssumeRolez"}), TRUST) == []


def test_loading_the_linter_prints_no_warnings_into_a_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """parliament's import warns (pkg_resources, an unclosed config file); a plan's output must not carry that."""
    monkeypatch.delitem(sys.modules, "parliament")  # import it afresh (its submodules stay loaded)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = iam._parliament.__wrapped__()
    assert module.__name__ == "parliament" and hasattr(module, "analyze_policy_string")
    assert [str(w.message) for w in caught] == []


def test_the_linter_source_names_the_pinned_parliament() -> None:
    from importlib.metadata import version

    assert iam.parliament_source() == f"parliament {version('parliament')} (IAM definitions of every service)"


# ----------------------------------------------------------------------------------------- documents and resources

URN = "urn:pulumi:prod::trainstack::aws:iam/rolePolicy:RolePolicy::r"


def _check(text: Any, kind: PolicyKind = IDENTITY, quota: str = "inline") -> list[iam.ContractViolation]:
    return list(iam.check_document(URN, "policy", text, kind, quota))


def test_a_valid_document_has_no_violation() -> None:
    assert _check(json.dumps(_doc(READ))) == []


@pytest.mark.parametrize("text", [None, {"Version": "2012-10-17"}, f'{{"Version": "{UNKNOWN}"}}', UNKNOWN])
def test_a_document_not_yet_known_as_text_is_not_judged(text: Any) -> None:
    assert _check(text) == []


def test_text_that_is_not_json_is_one_violation() -> None:
    (violation,) = _check('{"Version": ')
    assert (violation.urn, violation.path, violation.value) == (URN, "policy", '{"Version": ')
    assert violation.rule.startswith("not JSON: ") and violation.source == GRAMMAR


def test_a_grammar_problem_is_located_inside_the_input() -> None:
    text = json.dumps(_doc({**READ, "Principal": "*"}))
    violations = [v for v in _check(text) if v.source == GRAMMAR]
    assert [(v.path, v.rule) for v in violations] == [
        ("policy:Statement[0]", "a permission policy attached to a role takes no Principal")
    ]
    assert violations[0].value == iam.render_value(text)
    (whole,) = [v for v in _check("[]") if v.source == GRAMMAR]  # a problem of the whole document: the input
    assert (whole.path, whole.rule) == ("policy", "a policy document is a JSON object")


def test_an_oversized_document_is_refused_with_the_quota_source() -> None:
    limit, _, source = MAX_CHARACTERS["trust"]
    statements = [{**ASSUME, "Sid": f"S{i}"} for i in range(40)]
    text = json.dumps(_doc(*statements))
    assert len(text.replace(" ", "")) > limit
    (violation,) = [v for v in _check(text, TRUST, "trust") if v.source == source]
    assert violation.path == "policy" and "over the limit of 2048" in violation.rule
    assert [v for v in _check(text, TRUST, "inline") if v.source.startswith("IAM User Guide, IAM and")] == []


def test_a_linter_finding_shows_where_it_is_or_the_document() -> None:
    unknown = _check(json.dumps(_doc({**READ, "Action": "s3:GetObjectz"})))
    assert [(v.path, v.value, v.source) for v in unknown] == [("policy", "s3:GetObjectz", iam.parliament_source())]
    text = json.dumps(_doc({**READ, "Action": "logs:DescribeLogGroups"}))
    (mismatch,) = _check(text)
    assert mismatch.value == iam.render_value(text) and mismatch.rule.startswith("RESOURCE_MISMATCH")


def _resource(type_: str, inputs: dict[str, Any]) -> RecordedResource:
    return RecordedResource(
        type_, "r", f"urn:pulumi:prod::trainstack::{type_}::r", "", True, inputs, (), {}, False, False, ""
    )


def test_each_policy_input_is_checked_as_its_kind() -> None:
    identity = json.dumps(_doc(READ))  # a permission policy: refused as a trust or resource policy
    resources = (
        _resource(tokens.IAM_ROLE, {"assumeRolePolicy": identity, "name": "r"}),
        _resource(tokens.IAM_ROLE_POLICY, {"policy": identity}),
        _resource(tokens.IAM_POLICY, {"policy": identity}),
        _resource(tokens.KMS_KEY, {"policy": identity}),
        _resource(tokens.BUCKET_POLICY, {"policy": identity}),
        _resource(tokens.IAM_ROLE, {"name": "no-document-yet"}),
        _resource("aws:sns/topicPolicy:TopicPolicy", {"policy": "not json"}),  # not a document this contract owns
    )
    found = sorted((v.urn.split("::")[2], v.path, v.rule) for v in iam.check(Recording("prod", False, resources, {})))
    assert found == sorted(
        [
            (tokens.IAM_ROLE, "assumeRolePolicy:Statement[0]", "a role trust policy statement names a Principal"),
            (tokens.IAM_ROLE, "assumeRolePolicy:Statement[0]", "a role trust policy takes no Resource or NotResource"),
            (tokens.KMS_KEY, "policy:Statement[0]", "a resource policy statement names a Principal"),
            (tokens.BUCKET_POLICY, "policy:Statement[0]", "a resource policy statement names a Principal"),
        ]
    )
