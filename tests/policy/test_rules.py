"""Every rule: a compliant case, a non-compliant case and a not-applicable case, all from the real program.

Compliant cases are the committed stacks (or a config variation). Non-compliant cases are a config variation
where the schema lets one through (`helpers.SCENARIOS`), otherwise the recorded program with one resource
edited the way a component regression would (`helpers.mutated`). Not-applicable cases are stacks without the
rule's subject. `test_every_rule_has_all_three_cases` keeps the table complete as rules are added.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from policies.facts_generated import TENANT_LABEL, TENANT_TEAM
from policies.rules import BY_NAME, POLICIES
from policies.rules.base import RESOURCE_TYPES
from policies.rules.k8s import (
    SYSTEM_PRIORITY_CLASSES,
    _holds_system_classes_at_zero,
    _image_parts,
    _selects_teams,
    chart_name,
)
from policies.rules.sagemaker import required_deep_health_checks
from tests.policy.helpers import (
    found,
    matches,
    messages,
    mutated,
    run,
    scenario,
    shipped,
    shipped_review,
    with_resource,
    without,
)
from trainstack.engine import UNKNOWN, Recording
from trainstack.review import load_config

Source = Callable[[], Recording]


@dataclass(frozen=True)
class Case:
    policy: str
    kind: str  # "compliant" | "violated" | "not_applicable"
    source: Source
    environment: str | None = None  # the recording's stack unless given
    level: str | None = None  # the level the violation must be reported at


CASES: list[Case] = []


def ok(policy: str, source: Source, environment: str | None = None) -> None:
    CASES.append(Case(policy, "compliant", source, environment))


def bad(policy: str, source: Source, level: str | None = "mandatory", environment: str | None = None) -> None:
    CASES.append(Case(policy, "violated", source, environment, level))


def na(policy: str, source: Source, environment: str | None = None) -> None:
    CASES.append(Case(policy, "not_applicable", source, environment))


def staging() -> Recording:
    return shipped("staging")


def prod() -> Recording:
    return shipped("prod")


def dev() -> Recording:
    return shipped("dev")


SHIPPED = (prod, staging, dev)  # the sources that are a committed stack's own recording, unedited


def set_path(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit that sets inputs[a][b][0]... = value (creating mappings on the way)."""

    def edit(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = inputs
        for step in parents:
            node = node[int(step)] if step.isdigit() else node.setdefault(step, {})
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def drop(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = inputs
        for step in parents:
            node = node[int(step)] if step.isdigit() else node[step]
        del node[last]

    return edit


def of_type(*types: str) -> Callable[[Any], bool]:
    return lambda r: r.type in types


GPU_LT = "-gpu-p5-lt"
GPU_NG = "-gpu-p5-ng"
CLUSTER = "aws:eks/cluster:Cluster"

# ------------------------------------------------------------------------------------------------ EKS
ok("eks-endpoint-not-public", prod)
ok("eks-endpoint-not-public", staging)  # public, but only to 203.0.113.0/24, which staging allows
bad("eks-endpoint-not-public", lambda: scenario("prod-public-endpoint"))
bad(
    "eks-endpoint-not-public",
    lambda: mutated(staging(), CLUSTER, set_path("vpcConfig.publicAccessCidrs", ["0.0.0.0/0"])),
)
na("eks-endpoint-not-public", lambda: without(prod(), of_type(CLUSTER)))

ok("eks-secrets-kms", prod)
bad("eks-secrets-kms", lambda: mutated(prod(), CLUSTER, drop("encryptionConfig")))
bad("eks-secrets-kms", lambda: mutated(prod(), CLUSTER, set_path("encryptionConfig.resources", [])))
na("eks-secrets-kms", lambda: without(prod(), of_type(CLUSTER)))

ok("eks-control-plane-logs", prod)
bad("eks-control-plane-logs", lambda: scenario("prod-three-log-types"))
na("eks-control-plane-logs", lambda: without(prod(), of_type(CLUSTER)))

ok("eks-access-entries", prod)
bad("eks-access-entries", lambda: scenario("prod-config-map-auth"))
bad(
    "eks-access-entries",
    lambda: mutated(prod(), CLUSTER, set_path("accessConfig.bootstrapClusterCreatorAdminPermissions", True)),
)
na("eks-access-entries", lambda: without(prod(), of_type(CLUSTER)))

ok("eks-version-allowed", prod)
bad("eks-version-allowed", lambda: scenario("prod-extended-support"))
bad("eks-version-allowed", lambda: mutated(prod(), CLUSTER, set_path("version", "1.31")))
na("eks-version-allowed", lambda: without(prod(), of_type(CLUSTER)))

ok("eks-workload-identity", staging)
bad(
    "eks-workload-identity",
    lambda: without(
        staging(),
        lambda r: (
            r.type == "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
            or r.inputs.get("addonName") == "eks-pod-identity-agent"
        ),
    ),
)
na("eks-workload-identity", lambda: without(staging(), of_type(CLUSTER)))

# ---------------------------------------------------------------------------------------------- nodes
ok("lt-imdsv2", staging)
bad("lt-imdsv2", lambda: mutated(staging(), GPU_LT, set_path("metadataOptions.httpTokens", "optional")))
bad("lt-imdsv2", lambda: mutated(staging(), GPU_LT, drop("metadataOptions")))
na("lt-imdsv2", lambda: without(staging(), of_type("aws:ec2/launchTemplate:LaunchTemplate")))
ok("lt-ami-approved", staging)  # EKS picks the AMI: no imageId of its own
_CUSTOM_AMI = set_path("imageId", "ami-0123456789abcdef0")
bad("lt-ami-approved", lambda: mutated(staging(), GPU_LT, _CUSTOM_AMI))
bad("lt-ami-approved", lambda: mutated(staging(), GPU_LT, _CUSTOM_AMI), environment="prod")
na("lt-ami-approved", lambda: without(staging(), of_type("aws:ec2/launchTemplate:LaunchTemplate")))
ok("fsx-in-stack", staging)
bad("fsx-in-stack", lambda: without(staging(), of_type("aws:fsx/lustreFileSystem:LustreFileSystem")), level="advisory")
bad("fsx-in-stack", lambda: without(prod(), of_type("aws:fsx/lustreFileSystem:LustreFileSystem")), environment="prod")
na("fsx-in-stack", lambda: without(staging(), of_type("kubernetes:core/v1:PersistentVolume")))
ok("cluster-in-stack", staging)
bad("cluster-in-stack", lambda: without(staging(), of_type("aws:eks/cluster:Cluster")), level="advisory")
bad("cluster-in-stack", lambda: without(prod(), of_type("aws:eks/cluster:Cluster")), environment="prod")
na("cluster-in-stack", lambda: without(staging(), of_type("pulumi:providers:kubernetes")))

ok("lt-imds-hop-limit", prod)
bad("lt-imds-hop-limit", lambda: scenario("prod-hop-limit-2"))
na("lt-imds-hop-limit", lambda: without(prod(), of_type("aws:ec2/launchTemplate:LaunchTemplate")))

ok("lt-ebs-encrypted", prod)
bad(
    "lt-ebs-encrypted",
    lambda: mutated(prod(), GPU_LT.replace("p5", "p5-train"), set_path("blockDeviceMappings.0.ebs.encrypted", "false")),
)
na(
    "lt-ebs-encrypted",
    lambda: mutated(prod(), "aws:ec2/launchTemplate:LaunchTemplate", drop("blockDeviceMappings"), only_first=False),
)

ok("lt-ebs-cmk", prod)  # the system and GPU launch templates name the cluster's node-volume key
ok("lt-ebs-cmk", staging)
ok("lt-ebs-cmk", dev)
bad("lt-ebs-cmk", lambda: mutated(prod(), GPU_LT.replace("p5", "p5-train"), drop("blockDeviceMappings.0.ebs.kmsKeyId")))
bad("lt-ebs-cmk", lambda: mutated(staging(), "-eks-system-lt", drop("blockDeviceMappings.0.ebs.kmsKeyId")))
bad(
    "lt-ebs-cmk",
    lambda: mutated(dev(), "-eks-system-lt", drop("blockDeviceMappings.0.ebs.kmsKeyId")),
    level="advisory",
)
na(
    "lt-ebs-cmk",
    lambda: mutated(staging(), "aws:ec2/launchTemplate:LaunchTemplate", drop("blockDeviceMappings"), only_first=False),
)

ok("lt-no-public-ip", staging)
bad(
    "lt-no-public-ip",
    lambda: mutated(staging(), GPU_LT, set_path("networkInterfaces.0.associatePublicIpAddress", "true")),
)
na("lt-no-public-ip", lambda: without(staging(), of_type("aws:ec2/launchTemplate:LaunchTemplate")))

_LEAK = base64.b64encode(b"#!/bin/bash\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n").decode()
ok("lt-userdata-no-secrets", staging)  # the GPU launch template's nodeadm user data is clean
bad("lt-userdata-no-secrets", lambda: mutated(staging(), GPU_LT, set_path("userData", _LEAK)))
na("lt-userdata-no-secrets", lambda: mutated(staging(), GPU_LT, drop("userData")))

ok("ng-no-ssh", staging)
bad("ng-no-ssh", lambda: mutated(staging(), GPU_NG, set_path("remoteAccess", {"ec2SshKey": "ops"})))
na("ng-no-ssh", lambda: without(staging(), of_type("aws:eks/nodeGroup:NodeGroup")))

ok("ng-private-subnets", staging)
bad(
    "ng-private-subnets",
    lambda: mutated(staging(), "-network-private-us-east-1a", set_path("mapPublicIpOnLaunch", True)),
)
na("ng-private-subnets", lambda: without(staging(), of_type("aws:eks/nodeGroup:NodeGroup")))

ok("node-role-least-priv", prod)
bad(
    "node-role-least-priv",
    lambda: mutated(
        prod(),
        "-eks-node-amazonssmmanagedinstancecore",
        set_path("policyArn", "arn:aws:iam::aws:policy/AdministratorAccess"),
    ),
)
na("node-role-least-priv", lambda: without(prod(), of_type("aws:eks/nodeGroup:NodeGroup")))

# ------------------------------------------------------------------------------------------------ IAM
_ADMIN = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
ok("iam-no-star-star", staging)
bad("iam-no-star-star", lambda: mutated(staging(), "-hyperpod-execution-inline", set_path("policy", _ADMIN)))
na(
    "iam-no-star-star",
    lambda: without(staging(), of_type("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy", "aws:iam/role:Role")),
)

_WEB_IDENTITY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/X"},
        }
    ],
}
_SCOPED = json.loads(json.dumps(_WEB_IDENTITY))
_SCOPED["Statement"][0]["Condition"] = {
    "StringEquals": {
        "oidc.eks.us-east-1.amazonaws.com/id/X:sub": "system:serviceaccount:kube-system:ebs-csi-controller-sa",
        "oidc.eks.us-east-1.amazonaws.com/id/X:aud": "sts.amazonaws.com",
    }
}
ok(
    "irsa-trust-scoped",
    lambda: mutated(staging(), "-eks-ebs-csi-pod-identity-role", set_path("assumeRolePolicy", json.dumps(_SCOPED))),
)
bad(
    "irsa-trust-scoped",
    lambda: mutated(
        staging(), "-eks-ebs-csi-pod-identity-role", set_path("assumeRolePolicy", json.dumps(_WEB_IDENTITY))
    ),
)
na("irsa-trust-scoped", staging)  # trainstack uses EKS Pod Identity: no role trusts an OIDC provider

ok("kms-rotation", prod)
bad("kms-rotation", lambda: mutated(prod(), "-data-key", set_path("enableKeyRotation", False)))
bad("kms-rotation", lambda: mutated(prod(), "-data-key", set_path("rotationPeriodInDays", 366)))  # 90 to 2560 valid
ok("kms-rotation", lambda: mutated(prod(), "-data-key", set_path("rotationPeriodInDays", 365)))  # yearly: AWS's default
na("kms-rotation", lambda: without(prod(), of_type("aws:kms/key:Key")))

# -------------------------------------------------------------------------------------------- network
ok("sg-no-world-ingress", staging)
bad("sg-no-world-ingress", lambda: mutated(staging(), "-lustre-sg-in-client0-988", set_path("cidrIpv4", "0.0.0.0/0")))
na(
    "sg-no-world-ingress",
    lambda: without(
        staging(),
        of_type(
            "aws:ec2/securityGroup:SecurityGroup",
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "aws:ec2/securityGroupRule:SecurityGroupRule",
        ),
    ),
)

ok("vpc-flow-logs", staging)
bad("vpc-flow-logs", lambda: scenario("staging-reject-flow-logs"))
bad("vpc-flow-logs", lambda: without(staging(), of_type("aws:ec2/flowLog:FlowLog")))
na("vpc-flow-logs", lambda: without(staging(), of_type("aws:ec2/vpc:Vpc")))

DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
ok("vpc-default-sg-closed", prod)
ok("vpc-default-sg-closed", dev)
bad("vpc-default-sg-closed", lambda: without(prod(), of_type(DEFAULT_SG)))
bad(
    "vpc-default-sg-closed",
    lambda: mutated(
        prod(),
        DEFAULT_SG,
        set_path("ingress", [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]),
    ),
)
bad(
    "vpc-default-sg-closed",
    lambda: mutated(prod(), DEFAULT_SG, set_path("egress", [{"protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}])),
)
na("vpc-default-sg-closed", lambda: without(prod(), of_type("aws:ec2/vpc:Vpc")))

ok("sg-rule-style-consistent", staging)
bad(
    "sg-rule-style-consistent",
    lambda: mutated(
        staging(),
        "-network-efa-sg",
        set_path("ingress", [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]),
    ),
)
na("sg-rule-style-consistent", lambda: without(staging(), of_type("aws:ec2/securityGroup:SecurityGroup")))

# -------------------------------------------------------------------------------------------- storage
S3 = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
ok("s3-public-access-block", prod)
bad(
    "s3-public-access-block",
    lambda: mutated(prod(), "-data-checkpoints-public-access-block", set_path("blockPublicPolicy", False)),
)
na("s3-public-access-block", lambda: without(prod(), of_type(*S3)))

ok("s3-sse-kms", prod)
bad(
    "s3-sse-kms",
    lambda: mutated(
        prod(),
        "-data-datasets-encryption",
        set_path("rules", [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}]),
    ),
)
na("s3-sse-kms", lambda: without(prod(), of_type(*S3)))

ok("s3-versioning", prod)
bad(
    "s3-versioning",
    lambda: mutated(prod(), "-data-checkpoints-versioning", set_path("versioningConfiguration.status", "Suspended")),
)
na("s3-versioning", lambda: without(prod(), of_type(*S3)))

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
ok("fsx-persistent2-kms", prod)
bad("fsx-persistent2-kms", lambda: mutated(prod(), FSX, set_path("deploymentType", "SCRATCH_2")))
bad("fsx-persistent2-kms", lambda: mutated(prod(), FSX, drop("kmsKeyId")))
na("fsx-persistent2-kms", lambda: without(prod(), of_type(FSX)))

ok("fsx-efa-prereqs", lambda: scenario("staging-fsx-efa"))  # the component adds the EFA security group
bad("fsx-efa-prereqs", lambda: mutated(scenario("staging-fsx-efa"), FSX, drop("metadataConfiguration")))
bad("fsx-efa-prereqs", lambda: mutated(staging(), FSX, set_path("efaEnabled", True)))  # Lustre SG has no self-all
na("fsx-efa-prereqs", staging)

ok("fsx-lustre-ports", staging)
bad(
    "fsx-lustre-ports", lambda: without(staging(), lambda r: "lustre-sg-in-" in r.name and r.name.endswith("1018-1023"))
)
na("fsx-lustre-ports", lambda: without(staging(), of_type(FSX)))

ok("fsx-same-az-as-gpu", staging)
bad("fsx-same-az-as-gpu", lambda: scenario("dev-second-az"), level="advisory")
na("fsx-same-az-as-gpu", lambda: without(staging(), of_type(FSX)))

ok("storage-throughput-feeds-gpus", prod)
bad("storage-throughput-feeds-gpus", lambda: scenario("prod-slow-lustre"), level="advisory")  # an estimate
ok("storage-throughput-feeds-gpus", dev)  # SCRATCH_2 1.2 TiB: 234 MB/s for 2 GPUs at 100 MB/s each
na("storage-throughput-feeds-gpus", lambda: without(prod(), of_type(FSX)))

# ------------------------------------------------------------------------------------------------ GPU
ok("efa-cluster-placement", staging)
ok("efa-cluster-placement", prod)  # on an ODCR made without a placement group: none is forced on it
bad("efa-cluster-placement", lambda: scenario("staging-no-placement"))
bad(
    "efa-cluster-placement",
    lambda: mutated(staging(), "aws:ec2/placementGroup:PlacementGroup", set_path("strategy", "spread")),
)
# A group made outside the stack: the template names it, but its strategy cannot be checked.
bad("efa-cluster-placement", lambda: without(staging(), of_type("aws:ec2/placementGroup:PlacementGroup")))
na("efa-cluster-placement", dev)


def _no_placement(inputs: dict[str, Any]) -> None:
    del inputs["placement"]


def _no_placement_dependency(deps: dict[str, tuple[str, ...]]) -> None:
    del deps["placement"]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        pytest.param(
            lambda: without(staging(), of_type("aws:ec2/placementGroup:PlacementGroup")),
            "gpu-p5-lt names a placement group that is not managed in this stack; its strategy cannot be checked.",
            id="group-made-outside-the-stack",
        ),
        pytest.param(
            lambda: mutated(staging(), GPU_LT, _no_placement, dependencies=_no_placement_dependency),
            "node group gpu-p5-ng: launch template gpu-p5-lt has EFA interfaces but no placement group.",
            id="no-group-named",
        ),
    ],
)
def test_efa_placement_tells_an_unchecked_group_from_a_missing_one(source: Source, says: str) -> None:
    assert messages("efa-cluster-placement", source()) == [says]


ok("efa-single-subnet", staging)
bad("efa-single-subnet", lambda: _two_subnets(staging()))
na("efa-single-subnet", dev)


def _two_subnets(source: Recording) -> Recording:
    other = next(r.urn for r in source.resources if r.name.endswith("network-private-us-east-1b"))

    def deps(d: dict[str, tuple[str, ...]]) -> None:
        d["subnetIds"] = (*d["subnetIds"], other)

    return mutated(source, GPU_NG, lambda i: i["subnetIds"].append("subnet-other"), dependencies=deps)


ok("efa-sg-self-all", staging)
bad("efa-sg-self-all", lambda: without(staging(), lambda r: r.name.endswith("network-efa-self-egress")))
bad("efa-sg-self-all", lambda: mutated(staging(), "-network-efa-self-ingress", set_path("ipProtocol", "tcp")))
na("efa-sg-self-all", dev)

ok("efa-interface-count", staging)
bad("efa-interface-count", lambda: mutated(staging(), GPU_LT, lambda i: i["networkInterfaces"].pop()))
bad(
    "efa-interface-count", lambda: mutated(staging(), GPU_LT, set_path("networkInterfaces.0.interfaceType", "efa-only"))
)
na("efa-interface-count", dev)

ok("efa-instance-supported", staging)
bad(
    "efa-instance-supported",
    lambda: mutated(staging(), GPU_NG, set_path("instanceTypes", ["p5.48xlarge", "p5en.48xlarge"])),
)
bad("efa-instance-supported", lambda: mutated(staging(), GPU_NG, set_path("instanceTypes", ["g5.2xlarge"])))
na("efa-instance-supported", dev)

ok("efa-no-spot", staging)
bad("efa-no-spot", lambda: mutated(staging(), GPU_NG, set_path("capacityType", "SPOT")))
na("efa-no-spot", dev)

ok("gpu-taint", staging)
bad("gpu-taint", lambda: mutated(staging(), GPU_NG, drop("taints")))
na("gpu-taint", lambda: without(staging(), lambda r: matches(r, GPU_NG)))

ok("gpu-ami-type", lambda: scenario("staging-bottlerocket"))
bad("gpu-ami-type", lambda: mutated(staging(), GPU_NG, set_path("amiType", "AL2023_x86_64_STANDARD")), level="advisory")
bad("gpu-ami-type", lambda: mutated(prod(), "-gpu-p5-train-ng", set_path("amiType", "AL2023_x86_64_STANDARD")))
na("gpu-ami-type", lambda: without(staging(), lambda r: matches(r, GPU_NG)))

# ----------------------------------------------------------------------------------------- Kubernetes
HELM = "kubernetes:helm.sh/v3:Release"
ok("helm-chart-pinned", staging)
bad("helm-chart-pinned", lambda: mutated(staging(), "-gpu-operator-release", drop("version")))
bad("helm-chart-pinned", lambda: mutated(staging(), "-efa-plugin-release", set_path("version", ">=0.5")))
na("helm-chart-pinned", lambda: without(staging(), of_type(HELM, "kubernetes:helm.sh/v4:Chart")))

ok("gpu-operator-values", staging)
ok("gpu-operator-values", lambda: scenario("staging-bottlerocket"))  # device plugin off on Bottlerocket too
ok(  # the operator's device plugin off (another one serves the GPUs): how it would pass them is not judged
    "gpu-operator-values",
    lambda: mutated(staging(), "-gpu-operator-release", set_path("values.devicePlugin", {"enabled": False})),
)
bad("gpu-operator-values", lambda: mutated(staging(), "-gpu-operator-release", set_path("values.driver.enabled", True)))
bad(  # back to the environment variable the nodes' runtime ignores
    "gpu-operator-values",
    lambda: mutated(
        staging(),
        "-gpu-operator-release",
        set_path("values.devicePlugin.env", [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}]),
    ),
)
bad("gpu-operator-values", lambda: mutated(staging(), "-gpu-operator-release", set_path("values.devicePlugin.env", [])))
# Bottlerocket groups also opt out by label, so the operator's device plugin only clashes when both are gone.
ok(
    "gpu-operator-values",
    lambda: mutated(
        scenario("staging-bottlerocket"), "-gpu-operator-release", set_path("values.devicePlugin.enabled", True)
    ),
)
bad(
    "gpu-operator-values",
    lambda: mutated(
        mutated(
            scenario("staging-bottlerocket"), GPU_NG, lambda i: i["labels"].pop("nvidia.com/gpu.deploy.device-plugin")
        ),
        "-gpu-operator-release",
        set_path("values.devicePlugin.enabled", True),
    ),
)
ok("gpu-operator-values", lambda: scenario("prod-mixed-bottlerocket"))  # the Bottlerocket group opts out by label
bad(
    "gpu-operator-values",
    lambda: mutated(
        scenario("prod-mixed-bottlerocket"),
        "-gpu-g6e-br-ng",
        lambda i: i["labels"].pop("nvidia.com/gpu.deploy.device-plugin"),
    ),
)
na("gpu-operator-values", lambda: without(staging(), lambda r: r.name.endswith("gpu-operator-release")))

ok("efa-plugin-tolerates-gpu-taint", staging)
bad("efa-plugin-tolerates-gpu-taint", lambda: mutated(staging(), "-efa-plugin-release", drop("values.tolerations")))
# The node groups taint nvidia.com/gpu=true:NO_SCHEDULE: a toleration for another value, or for NoExecute
# only, leaves the plugin off every GPU node.
_GPU_TOLERATION = "values.tolerations.0"
bad(
    "efa-plugin-tolerates-gpu-taint",
    lambda: mutated(
        staging(),
        "-efa-plugin-release",
        set_path(
            _GPU_TOLERATION, {"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}
        ),
    ),
)
bad(
    "efa-plugin-tolerates-gpu-taint",
    lambda: mutated(
        staging(),
        "-efa-plugin-release",
        set_path(_GPU_TOLERATION, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}),
    ),
)
ok(
    "efa-plugin-tolerates-gpu-taint",
    lambda: mutated(
        staging(),
        "-efa-plugin-release",
        set_path(_GPU_TOLERATION, {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}),
    ),
)
na("efa-plugin-tolerates-gpu-taint", dev)  # no EFA group, so no EFA device plugin

NCCL = "-validation-nccl-runtime"
_WORKER = "spec.template.spec.replicatedJobs.0.template.spec.template.spec.containers.0"  # workers start first
MPI_RUNTIME = "-training-runtimes-p5-train-mpi"


def _worker_context(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(inputs: dict[str, Any]) -> None:
        jobs = inputs["spec"]["template"]["spec"]["replicatedJobs"]
        pod = next(j for j in jobs if j["name"] == "node")["template"]["spec"]["template"]["spec"]
        edit(pod)

    return apply


ok("k8s-runtime-least-privilege", prod)  # the torch runtime restricted, MPI and the NCCL check root with few caps
ok("k8s-runtime-least-privilege", dev)
bad(
    "k8s-runtime-least-privilege",
    lambda: mutated(prod(), MPI_RUNTIME, _worker_context(lambda pod: pod.pop("securityContext"))),  # no seccomp
)
bad(
    "k8s-runtime-least-privilege",
    lambda: mutated(
        prod(),
        MPI_RUNTIME,
        _worker_context(lambda pod: pod["containers"][0]["securityContext"]["capabilities"]["add"].append("NET_RAW")),
    ),
)
bad(
    "k8s-runtime-least-privilege",
    lambda: mutated(
        prod(),
        MPI_RUNTIME,
        _worker_context(lambda pod: pod["containers"][0]["securityContext"]["capabilities"].pop("drop")),
    ),
)
bad(
    "k8s-runtime-least-privilege",
    lambda: mutated(
        prod(),
        MPI_RUNTIME,
        _worker_context(lambda pod: pod["initContainers"][-1].pop("securityContext")),  # the ssh key copy
    ),
)
bad(
    "k8s-runtime-least-privilege",
    lambda: mutated(
        prod(),
        MPI_RUNTIME,
        _worker_context(lambda pod: pod["containers"][0]["securityContext"].pop("allowPrivilegeEscalation")),
    ),
)
na("k8s-runtime-least-privilege", lambda: without(prod(), lambda r: r.type.endswith("TrainingRuntime")))

ok("k8s-pod-security", staging)
bad("k8s-pod-security", lambda: mutated(staging(), NCCL, set_path(f"{_WORKER}.securityContext", {"privileged": True})))
bad(
    "k8s-pod-security", lambda: mutated(staging(), "-validation-dcgm", set_path("spec.template.spec.hostNetwork", True))
)
bad(
    "k8s-pod-security",
    lambda: mutated(staging(), NCCL, set_path(f"{_WORKER}.securityContext", {"allowPrivilegeEscalation": True})),
)
# the same privileged container in a namespace allowed privileged workloads (the device plugins') is skipped
na(
    "k8s-pod-security",
    lambda: mutated(
        mutated(staging(), NCCL, set_path(f"{_WORKER}.securityContext", {"privileged": True})),
        NCCL,
        set_path("metadata.namespace", "gpu-operator"),
    ),
)
ok("k8s-pod-security", dev)  # dev: no validation jobs, but the training runtimes
na("k8s-pod-security", lambda: _no_workloads(dev()))

ok("k8s-image-tag-pinned", staging)
bad(
    "k8s-image-tag-pinned",
    lambda: mutated(staging(), NCCL, set_path(f"{_WORKER}.image", "public.ecr.aws/hpc-cloud/nccl-tests")),
)
for _floating in ("latest", "latest-cuda12"):  # `latest` and a `latest-*` flavour both float
    bad(
        "k8s-image-tag-pinned",
        lambda tag=_floating: mutated(
            staging(), NCCL, set_path(f"{_WORKER}.image", f"public.ecr.aws/hpc-cloud/nccl-tests:{tag}")
        ),
    )
ok("k8s-image-tag-pinned", dev)
na("k8s-image-tag-pinned", lambda: _no_workloads(dev()))

_DIGEST = "public.ecr.aws/hpc-cloud/nccl-tests@sha256:" + "0" * 64
ok("k8s-image-digest", lambda: _all_images(staging(), _DIGEST))
bad("k8s-image-digest", staging, level="advisory")
bad("k8s-image-digest", dev, level="advisory", environment="staging")  # the runtimes' default images
na("k8s-image-digest", lambda: _no_workloads(dev()), environment="staging")


def _no_workloads(source: Recording) -> Recording:
    """The recording without any pod-carrying Kubernetes object (only Helm releases and queues left)."""
    return without(source, lambda r: r.type.startswith("kubernetes:") and ("Job" in r.type or "Runtime" in r.type))


def _all_images(source: Recording, image: str) -> Recording:
    def edit(inputs: dict[str, Any]) -> None:
        stack: list[Any] = [inputs]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if "image" in node and "name" in node:
                    node["image"] = image
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)

    return _edit_all_k8s(source, edit)


def _edit_all_k8s(source: Recording, edit: Callable[[dict[str, Any]], None]) -> Recording:
    result = source
    for resource in source.resources:
        if resource.type.startswith("kubernetes:") and ("Job" in resource.type or "Runtime" in resource.type):
            result = mutated(result, resource.name, edit)
    return result


ok("k8s-efa-pod-resources", staging)
bad("k8s-efa-pod-resources", lambda: mutated(staging(), NCCL, drop(f"{_WORKER}.resources.limits.hugepages-2Mi")))
bad("k8s-efa-pod-resources", lambda: mutated(staging(), NCCL, _drop_efa_limit))


def _drop_efa_limit(inputs: dict[str, Any]) -> None:
    worker = inputs["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del worker["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"]


def _efa_by_environment_only(inputs: dict[str, Any]) -> None:
    """The worker keeps FI_PROVIDER=efa and its GPUs but asks for no EFA device: NCCL would fall back to TCP."""
    resources = inputs["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]["resources"]
    del resources["limits"]["vpc.amazonaws.com/efa"], resources["requests"]["vpc.amazonaws.com/efa"]


def _efa_by_request_only(inputs: dict[str, Any]) -> None:
    """The worker requests EFA devices (no FI_PROVIDER set, no limit): the request alone makes it an EFA worker."""
    _drop_efa_limit(inputs)
    worker = inputs["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    worker["containers"][0]["env"] = [e for e in worker["containers"][0]["env"] if e["name"] != "FI_PROVIDER"]


bad("k8s-efa-pod-resources", lambda: mutated(staging(), NCCL, _efa_by_environment_only))
bad("k8s-efa-pod-resources", lambda: mutated(staging(), NCCL, _efa_by_request_only))


def _gpus_by_limit_only(inputs: dict[str, Any]) -> None:
    """GPUs named in limits alone, as the API allows (an extended resource's request defaults to its limit)."""
    _efa_by_environment_only(inputs)
    worker = inputs["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del worker["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]


bad("k8s-efa-pod-resources", lambda: mutated(staging(), NCCL, _gpus_by_limit_only))
na("k8s-efa-pod-resources", dev)


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("nccl-tests:v2.16", ("v2.16", None)),
        ("registry.example.com:5000/team/nccl-tests", (None, None)),  # the port is not a tag
        ("registry.example.com:5000/team/nccl-tests:v2", ("v2", None)),
        ("nccl-tests@sha256:" + "0" * 64, (None, "sha256:" + "0" * 64)),
    ],
)
def test_an_image_reference_splits_into_its_tag_and_digest(image: str, parts: tuple[str | None, str | None]) -> None:
    assert _image_parts(image) == parts


@pytest.mark.parametrize(
    "chart", ["gpu-operator", "nvidia/gpu-operator", "oci://ghcr.io/nvidia/charts/gpu-operator", "nvidia/gpu-operator/"]
)
def test_a_chart_is_known_by_its_own_name_however_it_is_referenced(chart: str) -> None:
    assert chart_name({"chart": chart}) == "gpu-operator"


# ------------------------------------------------------------------------------------------ SageMaker
HYPERPOD = "aws-native:sagemaker:Cluster"
ok("hyperpod-deep-health-checks", staging)
bad(
    "hyperpod-deep-health-checks",
    lambda: mutated(staging(), HYPERPOD, set_path("instanceGroups.0.onStartDeepHealthChecks", ["InstanceStress"])),
)
na("hyperpod-deep-health-checks", prod)
# a CPU-only group has no GPU to stress: a cluster of such groups is skipped, not passed in silence
na(
    "hyperpod-deep-health-checks",
    lambda: mutated(staging(), HYPERPOD, set_path("instanceGroups.0.instanceType", "ml.m5.2xlarge")),
)


@pytest.mark.parametrize(
    ("instance_type", "checks"),
    [
        ("ml.p5.48xlarge", ["InstanceStress", "InstanceConnectivity"]),  # EFA: a fabric to test
        ("ml.g5.2xlarge", ["InstanceStress"]),  # a GPU, no EFA
        ("ml.m5.2xlarge", []),  # not accelerated: nothing is required
    ],
)
def test_the_deep_health_checks_required_follow_the_type(instance_type: str, checks: list[str]) -> None:
    assert required_deep_health_checks(instance_type) == checks


ok("hyperpod-node-recovery", staging)
bad("hyperpod-node-recovery", lambda: mutated(staging(), HYPERPOD, set_path("nodeRecovery", "None")))
na("hyperpod-node-recovery", prod)

ok("hyperpod-vpc-efa-sg", staging)
bad("hyperpod-vpc-efa-sg", lambda: mutated(staging(), HYPERPOD, drop("vpcConfig")))
bad("hyperpod-vpc-efa-sg", lambda: without(staging(), lambda r: r.name.endswith("network-efa-self-egress")))
na("hyperpod-vpc-efa-sg", prod)


def _no_vpc_config_dependency(deps: dict[str, tuple[str, ...]]) -> None:
    del deps["vpcConfig"]


def test_a_hyperpod_cluster_without_vpc_config_is_one_finding() -> None:
    """Out of the stack's VPC there are no security groups to judge: the missing vpcConfig is the one finding."""
    source = mutated(staging(), HYPERPOD, drop("vpcConfig"), dependencies=_no_vpc_config_dependency)
    assert [m.split(" has ")[-1] for m in messages("hyperpod-vpc-efa-sg", source)] == ["no vpcConfig."]


# ------------------------------------------------------------------------------------------- security
NAMESPACE = "kubernetes:core/v1:Namespace"
TEAM_NS = "-scheduling-team-research"
PSA = "pod-security.kubernetes.io/enforce"


def set_label(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    """Set (or, with None, remove) one metadata label; label keys contain dots, so set_path cannot."""

    def edit(inputs: dict[str, Any]) -> None:
        labels = inputs["metadata"].setdefault("labels", {})
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value

    return edit


def edit_policy(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[dict[str, Any]], None]:
    """Edit the statements of a JSON policy document input."""

    def apply(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        edit(document["Statement"])
        inputs["policy"] = json.dumps(document)

    return apply


def _allow_everything(statements: list[dict[str, Any]]) -> None:
    statements[0]["Action"] = "kms:*"


ok("k8s-namespace-pod-security", prod)
ok("k8s-namespace-pod-security", staging)
bad("k8s-namespace-pod-security", lambda: mutated(prod(), TEAM_NS, set_label(PSA, None)))  # warn only, as before
bad("k8s-namespace-pod-security", lambda: mutated(prod(), TEAM_NS, set_label(PSA, "privileged")))
bad(
    "k8s-namespace-pod-security",
    lambda: mutated(prod(), "-scheduling-kueue-ns", set_label(PSA, "privileged")),  # not a documented one
)
na("k8s-namespace-pod-security", lambda: without(prod(), of_type(NAMESPACE)))


def test_a_privileged_team_namespace_is_also_below_the_team_floor() -> None:
    """A team namespace at privileged breaks two rules: privileged is kept for the system namespaces, and a team's
    namespace enforces at least baseline."""
    assert messages("k8s-namespace-pod-security", mutated(prod(), TEAM_NS, set_label(PSA, "privileged"))) == [
        "namespace research enforces privileged but is not a documented privileged system namespace.",
        "team namespace research enforces privileged, below baseline.",
    ]


ok("k8s-team-network-isolation", prod)
bad("k8s-team-network-isolation", lambda: without(prod(), lambda r: r.name.endswith("research-np-default-deny")))
bad(
    "k8s-team-network-isolation",
    lambda: mutated(
        prod(), "-research-np-default-deny", set_path("spec.egress", [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}])
    ),
)
for _narrowed in (  # each one way the default deny stops being one: some pods only, one direction only, an allow
    set_path("spec.podSelector", {"matchLabels": {"app": "trainer"}}),
    set_path("spec.policyTypes", ["Ingress"]),
    set_path("spec.ingress", [{"from": [{"podSelector": {}}]}]),
):
    bad("k8s-team-network-isolation", lambda edit=_narrowed: mutated(prod(), "-research-np-default-deny", edit))
na("k8s-team-network-isolation", lambda: without(prod(), of_type(NAMESPACE)))
ALLOW_HTTPS = "-research-np-allow-https"
bad(  # HTTPS widened to every port: pods reach Lustre's servers
    "k8s-team-network-isolation", lambda: mutated(prod(), ALLOW_HTTPS, lambda i: i["spec"]["egress"][0].pop("ports"))
)
bad(  # a range that covers 1018-1023
    "k8s-team-network-isolation",
    lambda: mutated(
        prod(), ALLOW_HTTPS, set_path("spec.egress.0.ports", [{"protocol": "TCP", "port": 1000, "endPort": 1020}])
    ),
)
ok(  # UDP on those numbers is not Lustre
    "k8s-team-network-isolation",
    lambda: mutated(prod(), ALLOW_HTTPS, set_path("spec.egress.0.ports", [{"protocol": "UDP", "port": 988}])),
)

ok("k8s-team-egress-no-internet", prod)
bad(  # prod's team HTTPS back to anywhere (the setting before issue 33)
    "k8s-team-egress-no-internet",
    lambda: mutated(prod(), ALLOW_HTTPS, set_path("spec.egress.0.to", [{"ipBlock": {"cidr": "0.0.0.0/0"}}])),
)
bad(  # half the internet
    "k8s-team-egress-no-internet",
    lambda: mutated(prod(), ALLOW_HTTPS, set_path("spec.egress.0.to", [{"ipBlock": {"cidr": "0.0.0.0/1"}}])),
)
bad("k8s-team-egress-no-internet", lambda: mutated(prod(), ALLOW_HTTPS, lambda i: i["spec"]["egress"][0].pop("to")))
na("k8s-team-egress-no-internet", lambda: without(prod(), of_type(NAMESPACE)))


def _drop_hard(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: inputs["spec"]["hard"].pop(key)  # a key with dots: not a set_path/drop path


ok("k8s-team-quotas", prod)
bad("k8s-team-quotas", lambda: without(prod(), of_type("kubernetes:core/v1:LimitRange")))
bad("k8s-team-quotas", lambda: mutated(prod(), "-tenancy-research-quota", drop("spec.hard.pods")))
bad(
    "k8s-team-quotas",
    lambda: mutated(prod(), "-tenancy-research-quota", _drop_hard("requests.vpc.amazonaws.com/efa")),
)
bad("k8s-team-quotas", lambda: mutated(prod(), "-tenancy-research-quota", _drop_hard("requests.hugepages-2Mi")))
bad("k8s-team-quotas", lambda: without(prod(), lambda r: r.name.endswith("-research-priority")))
bad(  # the system quota turned into one that only counts pods of other classes
    "k8s-team-quotas",
    lambda: mutated(
        prod(), "-tenancy-research-priority", set_path("spec.scopeSelector.matchExpressions.0.operator", "NotIn")
    ),
)
bad(  # a scoped quota's keys bound only the pods it counts: EFA held there bounds no team job
    "k8s-team-quotas",
    lambda: mutated(
        mutated(prod(), "-tenancy-research-quota", _drop_hard("requests.vpc.amazonaws.com/efa")),
        "-tenancy-research-priority",
        lambda inputs: inputs["spec"]["hard"].update({"requests.vpc.amazonaws.com/efa": "0"}),
    ),
)
bad(  # the system quota admits one pod: a team can still preempt the platform once
    "k8s-team-quotas", lambda: mutated(prod(), "-tenancy-research-priority", set_path("spec.hard.pods", "1"))
)
na("k8s-team-quotas", lambda: without(prod(), of_type(NAMESPACE)))

_SYSTEM_CLASSES = {"scopeName": "PriorityClass", "operator": "In", "values": list(SYSTEM_PRIORITY_CLASSES)}
_AFFINITY = {"scopeName": "CrossNamespacePodAffinity", "operator": "Exists"}  # counts only such pods


@pytest.mark.parametrize(
    ("match_labels", "selects"),
    [
        ({TENANT_LABEL: TENANT_TEAM}, True),
        ({TENANT_LABEL: TENANT_TEAM, "team": "research"}, True),
        ({TENANT_LABEL: "platform"}, False),
        ({"team": "research"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_an_admission_binding_selects_teams_only_by_the_tenant_label(match_labels: Any, selects: bool) -> None:
    assert _selects_teams(match_labels) is selects


@pytest.mark.parametrize(
    ("spec", "holds"),
    [
        ({"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES]}}, True),
        ({"hard": {"pods": 0}, "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES]}}, True),  # a number
        ({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES]}}, False),
        ({"hard": {}, "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES]}}, False),
        (  # scopes narrow it further: it counts only some of those pods
            {"hard": {"pods": "0"}, "scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES]}},
            False,
        ),
        (  # one class only
            {
                "hard": {"pods": "0"},
                "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES | {"values": ["system-node-critical"]}]},
            },
            False,
        ),
        (  # a second expression narrows the scope (expressions are ANDed)
            {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [_SYSTEM_CLASSES, _AFFINITY]}},
            False,
        ),
        ("pods: 0", False),
    ],
)
def test_a_system_class_quota_holds_both_classes_at_zero_pods(spec: Any, holds: bool) -> None:
    assert _holds_system_classes_at_zero(spec) is holds


ok("eks-network-policy-enabled", prod)
bad("eks-network-policy-enabled", lambda: mutated(prod(), "-eks-vpc-cni", drop("configurationValues")))
na("eks-network-policy-enabled", lambda: without(prod(), of_type("aws:eks/addon:Addon")))

ok("k8s-allowed-registries", prod)
bad(
    "k8s-allowed-registries",
    lambda: without(prod(), of_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding")),
)
bad(
    "k8s-allowed-registries",
    lambda: mutated(prod(), "-tenancy-registries-binding", set_path("spec.validationActions", ["Warn"])),
)
na("k8s-allowed-registries", lambda: without(prod(), of_type(NAMESPACE)))
REGISTRIES = "-tenancy-registries"


def _approve(prefix: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        validation = inputs["spec"]["validations"][0]
        validation["expression"] = validation["expression"].replace("['", f"['{prefix}', '", 1)

    return edit


bad("k8s-allowed-registries", lambda: mutated(prod(), REGISTRIES, _approve("public.ecr.aws/")))  # anyone publishes
bad("k8s-allowed-registries", lambda: mutated(prod(), REGISTRIES, _approve("docker.io/")))
ok("k8s-allowed-registries", lambda: mutated(prod(), REGISTRIES, _approve("public.ecr.aws/my-team-alias/")))
ok("k8s-allowed-registries", lambda: mutated(prod(), REGISTRIES, _approve("registry.example.com/")))  # a private one
bad(  # blind to image volumes: any image can be mounted
    "k8s-allowed-registries",
    lambda: mutated(
        prod(),
        REGISTRIES,
        lambda i: i["spec"]["variables"][0].__setitem__(
            "expression", i["spec"]["variables"][0]["expression"].split(" + (has(object.spec.volumes)")[0]
        ),
    ),
)
for skipped in ("initContainers", "ephemeralContainers"):
    bad(  # an image in an init or ephemeral container would run unjudged
        "k8s-allowed-registries",
        lambda skipped=skipped: mutated(
            prod(),
            REGISTRIES,
            lambda i: i["spec"]["variables"][0].__setitem__(
                "expression",
                i["spec"]["variables"][0]["expression"].replace(
                    f" + (has(object.spec.{skipped}) ? object.spec.{skipped}.map(c, c.image) : [])", ""
                ),
            ),
        ),
    )
bad(  # the device policy's binding alone does not restrict images
    "k8s-allowed-registries", lambda: without(prod(), lambda r: r.name == "tenancy-registries-binding")
)


def test_a_registry_policy_whose_variables_are_computed_at_preview_is_judged_at_pulumi_up() -> None:
    source = mutated(prod(), REGISTRIES, set_path("spec.variables", UNKNOWN))
    assert messages("k8s-allowed-registries", source) == []


def test_a_registry_policy_whose_validations_are_unknown_is_not_counted_as_restricting_images() -> None:
    source = mutated(prod(), REGISTRIES, set_path("spec.validations", UNKNOWN))
    assert messages("k8s-allowed-registries", source) == [
        "no ValidatingAdmissionPolicy is bound with Deny to the team namespaces: images may come from anywhere."
    ]


ok("k8s-device-access", prod)
ok("k8s-device-access", dev)
bad("k8s-device-access", lambda: without(prod(), lambda r: r.name == "tenancy-devices-binding"))
bad(
    "k8s-device-access",
    lambda: mutated(prod(), "-tenancy-devices-binding", set_path("spec.validationActions", ["Audit"])),
)
bad(  # the toleration rule dropped: the thief without the variable still lands on a GPU node
    "k8s-device-access",
    lambda: mutated(
        prod(), "-tenancy-devices", lambda i: i["spec"].__setitem__("validations", i["spec"]["validations"][:1])
    ),
)
na("k8s-device-access", lambda: without(prod(), of_type(NAMESPACE)))


def test_a_team_bound_cluster_wide_is_one_finding_whatever_the_role() -> None:
    """A ClusterRoleBinding of a team's group is refused as such: the role it names (here a built-in the plan cannot
    see) is not judged on top."""
    source = with_resource(
        prod(),
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "research-everywhere",
        {
            "subjects": [
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "trainstack:team:research"}
            ],
            "roleRef": {"kind": "ClusterRole", "apiGroup": "rbac.authorization.k8s.io", "name": "view"},
        },
    )
    assert messages("k8s-team-access", source) == [
        "research-everywhere binds ['trainstack:team:research'] cluster-wide: "
        "team access stays in the team's namespace."
    ]


ok("k8s-team-access", prod)
ok("k8s-team-access", dev)
ok("k8s-team-access", lambda: scenario("prod-team-member"))
MEMBER = "-tenancy-research-member"
bad(  # the LoadBalancer quota lifted: a controller or a later grant can expose the namespace
    "k8s-team-access",
    lambda: mutated(prod(), "-tenancy-research-services", lambda i: i["spec"]["hard"].pop("services.loadbalancers")),
)
bad("k8s-team-access", lambda: mutated(prod(), "-tenancy-research-services", set_path("spec.hard", {})))
bad(  # the NodePort quota raised to one
    "k8s-team-access",
    lambda: mutated(
        prod(),
        "-tenancy-research-services",
        lambda i: i["spec"]["hard"].__setitem__("services.nodeports", "1"),
    ),
)
bad(  # members may delete the namespace's NetworkPolicies
    "k8s-team-access",
    lambda: mutated(
        prod(),
        MEMBER,
        lambda i: i["rules"].append(
            {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["delete"]}
        ),
    ),
)
bad(  # a wildcard rule grants Services too
    "k8s-team-access",
    lambda: mutated(prod(), MEMBER, set_path("rules", [{"apiGroups": [""], "resources": ["*"], "verbs": ["*"]}])),
)
bad(  # members may grant themselves more
    "k8s-team-access",
    lambda: mutated(
        prod(),
        MEMBER,
        lambda i: i["rules"].append(
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create"]}
        ),
    ),
)
bad(  # the team's group bound to Kubernetes' own `edit`, whose rules the plan cannot see
    "k8s-team-access",
    lambda: mutated(prod(), MEMBER + "-binding", set_path("roleRef", {"kind": "ClusterRole", "name": "edit"})),
)
bad(  # back to the EKS edit policy, scoped to the team's namespace
    "k8s-team-access",
    lambda: with_resource(
        scenario("prod-team-member"),
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        "team-access-research-policy",
        {
            "clusterName": "c",
            "principalArn": "arn:aws:iam::210987654321:role/research",
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
            "accessScope": {"type": "namespace", "namespaces": ["research"]},
        },
    ),
)
ok(  # read-only EKS access beside the Role is fine
    "k8s-team-access",
    lambda: with_resource(
        scenario("prod-team-member"),
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        "team-access-research-view",
        {
            "clusterName": "c",
            "principalArn": "arn:aws:iam::210987654321:role/research",
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
            "accessScope": {"type": "namespace", "namespaces": ["research"]},
        },
    ),
)
na("k8s-team-access", lambda: without(prod(), of_type(NAMESPACE)))

ok("fsx-datasets-read-only", prod)
ok("fsx-datasets-read-only", dev)
DATASETS_PV = "-lustre-volume-pv-datasets-research"
bad(  # read-only in its spec only: a pod mounting it read-write writes the datasets
    "fsx-datasets-read-only", lambda: mutated(prod(), DATASETS_PV, set_path("spec.mountOptions", ["flock"]))
)
bad("fsx-datasets-read-only", lambda: mutated(prod(), DATASETS_PV, drop("spec.mountOptions")))
bad(  # the datasets claim bound to a writable volume
    "fsx-datasets-read-only",
    lambda: mutated(
        prod(),
        DATASETS_PV,
        lambda i: (
            i["spec"].update(accessModes=["ReadWriteMany"], mountOptions=["flock"]),
            i["spec"]["csi"].pop("readOnly"),
        ),
    ),
)
bad(  # any volume that says it is read-only must mount so
    "fsx-datasets-read-only",
    lambda: mutated(prod(), "-lustre-volume-pv-research", set_path("spec.accessModes", ["ReadOnlyMany"])),
)
na("fsx-datasets-read-only", lambda: without(prod(), of_type("kubernetes:core/v1:PersistentVolume")))

ok("fsx-root-squash", prod)
ok("fsx-root-squash", dev)
bad("fsx-root-squash", lambda: mutated(prod(), FSX, drop("rootSquashConfiguration")))
bad("fsx-root-squash", lambda: mutated(prod(), FSX, set_path("rootSquashConfiguration.rootSquash", "0:0")))
na("fsx-root-squash", lambda: without(prod(), of_type(FSX)))

DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
ok("fsx-dra-no-delete-export", prod)
bad(
    "fsx-dra-no-delete-export", lambda: mutated(prod(), DRA, set_path("s3.autoExportPolicy.events", ["NEW", "DELETED"]))
)
na("fsx-dra-no-delete-export", lambda: without(prod(), of_type(DRA)))

ok("fsx-team-isolation", prod)


def _other_team(inputs: dict[str, Any]) -> None:
    attributes = inputs["spec"]["csi"]["volumeAttributes"]
    attributes["mountname"] = attributes["mountname"].replace("/research", "/pretraining")


bad("fsx-team-isolation", lambda: mutated(prod(), "-lustre-volume-pv-research", _other_team))
na("fsx-team-isolation", lambda: without(prod(), of_type("kubernetes:core/v1:PersistentVolume")))


def _mount(path: str) -> Callable[[dict[str, Any]], None]:
    """The volume mounts `path` of the file system ("" for the root)."""

    def edit(inputs: dict[str, Any]) -> None:
        attributes = inputs["spec"]["csi"]["volumeAttributes"]
        attributes["mountname"] = attributes["mountname"].split("/")[0] + path

    return edit


DATASETS_PV = "-lustre-volume-pv-datasets-research"
# The shared read-only view is judged too: mounting the root shows every team's directory.
bad("fsx-team-isolation", lambda: mutated(prod(), DATASETS_PV, _mount("")))

ok("fsx-views-disjoint", prod)
bad("fsx-views-disjoint", lambda: mutated(prod(), DATASETS_PV, _mount("/teams")))  # the datasets hold the teams
bad("fsx-views-disjoint", lambda: mutated(prod(), "-lustre-volume-pv-research", _mount("/datasets")))
na("fsx-views-disjoint", lambda: without(prod(), of_type("kubernetes:core/v1:PersistentVolume")))


@pytest.mark.parametrize(
    ("volume", "path", "says"),
    [
        (DATASETS_PV, "/teams", "(read-only) mounts /teams, which holds /teams/"),
        (DATASETS_PV, "", "(read-only) mounts /, which holds"),
        ("-lustre-volume-pv-research", "/datasets", "(read-write) mounts /datasets, which holds /datasets"),
        ("-lustre-volume-pv-research", "/teams/pretraining", "(read-write) mounts /teams/pretraining, which holds"),
    ],
)
def test_fsx_views_disjoint_names_the_overlap(volume: str, path: str, says: str) -> None:
    result = run(mutated(prod(), volume, _mount(path)), "prod", policies=[BY_NAME["fsx-views-disjoint"]])
    messages = [v.message for v in found(result, "fsx-views-disjoint")]
    assert messages and any(says in m for m in messages), messages


def _no_squash(*nids: str) -> Callable[[dict[str, Any]], None]:
    return set_path("rootSquashConfiguration.noSquashNids", list(nids))


ok("fsx-no-squash-breadth", lambda: mutated(prod(), FSX, _no_squash("10.0.1.6@tcp", "10.0.2.[10-24]@tcp")))  # 16
bad("fsx-no-squash-breadth", lambda: mutated(prod(), FSX, _no_squash("10.0.1.6@tcp", "10.0.2.[10-25]@tcp")))  # 17
bad("fsx-no-squash-breadth", lambda: mutated(prod(), FSX, _no_squash("[0-255].[0-255].[0-255].[0-255]@tcp")))
bad("fsx-no-squash-breadth", lambda: mutated(prod(), FSX, _no_squash("10.0.1.x@tcp")))  # unreadable: refused
na("fsx-no-squash-breadth", prod)  # prod exempts no client


@pytest.mark.parametrize(
    ("nid", "count"),
    [("10.0.1.6@tcp", 1), ("10.0.[2-10].[1-255]@tcp", 2295), ("[0-255].[0-255].[0-255].[0-255]@tcp", 2**32)],
)
def test_the_pack_counts_nid_addresses_as_the_schema_does(nid: str, count: int) -> None:
    from policies.rules.storage import nid_addresses
    from stacks import fsx_squash

    assert nid_addresses(nid) == fsx_squash.nid_addresses(nid) == count


LIFECYCLE_POLICY = "-hyperpod-lifecycle-bucket-policy"
ok("hyperpod-lifecycle-locked", staging)
bad(
    "hyperpod-lifecycle-locked",
    lambda: mutated(staging(), LIFECYCLE_POLICY, edit_policy(lambda st: st[:] and st.__delitem__(slice(1, None)))),
)
bad(
    "hyperpod-lifecycle-locked",
    lambda: mutated(staging(), LIFECYCLE_POLICY, edit_policy(lambda st: st.pop())),  # the key requirement
)
bad(  # the write deny without the replication actions: a replication rule elsewhere can write the scripts
    "hyperpod-lifecycle-locked",
    lambda: mutated(
        staging(),
        LIFECYCLE_POLICY,
        edit_policy(
            lambda st: [
                s.__setitem__("Action", [a for a in s["Action"] if not a.startswith("s3:Replicate")])
                for s in st
                if s.get("Sid") == "DenyLifecycleWriteExceptDeployer"
            ]
        ),
    ),
)
na("hyperpod-lifecycle-locked", prod)

EXECUTION_INLINE = "-hyperpod-execution-inline"
ok("hyperpod-execution-role-confined", staging)
bad(
    "hyperpod-execution-role-confined",
    lambda: mutated(
        staging(),
        EXECUTION_INLINE,
        edit_policy(lambda st: st.__setitem__(slice(None), [s for s in st if s["Sid"] != "DenyReadOutsideLifecycle"])),
    ),
)
bad(  # a deny that keeps every sagemaker-* bucket readable confines nothing
    "hyperpod-execution-role-confined",
    lambda: mutated(
        staging(),
        EXECUTION_INLINE,
        edit_policy(
            lambda st: [
                s.__setitem__("NotResource", ["arn:aws:s3:::sagemaker-*/*"])
                for s in st
                if s["Sid"] == "DenyReadOutsideLifecycle"
            ]
        ),
    ),
)
bad(
    "hyperpod-execution-role-confined",
    lambda: mutated(
        staging(),
        EXECUTION_INLINE,
        edit_policy(lambda st: st.__setitem__(slice(None), [s for s in st if s["Sid"] != "DenyListOtherBuckets"])),
    ),
)
na("hyperpod-execution-role-confined", prod)


SLURM = "staging-hyperpod-slurm"


def _login_runs_as(other: str) -> Callable[[dict[str, Any]], None]:
    """The cluster's login group runs as the role of group `other`."""

    def edit(inputs: dict[str, Any]) -> None:
        groups = {g["instanceGroupName"]: g for g in inputs["instanceGroups"]}
        groups["login"]["executionRole"] = groups[other]["executionRole"]

    return edit


HYPERPOD = "aws-native:sagemaker:Cluster"
ok(
    "hyperpod-execution-role-confined", lambda: scenario(SLURM)
)  # the login group runs as trainstack-staging-hyperpod-login
bad("hyperpod-execution-role-confined", lambda: mutated(scenario(SLURM), HYPERPOD, _login_runs_as("workers")))
bad("hyperpod-execution-role-confined", lambda: mutated(scenario(SLURM), HYPERPOD, _login_runs_as("controller")))
bad(  # the login role holds the managed policy too: it is confined like the execution role
    "hyperpod-execution-role-confined",
    lambda: mutated(
        scenario(SLURM),
        "-hyperpod-login-inline",
        edit_policy(lambda st: st.__setitem__(slice(None), [s for s in st if s["Sid"] != "DenyReadOutsideLifecycle"])),
    ),
)


def test_the_login_role_check_waits_for_role_arns_computed_at_the_first_preview() -> None:
    """At staging's first preview the HyperPod groups' execution roles are unknown: judged at pulumi up, not here."""
    result = run(shipped("staging", preview=True), policies=[BY_NAME["hyperpod-execution-role-confined"]])
    assert (result.violations, result.not_applicable) == ((), ())


def _second_group_named_login(inputs: dict[str, Any]) -> None:
    inputs["instanceGroups"].append(inputs["instanceGroups"][0] | {"instanceGroupName": "login"})


@pytest.mark.parametrize(
    ("key", "shares"),
    [("hyperpod/lifecycle/x/provisioning_parameters.json", True), ("hyperpod/lifecycle/x/other.json", False)],
    ids=["provisioning-parameters", "another-json-file"],
)
def test_only_the_provisioning_parameters_file_names_the_login_group(key: str, shares: bool) -> None:
    """A group named `login` that shares the workers' role is a finding when provisioning_parameters.json makes it
    the login group; the same JSON under another key makes no login group."""
    source = with_resource(
        mutated(staging(), HYPERPOD, _second_group_named_login),
        "aws:s3/bucketObjectv2:BucketObjectv2",
        "lifecycle-json",
        {"key": key, "content": json.dumps({"login_group": "login"})},
    )
    shared = [m for m in messages("hyperpod-execution-role-confined", source) if "login group login runs as" in m]
    assert len(shared) == int(shares), shared


def test_an_unreadable_provisioning_parameters_file_names_no_login_group() -> None:
    """A provisioning_parameters.json that is not JSON is passed over: the confinement is still judged, and the
    file's (absent) login group shares no role."""
    source = with_resource(
        staging(),
        "aws:s3/bucketObjectv2:BucketObjectv2",
        "provisioning-parameters",
        {"key": "hyperpod/lifecycle/trainstack-staging-hyperpod/provisioning_parameters.json", "content": "{not json"},
    )
    result = run(source, policies=[BY_NAME["hyperpod-execution-role-confined"]])
    assert (found(result, "hyperpod-execution-role-confined"), result.not_applicable) == ([], ())


S3_BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")


def _without_abort(inputs: dict[str, Any]) -> None:
    inputs["rules"] = [r for r in inputs["rules"] if "abortIncompleteMultipartUpload" not in r]


def _abort_on_prefix(inputs: dict[str, Any]) -> None:
    for rule in inputs["rules"]:
        if "abortIncompleteMultipartUpload" in rule:
            rule["filter"] = {"prefix": "uploads/"}  # only part of the bucket


ok("s3-abort-incomplete-uploads", prod)
ok("s3-abort-incomplete-uploads", staging)  # the HyperPod lifecycle bucket included
bad(
    "s3-abort-incomplete-uploads",
    lambda: mutated(staging(), "-hyperpod-lifecycle-bucket-lifecycle", _without_abort),
    level="advisory",  # staging's level
)
bad("s3-abort-incomplete-uploads", lambda: mutated(prod(), "-data-checkpoints-lifecycle", _without_abort))
bad("s3-abort-incomplete-uploads", lambda: mutated(prod(), "-data-datasets-lifecycle", _abort_on_prefix))
bad(
    "s3-abort-incomplete-uploads",
    lambda: mutated(prod(), "-data-datasets-lifecycle", set_path("rules.1.status", "Disabled")),
)
na("s3-abort-incomplete-uploads", lambda: without(prod(), of_type(*S3_BUCKET_TYPES)))

TELEMETRY_KEY = "-telemetry-key"


def _telemetry_statement(sid: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return edit_policy(lambda st: [edit(s) for s in st if s.get("Sid") == sid])


ok("telemetry-encrypted", prod)
ok("telemetry-encrypted", staging)
bad("telemetry-encrypted", lambda: mutated(prod(), "-network-flow-logs", drop("kmsKeyId")))
bad("telemetry-encrypted", lambda: mutated(prod(), "-health-alerts", drop("kmsMasterKeyId")))
bad("telemetry-encrypted", lambda: mutated(prod(), "-health-alerts", set_path("kmsMasterKeyId", "alias/aws/sns")))
bad(  # the key no longer names the audit log's group: CloudWatch Logs cannot use it
    "telemetry-encrypted",
    lambda: mutated(
        prod(),
        TELEMETRY_KEY,
        _telemetry_statement(
            "CloudWatchLogsForTheStacksLogGroups",
            lambda s: s["Condition"]["StringEquals"].__setitem__(
                "kms:EncryptionContext:aws:logs:arn",
                [a for a in s["Condition"]["StringEquals"]["kms:EncryptionContext:aws:logs:arn"] if "/eks/" not in a],
            ),
        ),
    ),
)
bad(  # the alert manager's statement gone: alerts would not be published
    "telemetry-encrypted",
    lambda: mutated(
        prod(),
        TELEMETRY_KEY,
        edit_policy(lambda st: st.__setitem__(slice(None), [s for s in st if "Alert" not in s.get("Sid", "")])),
    ),
)
na("telemetry-encrypted", lambda: without(prod(), of_type("aws:cloudwatch/logGroup:LogGroup", "aws:sns/topic:Topic")))

ok("grafana-rbac-namespaced", prod)


def on_grafana(edit: Callable[[dict[str, Any]], None]) -> Callable[[], Recording]:
    """prod with the grafana release's inputs edited (its component shares the release's name)."""
    return lambda: mutated(prod(), HELM, lambda i: edit(i) if i.get("chart") == "grafana" else None, only_first=False)


bad("grafana-rbac-namespaced", on_grafana(drop("values.rbac")))  # the chart's ClusterRole
bad("grafana-rbac-namespaced", on_grafana(set_path("values.rbac.namespaced", False)))
bad(  # namespaced RBAC, but the sidecar sent to read every namespace
    "grafana-rbac-namespaced", on_grafana(set_path("values.sidecar.dashboards.searchNamespace", "ALL"))
)
ok("grafana-rbac-namespaced", on_grafana(set_path("values.rbac", {"create": False})))
na("grafana-rbac-namespaced", lambda: without(prod(), lambda r: r.name == "health-grafana" and r.type == HELM))

ok("iam-grants-and-interfaces-scoped", staging)
na("iam-grants-and-interfaces-scoped", lambda: without(staging(), of_type("aws:iam/rolePolicy:RolePolicy")))
HYPERPOD_INLINE = "-hyperpod-execution-inline"


def _drop_condition(sid: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(statements: list[dict[str, Any]]) -> None:
        for statement in statements:
            if statement.get("Sid") == sid:
                statement.pop("Condition")

    return edit


bad(  # any holder of the role's credentials may grant the data key to anyone
    "iam-grants-and-interfaces-scoped",
    lambda: mutated(staging(), HYPERPOD_INLINE, edit_policy(_drop_condition("EbsVolumeKeyGrants"))),
)
bad(  # delete or re-point any network interface of the account
    "iam-grants-and-interfaces-scoped",
    lambda: mutated(staging(), HYPERPOD_INLINE, edit_policy(_drop_condition("VpcManageInterfaces"))),
)


def _vpc_condition(value: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(statements: list[dict[str, Any]]) -> None:
        for statement in statements:
            if statement.get("Sid") == "VpcManageInterfaces":
                statement["Condition"] = {"ArnLikeIfExists": {"ec2:Vpc": value}}

    return edit


for pattern in ("*", "arn:aws:ec2:us-east-1:123456789012:vpc/*", "arn:aws:ec2:*:*:vpc/vpc-?*"):
    bad(  # a condition that names no VPC in particular is as wide as none
        "iam-grants-and-interfaces-scoped",
        lambda pattern=pattern: mutated(staging(), HYPERPOD_INLINE, edit_policy(_vpc_condition(pattern))),
    )

bad(  # new interfaces in any subnet
    "iam-grants-and-interfaces-scoped",
    lambda: mutated(
        staging(),
        "-sagemaker-training-research-inline",
        edit_policy(
            lambda st: [
                s.__setitem__(
                    "Resource", [*s["Resource"], s["Resource"][0].split(":network-interface")[0] + ":subnet/*"]
                )
                for s in st
                if s.get("Sid") == "VpcCreateInterfaces"
            ]
        ),
    ),
)

ok("s3-checkpoints-per-prefix", prod)
ok("s3-checkpoints-per-prefix", staging)
ok("s3-checkpoints-per-prefix", dev)
na("s3-checkpoints-per-prefix", lambda: without(prod(), of_type(*S3)))
bad(  # uploads under another key accepted again
    "s3-checkpoints-per-prefix",
    lambda: mutated(
        staging(),
        "-data-checkpoints-policy",
        edit_policy(lambda st: st.__setitem__(slice(None), [s for s in st if s.get("Sid") != "DenyUploadWithoutKms"])),
    ),
)
bad(  # the SageMaker role of one team writes every team's checkpoints (the setting before issue 33)
    "s3-checkpoints-per-prefix",
    lambda: mutated(
        staging(),
        "-sagemaker-training-research-inline",
        edit_policy(
            lambda st: [
                s.__setitem__("Resource", [s["Resource"][0].split("/")[0] + "/*"])
                for s in st
                if s.get("Sid") == "ReadWriteOwnCheckpoints"
            ]
        ),
    ),
)
# The research team's checkpoint writes widened by a wildcard in the first segment: every team's prefix.
WIDEN_TO_EVERY_TEAM = edit_policy(
    lambda st: [
        s.__setitem__("Resource", s["Resource"].replace("/research/", "/*/"))
        for s in st
        if s.get("Sid") == "OwnCheckpoints"
    ]
)
bad(  # a wildcard in the first segment reaches every team too
    "s3-checkpoints-per-prefix", lambda: mutated(prod(), "-team-storage-research-inline", WIDEN_TO_EVERY_TEAM)
)


def _every_teams_checkpoints(where: str) -> Recording:
    """prod plus one more identity policy, `where` ("policy": a managed policy; "role": a role's inline policy),
    holding the research team's checkpoint writes widened to every team's prefix: each grants a role the same."""
    source = prod()
    inputs = copy.deepcopy(next(r for r in source.resources if matches(r, "-team-storage-research-inline")).inputs)
    WIDEN_TO_EVERY_TEAM(inputs)
    if where == "policy":
        return with_resource(source, "aws:iam/policy:Policy", "wide-checkpoints", {"policy": inputs["policy"]})
    role = {"assumeRolePolicy": "{}", "inlinePolicies": [{"name": "wide", "policy": inputs["policy"]}]}
    return with_resource(source, "aws:iam/role:Role", "wide-checkpoints", role)


bad("s3-checkpoints-per-prefix", lambda: _every_teams_checkpoints("policy"))  # a managed policy grants it too
bad("s3-checkpoints-per-prefix", lambda: _every_teams_checkpoints("role"))  # and a role's inline policy

ok("s3-data-vpc-only", prod)
ok("s3-data-vpc-only", staging)
bad("s3-data-vpc-only", dev, level="advisory")  # dev's data buckets are reachable from outside its VPC
bad("s3-data-vpc-only", dev, environment="prod")
na("s3-data-vpc-only", lambda: without(prod(), of_type(*S3)))
# Dropping the deny of the emptying calls (the last statement) leaves deletes from anywhere open.
bad("s3-data-vpc-only", lambda: mutated(staging(), "-data-checkpoints-policy", edit_policy(lambda st: st.pop())))


def _destroyers_read_too(statements: list[dict[str, Any]]) -> None:
    """The weakening the rule refuses: the emptying deny's exemptions (the deployer, key administrators) copied
    to the deny of reads and writes."""
    by_sid = {s["Sid"]: s for s in statements}
    by_sid["DenyDataAccessOutsideVpc"]["Condition"] = by_sid["DenyEmptyingOutsideVpc"]["Condition"]


ok("s3-data-destroyers-empty-only", staging)
ok("s3-data-destroyers-empty-only", prod)
ok("s3-data-destroyers-empty-only", dev)  # no VPC-only deny in dev: nothing exempts anyone
bad(
    "s3-data-destroyers-empty-only",
    lambda: mutated(staging(), "-data-checkpoints-policy", edit_policy(_destroyers_read_too)),
)
na("s3-data-destroyers-empty-only", lambda: without(prod(), of_type(*S3)))
na(  # in a preview the key policies name the deployer, known only at pulumi up: the first key's too
    "s3-data-destroyers-empty-only",
    lambda: mutated(prod(), "aws:kms/key:Key", set_path("policy", UNKNOWN), only_first=False),
)

OBJECT_LOCK = "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration"
ok("s3-checkpoints-object-lock", prod)
bad("s3-checkpoints-object-lock", lambda: without(prod(), of_type(OBJECT_LOCK)))
bad("s3-checkpoints-object-lock", lambda: mutated(prod(), OBJECT_LOCK, drop("rule")))
na("s3-checkpoints-object-lock", lambda: without(prod(), of_type(*S3)))

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ok("vpc-endpoint-policy", prod)
bad("vpc-endpoint-policy", lambda: mutated(prod(), "-network-s3", drop("policy")))
bad(
    "vpc-endpoint-policy",
    lambda: mutated(prod(), "-network-sts", edit_policy(lambda st: st[0].pop("Condition"))),
)
na("vpc-endpoint-policy", lambda: without(prod(), of_type(ENDPOINT)))

KEY = "aws:kms/key:Key"
ok("kms-admin-separation", prod)
bad("kms-admin-separation", lambda: mutated(prod(), KEY, edit_policy(_allow_everything)))
bad("kms-admin-separation", lambda: mutated(prod(), KEY, edit_policy(lambda st: st.pop())))  # the deny
na("kms-admin-separation", lambda: without(prod(), of_type(KEY)))

ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ok("iam-no-sagemaker-full-access", staging)
bad(
    "iam-no-sagemaker-full-access",
    lambda: mutated(staging(), ATTACHMENT, set_path("policyArn", "arn:aws:iam::aws:policy/AmazonSageMakerFullAccess")),
)
bad(  # among a role's own managed policies, not only first
    "iam-no-sagemaker-full-access",
    lambda: mutated(
        staging(),
        "aws:iam/role:Role",
        set_path(
            "managedPolicyArns",
            ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "arn:aws:iam::aws:policy/AmazonSageMakerFullAccess"],
        ),
    ),
)
na("iam-no-sagemaker-full-access", lambda: without(staging(), of_type(ATTACHMENT, "aws:iam/role:Role")))


# ----------------------------------------------------------------------------------------------- cost
PROVIDER = "pulumi:providers:aws"
ok("cost-tags", prod)
bad(
    "cost-tags",
    lambda: mutated(
        prod(),
        PROVIDER,
        set_path(
            "defaultTags",
            json.dumps({"tags": {"project": "trainstack", "env": "prod", "cost-center": "ml-foundation-models"}}),
        ),
    ),
)
bad("cost-tags", prod, environment="staging")  # env=prod where staging is expected
bad("cost-tags", lambda: mutated(staging(), "pulumi:providers:aws-native", drop("defaultTags")))  # HyperPod
na("cost-tags", lambda: without(prod(), lambda r: r.type.startswith("aws:")))

ok("lt-instance-tags", staging)
bad("lt-instance-tags", lambda: mutated(staging(), GPU_LT, lambda i: i["tagSpecifications"].pop()))
na("lt-instance-tags", lambda: without(staging(), of_type("aws:ec2/launchTemplate:LaunchTemplate")))

ok("gpu-budget", staging)  # 16 GPUs in the node group + 16 in HyperPod = the staging budget of 32
bad("gpu-budget", lambda: scenario("prod-over-budget"))
bad("gpu-budget", lambda: mutated(staging(), HYPERPOD, set_path("instanceGroups.0.instanceCount", 3)))
na("gpu-budget", lambda: without(staging(), lambda r: matches(r, GPU_NG) or r.type == HYPERPOD))

ok("dev-scale-to-zero", dev)
bad("dev-scale-to-zero", lambda: scenario("dev-min-one"), level="advisory")
bad(
    "dev-scale-to-zero",
    lambda: mutated(dev(), "-gpu-g5-ng", set_path("scalingConfig.desiredSize", 1)),
    level="advisory",
)
na("dev-scale-to-zero", lambda: without(dev(), of_type("aws:eks/nodeGroup:NodeGroup")))

ok("prod-protect", prod)
bad("prod-protect", staging, environment="prod")  # the staging program is not protected: prod's rule catches it
bad("prod-protect", lambda: mutated(prod(), FSX, protect=False))
na("prod-protect", lambda: without(prod(), of_type(FSX, "aws:kms/key:Key", CLUSTER, *S3)))


# HyperPod in prod with a small group of a type without EFA: the program plans InstanceStress only, and the
# rule asks for nothing more (the defect of issue 13).
ok("hyperpod-deep-health-checks", lambda: scenario("prod-hyperpod-eval"))

# -------------------------------------------------------------------------------------------- floors
NAT = "aws:ec2/natGateway:NatGateway"
P5_TRAIN_NG, P5_TRAIN_LT = "-gpu-p5-train-ng", "-gpu-p5-train-lt"


def dev_without_gpus() -> Recording:
    return without(dev(), lambda r: r.name.endswith("gpu-g5-ng"))


for floor in (
    "stack-environment",
    "fsx-backup-floor",
    "s3-noncurrent-version-floor",
    "deletion-safeguards",
    "log-retention-floor",
    "system-nodes-floor",
    "nat-per-az",
    "node-update-budget",
    "efa-on-capable-groups",
    "fabric-validation",
    "storage-throughput-floor",
):
    ok(floor, prod)
bad("stack-environment", prod, environment="staging")  # prod's resources reviewed with staging's config
bad("stack-environment", dev, environment="prod")
na("stack-environment", lambda: without(prod(), lambda r: True))

# Linked to S3 (prod's file system always is): FSx takes no backups of it, so asking for any is refused.
bad("fsx-backup-floor", lambda: mutated(prod(), FSX, set_path("automaticBackupRetentionDays", 1)))
bad("fsx-backup-floor", lambda: mutated(prod(), FSX, set_path("skipFinalBackup", False)))


def prod_unlinked(days: int, skip_final: bool) -> Recording:
    """Prod's file system without its data repository association, with these backup settings."""
    unlinked = without(prod(), lambda r: r.type == "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    return mutated(
        mutated(unlinked, FSX, set_path("automaticBackupRetentionDays", days)),
        FSX,
        set_path("skipFinalBackup", skip_final),
    )


# Not linked: the environment's floor of daily backups and a final backup.
bad("fsx-backup-floor", lambda: prod_unlinked(0, skip_final=False))
bad("fsx-backup-floor", lambda: prod_unlinked(6, skip_final=False))
bad("fsx-backup-floor", lambda: prod_unlinked(7, skip_final=True))
ok("fsx-backup-floor", lambda: prod_unlinked(7, skip_final=False))
na("fsx-backup-floor", dev)  # SCRATCH_2 takes no backups

bad(
    "s3-noncurrent-version-floor",
    lambda: mutated(
        prod(), "-checkpoints-lifecycle", set_path("rules.0.noncurrentVersionExpiration.noncurrentDays", 3)
    ),
)
na("s3-noncurrent-version-floor", lambda: without(prod(), of_type(*S3)))

bad("deletion-safeguards", lambda: mutated(prod(), CLUSTER, set_path("deletionProtection", False)))
bad("deletion-safeguards", lambda: mutated(prod(), "-data-checkpoints", set_path("forceDestroy", True)))
bad("deletion-safeguards", lambda: mutated(prod(), "-data-key", set_path("deletionWindowInDays", 7)))
na("deletion-safeguards", lambda: without(prod(), of_type(CLUSTER, "aws:kms/key:Key", *S3)))

bad("log-retention-floor", lambda: mutated(prod(), "-eks-cluster-logs", set_path("retentionInDays", 30)))
bad("log-retention-floor", lambda: mutated(prod(), "-network-flow-logs", set_path("retentionInDays", 90)))
na("log-retention-floor", lambda: without(prod(), of_type("aws:cloudwatch/logGroup:LogGroup")))

bad("system-nodes-floor", lambda: mutated(prod(), "-eks-system", set_path("scalingConfig.minSize", 1)))
bad(
    "system-nodes-floor",
    lambda: mutated(
        prod(),
        "-eks-system",
        set_path("subnetIds", ["subnet-1"]),
        dependencies=lambda deps: deps.update(subnetIds=deps["subnetIds"][:1]),
    ),
)
na("system-nodes-floor", lambda: without(prod(), of_type(CLUSTER)))

bad("nat-per-az", lambda: without(prod(), lambda r: r.type == NAT and not r.name.endswith("us-east-1a")))
na("nat-per-az", lambda: without(prod(), of_type(NAT)))

bad("node-update-budget", lambda: mutated(prod(), P5_TRAIN_NG, set_path("updateConfig.maxUnavailable", 16)))
na("node-update-budget", dev_without_gpus)

bad("efa-on-capable-groups", lambda: mutated(prod(), P5_TRAIN_LT, set_path("networkInterfaces", [])))
na("efa-on-capable-groups", dev)  # g5.2xlarge has no EFA

bad("fabric-validation", lambda: without(prod(), of_type("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob")))
na("fabric-validation", dev)

bad("storage-throughput-floor", lambda: scenario("prod-slow-lustre"))
bad("storage-throughput-floor", lambda: without(prod(), of_type(FSX)))
na("storage-throughput-floor", dev_without_gpus)

P5_NG = "-gpu-p5-train-ng"
TORCH_RUNTIME = "training-runtimes-p5-train-torch"


def _kueue_timeout(value: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        config = inputs["values"]["managerConfig"]
        config["controllerManagerConfigYaml"] = config["controllerManagerConfigYaml"].replace("timeout: 600s", value)

    return edit


def _restart_backoff(seconds: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        for job in inputs["spec"]["template"]["spec"]["replicatedJobs"]:
            for container in job["template"]["spec"]["template"]["spec"].get("initContainers", []):
                for env in container.get("env", []):
                    if env["name"] == "TRAINSTACK_RESTART_BACKOFF_S":
                        env["value"] = seconds

    return edit


# Each weakened setting of prod's fleet health, and the words the floor refuses it with.
FLEET_HEALTH_WEAKENED: dict[str, tuple[Source, str]] = {
    "repair-off": (lambda: mutated(prod(), P5_NG, set_path("nodeRepairConfig.enabled", False)), "has no auto repair"),
    "repair-unbounded": (
        lambda: mutated(prod(), P5_NG, set_path("nodeRepairConfig.maxParallelNodesRepairedCount", 8)),
        "repairs 8 nodes at once",
    ),
    "repair-never-stops": (
        lambda: mutated(prod(), P5_NG, set_path("nodeRepairConfig.maxUnhealthyNodeThresholdPercentage", 100)),
        "until 100% of it is unhealthy",
    ),
    "no-metrics": (lambda: without(prod(), of_type("aws:amp/scraper:Scraper")), "no metrics stack"),
    "no-dcgm": (
        lambda: mutated(prod(), "gpu-operator-release", set_path("values.dcgmExporter.enabled", False)),
        "runs no dcgm-exporter",
    ),
    "no-restarts": (
        lambda: mutated(prod(), TORCH_RUNTIME, set_path("spec.template.spec.failurePolicy.maxRestarts", 0)),
        "restarts a failed job 0 times",
    ),
    "restart-loop": (
        lambda: mutated(prod(), TORCH_RUNTIME, set_path("spec.template.spec.failurePolicy.maxRestarts", 20)),
        "restarts a failed job 20 times",
    ),
    "restart-at-once": (lambda: mutated(prod(), TORCH_RUNTIME, _restart_backoff("0")), "waits 0 s before a restart"),
    "pods-ready-late": (
        lambda: mutated(prod(), "scheduling-kueue", _kueue_timeout("timeout: 2h")),
        "with a timeout of at most 1800 s",
    ),
    "pods-ready-off": (
        lambda: mutated(prod(), "scheduling-kueue", _kueue_timeout("timeout: 600s\n  enable: false")),
        "waitForPodsReady is",
    ),
    "nobody-receives": (
        lambda: without(prod(), of_type("aws:sns/topicSubscription:TopicSubscription")),
        "has no subscription",
    ),
}
ok("fleet-health-floor", prod)
for _source, _ in FLEET_HEALTH_WEAKENED.values():
    bad("fleet-health-floor", _source)
na("fleet-health-floor", dev_without_gpus)


@pytest.mark.parametrize("weakened", FLEET_HEALTH_WEAKENED)
def test_the_fleet_health_floor_names_what_was_weakened(weakened: str) -> None:
    source, says = FLEET_HEALTH_WEAKENED[weakened]
    messages = [
        v.message for v in found(run(source(), "prod", policies=[BY_NAME["fleet-health-floor"]]), "fleet-health-floor")
    ]
    assert len(messages) == 1 and says in messages[0], messages


VAP_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
LOCK = "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration"
ok("object-lock-retention-floor", prod)  # 14 days, floor 7
bad("object-lock-retention-floor", lambda: mutated(prod(), LOCK, set_path("rule.defaultRetention.days", 6)))
ok("object-lock-retention-floor", lambda: mutated(prod(), LOCK, set_path("rule.defaultRetention.days", 7)))
na("object-lock-retention-floor", dev)  # dev locks nothing

REGISTRIES_VAP = "tenancy-registries"


def _approve(*prefixes: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        validation = inputs["spec"]["validations"][0]
        quoted = ", ".join(f"'{p}'" for p in prefixes)
        validation["expression"] = validation["expression"].replace("'nvcr.io/nvidia/'", quoted)

    return edit


ok("registry-allowlist-breadth", prod)
ok("registry-allowlist-breadth", lambda: mutated(prod(), REGISTRIES_VAP, _approve("nvcr.io/nvidia/", "quay.io/acme/")))
bad("registry-allowlist-breadth", lambda: mutated(prod(), REGISTRIES_VAP, _approve("docker.io/")))
bad("registry-allowlist-breadth", lambda: mutated(prod(), REGISTRIES_VAP, _approve("registry.example.com/")))
na("registry-allowlist-breadth", lambda: without(prod(), of_type(VAP_TYPE)))


def test_an_allowlist_unknown_at_preview_is_judged_after_deploy() -> None:
    """The private ECR prefix names the account, known after deploy: a preview's unknown validations are not judged."""
    source = mutated(prod(), REGISTRIES_VAP, set_path("spec.validations", UNKNOWN))
    assert messages("registry-allowlist-breadth", source) == []


def _group_label(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        inputs.setdefault("labels", {})[key] = value  # a key with dots: set_path would split it

    return edit


ok("gpu-operator-node-opt-outs", prod)
ok(
    "gpu-operator-node-opt-outs",
    lambda: mutated(prod(), P5_NG, _group_label("nvidia.com/gpu.deploy.dcgm-exporter", "true")),
)
bad(
    "gpu-operator-node-opt-outs",
    lambda: mutated(prod(), P5_NG, _group_label("nvidia.com/gpu.deploy.device-plugin", "false")),
)
bad(
    "gpu-operator-node-opt-outs", lambda: mutated(prod(), P5_NG, _group_label("nvidia.com/gpu.deploy.operands", "true"))
)
bad(
    "gpu-operator-node-opt-outs",
    lambda: mutated(prod(), P5_NG, _group_label("nvidia.com/gpu.workload.config", "vm-passthrough")),
)
na("gpu-operator-node-opt-outs", dev_without_gpus)


QUOTA = "kubernetes:core/v1:ResourceQuota"
ok("team-quota-fits-capacity", prod)
bad(
    "team-quota-fits-capacity",
    lambda: mutated(prod(), "-team-research-quota", set_path("spec.hard", {"requests.nvidia.com/gpu": "1024"})),
)
na("team-quota-fits-capacity", lambda: without(prod(), of_type(QUOTA)))
# platform-only: the cluster (and so its node groups' capacity) is someone else's
na("team-quota-fits-capacity", lambda: without(prod(), of_type(CLUSTER)))


# ---------------------------------------------------------------------------------------------- tests


def _id(case: Case) -> str:
    return f"{case.policy}-{case.kind}-{CASES.index(case)}"


_config = functools.cache(load_config)  # the committed config files do not change during a session


def _subjects(policy: str, source: Recording) -> int:
    types = RESOURCE_TYPES.get(policy)
    return len([r for r in source.resources if r.type in types]) if types is not None else 1


def _param(case: Case) -> Any:
    """A case whose source plans a config variation (`scenario`) runs the program for its own stack: e2e."""
    own_stack = "scenario" in case.source.__code__.co_names
    return pytest.param(case, id=_id(case), marks=[pytest.mark.e2e] if own_stack else [])


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_rule_case(case: Case) -> None:
    source = case.source()
    environment = case.environment or source.stack
    enabled = _config(environment).levels[case.policy].value != "disabled"
    assert enabled or case.kind == "not_applicable"
    if case.source in SHIPPED and case.environment is None:
        result = shipped_review(source.stack)  # the committed stack as it is: its whole review is shared
    else:
        # Only the rule under test runs (each rule reads the recording alone, so the others cannot change what
        # it reports); the review still resolves and validates the environment's whole config.
        result = run(source, environment, policies=[BY_NAME[case.policy]])
        assert result.policies_run == enabled
    violations = found(result, case.policy)
    skipped = [(urn, reason) for name, urn, reason in result.not_applicable if name == case.policy]
    if case.kind == "violated":
        assert violations, f"{case.policy} reported nothing"
        if case.level is not None:
            assert {v.level for v in violations} == {case.level}
    elif case.kind == "compliant":
        assert not violations, [v.message for v in violations]
        assert _subjects(case.policy, source) > len(skipped), f"{case.policy} had nothing to check"
        if case.policy not in RESOURCE_TYPES:
            assert "" not in [urn for urn, _ in skipped], f"{case.policy} was not applicable"
    elif case.policy in RESOURCE_TYPES:
        assert not violations, [v.message for v in violations]
        assert skipped or _subjects(case.policy, source) == 0, f"{case.policy} did apply"
    else:
        # A stack rule with nothing to check says so once, for the stack: passing in silence is not the same
        # (deleting its not_applicable call, or the guard before it, must fail this case).
        assert not violations, [v.message for v in violations]
        assert [urn for urn, _ in skipped] == [""], f"{case.policy} did not call not_applicable: {skipped}"


def test_every_rule_has_all_three_cases() -> None:
    kinds: dict[str, set[str]] = {}
    for case in CASES:
        kinds.setdefault(case.policy, set()).add(case.kind)
    # The waiver rules judge the waivers in force, not a recording: tests/policy/test_waivers.py has their cases.
    missing = {
        p.name: {"compliant", "violated", "not_applicable"} - kinds.get(p.name, set())
        for p in POLICIES
        if p.name not in ("stack-waivers", "waiver-expired")
    }
    assert not {k: v for k, v in missing.items() if v}, missing
