"""Security rules at their edges, beyond the rule cases' "reports something" (tests/policy/test_rules.py): which
action a HyperPod execution role's missing deny leaves readable, a key policy that allows kms:* among other actions,
what counts as internet-wide egress, and which NoSquashNids entries the pack can count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.facts_generated import (
    NAMESPACE,
    NETWORK_POLICY,
    PERSISTENT_VOLUME,
    PSA_ENFORCE,
    TENANT_LABEL,
    TENANT_TEAM,
)
from policies.rules import BY_NAME
from policies.rules.k8s import _internet_wide, _reaches_lustre
from policies.rules.sagemaker import _confines
from policies.rules.storage import _whole_bucket_writes, nid_addresses
from tests.policy.helpers import found, mutated, run, shipped, with_resource
from tests.policy.test_rules import EXECUTION_INLINE, KEY, LOCK, edit_policy, set_path
from trainstack.engine import UNKNOWN, Recording


def _findings(policy: str, source: Recording) -> list[str]:
    return [v.message for v in found(run(source, policies=[BY_NAME[policy]]), policy)]


def _without_statement(sid: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(statements: list[dict[str, Any]]) -> None:
        statements[:] = [s for s in statements if s.get("Sid") != sid]

    return edit


def _unconfined(action: str) -> str:
    return (
        f"hyperpod-execution-role: no inline deny of {action} outside its lifecycle bucket; "
        "AmazonSageMakerClusterInstanceRolePolicy lets it read any sagemaker-* bucket."
    )


@pytest.mark.parametrize(
    ("dropped", "readable"),
    [
        ("DenyReadOutsideLifecycle", ["s3:GetObject", "s3:GetObjectVersion"]),
        ("DenyListOtherBuckets", ["s3:ListBucket"]),
    ],
)
def test_a_deny_confines_only_the_actions_it_names(dropped: str, readable: list[str]) -> None:
    """A deny of ListBucket outside the lifecycle bucket does not keep GetObject there, nor the other way round."""
    source = mutated(shipped("staging"), EXECUTION_INLINE, edit_policy(_without_statement(dropped)))
    assert _findings("hyperpod-execution-role-confined", source) == [_unconfined(a) for a in readable]


@pytest.mark.parametrize(
    ("kept", "confines"),
    [
        (["arn:aws:s3:::trainstack-lifecycle/*"], True),
        (["arn:aws:s3:::trainstack-lifecycle/*", "arn:aws:s3:::sagemaker-*/*"], False),  # one wildcard bucket is enough
        (["arn:aws:s3:::sagemaker-*/scripts:::v1/*"], False),  # ":::" in the key does not hide the bucket's wildcard
        (["trainstack-lifecycle/*"], False),  # not an ARN
        (["arn:*:s3:::trainstack-lifecycle/*"], True),  # any partition: the bucket is still named
        ([], False),
    ],
)
def test_a_deny_confines_reads_only_when_every_bucket_it_keeps_is_named(kept: list[str], confines: bool) -> None:
    statement = {"Effect": "Deny", "Action": "s3:GetObject", "NotResource": kept}
    assert _confines(statement, "s3:GetObject") is confines


@pytest.mark.parametrize(
    "narrowed",
    [{"Resource": "arn:aws:s3:::*/*"}, {"Condition": {"StringEquals": {"aws:PrincipalTag/team": "ml"}}}],
    ids=["a resource list", "a condition"],
)
def test_a_deny_narrowed_by_a_resource_list_or_a_condition_confines_nothing(narrowed: dict[str, Any]) -> None:
    """Only a deny of everything but the kept buckets, for everyone, confines: one narrowed either way may miss."""
    statement = {"Effect": "Deny", "Action": "s3:GetObject", "NotResource": ["arn:aws:s3:::trainstack-lifecycle/*"]}
    assert _confines(statement | narrowed, "s3:GetObject") is False


def test_an_allow_of_kms_star_among_other_actions_mixes_administration_with_use() -> None:
    def allow(statements: list[dict[str, Any]]) -> None:
        statements[0].update(Effect="Allow", Action=["kms:Decrypt", "kms:*"])

    findings = _findings("kms-admin-separation", mutated(shipped("prod"), KEY, edit_policy(allow)))
    assert len(findings) == 1 and "allows kms:*: administration is not separated from use" in findings[0], findings


@pytest.mark.parametrize(
    ("cidr", "wide"),
    [
        ("0.0.0.0/0", True),
        ("0.0.0.0/7", True),
        ("10.0.0.0/8", False),  # the edge: a /8 is one network's, not most of the internet
        ("52.216.0.0/15", False),  # an S3 prefix
        ("10.0.0.0", False),  # no prefix length
        ("10.0.0.0/x", False),
        (None, False),
    ],
)
def test_internet_wide_is_a_block_of_slash_7_or_wider(cidr: object, wide: bool) -> None:
    assert _internet_wide(cidr) is wide


@pytest.mark.parametrize(
    "nid", ["10.0.1.5@o2ib", "10.0.1@tcp", "10.0.1.5.6@tcp", "10.0.x.5@tcp", "10.0.[2-x].1@tcp", "10.0.1.5"]
)
def test_a_nid_the_pack_cannot_read_counts_as_unknown(nid: str) -> None:
    """Only `<IPv4 address or ranges>@tcp` is counted (the schema refuses anything else, stacks/fsx_squash.py)."""
    assert nid_addresses(nid) is None


EBS_VOLUME = {
    "metadata": {"name": "scratch"},
    "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0123"}, "claimRef": {"namespace": "research"}},
}


@pytest.mark.parametrize("policy", ["fsx-team-isolation", "fsx-datasets-read-only"])
def test_a_volume_of_another_driver_is_not_an_fsx_volume(policy: str) -> None:
    source = with_resource(shipped("prod"), PERSISTENT_VOLUME, "scratch", EBS_VOLUME)
    result = run(source, policies=[BY_NAME[policy]])
    assert not found(result, policy)
    skipped = [(urn.rsplit("::", 1)[-1], reason) for name, urn, reason in result.not_applicable if name == policy]
    assert ("scratch", "not an FSx for Lustre volume") in skipped


def test_a_preview_before_the_key_policies_are_known_judges_the_destroyers_later() -> None:
    """In a first preview the key policies name the deployer, an output: the rule waits for pulumi up."""
    result = run(shipped("prod", preview=True), policies=[BY_NAME["s3-data-destroyers-empty-only"]])
    assert not found(result, "s3-data-destroyers-empty-only")
    assert result.not_applicable == (
        ("s3-data-destroyers-empty-only", "", "the key policies name the deployer, known at pulumi up"),
    )


def test_a_key_deny_that_leaves_out_one_destructive_action_guards_only_the_other() -> None:
    def schedule_only(statements: list[dict[str, Any]]) -> None:
        for statement in statements:
            if statement.get("Sid") == "DenyDestructionExceptAdministrators":
                statement["Action"] = ["kms:ScheduleKeyDeletion"]

    findings = _findings("kms-admin-separation", mutated(shipped("prod"), KEY, edit_policy(schedule_only)))
    assert findings == ["kms:PutKeyPolicy is not denied to principals other than the key administrators."]


def test_a_key_deny_without_the_administrators_exception_guards_nothing() -> None:
    """A deny with no aws:PrincipalArn condition is not the separation the rule asks for (it would lock out the
    administrators too, and says nothing of who they are)."""

    def unconditioned(statements: list[dict[str, Any]]) -> None:
        for statement in statements:
            if statement.get("Sid") == "DenyDestructionExceptAdministrators":
                statement.pop("Condition")

    findings = _findings("kms-admin-separation", mutated(shipped("prod"), KEY, edit_policy(unconditioned)))
    assert findings == [
        f"{action} is not denied to principals other than the key administrators."
        for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy")
    ]


BUCKET = "arn:aws:s3:::trainstack-prod-checkpoints"


@pytest.mark.parametrize(
    ("resource", "across"),
    [
        (f"{BUCKET}/research/*", False),
        (f"{BUCKET}/research*", True),  # also research-vision's prefix: two teams
        (f"{BUCKET}/*", True),
        ("*", True),
        (f"{BUCKET}/shared/*", False),
    ],
)
def test_a_write_reaching_two_teams_prefixes_is_whole_bucket(resource: str, across: bool) -> None:
    statement = {"Effect": "Allow", "Action": "s3:PutObject", "Resource": resource}
    assert _whole_bucket_writes(statement, BUCKET, ["research", "research-vision"]) == ([resource] if across else [])


def _egress(ports: list[dict[str, Any]] | None, to: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"to": to if to is not None else [{"ipBlock": {"cidr": "10.0.0.0/16"}}]}
    return rule | ({"ports": ports} if ports is not None else {})


@pytest.mark.parametrize(
    ("rule", "reaches"),
    [
        (_egress(None), True),  # every port
        (_egress([{"protocol": "TCP"}]), True),  # every TCP port
        (_egress([{"protocol": "TCP", "port": 988}]), True),
        (_egress([{"port": 988}]), True),  # TCP is the default protocol
        (_egress([{"protocol": "UDP", "port": 988}]), False),
        (_egress([{"protocol": "TCP", "port": 1000, "endPort": 1017}]), False),
        (_egress([{"protocol": "TCP", "port": 1000, "endPort": 1018}]), True),
        (_egress([{"protocol": "TCP", "port": 1023}]), True),
        (_egress([{"protocol": "TCP", "port": 1024}]), False),
        (_egress([{"protocol": "TCP", "port": "lustre"}]), False),  # a named port is a pod's
        (_egress([{"port": 988}], to=[{"podSelector": {}}]), False),  # pods only: no file server is a pod
        (_egress([{"port": 988}], to=[{"podSelector": {}}, {"ipBlock": {"cidr": "10.0.0.0/8"}}]), True),
    ],
)
def test_an_egress_rule_reaches_lustre_on_tcp_988_or_1018_to_1023(rule: dict[str, Any], reaches: bool) -> None:
    assert _reaches_lustre(rule) is reaches


@pytest.mark.parametrize("policy", ["s3-data-vpc-only", "s3-checkpoints-per-prefix"])
def test_a_first_preview_judges_the_bucket_policies_at_pulumi_up(policy: str) -> None:
    """The bucket policies name the buckets' ARNs, outputs: a first preview cannot read them, so the rule says it
    will judge them once they exist, rather than passing in silence."""
    result = run(shipped("prod", preview=True), policies=[BY_NAME[policy]])
    assert not found(result, policy)
    assert result.not_applicable == (
        (policy, "", "the bucket policies are computed when the buckets are created; checked at pulumi up"),
    )


@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_a_binding_of_no_team_group_is_not_team_access(kind: str) -> None:
    """Bindings of the platform's own subjects (a controller's service account, an admin group) are not judged as
    team access, cluster-wide or not."""
    binding = {
        "metadata": {"name": "platform-admins", "namespace": "kube-system"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"kind": "Group", "name": "platform-admins"},
            {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": "kueue-system"},
        ],
    }
    source = with_resource(
        shipped("prod"), f"kubernetes:rbac.authorization.k8s.io/v1:{kind}", "platform-admins", binding
    )
    assert _findings("k8s-team-access", source) == []


def test_a_first_preview_judges_the_volumes_directories_once_the_file_system_exists() -> None:
    result = run(shipped("prod", preview=True), policies=[BY_NAME["fsx-views-disjoint"]])
    assert not found(result, "fsx-views-disjoint")
    assert result.not_applicable == (
        ("fsx-views-disjoint", "", "the volumes' directories are known once the file system exists (mountname)"),
    )


def test_team_egress_not_known_yet_is_judged_later_not_guessed() -> None:
    """Every team NetworkPolicy's egress unknown (a preview before an input exists): nothing is reported."""

    def unknown_egress(inputs: dict[str, Any]) -> None:
        inputs["spec"]["egress"] = UNKNOWN

    source = shipped("prod")
    policies = [r for r in source.resources if r.type == NETWORK_POLICY and "egress" in r.inputs.get("spec", {})]
    assert policies
    for policy in policies:
        source = mutated(source, policy.name, unknown_egress)
    assert _findings("k8s-team-egress-no-internet", source) == []


def test_a_read_deny_outside_the_vpc_only_statement_is_not_the_destroyers_business() -> None:
    """Only the VPC-only deny (aws:SourceVpce) must not exempt key administrators from reads; another deny that
    keeps reads to them (no VPC condition) lets them read nothing from outside the VPC the VPC-only deny blocks."""

    def deny_reads_to_others(statements: list[dict[str, Any]]) -> None:
        vpc_only = next(s for s in statements if s.get("Sid") == "DenyDataAccessOutsideVpc")
        statements.append(
            {
                "Sid": "DenyReadsExceptAdministrators",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:GetObject"],
                "Resource": vpc_only["Resource"],
                "Condition": {"ArnNotLike": {"aws:PrincipalArn": ["arn:aws:iam::444455556666:role/ml-platform-admin"]}},
            }
        )

    source = mutated(shipped("prod"), "data-datasets-policy", edit_policy(deny_reads_to_others))
    assert _findings("s3-data-destroyers-empty-only", source) == []


@pytest.mark.parametrize(
    "retention",
    [{"mode": "GOVERNANCE"}, {"days": 14}, {"mode": "NONE", "days": 14}],
    ids=["a mode without a period", "a period without a mode", "no lock mode"],
)
def test_an_object_lock_needs_a_mode_and_a_period(retention: dict[str, Any]) -> None:
    source = mutated(shipped("prod"), LOCK, set_path("rule.defaultRetention", retention))
    assert _findings("s3-checkpoints-object-lock", source) == ["data-checkpoints: no Object Lock default retention."]


def test_a_documented_system_namespace_may_enforce_privileged_a_team_may_not() -> None:
    """The team minimum (baseline) binds team namespaces only; the GPU Operator's namespace runs privileged pods."""

    def namespace(name: str, tenant: str | None) -> dict[str, Any]:
        labels = {PSA_ENFORCE: "privileged"} | ({TENANT_LABEL: tenant} if tenant else {})
        return {"metadata": {"name": name, "labels": labels}}

    source = with_resource(shipped("prod"), NAMESPACE, "gpu-operator-ns", namespace("gpu-operator", None))
    assert _findings("k8s-namespace-pod-security", source) == []
    source = with_resource(shipped("prod"), NAMESPACE, "gpu-operator-ns", namespace("gpu-operator", TENANT_TEAM))
    assert _findings("k8s-namespace-pod-security", source) == [
        "team namespace gpu-operator enforces privileged, below baseline."
    ]
