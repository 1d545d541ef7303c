"""The network rules (policies/rules/network.py) one branch at a time, on hand-built resources: the security-group
model the EFA, Lustre and HyperPod rules read (inline blocks and the three kinds of rule resource, which the
program's recordings do not all have), and each rule's boundaries and partial inputs. The whole-program cases
are in tests/policy/test_rules.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policies.facts_generated import (
    DEFAULT_SECURITY_GROUP,
    EKS_CLUSTER,
    FLOW_LOG,
    NAT_GATEWAY,
    NODE_GROUP,
    SECURITY_GROUP,
    SECURITY_GROUP_EGRESS_RULE,
    SECURITY_GROUP_INGRESS_RULE,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)
from policies.rules.base import SG_RULE, Graph
from policies.rules.network import (
    SgRule,
    allows_all_self,
    nat_per_az,
    sg_no_world_ingress,
    sg_rule_style_consistent,
    sg_rules,
    vpc_default_sg_closed,
    vpc_endpoint_policy,
    vpc_flow_logs,
)
from tests.policy.test_direct import judge_resource, judge_stack, resource


def _sg(props: dict[str, Any] | None = None) -> Any:
    return resource(SECURITY_GROUP, "sg", props)


# ------------------------------------------------------------------------------------ the rule model


@pytest.mark.parametrize(
    ("protocol", "port", "covered"),
    [
        ("-1", 22, True),
        ("all", 65535, True),
        ("tcp", 988, True),
        ("tcp", 1023, True),
        ("6", 1000, True),
        ("tcp", 987, False),
        ("tcp", 1024, False),
        ("udp", 1000, False),
        ("17", 1000, False),
    ],
)
def test_a_rule_covers_a_tcp_port_in_its_range_or_by_allowing_everything(
    protocol: str, port: int, covered: bool
) -> None:
    rule = SgRule("ingress", protocol, 988, 1023, (), False, "test")
    assert rule.covers_tcp(port) is covered
    assert rule.covers_all() is (protocol in ("-1", "all"))


def test_inline_blocks_read_as_rules_with_ports_defaulting_to_the_whole_range() -> None:
    sg = _sg(
        {
            "ingress": [
                {
                    "protocol": "TCP",
                    "fromPort": 988,
                    "toPort": 1023,
                    "cidrBlocks": ["10.0.0.0/16"],
                    "ipv6CidrBlocks": ["fd00::/8"],
                }
            ],
            "egress": [{"protocol": "-1", "self": "true"}],
        }
    )
    assert sg_rules(Graph([sg]), sg) == [
        SgRule("ingress", "tcp", 988, 1023, ("10.0.0.0/16", "fd00::/8"), False, "sg inline ingress"),
        SgRule("egress", "-1", 0, 65535, (), True, "sg inline egress"),
    ]


def test_vpc_rule_resources_read_with_their_direction_and_self_reference() -> None:
    sg = _sg()
    ingress = resource(
        SECURITY_GROUP_INGRESS_RULE,
        "in-self",
        {"ipProtocol": "-1"},
        {"securityGroupId": [sg], "referencedSecurityGroupId": [sg]},
    )
    other = resource(SECURITY_GROUP, "other")
    egress = resource(
        SECURITY_GROUP_EGRESS_RULE,
        "out-other",
        {"ipProtocol": "TCP", "fromPort": 443, "toPort": 443, "cidrIpv4": "10.0.0.0/8", "cidrIpv6": None},
        {"securityGroupId": [sg], "referencedSecurityGroupId": [other]},
    )
    assert sg_rules(Graph([sg, other, ingress, egress]), sg) == [
        SgRule("ingress", "-1", 0, 65535, (), True, "in-self"),
        SgRule("egress", "tcp", 443, 443, ("10.0.0.0/8",), False, "out-other"),
    ]


def test_ec2_security_group_rules_read_with_their_type_and_self_by_flag_or_source_group() -> None:
    sg = _sg()
    by_flag = resource(
        SG_RULE, "by-flag", {"type": "ingress", "protocol": "ALL", "self": True}, {"securityGroupId": [sg]}
    )
    by_source = resource(
        SG_RULE,
        "by-source",
        {"type": "egress", "protocol": "-1"},
        {"securityGroupId": [sg], "sourceSecurityGroupId": [sg]},
    )
    cidr = resource(
        SG_RULE,
        "cidr",
        {"type": "ingress", "protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]},
        {"securityGroupId": [sg]},
    )
    assert sg_rules(Graph([sg, by_flag, by_source, cidr]), sg) == [
        SgRule("ingress", "all", 0, 65535, (), True, "by-flag"),
        SgRule("egress", "-1", 0, 65535, (), True, "by-source"),
        SgRule("ingress", "tcp", 22, 22, ("10.0.0.0/8",), False, "cidr"),
    ]


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ({"ingress": [{"protocol": "-1", "self": True}]}, (True, False)),
        ({"egress": [{"protocol": "-1", "self": True}]}, (False, True)),
        ({"ingress": [{"protocol": "-1", "self": True}], "egress": [{"protocol": "-1", "self": True}]}, (True, True)),
        # to itself but not all traffic, or all traffic but not to itself: not what EFA needs
        ({"ingress": [{"protocol": "tcp", "self": True}], "egress": [{"protocol": "-1"}]}, (False, False)),
    ],
)
def test_allows_all_self_needs_all_traffic_to_the_group_itself(
    blocks: dict[str, Any], expected: tuple[bool, bool]
) -> None:
    sg = _sg(blocks)
    assert allows_all_self(Graph([sg]), sg) == expected


# ------------------------------------------------------------------------------------ sg-no-world-ingress


def test_an_inline_ingress_block_open_to_public_space_is_reported() -> None:
    props = {
        "ingress": [
            {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]},
            {"protocol": "tcp", "fromPort": 443, "toPort": 443, "ipv6CidrBlocks": ["::/0"]},
        ],
        "egress": [{"protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}],  # egress to the world is not ingress
    }
    verdict = judge_resource(sg_no_world_ingress, SECURITY_GROUP, props)
    assert len(verdict.messages) == 1 and "inline ingress tcp 443-443" in verdict.messages[0]
    assert judge_resource(sg_no_world_ingress, SECURITY_GROUP, {"ingress": props["ingress"][:1]}).reports == []


def test_an_ec2_egress_rule_is_not_judged_for_ingress() -> None:
    verdict = judge_resource(sg_no_world_ingress, SG_RULE, {"type": "egress", "cidrBlocks": ["0.0.0.0/0"]})
    assert verdict.skipped == "egress rule" and verdict.reports == []


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        (SG_RULE, {"type": "ingress", "cidrBlocks": ["10.0.0.0/8", "0.0.0.0/0"]}),
        (SG_RULE, {"type": "ingress", "ipv6CidrBlocks": ["2001:db8::/32"]}),
        (SECURITY_GROUP_INGRESS_RULE, {"cidrIpv4": "0.0.0.0/0"}),
        (SECURITY_GROUP_INGRESS_RULE, {"cidrIpv6": "::/0"}),
    ],
)
def test_an_ingress_rule_open_to_public_space_is_reported(type_: str, props: dict[str, Any]) -> None:
    verdict = judge_resource(sg_no_world_ingress, type_, props)
    assert verdict.skipped is None and len(verdict.messages) == 1
    assert verdict.messages[0].startswith("ingress rule is open to")


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        (SG_RULE, {"type": "ingress", "cidrBlocks": ["10.0.0.0/8"], "ipv6CidrBlocks": ["fd00::/8"]}),
        (SECURITY_GROUP_INGRESS_RULE, {"cidrIpv4": "172.16.0.0/12"}),
        (SECURITY_GROUP_INGRESS_RULE, {"referencedSecurityGroupId": "sg-1"}),
    ],
)
def test_an_ingress_rule_from_private_space_or_a_group_passes(type_: str, props: dict[str, Any]) -> None:
    assert judge_resource(sg_no_world_ingress, type_, props).reports == []


# ----------------------------------------------------------------------------------------- vpc-flow-logs


def _vpc_with_logs(*traffic: str) -> list[Any]:
    vpc = resource(VPC, "vpc")
    return [vpc, *(resource(FLOW_LOG, f"log-{t}", {"trafficType": t}, {"vpcId": [vpc]}) for t in traffic)]


def test_flow_logs_are_not_applicable_without_a_vpc() -> None:
    verdict = judge_stack(vpc_flow_logs, [resource(SUBNET, "subnet")], {"requiredTrafficType": "ANY"})
    assert verdict.skipped and verdict.reports == []


def test_a_vpc_without_a_flow_log_is_reported() -> None:
    stack = _vpc_with_logs()
    verdict = judge_stack(vpc_flow_logs, stack, {"requiredTrafficType": "ANY"})
    assert verdict.urns == [stack[0].urn] and "no flow log" in verdict.messages[0]


@pytest.mark.parametrize(
    ("required", "traffic", "reported"),
    [
        ("ANY", ("REJECT",), False),
        ("ALL", ("ALL",), False),
        ("ALL", ("REJECT", "ALL"), False),
        ("ALL", ("REJECT", "ACCEPT"), True),
        ("REJECT", ("ALL",), True),  # the rule asks for the type named, as the config says
    ],
)
def test_the_flow_logs_traffic_type_is_the_one_required(
    required: str, traffic: tuple[str, ...], reported: bool
) -> None:
    verdict = judge_stack(vpc_flow_logs, _vpc_with_logs(*traffic), {"requiredTrafficType": required})
    assert bool(verdict.reports) is reported
    if reported:
        assert f"logs {sorted(traffic)}; {required} is required" in verdict.messages[0]


# --------------------------------------------------------------------------------- vpc-default-sg-closed


def test_the_default_security_group_is_not_applicable_without_a_vpc() -> None:
    verdict = judge_stack(vpc_default_sg_closed, [resource(DEFAULT_SECURITY_GROUP, "default")])
    assert verdict.skipped and verdict.reports == []


@pytest.mark.parametrize(
    ("props", "kept"),
    [
        ({}, None),
        ({"ingress": [], "egress": []}, None),
        ({"ingress": [{"protocol": "-1", "self": True}]}, "ingress"),
        ({"egress": [{"protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}]}, "egress"),
        ({"ingress": [{"protocol": "-1"}], "egress": [{"protocol": "-1"}]}, "ingress and egress"),
    ],
)
def test_the_adopted_default_security_group_keeps_no_rule(props: dict[str, Any], kept: str | None) -> None:
    vpc = resource(VPC, "vpc")
    group = resource(DEFAULT_SECURITY_GROUP, "default", props, {"vpcId": [vpc]})
    verdict = judge_stack(vpc_default_sg_closed, [vpc, group])
    if kept is None:
        assert verdict.reports == [] and verdict.skipped is None
    else:
        assert verdict.urns == [group.urn] and f"keeps {kept} rules" in verdict.messages[0]


def test_a_vpc_whose_default_security_group_is_not_adopted_is_reported() -> None:
    vpc = resource(VPC, "vpc")
    elsewhere = resource(DEFAULT_SECURITY_GROUP, "default", {}, {"vpcId": [resource(VPC, "other")]})
    verdict = judge_stack(vpc_default_sg_closed, [vpc, elsewhere])
    assert verdict.urns == [vpc.urn] and "not adopted" in verdict.messages[0]


# ------------------------------------------------------------------------------ sg-rule-style-consistent


def test_rule_style_is_not_applicable_without_security_groups() -> None:
    verdict = judge_stack(sg_rule_style_consistent, [resource(VPC, "vpc")])
    assert verdict.skipped and verdict.reports == []


@pytest.mark.parametrize(
    ("inline", "rule_type", "mixed"),
    [
        ({"ingress": [{"protocol": "-1"}]}, SECURITY_GROUP_INGRESS_RULE, True),
        ({"egress": [{"protocol": "-1"}]}, SECURITY_GROUP_EGRESS_RULE, True),
        ({"egress": [{"protocol": "-1"}]}, SG_RULE, True),
        ({"ingress": [{"protocol": "-1"}]}, None, False),
        ({}, SECURITY_GROUP_INGRESS_RULE, False),
        ({"ingress": [], "egress": []}, SG_RULE, False),
    ],
)
def test_a_security_group_takes_inline_rules_or_rule_resources_not_both(
    inline: dict[str, Any], rule_type: str | None, mixed: bool
) -> None:
    sg = _sg(inline)
    stack = [sg] + ([resource(rule_type, "rule", {}, {"securityGroupId": [sg]})] if rule_type else [])
    verdict = judge_stack(sg_rule_style_consistent, stack)
    assert verdict.skipped is None
    assert verdict.urns == ([sg.urn] if mixed else [])


# ------------------------------------------------------------------------------------ vpc-endpoint-policy


def _endpoint(*statements: dict[str, Any]) -> Any:
    return judge_resource(vpc_endpoint_policy, VPC_ENDPOINT, {"policy": json.dumps({"Statement": list(statements)})})


def test_an_endpoint_without_a_policy_is_reported() -> None:
    assert "has no policy" in judge_resource(vpc_endpoint_policy, VPC_ENDPOINT, {}).messages[0]
    assert "has no policy" in _endpoint().messages[0]


@pytest.mark.parametrize(
    ("statement", "reported"),
    [
        ({"Sid": "all", "Effect": "Allow", "Action": "*", "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": ["s3:GetObject", "s3:*"], "Resource": ["arn:aws:s3:::a", "*"]}, True),
        ({"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"StringEquals": {"aws:x": "y"}}}, False),
        ({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::bucket/*"}, False),
        ({"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "*"}, False),
        ({"Effect": "Deny", "Action": "*", "Resource": "*"}, False),
    ],
)
def test_an_endpoint_policy_may_not_allow_everything_everywhere_unconditioned(
    statement: dict[str, Any], reported: bool
) -> None:
    verdict = _endpoint(statement)
    assert len(verdict.reports) == int(reported)
    if reported:
        assert f"statement {statement.get('Sid', '?')} allows every action" in verdict.messages[0]


def test_an_endpoint_policy_of_one_statement_object_is_judged_as_that_statement() -> None:
    """IAM takes `Statement` as one object or a list (IAM User Guide, IAM JSON policy elements: Statement)."""
    everything = {"Sid": "all", "Effect": "Allow", "Action": "*", "Resource": "*"}
    verdict = judge_resource(vpc_endpoint_policy, VPC_ENDPOINT, {"policy": json.dumps({"Statement": everything})})
    assert [m for m in verdict.messages if "statement all allows every action" in m] and not [
        m for m in verdict.messages if "has no policy" in m
    ]


# ----------------------------------------------------------------------------------------------- nat-per-az


def _subnet(name: str, az: str) -> Any:
    return resource(SUBNET, name, {"availabilityZone": az})


def test_nat_per_az_is_not_applicable_without_node_subnets_or_nat_gateways() -> None:
    a = _subnet("a", "us-east-1a")
    nat = resource(NAT_GATEWAY, "nat", {}, {"subnetId": [a]})
    group = resource(NODE_GROUP, "ng", {}, {"subnetIds": [a]})
    assert judge_stack(nat_per_az, [a, nat]).skipped
    assert judge_stack(nat_per_az, [a, group]).skipped
    assert judge_stack(nat_per_az, [a, group, nat]).skipped is None


def test_every_node_and_control_plane_subnet_has_a_nat_gateway_in_its_az() -> None:
    public_a, private_a, private_b = (
        _subnet("public-a", "us-east-1a"),
        _subnet("a", "us-east-1a"),
        _subnet("b", "us-east-1b"),
    )
    nat = resource(NAT_GATEWAY, "nat", {}, {"subnetId": [public_a]})
    group = resource(NODE_GROUP, "ng", {}, {"subnetIds": [private_a, private_b]})
    cluster = resource(EKS_CLUSTER, "eks", {}, {"vpcConfig": [private_a, private_b]})
    verdict = judge_stack(nat_per_az, [public_a, private_a, private_b, nat, group, cluster])
    assert verdict.urns == [private_b.urn]  # once, though both the group and the cluster use it
    assert "in us-east-1b has no NAT gateway in its AZ (NAT gateways in ['us-east-1a'])" in verdict.messages[0]


def test_the_control_plane_subnets_alone_need_nat_gateways_too() -> None:
    public_a, private_b = _subnet("public-a", "us-east-1a"), _subnet("b", "us-east-1b")
    nat = resource(NAT_GATEWAY, "nat", {}, {"subnetId": [public_a]})
    cluster = resource(EKS_CLUSTER, "eks", {}, {"vpcConfig": [private_b]})
    assert judge_stack(nat_per_az, [public_a, private_b, nat, cluster]).urns == [private_b.urn]


def test_a_nat_gateway_in_each_node_az_passes() -> None:
    public_a, public_b = _subnet("public-a", "us-east-1a"), _subnet("public-b", "us-east-1b")
    private_a, private_b = _subnet("a", "us-east-1a"), _subnet("b", "us-east-1b")
    nats = [resource(NAT_GATEWAY, f"nat-{s.name}", {}, {"subnetId": [s]}) for s in (public_a, public_b)]
    group = resource(NODE_GROUP, "ng", {}, {"subnetIds": [private_a, private_b]})
    verdict = judge_stack(nat_per_az, [public_a, public_b, private_a, private_b, *nats, group])
    assert verdict.reports == [] and verdict.skipped is None
