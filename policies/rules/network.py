"""Network rules (the `trainstack:network` area): security groups, VPC flow logs and the default security group,
VPC endpoints' policies, a NAT gateway per AZ; plus the security-group model the EFA, Lustre and HyperPod rules
read (`sg_rules`, `allows_all_self`)."""

from __future__ import annotations

from dataclasses import dataclass

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs

from ..address_space import describe, public_addresses
from ..facts_generated import (
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
from .base import (
    SG_RULE,
    Graph,
    Report,
    as_list,
    availability_zone,
    get,
    graph,
    items,
    number,
    policy_statements,
    resource_rule,
    stack_rule,
    truthy,
)

_ALL_PROTOCOLS = ("-1", "all")
_TCP = ("tcp", "6")


@dataclass(frozen=True)
class SgRule:
    """One ingress or egress permission of a security group, from inline blocks or rule resources."""

    direction: str  # "ingress" or "egress"
    protocol: str
    from_port: int
    to_port: int
    cidrs: tuple[str, ...]
    to_self: bool  # the peer is the security group itself
    source: str  # where it was declared, for messages

    def covers_all(self) -> bool:
        return self.protocol in _ALL_PROTOCOLS

    def covers_tcp(self, port: int) -> bool:
        if self.covers_all():
            return True
        return self.protocol in _TCP and self.from_port <= port <= self.to_port


def _port(value: object, default: int) -> int:
    found = number(value)
    return int(found) if found is not None else default


def _inline(sg: PolicyResource, direction: str) -> list[SgRule]:
    out: list[SgRule] = []
    for block in items(get(sg.props, direction)):
        out.append(
            SgRule(
                direction=direction,
                protocol=str(get(block, "protocol", "")).lower(),
                from_port=_port(get(block, "fromPort"), 0),
                to_port=_port(get(block, "toPort"), 65535),
                cidrs=tuple(str(c) for c in items(get(block, "cidrBlocks")) + items(get(block, "ipv6CidrBlocks"))),
                to_self=truthy(get(block, "self")),
                source=f"{sg.name} inline {direction}",
            )
        )
    return out


def sg_rules(g: Graph, sg: PolicyResource) -> list[SgRule]:
    """Every rule of `sg`: inline blocks and rule resources joined through their `securityGroupId`."""
    rules = _inline(sg, "ingress") + _inline(sg, "egress")
    for rule in g.referrers(sg, "securityGroupId", SECURITY_GROUP_INGRESS_RULE, SECURITY_GROUP_EGRESS_RULE):
        rules.append(
            SgRule(
                direction="ingress" if rule.resource_type == SECURITY_GROUP_INGRESS_RULE else "egress",
                protocol=str(get(rule.props, "ipProtocol", "")).lower(),
                from_port=_port(get(rule.props, "fromPort"), 0),
                to_port=_port(get(rule.props, "toPort"), 65535),
                cidrs=tuple(str(c) for c in (get(rule.props, "cidrIpv4"), get(rule.props, "cidrIpv6")) if c),
                to_self=sg in Graph.deps(rule, "referencedSecurityGroupId"),
                source=rule.name,
            )
        )
    for rule in g.referrers(sg, "securityGroupId", SG_RULE):
        rules.append(
            SgRule(
                direction=str(get(rule.props, "type", "")),
                protocol=str(get(rule.props, "protocol", "")).lower(),
                from_port=_port(get(rule.props, "fromPort"), 0),
                to_port=_port(get(rule.props, "toPort"), 65535),
                cidrs=tuple(
                    str(c) for c in items(get(rule.props, "cidrBlocks")) + items(get(rule.props, "ipv6CidrBlocks"))
                ),
                to_self=truthy(get(rule.props, "self")) or sg in Graph.deps(rule, "sourceSecurityGroupId"),
                source=rule.name,
            )
        )
    return rules


def allows_all_self(g: Graph, sg: PolicyResource) -> tuple[bool, bool]:
    """Whether `sg` allows all traffic from itself (ingress) and to itself (egress), as EFA needs."""
    rules = [r for r in sg_rules(g, sg) if r.to_self and r.covers_all()]
    return any(r.direction == "ingress" for r in rules), any(r.direction == "egress" for r in rules)


@resource_rule(
    name="sg-no-world-ingress",
    description="No security group admits traffic from public address space (0.0.0.0/0, ::/0, or any CIDR "
    "reaching beyond the private ranges, judged by the addresses it covers): nodes, file systems and endpoints "
    "are reached from inside the VPC only (Pulumi compliance pack, CIS AWS 5.2).",
    severity=Severity.CRITICAL,
    types=[SECURITY_GROUP, SECURITY_GROUP_INGRESS_RULE, SG_RULE],
)
def sg_no_world_ingress(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type == SECURITY_GROUP:
        for block in items(get(args.props, "ingress")):
            cidrs = [str(c) for c in items(get(block, "cidrBlocks")) + items(get(block, "ipv6CidrBlocks"))]
            if public_addresses(cidrs):
                report(
                    f"inline ingress {get(block, 'protocol')} {get(block, 'fromPort')}-{get(block, 'toPort')} "
                    f"is open to {cidrs}: {describe(public_addresses(cidrs))} of public address space."
                )
        return
    if args.resource_type == SG_RULE and get(args.props, "type") != "ingress":
        args.not_applicable("egress rule")
    cidrs = [str(c) for c in (get(args.props, "cidrIpv4"), get(args.props, "cidrIpv6")) if c]
    cidrs += [str(c) for c in items(get(args.props, "cidrBlocks")) + items(get(args.props, "ipv6CidrBlocks"))]
    if public_addresses(cidrs):
        report(f"ingress rule is open to {cidrs}: {describe(public_addresses(cidrs))} of public address space.")


@stack_rule(
    name="vpc-flow-logs",
    description="Every VPC has flow logs (ALL traffic where required), so a compromised node's "
    "connections can be traced afterwards (CKV2_AWS_11, CIS AWS 3.7).",
    severity=Severity.MEDIUM,
    config={
        "requiredTrafficType": {
            "type": "string",
            "enum": ["ALL", "REJECT", "ACCEPT", "ANY"],
            "default": "ANY",
            "description": "Traffic type the flow log must capture; ANY accepts any.",
        }
    },
)
def vpc_flow_logs(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    vpcs = g.of_type(VPC)
    if not vpcs:
        args.not_applicable("no VPC in the stack (an existing VPC keeps its owner's flow logs)")
    required = args.get_config().get("requiredTrafficType", "ANY")
    for vpc in vpcs:
        logs = g.referrers(vpc, "vpcId", FLOW_LOG)
        if not logs:
            report(f"VPC {vpc.name} has no flow log.", vpc.urn)
        elif required != "ANY" and not any(get(f.props, "trafficType") == required for f in logs):
            types = sorted({str(get(f.props, "trafficType")) for f in logs})
            report(f"VPC {vpc.name} logs {types}; {required} is required here.", vpc.urn)


@stack_rule(
    name="vpc-default-sg-closed",
    description="Every VPC the stack creates has its default security group adopted with no rule: by default it "
    "admits all traffic among its members and to anywhere, and whatever is launched without a group lands in it "
    "(CIS AWS Foundations 5.4, CKV2_AWS_12).",
    severity=Severity.LOW,
)
def vpc_default_sg_closed(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    vpcs = g.of_type(VPC)
    if not vpcs:
        args.not_applicable("no VPC in the stack (an existing VPC's default group is its owner's)")
    for vpc in vpcs:
        groups = g.referrers(vpc, "vpcId", DEFAULT_SECURITY_GROUP)
        if not groups:
            report(f"VPC {vpc.name}: its default security group is not adopted, so it keeps AWS's open rules.", vpc.urn)
        for group in groups:
            rules = [d for d in ("ingress", "egress") if items(get(group.props, d))]
            if rules:
                report(
                    f"VPC {vpc.name}: default security group {group.name} keeps {' and '.join(rules)} rules.", group.urn
                )


@stack_rule(
    name="sg-rule-style-consistent",
    description="A security group is managed either by inline rules or by rule resources, never both: "
    "mixing them makes each update delete the other's rules (pulumi-aws securityGroup docs).",
    severity=Severity.MEDIUM,
)
def sg_rule_style_consistent(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = g.of_type(SECURITY_GROUP)
    if not groups:
        args.not_applicable("no security groups")
    for sg in groups:
        inline = bool(items(get(sg.props, "ingress")) or items(get(sg.props, "egress")))
        resources = g.referrers(sg, "securityGroupId", SECURITY_GROUP_INGRESS_RULE, SECURITY_GROUP_EGRESS_RULE, SG_RULE)
        if inline and resources:
            report(
                f"security group {sg.name} has inline rules and rule resources "
                f"({', '.join(r.name for r in resources)}).",
                sg.urn,
            )


@resource_rule(
    name="vpc-endpoint-policy",
    description="Every VPC endpoint has a policy narrower than the default full access: no statement allows every "
    "action (`*` or `<service>:*`) on every resource without a condition. An endpoint is otherwise a path for "
    "copying data to any account (AWS data perimeter guidance); which conditions and resources make a statement "
    "narrow enough is the endpoint policy's own review (components/network/network.py), not this rule's.",
    severity=Severity.MEDIUM,
    types=[VPC_ENDPOINT],
)
def vpc_endpoint_policy(args: ResourceValidationArgs, report: Report) -> None:
    statements = policy_statements(get(args.props, "policy"))
    if not statements:
        report("the endpoint has no policy: AWS applies full access for every principal and resource.")
    for statement in statements:
        unconditioned = statement.get("Effect") == "Allow" and not statement.get("Condition")
        wide = "*" in [str(r) for r in as_list(statement.get("Resource"))]
        any_action = any(str(a) == "*" or str(a).endswith(":*") for a in as_list(statement.get("Action")))
        if unconditioned and wide and any_action:
            report(f"statement {statement.get('Sid', '?')} allows every action on every resource without condition.")


@stack_rule(
    name="nat-per-az",
    floor="prod",  # from prod: in staging one NAT gateway is the cost
    description="Every AZ with node subnets has its own NAT gateway: with one shared NAT gateway, losing its "
    "AZ cuts every other AZ's nodes off image pulls, package mirrors and AWS APIs not on endpoints (VPC User "
    "Guide, NAT gateways: 'create a NAT gateway in each Availability Zone').",
    severity=Severity.MEDIUM,
)
def nat_per_az(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    # The subnets that carry nodes and the control plane's interfaces: the node groups' and the cluster's.
    private: list[PolicyResource] = []
    for holder in g.of_type(NODE_GROUP, EKS_CLUSTER):
        prop = "subnetIds" if holder.resource_type == NODE_GROUP else "vpcConfig"
        private += [s for s in Graph.deps(holder, prop, SUBNET) if s not in private]
    nats = g.of_type(NAT_GATEWAY)
    if not private or not nats:
        args.not_applicable("no node subnets behind NAT")
    nat_azs = {availability_zone(s) for nat in nats for s in Graph.deps(nat, "subnetId", SUBNET)}
    for subnet in private:
        if availability_zone(subnet) not in nat_azs:
            report(
                f"private subnet {subnet.name} in {availability_zone(subnet)} has no NAT gateway in its AZ "
                f"(NAT gateways in {sorted(nat_azs)}); set network.nat_gateways per_az, so one AZ's outage does not "
                "take the others' egress with it.",
                subnet.urn,
            )
