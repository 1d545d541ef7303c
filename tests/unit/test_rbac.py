"""RBAC rule matching (policies/rbac.py) against the cases of kubernetes' own evaluation helpers, and the team
member Role (components/team_rbac.py) against what a member must and must not do."""

from __future__ import annotations

import pytest

from components.team_rbac import TEAM_MEMBER_ROLE, team_group, team_member_binding, team_member_rules
from policies.rbac import Request, allows, rule_allows
from policies.rules.k8s import TEAM_MEMBER_FORBIDDEN


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> dict:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **({"resourceNames": names} if names else {})}


@pytest.mark.parametrize(
    ("the_rule", "request_", "expected"),
    [
        (rule([""], ["pods"], ["get"]), Request("get", "", "pods"), True),
        (rule([""], ["pods"], ["get"]), Request("list", "", "pods"), False),  # verb
        (rule([""], ["pods"], ["*"]), Request("delete", "", "pods"), True),
        (rule(["apps"], ["pods"], ["get"]), Request("get", "", "pods"), False),  # group
        (rule(["*"], ["pods"], ["get"]), Request("get", "apps", "pods"), True),
        (rule([""], ["pods"], ["get"]), Request("get", "", "pods", "log"), False),  # bare resource, subresource asked
        (rule([""], ["pods/log"], ["get"]), Request("get", "", "pods"), False),  # subresource rule, bare asked
        (rule([""], ["pods/log"], ["get"]), Request("get", "", "pods", "log"), True),
        (rule([""], ["*/log"], ["get"]), Request("get", "", "pods", "log"), True),
        (rule([""], ["*/log"], ["get"]), Request("get", "", "pods"), False),
        (rule([""], ["*/logs"], ["get"]), Request("get", "", "pods", "log"), False),
        (rule([""], ["pods/*"], ["get"]), Request("get", "", "pods", "log"), False),  # only a subresource named *
        (rule([""], ["*"], ["get"]), Request("get", "", "pods", "log"), True),
        (rule([""], ["*/*"], ["get"]), Request("get", "", "pods", "log"), False),
        (rule([""], ["secrets"], ["get"], ["a"]), Request("get", "", "secrets", name="a"), True),
        (rule([""], ["secrets"], ["get"], ["a"]), Request("get", "", "secrets", name="b"), False),
        (rule([""], ["secrets"], ["get"], ["a"]), Request("get", "", "secrets"), False),  # list-like, no name
        ({"verbs": ["get"]}, Request("get", "", "pods"), False),  # no groups, no resources
        ({"apiGroups": [""], "resources": "pods", "verbs": "get"}, Request("get", "", "pods"), False),  # not lists
        ({"apiGroups": "*", "resources": "*", "verbs": "*"}, Request("get", "", "pods"), False),  # nor wildcards
    ],
)
def test_rule_matching(the_rule: dict, request_: Request, expected: bool) -> None:
    assert rule_allows(the_rule, request_) is expected


def test_rules_are_a_union() -> None:
    rules = [rule([""], ["pods"], ["get"]), rule([""], ["services"], ["create"])]
    assert allows(rules, Request("create", "", "services"))
    assert not allows(rules, Request("create", "", "pods"))
    assert not allows([], Request("get", "", "pods"))


def test_request_text() -> None:
    assert (
        str(Request("delete", "networking.k8s.io", "networkpolicies")) == "delete networkpolicies (networking.k8s.io)"
    )
    assert str(Request("create", "", "pods", "exec")) == "create pods/exec"


MEMBER_NEEDS = [
    Request("create", "trainer.kubeflow.org", "trainjobs"),
    Request("delete", "trainer.kubeflow.org", "trainjobs"),
    Request("get", "trainer.kubeflow.org", "trainingruntimes"),
    Request("create", "kubeflow.org", "mpijobs"),
    Request("create", "batch", "jobs"),
    Request("get", "", "pods", "log"),
    Request("create", "", "pods", "exec"),
    Request("create", "", "pods", "portforward"),
    Request("delete", "", "pods"),
    Request("create", "", "secrets"),
    Request("list", "kueue.x-k8s.io", "workloads"),
    Request("list", "kueue.x-k8s.io", "localqueues"),
    Request("get", "", "resourcequotas"),
    Request("list", "networking.k8s.io", "networkpolicies"),
    Request("list", "", "events"),
]


@pytest.mark.parametrize("request_", MEMBER_NEEDS, ids=str)
def test_a_member_can_train(request_: Request) -> None:
    assert allows(team_member_rules(), request_)


@pytest.mark.parametrize("request_", TEAM_MEMBER_FORBIDDEN, ids=str)
def test_a_member_cannot_open_the_namespace(request_: Request) -> None:
    assert not allows(team_member_rules(), request_)


def test_the_forbidden_list_covers_the_review_findings() -> None:
    forbidden = {str(r) for r in TEAM_MEMBER_FORBIDDEN}
    assert "delete networkpolicies (networking.k8s.io)" in forbidden
    assert "create services" in forbidden and "patch services" in forbidden
    assert "create rolebindings (rbac.authorization.k8s.io)" in forbidden


def test_the_binding_names_the_team_group_and_role() -> None:
    binding = team_member_binding("research")
    assert binding["subjects"] == [
        {"kind": "Group", "name": "trainstack:team:research", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    assert binding["roleRef"] == {"kind": "Role", "name": TEAM_MEMBER_ROLE, "apiGroup": "rbac.authorization.k8s.io"}
    assert team_group("a") != team_group("b")
