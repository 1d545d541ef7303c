"""The EKS rules (policies/rules/eks.py) one branch at a time, on hand-built resources: the control plane's
settings at their boundaries (unset meaning the AWS default), the launch templates' partial inputs, the node
role's joins, the system nodes' floor. The whole-program cases are in tests/policy/test_rules.py; each rule's
config here is what the CLI hands it (every property filled from its schema default unless the case sets it)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from policies.facts_generated import (
    EKS_ADDON,
    EKS_CLUSTER,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    SUBNET,
)
from policies.rules.eks import (
    SUPPORTED_VERSIONS,
    cluster_in_stack,
    eks_access_entries,
    eks_control_plane_logs,
    eks_endpoint_not_public,
    eks_network_policy_enabled,
    eks_secrets_kms,
    eks_version_allowed,
    eks_workload_identity,
    lt_ami_approved,
    lt_ebs_cmk,
    lt_ebs_encrypted,
    lt_imds_hop_limit,
    lt_imdsv2,
    lt_no_public_ip,
    lt_userdata_no_secrets,
    ng_no_ssh,
    ng_private_subnets,
    node_role_least_priv,
    system_nodes_floor,
)
from tests.policy.test_direct import judge_resource, judge_stack, resource

# ---------------------------------------------------------------------------------- the control plane

_PUBLIC = {"allowRestrictedPublic": False, "maxPublicAddresses": 65536}
_RESTRICTED = {"allowRestrictedPublic": True, "maxPublicAddresses": 65536}


def _endpoint(vpc: dict[str, Any], config: dict[str, Any]) -> list[str]:
    return judge_resource(eks_endpoint_not_public, EKS_CLUSTER, {"vpcConfig": vpc}, config).messages


def test_a_private_only_endpoint_passes() -> None:
    assert _endpoint({"endpointPrivateAccess": True, "endpointPublicAccess": False}, _PUBLIC) == []
    assert _endpoint({"endpointPrivateAccess": "true", "endpointPublicAccess": "false"}, _PUBLIC) == []


def test_an_endpoint_without_private_access_is_reported_on_its_own() -> None:
    messages = _endpoint({"endpointPublicAccess": False}, _PUBLIC)
    assert len(messages) == 1 and "endpointPrivateAccess is not true" in messages[0]


@pytest.mark.parametrize("public", [True, "true", None])  # unset: public, the AWS default
def test_a_public_endpoint_is_reported_where_only_private_is_allowed(public: Any) -> None:
    vpc = {"endpointPrivateAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}
    if public is not None:
        vpc["endpointPublicAccess"] = public
    messages = _endpoint(vpc, _PUBLIC)
    assert len(messages) == 1 and "requires endpointPublicAccess false" in messages[0]
    unset = _endpoint({"endpointPrivateAccess": True}, _PUBLIC)
    assert "unset, i.e. 0.0.0.0/0" in unset[0]


@pytest.mark.parametrize("cidrs", [[], ["0.0.0.0/0"], ["203.0.113.0/24", "::/0"]])
def test_a_restricted_public_endpoint_open_to_the_world_is_reported(cidrs: list[str]) -> None:
    vpc = {"endpointPrivateAccess": True, "endpointPublicAccess": True, "publicAccessCidrs": cidrs}
    messages = _endpoint(vpc, _RESTRICTED)
    assert len(messages) == 1 and "public to the world" in messages[0]


@pytest.mark.parametrize(
    ("cidrs", "limit", "reported"),
    [
        (["203.0.113.0/24"], 256, False),  # exactly the limit
        (["203.0.113.0/24"], 255, True),
        (["203.0.113.0/25", "203.0.113.128/25"], 255, True),  # judged by the union, not per CIDR
        (["0.0.0.0/1", "128.0.0.0/1"], 65536, True),  # the internet, spelled in halves
        (["10.0.0.0/8"], 0, False),  # private space is no public address
    ],
)
def test_a_restricted_public_endpoint_covers_at_most_the_allowed_public_addresses(
    cidrs: list[str], limit: int, reported: bool
) -> None:
    vpc = {"endpointPrivateAccess": True, "endpointPublicAccess": True, "publicAccessCidrs": cidrs}
    messages = _endpoint(vpc, {"allowRestrictedPublic": True, "maxPublicAddresses": limit})
    assert len(messages) == int(reported)
    if reported:
        assert f"at most {limit:,} public addresses" in messages[0]


@pytest.mark.parametrize(
    ("encryption", "expected"),
    [
        ({"resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:us-east-1:1:key/k"}}, []),
        (None, ["encryptionConfig is not set"]),
        ({"resources": ["configmaps"], "provider": {"keyArn": "arn"}}, ["does not include 'secrets'"]),
        ({"resources": ["secrets"], "provider": {}}, ["keyArn is not set"]),
        ({"resources": ["secrets"]}, ["keyArn is not set"]),
        ({}, ["does not include 'secrets'", "keyArn is not set"]),
    ],
)
def test_secrets_are_encrypted_with_a_named_key(encryption: dict[str, Any] | None, expected: list[str]) -> None:
    props = {} if encryption is None else {"encryptionConfig": encryption}
    messages = judge_resource(eks_secrets_kms, EKS_CLUSTER, props).messages
    assert len(messages) == len(expected) and all(e in m for e, m in zip(expected, messages, strict=True))


@pytest.mark.parametrize(
    ("enabled", "missing"),
    [
        (["api", "audit", "authenticator", "scheduler"], None),
        (["api", "authenticator"], ["audit"]),
        ([], ["api", "audit", "authenticator"]),
    ],
)
def test_the_required_control_plane_logs_are_enabled(enabled: list[str], missing: list[str] | None) -> None:
    config = {"requiredLogTypes": ["api", "audit", "authenticator"]}
    messages = judge_resource(eks_control_plane_logs, EKS_CLUSTER, {"enabledClusterLogTypes": enabled}, config).messages
    assert messages == ([] if missing is None else [f"enabledClusterLogTypes lacks {missing} (has {sorted(enabled)})."])


@pytest.mark.parametrize(
    ("access", "config", "expected"),
    [
        ({"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}, {}, []),
        ({}, {}, ["authenticationMode is CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions is not false"]),
        (
            {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": False},
            {},
            ["is API_AND"],
        ),
        (
            {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": False},
            {"allowConfigMap": True},
            [],
        ),
        (
            {"authenticationMode": "CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": False},
            {"allowConfigMap": True},
            ["is CONFIG_MAP"],
        ),
        ({"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}, {}, ["is not false"]),
        ({"authenticationMode": "API"}, {}, ["is not false"]),  # unset: AWS makes the creator an admin
        (
            {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
            {"forbidCreatorAdmin": False},
            [],
        ),
    ],
)
def test_access_is_by_access_entries_without_a_hidden_admin(
    access: dict[str, Any], config: dict[str, Any], expected: list[str]
) -> None:
    config = {"allowConfigMap": False, "forbidCreatorAdmin": True, **config}
    messages = judge_resource(eks_access_entries, EKS_CLUSTER, {"accessConfig": access}, config).messages
    assert len(messages) == len(expected) and all(e in m for e, m in zip(expected, messages, strict=True))


@pytest.mark.parametrize(
    ("props", "config", "expected"),
    [
        ({"version": SUPPORTED_VERSIONS[0], "upgradePolicy": {"supportType": "STANDARD"}}, {}, []),
        ({"upgradePolicy": {"supportType": "STANDARD"}}, {}, ["version is not pinned"]),
        ({"version": "1.30", "upgradePolicy": {"supportType": "STANDARD"}}, {}, ["version 1.30 is not in"]),
        ({"version": SUPPORTED_VERSIONS[0]}, {}, ["supportType is EXTENDED"]),  # unset: EKS's default
        ({"version": SUPPORTED_VERSIONS[0], "upgradePolicy": {"supportType": "EXTENDED"}}, {}, ["is EXTENDED"]),
        ({"version": SUPPORTED_VERSIONS[0]}, {"allowExtendedSupport": True}, []),
        ({"version": "1.30", "upgradePolicy": {"supportType": "STANDARD"}}, {"allowedVersions": ["1.30"]}, []),
    ],
)
def test_the_version_is_allowed_and_on_standard_support(
    props: dict[str, Any], config: dict[str, Any], expected: list[str]
) -> None:
    config = {"allowedVersions": SUPPORTED_VERSIONS, "allowExtendedSupport": False, **config}
    messages = judge_resource(eks_version_allowed, EKS_CLUSTER, props, config).messages
    assert len(messages) == len(expected) and all(e in m for e, m in zip(expected, messages, strict=True))


def test_workload_identity_is_not_applicable_without_a_cluster() -> None:
    assert judge_stack(eks_workload_identity, [resource(EKS_ADDON, "addon")]).skipped


@pytest.mark.parametrize(
    ("addon", "oidc", "reported"),
    [("eks-pod-identity-agent", False, False), (None, True, False), ("vpc-cni", False, True), (None, False, True)],
)
def test_each_cluster_has_pod_identity_or_an_oidc_provider(addon: str | None, oidc: bool, reported: bool) -> None:
    cluster = resource(EKS_CLUSTER, "eks")
    stack = [cluster]
    if addon:
        stack.append(resource(EKS_ADDON, "addon", {"addonName": addon}, {"clusterName": [cluster]}))
    if oidc:
        stack.append(resource(IAM_OIDC_PROVIDER, "oidc", {}, {"url": [cluster]}))
    verdict = judge_stack(eks_workload_identity, stack)
    assert verdict.skipped is None and verdict.urns == ([cluster.urn] if reported else [])


def test_the_network_policy_rule_judges_the_vpc_cni_add_on_only() -> None:
    verdict = judge_resource(eks_network_policy_enabled, EKS_ADDON, {"addonName": "coredns"})
    assert verdict.skipped and verdict.reports == []


@pytest.mark.parametrize(
    ("values", "reported"),
    [
        (json.dumps({"enableNetworkPolicy": "true"}), False),
        ({"enableNetworkPolicy": True}, False),
        (json.dumps({"enableNetworkPolicy": "false"}), True),
        (json.dumps({"env": {}}), True),
        (None, True),
    ],
)
def test_the_vpc_cni_runs_its_network_policy_agent(values: Any, reported: bool) -> None:
    props: dict[str, Any] = {"addonName": "vpc-cni"}
    if values is not None:
        props["configurationValues"] = values
    verdict = judge_resource(eks_network_policy_enabled, EKS_ADDON, props)
    assert verdict.skipped is None and len(verdict.reports) == int(reported)


# ------------------------------------------------------------------------------------ launch templates


@pytest.mark.parametrize(("tokens", "reported"), [("required", False), ("optional", True), (None, True)])
def test_launch_templates_require_imdsv2(tokens: str | None, reported: bool) -> None:
    props = {"metadataOptions": {"httpTokens": tokens}} if tokens else {}
    assert len(judge_resource(lt_imdsv2, LAUNCH_TEMPLATE, props).reports) == int(reported)


@pytest.mark.parametrize(
    ("hops", "allowed", "expected"),
    [(1, 1, None), (2, 1, "is 2; at most 1"), (2, 2, None), (3, 2, "is 3; at most 2"), (None, 1, "is unset")],
)
def test_the_imds_hop_limit_is_set_and_at_most_the_allowed(
    hops: int | None, allowed: int, expected: str | None
) -> None:
    props = {"metadataOptions": {"httpPutResponseHopLimit": hops}} if hops is not None else {}
    messages = judge_resource(lt_imds_hop_limit, LAUNCH_TEMPLATE, props, {"maxHopLimit": allowed}).messages
    assert len(messages) == (0 if expected is None else 1)
    if expected is not None:
        assert expected in messages[0]


@pytest.mark.parametrize("mappings", [None, [], [{"deviceName": "/dev/xvda"}]])
def test_the_ebs_rules_are_not_applicable_without_ebs_volumes(mappings: list[Any] | None) -> None:
    props = {} if mappings is None else {"blockDeviceMappings": mappings}
    for rule in (lt_ebs_encrypted, lt_ebs_cmk):
        verdict = judge_resource(rule, LAUNCH_TEMPLATE, props)
        assert verdict.skipped and verdict.reports == []


def test_every_ebs_volume_is_encrypted_with_a_customer_key() -> None:
    props = {
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "kmsKeyId": "arn:aws:kms:k"}},
            {"deviceName": "/dev/xvdb", "ebs": {"encrypted": "true"}},
            {"ebs": {"encrypted": "false"}},
        ]
    }
    assert judge_resource(lt_ebs_encrypted, LAUNCH_TEMPLATE, props).messages == ['?: ebs.encrypted is not "true".']
    cmk = judge_resource(lt_ebs_cmk, LAUNCH_TEMPLATE, props).messages
    assert cmk == ["/dev/xvdb: ebs.kmsKeyId is not set; the volume uses the AWS managed key aws/ebs."]


def test_no_node_interface_gets_a_public_ip() -> None:
    nics = [
        {"networkCardIndex": 0, "deviceIndex": 0, "associatePublicIpAddress": "false"},
        {"networkCardIndex": 1, "deviceIndex": 1, "associatePublicIpAddress": "true"},
        {"associatePublicIpAddress": True},
    ]
    messages = judge_resource(lt_no_public_ip, LAUNCH_TEMPLATE, {"networkInterfaces": nics}).messages
    assert [m.split(")")[0] for m in messages] == [
        "network interface (card 1, device 1",
        "network interface (card 0, device 0",
    ]
    assert judge_resource(lt_no_public_ip, LAUNCH_TEMPLATE, {}).reports == []


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_user_data_is_not_applicable_when_there_is_none() -> None:
    for props in ({}, {"userData": ""}):
        verdict = judge_resource(lt_userdata_no_secrets, LAUNCH_TEMPLATE, props)
        assert verdict.skipped and verdict.reports == []


@pytest.mark.parametrize(
    ("user_data", "found"),
    [
        (_b64("#!/bin/bash\n/etc/eks/bootstrap.sh cluster\n"), None),
        (_b64("export DB_PASSWORD=\npassword = hunter2\n"), "a password assignment"),
        ("AWS_KEY=AKIAABCDEFGHIJKLMNOP not base64!", "an AWS access key id"),  # plain text is read as it is
        (_b64("-----BEGIN OPENSSH PRIVATE KEY-----"), "a private key"),
    ],
)
def test_user_data_carries_no_credentials(user_data: str, found: str | None) -> None:
    messages = judge_resource(lt_userdata_no_secrets, LAUNCH_TEMPLATE, {"userData": user_data}).messages
    assert messages == (
        [] if found is None else [f"user data contains {found}; use Secrets Manager or Pod Identity instead."]
    )


@pytest.mark.parametrize(
    ("image", "approved", "expected"),
    [
        (None, [], None),  # EKS picks the AMI
        ("ami-0123456789abcdef0", ["ami-0123456789abcdef0"], None),
        ("ami-0123456789abcdef0", [], "(approvedAmiIds: none)"),
        ("ami-0123456789abcdef0", ["ami-11111111", "ami-22222222"], "(approvedAmiIds: ami-11111111, ami-22222222)"),
    ],
)
def test_a_template_with_its_own_ami_names_an_approved_one(
    image: str | None, approved: list[str], expected: str | None
) -> None:
    props = {"imageId": image} if image else {}
    messages = judge_resource(lt_ami_approved, LAUNCH_TEMPLATE, props, {"approvedAmiIds": approved}).messages
    assert messages == ([] if expected is None else [f"imageId {image} is not an approved AMI {expected}."])


# ------------------------------------------------------------------------------------------ node groups


def test_a_node_group_opens_no_ssh() -> None:
    assert len(judge_resource(ng_no_ssh, NODE_GROUP, {"remoteAccess": {"ec2SshKey": "k"}}).reports) == 1
    assert judge_resource(ng_no_ssh, NODE_GROUP, {"scalingConfig": {}}).reports == []


def test_node_groups_launch_into_subnets_without_public_ips() -> None:
    assert judge_stack(ng_private_subnets, [resource(SUBNET, "s")]).skipped
    public = resource(SUBNET, "public", {"mapPublicIpOnLaunch": True})
    private = resource(SUBNET, "private", {"mapPublicIpOnLaunch": False})
    bad = resource(NODE_GROUP, "bad", {}, {"subnetIds": [private, public]})
    good = resource(NODE_GROUP, "good", {}, {"subnetIds": [private]})
    verdict = judge_stack(ng_private_subnets, [public, private, bad, good])
    assert verdict.skipped is None and verdict.urns == [bad.urn] and "subnet public" in verdict.messages[0]


_ALLOWED = {"allowedPolicies": ["AmazonEKSWorkerNodePolicy", "AmazonSSMManagedInstanceCore"]}
_AWS = "arn:aws:iam::aws:policy/"


def test_node_role_least_privilege_is_not_applicable_without_a_node_role() -> None:
    assert judge_stack(node_role_least_priv, [resource(IAM_ROLE, "role")], _ALLOWED).skipped
    assert judge_stack(node_role_least_priv, [resource(NODE_GROUP, "ng")], _ALLOWED).skipped


def test_a_node_role_carries_only_the_allowed_managed_policies() -> None:
    role = resource(
        IAM_ROLE, "nodes", {"managedPolicyArns": [f"{_AWS}AmazonSSMManagedInstanceCore", f"{_AWS}AmazonS3FullAccess"]}
    )
    groups = [resource(NODE_GROUP, f"ng-{i}", {}, {"nodeRoleArn": [role]}) for i in range(2)]  # one role, two groups
    own = resource(IAM_POLICY, "own")
    allowed = resource(
        IAM_ROLE_POLICY_ATTACHMENT, "worker", {"policyArn": f"{_AWS}AmazonEKSWorkerNodePolicy"}, {"role": [role]}
    )
    admin = resource(IAM_ROLE_POLICY_ATTACHMENT, "admin", {"policyArn": f"{_AWS}AdministratorAccess"}, {"role": [role]})
    stack_own = resource(IAM_ROLE_POLICY_ATTACHMENT, "stack-own", {}, {"role": [role], "policyArn": [own]})
    inline = resource(IAM_ROLE_POLICY, "inline", {}, {"role": [role]})
    verdict = judge_stack(node_role_least_priv, [role, *groups, own, allowed, admin, stack_own, inline], _ALLOWED)
    assert verdict.urns == [admin.urn, stack_own.urn, inline.urn, role.urn]  # each once, though two groups share it
    assert "carries arn:aws:iam::aws:policy/AdministratorAccess" in verdict.messages[0]
    assert "the stack's own policy through stack-own" in verdict.messages[1]
    assert "lists arn:aws:iam::aws:policy/AmazonS3FullAccess in managedPolicyArns" in verdict.messages[3]


def test_a_node_role_with_only_allowed_policies_passes() -> None:
    role = resource(IAM_ROLE, "nodes", {"managedPolicyArns": [f"{_AWS}AmazonEKSWorkerNodePolicy"]})
    group = resource(NODE_GROUP, "ng", {}, {"nodeRoleArn": [role]})
    ssm = resource(
        IAM_ROLE_POLICY_ATTACHMENT, "ssm", {"policyArn": f"{_AWS}AmazonSSMManagedInstanceCore"}, {"role": [role]}
    )
    verdict = judge_stack(node_role_least_priv, [role, group, ssm], _ALLOWED)
    assert verdict.reports == [] and verdict.skipped is None


# ------------------------------------------------------------------------------------ cluster in stack


def test_a_stack_that_puts_objects_on_a_cluster_it_does_not_create_is_reported() -> None:
    provider = resource("pulumi:providers:kubernetes", "k8s")
    assert judge_stack(cluster_in_stack, [resource(EKS_CLUSTER, "eks")]).skipped
    verdict = judge_stack(cluster_in_stack, [provider])
    assert verdict.urns == [provider.urn]
    assert judge_stack(cluster_in_stack, [provider, resource(EKS_CLUSTER, "eks")]).reports == []


# --------------------------------------------------------------------------------------- system nodes

_FLOOR = {"minNodes": 2, "minAvailabilityZones": 2}


def _system(name: str, min_size: int | None, *subnets: Any, ids: list[str] | None = None) -> Any:
    props: dict[str, Any] = {"instanceTypes": ["m7i.xlarge"], "subnetIds": ids or []}
    if min_size is not None:
        props["scalingConfig"] = {"minSize": min_size}
    return resource(NODE_GROUP, name, props, {"subnetIds": list(subnets)} if subnets else {})


def _az(name: str, az: str) -> Any:
    return resource(SUBNET, name, {"availabilityZone": az})


def test_the_system_nodes_floor_is_not_applicable_without_a_cluster() -> None:
    a = _az("a", "us-east-1a")
    assert judge_stack(system_nodes_floor, [a, _system("sys", 2, a)], _FLOOR).skipped


@pytest.mark.parametrize(("sizes", "reported"), [((2,), False), ((1,), True), ((1, 1), False), ((None, 1), True)])
def test_system_nodes_sum_to_the_floor(sizes: tuple[int | None, ...], reported: bool) -> None:
    a, b = _az("a", "us-east-1a"), _az("b", "us-east-1b")
    groups = [_system(f"sys-{i}", size, a, b) for i, size in enumerate(sizes)]
    verdict = judge_stack(system_nodes_floor, [resource(EKS_CLUSTER, "eks"), a, b, *groups], _FLOOR)
    assert verdict.skipped is None and verdict.urns == ([groups[0].urn] if reported else [])
    if reported:
        assert f"keep at least {sum(s or 0 for s in sizes)} node(s)" in verdict.messages[0]


def test_accelerated_groups_are_not_system_nodes() -> None:
    a, b = _az("a", "us-east-1a"), _az("b", "us-east-1b")
    gpu = resource(
        NODE_GROUP, "gpu", {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"minSize": 4}}, {"subnetIds": [a, b]}
    )
    system = _system("sys", 1, a, b)
    verdict = judge_stack(system_nodes_floor, [resource(EKS_CLUSTER, "eks"), a, b, gpu, system], _FLOOR)
    assert verdict.urns == [system.urn] and "(sys) keep at least 1 node(s)" in verdict.messages[0]


def test_without_system_groups_the_cluster_is_named() -> None:
    cluster = resource(EKS_CLUSTER, "eks")
    verdict = judge_stack(system_nodes_floor, [cluster], _FLOOR)
    assert verdict.urns == [cluster.urn, cluster.urn] and "(none)" in verdict.messages[0]


@pytest.mark.parametrize(
    ("azs", "outside", "reported"),
    [
        (("us-east-1a", "us-east-1b"), [], False),
        (("us-east-1a", "us-east-1a"), [], True),  # two subnets, one AZ
        ((), ["subnet-1", "subnet-2"], False),  # an existing VPC's subnets: one AZ each
        ((), ["subnet-1"], True),
    ],
)
def test_system_nodes_span_the_floor_of_azs(azs: tuple[str, ...], outside: list[str], reported: bool) -> None:
    subnets = [_az(f"s{i}", az) for i, az in enumerate(azs)]
    group = _system("sys", 2, *subnets, ids=outside)
    verdict = judge_stack(system_nodes_floor, [resource(EKS_CLUSTER, "eks"), *subnets, group], _FLOOR)
    assert verdict.urns == ([group.urn] if reported else [])
    if reported:
        assert "span 1 AZ(s)" in verdict.messages[0]
