"""What the offline engine answers in place of AWS and Kubernetes.

`new_resource` returns a resource's inputs plus the outputs the real provider would compute (ids, ARNs,
endpoints, auto-names), shaped like the providers' own, and deterministic: the same program gives the same
ids on every run, so two plans can be compared. `call` answers the data sources the program reads
(availability zones, caller identity, partition, region, SSM AMI parameters, instance-type data from the
catalog). In preview mode only the inputs come back, so computed outputs stay unknown, as in
`pulumi preview`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import rpc

from stacks.account_rules import QUOTA_CLASSES
from stacks.catalog import CATALOG
from stacks.schema import StackConfig
from trainstack.tokens import (
    AMP_WORKSPACE,
    BUCKET,
    BUCKET_V2,
    EC2_GET_CAPACITY_BLOCK_RESERVATION,
    EC2_GET_INSTANCE_TYPE,
    EC2_GET_INSTANCE_TYPE_OFFERINGS,
    EC2_GET_INSTANCES,
    EC2_GET_PREFIX_LIST,
    EC2_GET_SUBNET,
    EIP,
    EKS_CLUSTER,
    EKS_GET_CLUSTER,
    EKS_GET_CLUSTER_VERSIONS,
    FLOW_LOG,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    GET_AVAILABILITY_ZONES,
    GET_CALLER_IDENTITY,
    GET_PARTITION,
    GET_REGION,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    IAM_GET_POLICY_DOCUMENT,
    IAM_GET_ROLES,
    IAM_GET_SESSION_CONTEXT,
    IAM_GET_USERS,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    INSTANCE_PROFILE,
    INTERNET_GATEWAY,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    LOG_GROUP,
    NAT_GATEWAY,
    NODE_GROUP,
    PLACEMENT_GROUP,
    ROUTE_TABLE,
    SECURITY_GROUP,
    SECURITY_GROUP_EGRESS_RULE,
    SECURITY_GROUP_INGRESS_RULE,
    SERVICE_QUOTAS_GET_SERVICE_QUOTA,
    SSM_GET_PARAMETER,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)

ACCOUNT_ID = "123456789012"
PARTITION = "aws"

# Physical id prefixes EC2 and friends use, by resource type token.
_ID_PREFIX: dict[str, str] = {
    VPC: "vpc-",
    SUBNET: "subnet-",
    SECURITY_GROUP: "sg-",
    INTERNET_GATEWAY: "igw-",
    NAT_GATEWAY: "nat-",
    EIP: "eipalloc-",
    ROUTE_TABLE: "rtb-",
    LAUNCH_TEMPLATE: "lt-",
    VPC_ENDPOINT: "vpce-",
    FLOW_LOG: "fl-",
    SECURITY_GROUP_INGRESS_RULE: "sgr-",
    SECURITY_GROUP_EGRESS_RULE: "sgr-",
    FSX_LUSTRE: "fs-",
    FSX_DATA_REPOSITORY_ASSOCIATION: "dra-",
    PLACEMENT_GROUP: "pg-",
}


AUTO_NAME_MAX = 64
# The invokes components/account_checks.py makes beside getCallerIdentity (answered by `_account_check`).
_ACCOUNT_CHECKS = frozenset(
    {
        IAM_GET_ROLES,
        IAM_GET_USERS,
        EC2_GET_INSTANCE_TYPE_OFFERINGS,
        SERVICE_QUOTAS_GET_SERVICE_QUOTA,
        EC2_GET_CAPACITY_BLOCK_RESERVATION,
        EC2_GET_INSTANCES,
        EKS_GET_CLUSTER_VERSIONS,
    }
)
QUOTA_NAMES = {
    code: name
    for _, found in QUOTA_CLASSES
    for code, name in ((found.on_demand_code, found.on_demand_name), (found.spot_code, found.spot_name))
}


def _digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def _service(type_token: str) -> str:
    package, module_and_type = type_token.split(":", 1)[0], type_token.split(":")[1]
    return package if package != "aws" else module_and_type.split("/")[0]


@dataclass(frozen=True)
class ExistingSubnetFacts:
    """Where an existing subnet is, as the stack file says (`network.existing_vpc`)."""

    availability_zone: str
    vpc_id: str


def existing_subnet_facts(stack: StackConfig) -> dict[str, ExistingSubnetFacts]:
    """The stack file's existing subnets by id (empty when trainstack creates the VPC)."""
    existing = stack.network.existing_vpc
    if existing is None:
        return {}
    return {sid: ExistingSubnetFacts(az, existing.vpc_id) for az, sid in existing.private_subnet_ids.items()}


def _preview_computed(typ: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Computed fields nested in an input block, unknown in a preview: without them the block comes back as the
    inputs gave it and the field reads as a known null, where `pulumi preview` shows it unknown."""
    if typ == EKS_CLUSTER:
        return {"vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": rpc.UNKNOWN}}
    return {}


class TrainstackMocks(pulumi.runtime.Mocks):
    """Deterministic, realistic answers for every resource and data source the program uses."""

    def __init__(
        self, region: str, preview: bool = False, existing_subnets: Mapping[str, ExistingSubnetFacts] | None = None
    ) -> None:
        self.region = region
        self.preview = preview
        self.existing_subnets = dict(existing_subnets or {})
        """Subnets outside the stack that `ec2.getSubnet` answers for: what the stack file says about them."""

    # ----------------------------------------------------------------------------------------- resources

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = dict(args.inputs)
        if self.preview and args.typ.startswith(("aws:", "aws-native:", "kubernetes:")):
            return None, {**inputs, **_preview_computed(args.typ, inputs)}  # computed outputs stay unknown
        physical_id = _ID_PREFIX.get(args.typ, "") + _digest(args.typ, args.name)
        if args.typ == KMS_KEY:  # KMS key ids are UUIDs
            lengths = zip("abcde", (8, 4, 4, 4, 12), strict=True)
            physical_id = "-".join(_digest(args.name, part, length=n) for part, n in lengths)
        return physical_id, {**inputs, **self._computed(args.typ, args.name, inputs, physical_id)}

    def _computed(self, typ: str, name: str, inputs: dict[str, Any], physical_id: str) -> dict[str, Any]:
        # Pulumi auto-names a resource "<logical name>-<7 random hex>", and pulumi-aws trims the logical part to
        # the type's maximum; 64 (IAM roles, the tightest auto-named type here) keeps every mock name valid.
        auto_name = inputs.get("name") or f"{name[: AUTO_NAME_MAX - 8]}-{_digest(typ, name, length=7)}"
        arn = f"arn:{PARTITION}:{_service(typ)}:{self.region}:{ACCOUNT_ID}:{auto_name}"
        out: dict[str, Any] = {"arn": arn, "name": auto_name, "tagsAll": inputs.get("tags", {})}
        if typ == EKS_CLUSTER:
            out |= self._eks_cluster(name, inputs, auto_name)
        elif typ == IAM_ROLE:
            out["arn"] = f"arn:{PARTITION}:iam::{ACCOUNT_ID}:role/{auto_name}"
            out["uniqueId"] = "AROA" + _digest(name, length=16).upper()
        elif typ == IAM_POLICY:
            out["arn"] = f"arn:{PARTITION}:iam::{ACCOUNT_ID}:policy/{auto_name}"
        elif typ == INSTANCE_PROFILE:
            out["arn"] = f"arn:{PARTITION}:iam::{ACCOUNT_ID}:instance-profile/{auto_name}"
        elif typ == IAM_OIDC_PROVIDER:
            issuer = str(inputs.get("url", "")).removeprefix("https://")
            out["arn"] = f"arn:{PARTITION}:iam::{ACCOUNT_ID}:oidc-provider/{issuer}"
        elif typ == KMS_KEY:
            out |= {"keyId": physical_id, "arn": f"arn:{PARTITION}:kms:{self.region}:{ACCOUNT_ID}:key/{physical_id}"}
        elif typ in (BUCKET, BUCKET_V2):
            out |= self._bucket(typ, name, inputs, auto_name)
        elif typ == FSX_LUSTRE:
            out |= {
                "dnsName": f"{physical_id}.fsx.{self.region}.amazonaws.com",
                "mountName": _digest(name, "mount", length=8),
                "arn": f"arn:{PARTITION}:fsx:{self.region}:{ACCOUNT_ID}:file-system/{physical_id}",
                "networkInterfaceIds": ["eni-" + _digest(name, "eni")],
            }
        elif typ == HYPERPOD_CLUSTER:
            # HyperPod cluster ARNs end in a 12-character lower-case id (SageMaker API reference, ClusterArn).
            out |= {
                "clusterArn": f"arn:{PARTITION}:sagemaker:{self.region}:{ACCOUNT_ID}:cluster/"
                + _digest(name, length=12),
                "clusterStatus": "InService",
                "creationTime": "2026-01-01T00:00:00Z",
            }
        elif typ == LAUNCH_TEMPLATE:
            out |= {"latestVersion": 1, "defaultVersion": 1}
        elif typ == SUBNET:
            out["availabilityZoneId"] = "use1-az" + str(sum(map(ord, str(inputs.get("availabilityZone", "")))) % 6 + 1)
        elif typ == NODE_GROUP:
            out |= _node_group(name, inputs)
        elif typ == PLACEMENT_GROUP:
            out["placementGroupId"] = physical_id
        elif typ == AMP_WORKSPACE:
            # The AMP API's service prefix is `aps`; a workspace ARN ends in workspace/ws-<id> (AMP User Guide).
            out["arn"] = f"arn:{PARTITION}:aps:{self.region}:{ACCOUNT_ID}:workspace/ws-{physical_id}"
        elif typ == LOG_GROUP:
            out["arn"] = f"arn:{PARTITION}:logs:{self.region}:{ACCOUNT_ID}:log-group:{auto_name}"
        elif typ.startswith("kubernetes:") and typ != HELM_RELEASE:
            metadata = dict(inputs.get("metadata") or {})
            metadata.setdefault("name", auto_name)
            out = {"metadata": metadata}
        elif typ == HELM_RELEASE:
            out = {"status": {"status": "deployed", "namespace": inputs.get("namespace", "default")}, "name": auto_name}
        return out

    def _eks_cluster(self, name: str, inputs: dict[str, Any], auto_name: str) -> dict[str, Any]:
        """An EKS cluster's computed outputs: its endpoint, OIDC issuer, cluster security group, service CIDR."""
        issuer = f"https://oidc.eks.{self.region}.amazonaws.com/id/{_digest(name, length=32).upper()}"
        return {
            "endpoint": f"https://{_digest(name, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com",
            "certificateAuthority": {"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQ="},
            "identities": [{"oidcs": [{"issuer": issuer}]}],
            "vpcConfig": {
                **inputs.get("vpcConfig", {}),
                "clusterSecurityGroupId": "sg-" + _digest("cluster-sg", name),
            },
            "arn": f"arn:{PARTITION}:eks:{self.region}:{ACCOUNT_ID}:cluster/{auto_name}",
            "platformVersion": "eks.9",
            "status": "ACTIVE",
            # EKS API KubernetesNetworkConfigRequest.serviceIpv4Cidr: without one, Kubernetes assigns
            # 10.100.0.0/16 or 172.20.0.0/16 (the one that does not overlap the VPC: ours are in 10.0.0.0/8).
            "kubernetesNetworkConfig": {
                "serviceIpv4Cidr": "172.20.0.0/16",
                "ipFamily": "ipv4",
                **inputs.get("kubernetesNetworkConfig", {}),
            },
        }

    def _bucket(self, typ: str, name: str, inputs: dict[str, Any], auto_name: str) -> dict[str, Any]:
        """A bucket's name (given, from its prefix, or auto-named), ARN and domain names."""
        # bucketPrefix: the provider appends a 26-character unique suffix.
        prefix = inputs.get("bucketPrefix")
        bucket = inputs.get("bucket") or (f"{prefix}{_digest(typ, name, length=26)}" if prefix else auto_name)
        return {
            "bucket": bucket,
            "arn": f"arn:{PARTITION}:s3:::{bucket}",
            "bucketDomainName": f"{bucket}.s3.amazonaws.com",
            "bucketRegionalDomainName": f"{bucket}.s3.{self.region}.amazonaws.com",
        }

    # ------------------------------------------------------------------------------------------- calls

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        token, a = args.token, args.args
        if token == GET_CALLER_IDENTITY:
            return {
                "accountId": ACCOUNT_ID,
                "arn": f"arn:{PARTITION}:iam::{ACCOUNT_ID}:user/offline-plan",
                "userId": "AIDAOFFLINEPLAN",
                "id": ACCOUNT_ID,
            }, []
        if token == IAM_GET_SESSION_CONTEXT:
            return session_context(str(a.get("arn", ""))), []
        if token == GET_PARTITION:
            return {"partition": PARTITION, "dnsSuffix": "amazonaws.com", "id": PARTITION}, []
        if token == GET_REGION:
            return {
                "name": self.region,
                "region": self.region,
                "id": self.region,
                "description": self.region,
                "endpoint": f"ec2.{self.region}.amazonaws.com",
            }, []
        if token == GET_AVAILABILITY_ZONES:
            names = [f"{self.region}{letter}" for letter in "abcdef"]
            return {
                "names": names,
                "zoneIds": [f"use1-az{i}" for i in range(1, 7)],
                "id": self.region,
                "groupNames": [self.region] * 6,
                "state": "available",
            }, []
        if token == SSM_GET_PARAMETER:
            name = str(a.get("name", ""))
            return {
                "name": name,
                "value": "ami-" + _digest(name),
                "type": "String",
                "id": name,
                "arn": f"arn:{PARTITION}:ssm:{self.region}::parameter{name}",
                "version": 1,
                "insecureValue": "ami-" + _digest(name),
            }, []
        if token == EC2_GET_PREFIX_LIST:
            # One S3 range of us-east-1 (AWS ip-ranges.json, service S3: 52.216.0.0/15), the range the team-job
            # journey's S3 address comes from; a real deploy reads AWS's whole list.
            name = str(a.get("name", ""))
            return {"name": name, "cidrBlocks": ["52.216.0.0/15"], "id": "pl-" + _digest(name)[:8]}, []
        if token == EC2_GET_SUBNET:
            return self._subnet(str(a.get("id", ""))), []
        if token == EC2_GET_INSTANCE_TYPE:
            return self._instance_type(str(a.get("instanceType", ""))), []
        if token == IAM_GET_POLICY_DOCUMENT:
            return {
                "json": json.dumps(_policy_document(a)),
                "id": _digest(json.dumps(a, sort_keys=True, default=str)),
            }, []
        if token in _ACCOUNT_CHECKS:
            return self._account_check(token, a), []
        if token == EKS_GET_CLUSTER:
            return self._existing_cluster(str(a.get("name", ""))), []
        raise NotImplementedError(
            f"the offline engine has no answer for data source {token}; add one to trainstack/mocks.py"
        )

    def _account_check(self, token: str, a: dict[str, Any]) -> dict[str, Any]:
        """The account-state invokes of components/account_checks.py, shaped as pulumi-aws answers them. The offline
        plan sees no account, so these answers say nothing about one (no roles or users, quotas at 0, a Capacity
        Block that is only its id) and the program judges none of them under the mock engine: the report shows
        those checks as not checked (offline). Facts of the region are answered as for getAvailabilityZones."""
        if token in (IAM_GET_ROLES, IAM_GET_USERS):
            return {"arns": [], "names": [], "id": "aws-global"}
        if token == EC2_GET_INSTANCE_TYPE_OFFERINGS:
            instance_type = next(
                (f["values"][0] for f in a.get("filters") or [] if f.get("name") == "instance-type"), ""
            )
            zones = [f"{self.region}{letter}" for letter in "abcdef"]
            return {
                "id": self.region,
                "locations": zones,
                "locationTypes": ["availability-zone"] * len(zones),
                "instanceTypes": [instance_type] * len(zones),
            }
        if token == SERVICE_QUOTAS_GET_SERVICE_QUOTA:
            code = str(a.get("quotaCode", ""))
            return {
                "id": f"ec2/{code}",
                "quotaCode": code,
                "quotaName": QUOTA_NAMES.get(code, ""),
                "serviceCode": "ec2",
                "serviceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
                "value": 0.0,
                "defaultValue": 0.0,
                "adjustable": True,
                "globalQuota": False,
                "arn": f"arn:{PARTITION}:servicequotas:{self.region}:{ACCOUNT_ID}:ec2/{code}",
                "usageMetrics": [],
            }
        if token == EC2_GET_CAPACITY_BLOCK_RESERVATION:
            rid = str(a.get("id", ""))
            return {
                "id": rid,
                "arn": f"arn:{PARTITION}:ec2:{self.region}:{ACCOUNT_ID}:capacity-reservation/{rid}",
                "reservationType": "capacity-block",
                "instanceCount": 0,
                "availableInstanceCount": 0,
            }
        if token == EC2_GET_INSTANCES:
            return {"id": self.region, "ids": [], "privateIps": [], "publicIps": [], "ipv6Addresses": []}
        versions = [str(v) for v in a.get("clusterVersionsOnlies") or []]  # aws:eks/getClusterVersions
        return {
            "id": self.region,
            "clusterVersions": [{"clusterVersion": v, "clusterType": "eks"} for v in versions],
            "clusterVersionsOnlies": versions,
        }

    def _existing_cluster(self, name: str) -> dict[str, Any]:
        """An existing cluster as DescribeCluster shows it (platform-only mode): in the stack file's VPC, its
        endpoint, CA and cluster security group derived from the name, as for a cluster the program creates."""
        vpc_ids = sorted({facts.vpc_id for facts in self.existing_subnets.values()})
        issuer = f"https://oidc.eks.{self.region}.amazonaws.com/id/{_digest(name, length=32).upper()}"
        return {
            "id": name,
            "name": name,
            "arn": f"arn:{PARTITION}:eks:{self.region}:{ACCOUNT_ID}:cluster/{name}",
            "endpoint": f"https://{_digest(name, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com",
            "certificateAuthorities": [{"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQ="}],
            "identities": [{"oidcs": [{"issuer": issuer}]}],
            "vpcConfig": {
                "clusterSecurityGroupId": "sg-" + _digest("cluster-sg", name),
                "subnetIds": sorted(self.existing_subnets),
                "vpcId": vpc_ids[0] if vpc_ids else "",
                "endpointPrivateAccess": True,
                "endpointPublicAccess": False,
                "publicAccessCidrs": [],
                "securityGroupIds": [],
            },
            "kubernetesNetworkConfigs": [{"serviceIpv4Cidr": "172.20.0.0/16", "ipFamily": "ipv4"}],
            "version": "1.36",
            "platformVersion": "eks.9",
            "status": "ACTIVE",
            "roleArn": f"arn:{PARTITION}:iam::{ACCOUNT_ID}:role/{name}-cluster",
            "tags": {},
            "createdAt": "2026-01-01T00:00:00Z",
            "enabledClusterLogTypes": [],
            "accessConfigs": [{"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}],
        }

    def _subnet(self, subnet_id: str) -> dict[str, Any]:
        """A subnet of an existing VPC as DescribeSubnets would show it: where the stack file puts it, private.
        An id the stack file does not name fails as AWS fails it."""
        facts = self.existing_subnets.get(subnet_id)
        if facts is None:
            raise ValueError(f"InvalidSubnetID.NotFound: The subnet ID '{subnet_id}' does not exist")
        return {
            "id": subnet_id,
            "availabilityZone": facts.availability_zone,
            "vpcId": facts.vpc_id,
            "mapPublicIpOnLaunch": False,
            "arn": f"arn:{PARTITION}:ec2:{self.region}:{ACCOUNT_ID}:subnet/{subnet_id}",
            "ownerId": ACCOUNT_ID,
            "state": "available",
        }

    @staticmethod
    def _instance_type(name: str) -> dict[str, Any]:
        row = CATALOG.get(name)
        if row is None:
            raise ValueError(f"instance type {name} is not in the catalog; valid: {', '.join(sorted(CATALOG))}")
        return {
            "instanceType": name,
            "id": name,
            "defaultVcpus": row.vcpus,
            "memorySize": row.memory_gib * 1024,
            "efaSupported": row.supports_efa,
            "efaMaximumInterfaces": row.max_efa_interfaces,
            "maximumNetworkCards": row.network_cards,
            "networkPerformance": f"{row.network_gbps} Gigabit",
            "gpuses": [
                {
                    "count": row.accelerator_count,
                    "manufacturer": "NVIDIA",
                    "name": row.accelerator_model,
                    "memorySize": row.accelerator_memory_gib * 1024,
                }
            ]
            if row.accelerator.value == "nvidia"
            else [],
            "totalInstanceStorage": row.instance_store_gib,
        }


def _policy_document(args: dict[str, Any]) -> dict[str, Any]:
    """IAM JSON from getPolicyDocument's statements, as the provider renders it."""
    statements: list[dict[str, Any]] = []
    for s in args.get("statements") or []:
        out: dict[str, Any] = {"Effect": s.get("effect", "Allow")}
        if s.get("sid"):
            out["Sid"] = s["sid"]
        for key, field in (
            ("actions", "Action"),
            ("notActions", "NotAction"),
            ("resources", "Resource"),
            ("notResources", "NotResource"),
        ):
            if s.get(key):
                values = list(s[key])
                out[field] = values[0] if len(values) == 1 else values
        for principal in s.get("principals") or []:
            ids = list(principal.get("identifiers", []))
            out.setdefault("Principal", {})[principal["type"]] = ids[0] if len(ids) == 1 else ids
        for condition in s.get("conditions") or []:
            values = list(condition.get("values", []))
            out.setdefault("Condition", {}).setdefault(condition["test"], {})[condition["variable"]] = (
                values[0] if len(values) == 1 else values
            )
        statements.append(out)
    return {"Version": "2012-10-17", "Statement": statements}


def session_context(arn: str) -> dict[str, Any]:
    """What `aws.iam.get_session_context` answers: for an STS assumed-role ARN the role's IAM ARN (without its
    path, which the session ARN does not carry), for any other principal the ARN itself."""
    partition, account, resource = arn.split(":", 5)[1], arn.split(":", 5)[4], arn.split(":", 5)[5]
    if resource.startswith("assumed-role/"):
        role, session = resource.removeprefix("assumed-role/").split("/", 1)
        issuer = f"arn:{partition}:iam::{account}:role/{role}"
        return {"arn": arn, "issuerArn": issuer, "issuerId": "", "issuerName": role, "sessionName": session, "id": arn}
    return {"arn": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": "", "id": arn}


def _node_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A managed node group's status and its Auto Scaling group."""
    # EKS names a managed node group's Auto Scaling group eks-<node group>-<uuid> (DescribeNodegroup
    # resources.autoScalingGroups); components/k8s/cluster_autoscaler.py tags it for scale-from-zero.
    uuid = "-".join(_digest(name, "asg", str(n), length=n) for n in (8, 4, 4, 4, 12))
    asg = f"eks-{inputs.get('nodeGroupName', name)}-{uuid}"
    return {"status": "ACTIVE", "resources": [{"autoscalingGroups": [{"name": asg}]}]}
