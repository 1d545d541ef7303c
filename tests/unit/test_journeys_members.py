"""The member journey (trainstack/journeys/members.py): it holds on every committed stack, and one edit of the
recording (or the stack file, in the e2e tier) breaks the named step."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stacks.load import load_file
from stacks.schema import StackConfig
from tests.conftest import STACKS, edited_config, program_recording, recording, stack_config
from tests.policy.helpers import with_resource
from tests.unit.test_journeys_access import EXAMPLES, broken, edited, without
from trainstack.engine import Recording
from trainstack.journeys import TEAM_JOB, Journey, Trip, members
from trainstack.tokens import ACCESS_ENTRY, ACCESS_POLICY_ASSOCIATION, K8S_CLUSTER_ROLE_BINDING

MEMBER = "arn:aws:iam::210987654321:role/research"


def walked(rec: Recording, stack: StackConfig) -> list[Journey]:
    return list(members.walk(Trip(recording=rec, stack=stack)))


def holds_for_every_team(rec: Recording, stack: StackConfig) -> None:
    journeys = walked(rec, stack)
    assert [j.subject for j in journeys] == [f"team {t.name}: a member with kubectl" for t in stack.kubernetes.teams]
    assert all(j.kind == TEAM_JOB and all(s.source for s in j.steps) for j in journeys)
    assert all(j.holds for j in journeys), [(j.subject, j.broken_step) for j in journeys if not j.holds]


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_the_member_journey_holds_on_the_committed_stacks(stack: str) -> None:
    holds_for_every_team(recording(stack), stack_config(stack))


@pytest.mark.e2e
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_member_journey_holds_on_the_examples(path: Any) -> None:
    stack = load_file(path)
    holds_for_every_team(program_recording(stack, stack.environment.value), stack)


def with_member() -> StackConfig:
    def edit(c: dict[str, Any]) -> None:
        [research] = [t for t in c["kubernetes"]["teams"] if t["name"] == "research"]
        research["member_role_arns"] = [MEMBER]

    return edited_config("prod", edit)


@pytest.mark.e2e
def test_a_member_role_gets_the_team_group_and_nothing_more() -> None:
    stack = with_member()
    rec = program_recording(stack, "prod")
    holds_for_every_team(rec, stack)
    [entry] = [e for e in rec.by_type(ACCESS_ENTRY) if e.inputs["principalArn"] == MEMBER]
    assert entry.inputs["kubernetesGroups"] == ["trainstack:team:research"]
    assert not [a for a in rec.by_type(ACCESS_POLICY_ASSOCIATION) if a.inputs["principalArn"] == MEMBER]
    # Back to the EKS edit policy scoped to the namespace: the member can delete its NetworkPolicies again.
    association = {
        "clusterName": "c",
        "principalArn": MEMBER,
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
        "accessScope": {"type": "namespace", "namespaces": ["research"]},
    }
    edit = with_resource(rec, ACCESS_POLICY_ASSOCIATION, "team-access-edit", association)
    name, detail = broken(walked(edit, stack), "team research")
    assert name == "a member cannot open the namespace"
    assert "delete networkpolicies (networking.k8s.io)" in detail and "create services" in detail
    assert detail.endswith("(through an EKS access policy)")
    view = {**association, "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"}
    assert all(j.holds for j in walked(with_resource(rec, ACCESS_POLICY_ASSOCIATION, "v", view), stack))
    # The access entry without the group: the member reaches nothing.
    lost = edited(rec, entry.name, lambda i: i.update(kubernetesGroups=[]))
    assert broken(walked(lost, stack), "team research") == (
        "EKS maps each member role to the team's group",
        f"no access entry gives {MEMBER} the group trainstack:team:research",
    )


@pytest.mark.slow
def test_a_role_that_deletes_network_policies_breaks_the_journey() -> None:
    rule = {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["delete"]}
    rec = edited(recording("prod"), "tenancy-research-member", lambda i: i["rules"].append(rule))
    name, detail = broken(walked(rec, stack_config("prod")), "team research")
    assert (name, detail) == (
        "a member cannot open the namespace",
        "a member of research may delete networkpolicies (networking.k8s.io)",
    )
    assert all(j.holds for j in walked(rec, stack_config("prod")) if "research" not in j.subject)


@pytest.mark.slow
def test_without_the_service_quota_a_load_balancer_is_admitted() -> None:
    rec = without(recording("prod"), "tenancy-research-services")
    assert broken(walked(rec, stack_config("prod")), "team research") == (
        "the namespace's quotas refuse LoadBalancer and NodePort Services",
        "a LoadBalancer or NodePort Service is admitted in research",
    )
    rec = edited(
        recording("prod"), "tenancy-research-services", lambda i: i["spec"]["hard"].update({"services.nodeports": "1"})
    )
    # One node port allowed: a NodePort Service fits, a LoadBalancer (one balancer) is still refused.
    assert broken(walked(rec, stack_config("prod")), "team research")[1] == "a NodePort Service is admitted in research"


@pytest.mark.slow
def test_a_member_bound_elsewhere_or_not_at_all() -> None:
    prod = recording("prod")
    [binding] = [r for r in prod.resources if r.name == "tenancy-research-member-binding"]
    moved = edited(prod, binding.name, lambda i: i["metadata"].update(namespace="pretraining"))
    name, detail = broken(walked(moved, stack_config("prod")), "team research")
    assert name == "the namespace binds the team's group to a Role"
    assert detail == "no RoleBinding in research names trainstack:team:research: members can do nothing"
    cluster_wide = dataclasses.replace(binding, type=K8S_CLUSTER_ROLE_BINDING, name="crb")
    rec = dataclasses.replace(prod, resources=(*prod.resources, cluster_wide))
    assert broken(walked(rec, stack_config("prod")), "team research") == (
        "a member acts in no other namespace",
        "trainstack:team:research is also bound by ClusterRoleBinding research/trainstack-team-member",
    )


@pytest.mark.slow
def test_a_builtin_role_is_taken_as_everything() -> None:
    rec = edited(
        recording("prod"),
        "tenancy-research-member-binding",
        lambda i: i.update(roleRef={"kind": "ClusterRole", "name": "edit", "apiGroup": "rbac.authorization.k8s.io"}),
    )
    journey = next(j for j in walked(rec, stack_config("prod")) if "research" in j.subject)
    assert "ClusterRole edit (not in the plan: taken as everything) in research" in journey.steps[1].detail
    assert journey.broken_step is not None and journey.broken_step.name == "a member cannot open the namespace"


def test_service_usage_follows_the_quota_evaluator() -> None:
    assert members.service_usage("ClusterIP", 3) == {"services": 1}
    assert members.service_usage("NodePort", 2) == {"services": 1, "services.nodeports": 2}
    assert members.service_usage("LoadBalancer", 2) == {
        "services": 1,
        "services.loadbalancers": 1,
        "services.nodeports": 2,
    }


@pytest.mark.slow
def test_datasets_read_only_in_the_spec_only_are_written() -> None:
    rec = edited(
        recording("prod"), "lustre-volume-pv-datasets-research", lambda i: i["spec"].update(mountOptions=["flock"])
    )
    assert broken(walked(rec, stack_config("prod")), "team research") == (
        "the datasets mount read-only whatever the pod says",
        "a pod of research that mounts fsx-datasets-research without readOnly writes the datasets",
    )


def test_publish_options_follow_the_driver() -> None:
    assert members.publish_options(False, ["flock"]) == ["flock"]
    assert members.publish_options(True, ["flock"]) == ["ro", "flock"]
    assert members.publish_options(True, ["ro", "flock"]) == ["ro", "flock"]
    assert members.publish_options(False, ["flock", "ro"]) == ["flock", "ro"]
