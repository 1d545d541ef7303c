"""The member journey (trainstack/journeys/members.py): it holds on every committed stack, and one edit of the
recording (or the stack file, in the e2e tier) breaks the named step."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.storage.lustre_volume import CSI_DRIVER, DATASETS_CLAIM_NAME
from components.team_rbac import SERVICE_QUOTA, TEAM_MEMBER_ROLE, team_member_rules
from stacks.load import load_file
from stacks.schema import StackConfig
from tests.conftest import STACKS, edited_config, program_recording, recording, stack_config
from tests.policy.helpers import with_resource
from tests.unit.test_journeys_access import EXAMPLES, broken, edited, without
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import TEAM_JOB, Journey, Step, Trip, members
from trainstack.tokens import (
    ACCESS_ENTRY,
    ACCESS_POLICY_ASSOCIATION,
    K8S_CLUSTER_ROLE,
    K8S_CLUSTER_ROLE_BINDING,
    K8S_ROLE,
    K8S_ROLE_BINDING,
    PERSISTENT_VOLUME,
    RESOURCE_QUOTA,
)

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


# ------------------------------------------------------------------------- each step on a hand-made recording

GROUP = "trainstack:team:research"
OTHER = "arn:aws:iam::210987654321:role/other"


def res(type_: str, name: str, inputs: dict[str, Any]) -> RecordedResource:
    return RecordedResource(type_, name, f"urn:{type_}::{name}", "", True, inputs, (), {}, False, False, "")


def rec(*resources: RecordedResource) -> Recording:
    return Recording("prod", False, resources, {})


def role(name: str, namespace: str, rules: list[dict[str, Any]], type_: str = K8S_ROLE) -> RecordedResource:
    return res(type_, f"{namespace}-{name}", {"metadata": {"name": name, "namespace": namespace}, "rules": rules})


def binding(namespace: str, role_kind: str = "Role", role_name: str = TEAM_MEMBER_ROLE, group: str = GROUP,
            type_: str = K8S_ROLE_BINDING) -> RecordedResource:  # fmt: skip
    return res(type_, f"{namespace}-{role_name}-binding", {
        "metadata": {"name": "member", "namespace": namespace},
        "subjects": [{"kind": "User", "name": group}, {"kind": "Group", "name": group}],
        "roleRef": {"kind": role_kind, "name": role_name},
    })  # fmt: skip


def entry(arn: str, *groups: str) -> RecordedResource:
    return res(ACCESS_ENTRY, arn, {"principalArn": arn, "kubernetesGroups": list(groups)})


def test_each_member_role_needs_an_access_entry_with_the_team_group() -> None:
    entries = rec(entry(MEMBER, "other-group", GROUP), entry(OTHER, "trainstack:team:pretraining"))
    assert members.entry_step(entries, "research", [MEMBER]) == Step(
        "EKS maps each member role to the team's group", True, f"1 role(s) get {GROUP}", members.SOURCES["entry"]
    )
    missing = members.entry_step(entries, "research", [MEMBER, OTHER])
    assert not missing.holds and missing.detail == f"no access entry gives {OTHER} the group {GROUP}"
    none = members.entry_step(rec(), "research", [])
    assert none.holds and none.detail.startswith("no member roles listed")


def test_the_bound_rules_are_those_of_the_roles_the_team_group_is_bound_to_in_its_namespace() -> None:
    rules = team_member_rules()
    bound, step = members.bound_rules(rec(role(TEAM_MEMBER_ROLE, "research", rules), binding("research")), "research")
    assert bound == rules and step.holds and step.detail == f"{GROUP} holds Role {TEAM_MEMBER_ROLE} in research"
    # A Role of the same name in another namespace is not the one the binding refers to: taken as everything.
    elsewhere, step = members.bound_rules(
        rec(role(TEAM_MEMBER_ROLE, "pretraining", rules), binding("research")), "research"
    )
    assert elsewhere == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert step.detail.endswith("(not in the plan: taken as everything) in research")
    # A ClusterRole binding resolves among ClusterRoles, whatever their namespace.
    view = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    cluster_role = res(K8S_CLUSTER_ROLE, "view", {"metadata": {"name": "viewer"}, "rules": [*view, "junk"]})
    bound, step = members.bound_rules(rec(cluster_role, binding("research", "ClusterRole", "viewer")), "research")
    assert bound == view and step.detail == f"{GROUP} holds ClusterRole viewer in research"
    # Bindings of another namespace or another group give nothing.
    for other in (binding("pretraining"), binding("research", group="trainstack:team:pretraining")):
        nothing, step = members.bound_rules(rec(role(TEAM_MEMBER_ROLE, "research", rules), other), "research")
        assert nothing == [] and not step.holds


def association(arn: str, policy: str, scope: dict[str, Any]) -> RecordedResource:
    arns = {"principalArn": arn, "policyArn": f"arn:aws:eks::aws:cluster-access-policy/{policy}"}
    return res(ACCESS_POLICY_ASSOCIATION, f"{arn}-{policy}", {**arns, "accessScope": scope})


def test_access_policies_count_for_members_in_scope_only() -> None:
    edit = members.ACCESS_POLICY_RULES["AmazonEKSEditPolicy"]
    namespaced = association(MEMBER, "AmazonEKSEditPolicy", {"type": "namespace", "namespaces": ["research"]})
    assert members.association_rules(rec(namespaced), "research", [MEMBER]) == edit
    assert members.association_rules(rec(namespaced), "pretraining", [MEMBER]) == []  # another namespace
    assert members.association_rules(rec(namespaced), "research", [OTHER]) == []  # not a member's
    cluster = association(MEMBER, "AmazonEKSClusterAdminPolicy", {"type": "cluster"})
    assert members.association_rules(rec(cluster), "pretraining", [MEMBER]) == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}  # a policy not modelled is everything
    ]


def test_a_member_needs_every_daily_request() -> None:
    rules = team_member_rules()
    assert members.needs_step("research", rules).holds
    no_exec = [{**r, "resources": [x for x in r["resources"] if x != "pods/exec"]} for r in rules]
    step = members.needs_step("research", no_exec)
    assert not step.holds and step.detail == "the team's Role does not allow create pods/exec in research"


def test_opening_the_namespace_is_refused_whether_by_the_role_or_an_access_policy() -> None:
    rules = team_member_rules()
    assert members.forbidden_step("research", rules, []).holds
    services = [{"apiGroups": [""], "resources": ["services"], "verbs": ["create"]}]
    by_role = members.forbidden_step("research", [*rules, *services], [])
    assert not by_role.holds and by_role.detail == "a member of research may create services"
    by_policy = members.forbidden_step("research", rules, services)
    assert by_policy.detail == "a member of research may create services (through an EKS access policy)"
    both = members.forbidden_step("research", services, members.ACCESS_POLICY_RULES["AmazonEKSEditPolicy"])
    assert not both.holds and not both.detail.endswith("(through an EKS access policy)")


def test_a_team_group_bound_in_another_namespace_or_cluster_wide_acts_elsewhere() -> None:
    teams = ["research", "pretraining", "validation"]
    only = members.other_namespaces_step(rec(binding("research")), "research", teams)
    assert only.holds and only.detail == f"{GROUP} is bound only in research (2 other team namespace(s))"
    elsewhere = members.other_namespaces_step(rec(binding("research"), binding("pretraining")), "research", teams)
    assert not elsewhere.holds
    assert elsewhere.detail == f"{GROUP} is also bound by RoleBinding pretraining/member"
    wide = binding("research", "ClusterRole", "view", type_=K8S_CLUSTER_ROLE_BINDING)
    step = members.other_namespaces_step(rec(wide), "research", teams)
    assert step.detail == f"{GROUP} is also bound by ClusterRoleBinding research/member"
    unrelated = binding("pretraining", group="trainstack:team:pretraining")
    assert members.other_namespaces_step(rec(unrelated), "research", teams).holds


def quota(namespace: str, hard: Any) -> RecordedResource:
    return res(RESOURCE_QUOTA, f"{namespace}-q", {"metadata": {"namespace": namespace}, "spec": {"hard": hard}})


@pytest.mark.parametrize(
    ("quotas", "admitted"),
    [([quota("research", SERVICE_QUOTA)], None),
     ([quota("research", {"services.loadbalancers": "0"})], "NodePort"),
     ([quota("research", {"services.loadbalancers": "0", "services.nodeports": "1"})], "NodePort"),
     ([quota("research", {"services.nodeports": "0"})], None),  # a LoadBalancer allocates a node port too
     ([quota("research", {"services": "1"})], "LoadBalancer or NodePort"),  # one Service fits
     ([quota("research", {"services": "0"}), quota("pretraining", {"services": "0"})], None),
     ([quota("pretraining", SERVICE_QUOTA)], "LoadBalancer or NodePort")],  # another namespace's quota
)  # fmt: skip
def test_the_quotas_refuse_both_exposing_services(quotas: list[RecordedResource], admitted: str | None) -> None:
    step = members.service_quota_step(rec(*quotas), "research")
    if admitted is None:
        assert step.holds and step.detail.endswith("both refused")
    else:
        assert not step.holds and step.detail == f"a {admitted} Service is admitted in research"


def test_a_quota_unknown_in_preview_is_checked_at_up() -> None:
    for hard in (UNKNOWN, {"services.nodeports": UNKNOWN}):
        step = members.service_quota_step(rec(quota("research", hard)), "research")
        assert step.holds and "unknown in preview" in step.detail


def pv(name: str, namespace: str, options: list[str], driver: str = CSI_DRIVER) -> RecordedResource:
    return res(PERSISTENT_VOLUME, name, {"metadata": {"name": name}, "spec": {
        "csi": {"driver": driver}, "mountOptions": options,
        "claimRef": {"namespace": namespace, "name": DATASETS_CLAIM_NAME}}})  # fmt: skip


def test_only_the_teams_fsx_datasets_volume_must_mount_read_only() -> None:
    ok = members.datasets_step(rec(pv("ds", "research", ["ro", "flock"])), "research")
    assert ok.holds and ok.detail == "fsx-datasets mounts with `ro` in research"
    bad = members.datasets_step(rec(pv("ds", "research", ["flock"])), "research")
    assert not bad.holds and "mounts ds without readOnly" in bad.detail
    for others in (pv("ds", "pretraining", []), pv("ds", "research", [], driver="efs.csi.aws.com")):
        step = members.datasets_step(rec(others), "research")
        assert step.holds and step.detail == "no datasets volume in research"


def test_walk_gives_each_team_its_journey_with_its_member_count() -> None:
    cluster = with_member()
    found = walked(rec(), cluster)
    assert [j.figures["member roles"] for j in found] == [
        str(len(t.member_role_arns)) for t in cluster.kubernetes.teams
    ]
    assert all(len(j.steps) == 7 for j in found)
