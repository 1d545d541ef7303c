"""Tier 2: the Network component under the recording mocks."""

from __future__ import annotations

import functools
import ipaddress
import json

from components.network.network import INTERFACE_ENDPOINT_SERVICES, Network, NetworkArgs
from stacks.schema import NetworkSpec
from tests.component.helpers import aws_opts
from tests.conftest import run_component, stack_config
from trainstack.engine import Recording

SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"


def _build(spec: NetworkSpec, name: str = "trainstack-test") -> Recording:
    return run_component(
        lambda: Network(f"{name}-network", NetworkArgs(spec=spec, base_name=name, region="us-east-1"), opts=aws_opts())
    )


@functools.cache
def recorded(stack: str) -> Recording:
    cluster = stack_config(stack)
    return _build(cluster.network, cluster.name)


def _by_urn(rec: Recording) -> dict[str, str]:
    return {r.urn: r.name for r in rec.resources}


def test_vpc_has_dns_support_and_hostnames_and_the_config_cidr():
    vpc = recorded("prod").one("aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.0.0.0/16"
    assert vpc.inputs["enableDnsSupport"] is True and vpc.inputs["enableDnsHostnames"] is True


def test_the_vpcs_default_security_group_keeps_no_rule():
    rec = recorded("prod")
    vpc = rec.one("aws:ec2/vpc:Vpc")
    group = rec.one("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert group.inputs["vpcId"] == vpc.id
    assert group.inputs.get("ingress", []) == [] and group.inputs.get("egress", []) == []
    assert group.parent == next(r.urn for r in rec.resources if r.type == "trainstack:network:Network")


def test_one_private_and_one_public_subnet_per_az_with_elb_role_tags():
    rec = recorded("prod")
    subnets = rec.by_type("aws:ec2/subnet:Subnet")
    azs = stack_config("prod").network.availability_zones
    private = [s for s in subnets if "kubernetes.io/role/internal-elb" in s.inputs["tags"]]
    public = [s for s in subnets if "kubernetes.io/role/elb" in s.inputs["tags"]]
    assert sorted(s.inputs["availabilityZone"] for s in private) == sorted(azs)
    assert sorted(s.inputs["availabilityZone"] for s in public) == sorted(azs)
    assert all(s.inputs["mapPublicIpOnLaunch"] is False for s in subnets)
    cidrs = [ipaddress.IPv4Network(s.inputs["cidrBlock"]) for s in subnets]
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])


def test_efa_security_group_allows_all_traffic_to_and_from_itself():
    rec = recorded("dev")
    efa_sg = next(r for r in rec.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("efa-sg"))
    for kind in (SG_INGRESS, SG_EGRESS):
        rules = [r for r in rec.by_type(kind) if r.inputs["securityGroupId"] == efa_sg.id]
        assert len(rules) == 1, kind
        assert rules[0].inputs["referencedSecurityGroupId"] == efa_sg.id
        assert rules[0].inputs["ipProtocol"] == "-1"
        assert "fromPort" not in rules[0].inputs and "cidrIpv4" not in rules[0].inputs


def test_workload_security_group_has_all_egress_and_no_ingress():
    # Slurm HyperPod nodes and training jobs carry only the EFA group (self traffic) and this one: without its
    # egress they reach neither S3, the interface endpoints, NAT nor FSx.
    rec = recorded("prod")
    sg = next(r for r in rec.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("workload-sg"))
    [egress] = [r for r in rec.by_type(SG_EGRESS) if r.inputs["securityGroupId"] == sg.id]
    assert egress.inputs["cidrIpv4"] == "0.0.0.0/0" and egress.inputs["ipProtocol"] == "-1"
    assert not [r for r in rec.by_type(SG_INGRESS) if r.inputs["securityGroupId"] == sg.id]
    component = next(r for r in rec.resources if r.type == "trainstack:network:Network")
    assert component.urn in {sg.parent, egress.parent}


def test_session_manager_endpoints_come_with_ssm():
    # Session Manager on private nodes needs ssmmessages (and ec2messages for older agents) next to ssm.
    services = {e.inputs["serviceName"] for e in recorded("prod").by_type(ENDPOINT)}
    assert {f"com.amazonaws.us-east-1.{s}" for s in ("ssm", "ssmmessages", "ec2messages")} <= services


def test_interface_endpoints_only_when_asked():
    dev = recorded("dev")  # interface_endpoints: false
    assert [e.inputs["vpcEndpointType"] for e in dev.by_type(ENDPOINT)] == ["Gateway"]
    prod = recorded("prod")
    interface = [e for e in prod.by_type(ENDPOINT) if e.inputs["vpcEndpointType"] == "Interface"]
    assert sorted(e.inputs["serviceName"] for e in interface) == sorted(
        f"com.amazonaws.us-east-1.{s}" for s in INTERFACE_ENDPOINT_SERVICES
    )
    assert all(e.inputs["privateDnsEnabled"] is True for e in interface)
    assert all(len(e.inputs["subnetIds"]) == 3 for e in interface)


def test_endpoint_security_group_admits_https_from_the_vpc_only():
    rec = recorded("prod")
    sg = next(r for r in rec.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("endpoints-sg"))
    rules = [r for r in rec.by_type(SG_INGRESS) if r.inputs["securityGroupId"] == sg.id]
    assert [(r.inputs["fromPort"], r.inputs["toPort"], r.inputs["cidrIpv4"]) for r in rules] == [
        (443, 443, "10.0.0.0/16")
    ]


def test_s3_gateway_endpoint_on_every_private_route_table():
    rec = recorded("prod")
    s3 = next(e for e in rec.by_type(ENDPOINT) if e.inputs["serviceName"].endswith(".s3"))
    private_rts = [r.id for r in rec.by_type("aws:ec2/routeTable:RouteTable") if "private-rt" in r.name]
    assert len(private_rts) == 3
    assert sorted(s3.inputs["routeTableIds"]) == sorted(private_rts)


def test_nat_count_per_mode_and_private_routes_use_them():
    single, per_az = recorded("dev"), recorded("prod")
    assert len(single.by_type("aws:ec2/natGateway:NatGateway")) == 1
    assert len(single.by_type("aws:ec2/eip:Eip")) == 1
    nats = per_az.by_type("aws:ec2/natGateway:NatGateway")
    assert len(nats) == 3
    private_routes = [r for r in per_az.by_type("aws:ec2/route:Route") if "private-default" in r.name]
    assert sorted(r.inputs["natGatewayId"] for r in private_routes) == sorted(n.id for n in nats)
    public_subnets = {s.id for s in per_az.by_type("aws:ec2/subnet:Subnet") if "public" in s.name}
    assert {n.inputs["subnetId"] for n in nats} == public_subnets


def test_flow_logs_go_to_a_log_group_with_config_retention_and_traffic_type():
    rec = recorded("dev")
    group = rec.one("aws:cloudwatch/logGroup:LogGroup")
    assert group.inputs["retentionInDays"] == 14
    flow = rec.one("aws:ec2/flowLog:FlowLog")
    assert flow.inputs["trafficType"] == "REJECT"
    assert flow.inputs["logDestination"] == group.outputs["arn"]
    trust = json.loads(rec.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    assert trust["Statement"][0]["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"


def test_every_child_is_parented_to_the_component_and_named_after_it():
    rec = recorded("staging")
    component = rec.one("trainstack:network:Network")
    children = [r for r in rec.resources if r.custom and r.type != "pulumi:providers:aws"]
    assert children and all(r.parent == component.urn for r in children)
    assert all(r.name.startswith("trainstack-staging-network-") for r in children)


def test_four_azs_with_per_az_nat():
    spec = NetworkSpec.model_validate(
        {
            "vpc_cidr": "10.30.0.0/16",
            "availability_zones": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"],
            "private_subnet_prefix_length": 19,  # four /18s would fill the /16 with no room for public subnets
            "nat_gateways": "per_az",
        }
    )
    rec = _build(spec)
    assert len(rec.by_type("aws:ec2/subnet:Subnet")) == 8
    assert len(rec.by_type("aws:ec2/natGateway:NatGateway")) == 4


def test_private_nodes_get_the_eks_auth_endpoint_for_pod_identity():
    # The Pod Identity agent fetches credentials from EKS Auth; without this endpoint vpc-cni and the CSI
    # drivers on private nodes have no AWS credentials.
    prod = recorded("prod")
    (eks_auth,) = [e for e in prod.by_type(ENDPOINT) if e.inputs["serviceName"].endswith(".eks-auth")]
    assert eks_auth.inputs["serviceName"] == "com.amazonaws.us-east-1.eks-auth"
    assert eks_auth.inputs["vpcEndpointType"] == "Interface"
    assert eks_auth.inputs["privateDnsEnabled"] is True
    assert set(eks_auth.inputs["subnetIds"]) == {
        s.id for s in prod.by_type("aws:ec2/subnet:Subnet") if "kubernetes.io/role/internal-elb" in s.inputs["tags"]
    }
    sg = next(r for r in prod.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("endpoints-sg"))
    assert eks_auth.inputs["securityGroupIds"] == [sg.id]
    assert not [e for e in recorded("dev").by_type(ENDPOINT) if e.inputs["serviceName"].endswith(".eks-auth")]


def test_endpoints_admit_only_the_accounts_principals() -> None:
    rec = recorded("prod")
    endpoints = rec.by_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    assert endpoints
    for endpoint in endpoints:
        statements = json.loads(endpoint.inputs["policy"])["Statement"]
        conditioned = [s for s in statements if "Condition" in s]
        assert conditioned[0]["Condition"]["StringEquals"]["aws:PrincipalAccount"] == "123456789012"
        for statement in statements:
            # Anything allowed without a condition is a named action on named resources, never everything.
            if "Condition" not in statement:
                assert statement["Action"] in ("s3:GetObject", "sts:AssumeRoleWithWebIdentity")
        if endpoint.inputs["vpcEndpointType"] == "Gateway":
            # Own buckets only: nothing in the VPC can copy data to another account's bucket through it.
            assert conditioned[0]["Condition"]["StringEquals"]["aws:ResourceAccount"] == "123456789012"
            by_sid = {s["Sid"]: s for s in statements if "Condition" not in s}
            assert set(by_sid) == {"AwsOwnedImageLayersAndPackages", "PublicRegistryImageLayers"}
            assert all(
                arn.endswith("/*") and "us-east-1" in arn
                for arn in by_sid["AwsOwnedImageLayersAndPackages"]["Resource"]
            )
            # Public registries' layer objects in this region, read-only (stacks/registries.py has the facts).
            assert by_sid["PublicRegistryImageLayers"]["Resource"] == [
                "arn:aws:s3:::prod-registry-k8s-io-us-east-1/containers/images/*",
                "arn:aws:s3:::docker-images-prod/*",
            ]
