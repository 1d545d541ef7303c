"""The contract tier's own parts (trainstack/contracts/__init__.py): a violation's fields and name, how an offending
value is shown (cut to VALUE_WIDTH), which contracts a plan runs, and how their findings are merged."""

from __future__ import annotations

import json

from trainstack import contracts
from trainstack.contracts import VALUE_WIDTH, ContractViolation, render_value
from trainstack.engine import Recording

URN = "urn:pulumi:prod::trainstack::aws:eks/cluster:Cluster::training-eks"


def test_a_violation_names_its_resource_and_serialises_every_field() -> None:
    violation = ContractViolation(URN, "version", "1.20", "too old", "EKS user guide")
    assert violation.name == "training-eks"
    assert ContractViolation("no-separator", "", "", "", "").name == "no-separator"
    assert violation.to_dict() == {
        "urn": URN,
        "path": "version",
        "value": "1.20",
        "rule": "too old",
        "source": "EKS user guide",
    }


def test_a_value_is_shown_as_json_and_text_as_it_is() -> None:
    assert render_value("plain text") == "plain text"
    assert render_value({"b": 1, "a": [True, None]}) == '{"a": [true, null], "b": 1}'
    assert render_value(3) == "3"
    assert render_value(object) == "\"<class 'object'>\""  # anything else as the JSON string of its str()


def test_a_long_value_is_cut_to_the_width_with_an_ellipsis() -> None:
    assert VALUE_WIDTH == 80
    exact = "x" * VALUE_WIDTH
    assert render_value(exact) == exact
    cut = render_value("y" * (VALUE_WIDTH + 1))
    assert cut == "y" * (VALUE_WIDTH - 3) + "..." and len(cut) == VALUE_WIDTH
    assert len(render_value(list(range(100)))) == VALUE_WIDTH
    assert json.loads(render_value([1, 2])) == [1, 2]


def test_every_contract_family_runs_on_every_plan() -> None:
    from trainstack.contracts import aws_models, aws_rules, cloudformation, compatibility, crds, helm_values, iam

    assert contracts._contracts() == (
        aws_models.check,
        cloudformation.check,
        iam.check,
        aws_rules.check,
        helm_values.check,
        crds.check,
        compatibility.check,
    )


def test_findings_are_merged_sorted_and_said_once() -> None:
    b = ContractViolation("urn:b", "", "", "r", "s")
    a1 = ContractViolation("urn:a", "x", "", "r", "s")
    a2 = ContractViolation("urn:a", "y", "", "r", "s")
    recording = Recording("s", False, (), {})
    found = contracts.check(recording, [lambda rec: [b, a2], lambda rec: [a1, b]])
    assert found == (a1, a2, b)
    assert contracts.check(recording, []) == ()
    assert contracts.check(recording) == ()  # every contract, on an empty plan
