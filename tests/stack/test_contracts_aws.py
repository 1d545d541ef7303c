"""The AWS side of the contract tier: every shipped stack and every catalog swap passes it; each contract refuses
a mutated recording with the resource's URN, the input path, the value, the rule and the rule's source."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pulumi
import pytest

from components.gpu.gpu_nodes import GpuNodeGroup, GpuNodeGroupArgs
from components.providers import aws_provider
from stacks.catalog import CATALOG, Accelerator
from stacks.schema import StackConfig
from tests.conftest import STACKS, edited_config, program_recording, recording, run_component, stack_config
from tests.policy.helpers import mutated
from tests.stack.test_gpu_swap import SWAPS, swapped
from trainstack import contracts
from trainstack.contracts import ContractViolation, aws_models, aws_rules, cloudformation, iam
from trainstack.engine import Recording

AWS_CONTRACTS = {
    "aws_models": aws_models.check,
    "cloudformation": cloudformation.check,
    "iam": iam.check,
    "aws_rules": aws_rules.check,
}
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
HYPERPOD = "aws-native:sagemaker:Cluster"


def found(contract: Callable[[Recording], Any], rec: Recording) -> list[ContractViolation]:
    return sorted(contract(rec))


def test_every_aws_contract_is_registered() -> None:
    assert set(AWS_CONTRACTS.values()) <= set(contracts._contracts())


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("name", sorted(AWS_CONTRACTS))
def test_shipped_stacks_pass(stack: str, name: str) -> None:
    assert found(AWS_CONTRACTS[name], recording(stack)) == []


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_pass_in_preview_where_ids_are_unknown(stack: str) -> None:
    assert contracts.check(recording(stack, preview=True)) == ()


def swapped_config(instance_type: str) -> StackConfig:
    """Prod with only its GPU group's instance type swapped (EFA off for the types that have none), validated."""

    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["instance_type"] = instance_type
        if not CATALOG[instance_type].supports_efa:
            raw["gpu_node_groups"][0]["efa_enabled"] = False

    return edited_config("prod", edit)


def prods_gpu_group(stack: StackConfig) -> Recording:
    """Prod's GPU node group component alone (launch template, node group, placement group), for `stack`'s group
    and settings, wired with the ids prod's whole run recorded for that group: what the program builds for it,
    without the seconds the rest of the program costs (`test_the_group_built_alone_is_prods_own` holds it to
    that)."""
    (group,) = stack.gpu_node_groups
    shipped = recording("prod")
    node_group = next(r for r in shipped.by_type(NG) if r.name.startswith("gpu-")).inputs
    template = next(r for r in shipped.by_type(LT) if r.name.startswith("gpu-")).inputs
    (volume,) = template["blockDeviceMappings"]

    def program() -> None:
        tags = stack.default_tags(pulumi.get_project())
        GpuNodeGroup(
            f"gpu-{group.name}",
            GpuNodeGroupArgs.of_stack(
                stack,
                group,
                cluster_name=node_group["clusterName"],
                node_role_arn=node_group["nodeRoleArn"],
                subnet_id=node_group["subnetIds"][0],
                security_group_ids=template["networkInterfaces"][0]["securityGroups"],
                node_volume_kms_key_arn=volume["ebs"]["kmsKeyId"],
            ),
            opts=pulumi.ResourceOptions(provider=aws_provider("aws", stack.region, tags)),
        )

    return run_component(program, stack="prod", region=stack.region)


def test_the_group_built_alone_is_prods_own() -> None:
    # What makes the catalog sweep below a sweep of prod's GPU group: built alone from prod's own config, the
    # component registers exactly the inputs the whole program recorded for it.
    alone = prods_gpu_group(stack_config("prod"))
    whole = {r.urn: r for r in recording("prod").resources}
    assert {r.type for r in alone.resources} >= {"pulumi:providers:aws", LT, NG}
    for resource in alone.resources:
        assert resource.urn in whole, resource.urn
        assert resource.inputs == whole[resource.urn].inputs, resource.urn


@pytest.mark.parametrize("instance_type", sorted(CATALOG))
def test_every_catalog_type_in_prods_gpu_group_passes(instance_type: str) -> None:
    rec = prods_gpu_group(swapped_config(instance_type))
    assert next(r for r in rec.by_type(NG)).inputs["instanceTypes"] == [instance_type]
    assert contracts.check(rec) == ()


# The swaps tests/stack/test_gpu_swap.py runs the whole program for anyway (the same configs, so the same cached
# runs): one per kind of platform a type brings (NVIDIA x86 with EFA, NVIDIA Grace arm64, Neuron). A GPU type
# without EFA is planned whole by the red-team corpus (`prod-eval-group-of-a-type-without-efa`).
WHOLE_PROGRAM_SWAPS = (*sorted(SWAPS), "p6e-gb200.36xlarge")


def test_the_whole_program_swaps_cover_every_accelerator_and_architecture() -> None:
    rows = [CATALOG[t] for t in WHOLE_PROGRAM_SWAPS]
    assert {r.accelerator for r in rows} == {r.accelerator for r in CATALOG.values()}
    assert {r.architecture for r in rows} == {r.architecture for r in CATALOG.values()}


@pytest.mark.parametrize("instance_type", WHOLE_PROGRAM_SWAPS)
@pytest.mark.e2e
def test_prod_swapped_whole_passes_but_for_the_neuron_gap(instance_type: str) -> None:
    found = contracts.check(swapped(instance_type))
    if CATALOG[instance_type].accelerator is Accelerator.NEURON:
        # The one known gap (tests/unit/test_contract_facts.py): the Neuron chart's values at its pin have no
        # recorded facts, so its release is refused until they exist. Nothing else may be.
        assert [(v.name, v.path) for v in found] == [("neuron-plugin-release", "version")]
        return
    assert found == ()


# ------------------------------------------------------------------------------------------- mutations


def one(violations: list[ContractViolation], rule_part: str) -> ContractViolation:
    hits = [v for v in violations if rule_part in v.rule]
    assert len(hits) == 1, violations
    return hits[0]


def gpu_template(rec: Recording) -> str:
    return next(r.name for r in rec.by_type(LT) if r.name.startswith("gpu-"))


def gpu_group(rec: Recording) -> str:
    return next(r.name for r in rec.by_type(NG) if r.name.startswith("gpu-"))


def test_botocore_enum_refuses_an_unknown_imds_token_setting() -> None:
    rec = recording("prod")
    bad = mutated(rec, gpu_template(rec), lambda i: i["metadataOptions"].update(httpTokens="sometimes"))
    hit = one(found(aws_models.check, bad), "must be one of: optional, required")
    assert hit.path == "metadataOptions.httpTokens" and hit.value == "sometimes"
    assert hit.urn.endswith(gpu_template(rec)) and hit.source.startswith("botocore ")
    assert "ec2 CreateLaunchTemplate request: LaunchTemplateData.MetadataOptions.HttpTokens" in hit.source


def test_botocore_bounds_refuse_a_negative_node_count_and_a_long_label() -> None:
    rec = recording("prod")

    def edit(inputs: dict[str, Any]) -> None:
        inputs["scalingConfig"]["minSize"] = -1
        inputs["labels"]["team"] = "x" * 64

    bad = found(aws_models.check, mutated(rec, gpu_group(rec), edit))
    assert one(bad, "ZeroCapacity must be at least 0").path == "scalingConfig.minSize"
    label = one(bad, "labelValue takes at most 63 characters")
    assert label.path == "labels" and "eks CreateNodegroup request: labels" in label.source


def test_botocore_required_member_and_scalar_subnet() -> None:
    rec = recording("prod")
    bad = mutated(rec, gpu_group(rec), lambda i: i.pop("clusterName"))
    hit = one(found(aws_models.check, bad), "clusterName is required")
    assert hit.path == "clusterName" and hit.value == "(absent)"
    fsx = mutated(rec, "aws:fsx/lustreFileSystem:LustreFileSystem", lambda i: i.update(perUnitStorageThroughput=5))
    assert one(found(aws_models.check, fsx), "PerUnitStorageThroughput must be at least 12").value == "5"


def test_cloudformation_schema_refuses_a_zero_volume_and_an_unknown_property() -> None:
    rec = recording("staging")

    def edit(inputs: dict[str, Any]) -> None:
        inputs["instanceGroups"][0]["instanceStorageConfigs"][0]["ebsVolumeConfig"]["volumeSizeInGb"] = 0
        inputs["instanceGroups"][0]["threadsPerCores"] = 1

    bad = found(cloudformation.check, mutated(rec, HYPERPOD, edit))
    size = next(v for v in bad if v.path.endswith("volumeSizeInGb"))
    assert size.path == "instanceGroups[0].instanceStorageConfigs[0].ebsVolumeConfig.volumeSizeInGb"
    assert "minimum" in size.rule and size.value == "0"
    assert size.source.startswith("CloudFormation resource schema AWS::SageMaker::Cluster (us-east-1)")
    assert any("threadsPerCores" in v.rule or "ThreadsPerCores" in v.rule for v in bad)


def test_cloudformation_regional_list_refuses_a_type_the_region_lacks() -> None:
    rec = recording("staging")
    bad = mutated(rec, HYPERPOD, lambda i: i["instanceGroups"][0].update(instanceType="ml.p9.96xlarge"))
    hit = one(found(cloudformation.check, bad), "not offered in us-east-1")
    assert hit.path == "instanceGroups[0].instanceType" and hit.value == "ml.p9.96xlarge"
    assert "instancetype_enum.json" in hit.source


def policy_edit(mutate: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        mutate(document)
        inputs["policy"] = json.dumps(document)

    return edit


def test_iam_linter_refuses_an_unknown_action_and_a_resource_the_action_cannot_take() -> None:
    rec = recording("prod")
    flow = "-network-flow-logs-delivery"
    bad = mutated(rec, flow, policy_edit(lambda d: d["Statement"][0]["Action"].append("logs:PutLogEventz")))
    hit = one(found(iam.check, bad), "UNKNOWN_ACTION")
    assert hit.path == "policy" and hit.source.startswith("parliament ")
    # The review's disputed fact: logs:DescribeLogGroups scoped to one log group ARN never matches.
    scoped = mutated(rec, flow, policy_edit(lambda d: d["Statement"][0]["Action"].append("logs:DescribeLogGroups")))
    assert "logs:DescribeLogGroups" in one(found(iam.check, scoped), "RESOURCE_MISMATCH").rule


def test_iam_grammar_refuses_a_trust_policy_with_a_resource_and_a_bucket_policy_without_a_principal() -> None:
    rec = recording("prod")

    def trust(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["assumeRolePolicy"])
        document["Statement"][0]["Resource"] = "*"
        inputs["assumeRolePolicy"] = json.dumps(document)

    hit = one(found(iam.check, mutated(rec, "aws:iam/role:Role", trust)), "trust policy takes no Resource")
    assert hit.path == "assumeRolePolicy:Statement[0]" and "element reference" in hit.source
    bucket = mutated(rec, "aws:s3/bucketPolicy:BucketPolicy", policy_edit(lambda d: d["Statement"][0].pop("Principal")))
    assert one(found(iam.check, bucket), "resource policy statement names a Principal").path == "policy:Statement[0]"


def block_group(rec: Recording) -> Recording:
    """Prod's GPU group as if it were on a Capacity Block but built the old way (type on the group only)."""
    rec = mutated(rec, gpu_group(rec), lambda i: i.update(capacityType="CAPACITY_BLOCK"))
    return mutated(rec, gpu_template(rec), lambda i: i.update(instanceMarketOptions={"marketType": "capacity-block"}))


def test_capacity_block_group_listing_its_type_and_a_template_without_one_is_refused() -> None:
    # Issue 11 regression: the template had no instance type and the node group listed one.
    bad = found(aws_rules.capacity_block_node_groups, block_group(recording("prod")))
    listed = one(bad, "lists no instanceTypes")
    assert listed.path == "instanceTypes" and listed.value == '["p5.48xlarge"]' and "Capacity Blocks" in listed.source
    assert one(bad, "names the instance type").path == "instanceType"


@pytest.mark.e2e
def test_capacity_block_built_as_the_component_builds_it_passes() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["capacity"]["type"] = "capacity_block"

    rec = program_recording(edited_config("prod", edit), "prod")
    assert contracts.check(rec) == ()
    template = next(r for r in rec.by_type(LT) if r.name.startswith("gpu-")).inputs
    assert template["instanceType"] == "p5.48xlarge" and "instanceTypes" not in rec.by_type(NG)[-1].inputs


def test_reserved_label_prefix_is_refused() -> None:
    # Issue 11 regression: node groups carried node.kubernetes.io/instance-type.
    rec = recording("prod")
    bad = mutated(
        rec, gpu_group(rec), lambda i: i["labels"].update({"node.kubernetes.io/instance-type": "p5.48xlarge"})
    )
    hit = one(found(aws_rules.reserved_node_labels, bad), "may not contain kubernetes.io/")
    assert hit.path == "labels.node.kubernetes.io/instance-type" and "eksctl#4007" in hit.source


def test_metadata_iops_below_automatic_is_refused() -> None:
    # Issue 11 regression: 12000 USER_PROVISIONED IOPS on 124800 GiB (AUTOMATIC gives 62400).
    bad = mutated(
        recording("prod"),
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        lambda i: i.update(metadataConfiguration={"mode": "USER_PROVISIONED", "iops": 12000}),
    )
    hit = one(found(aws_rules.lustre_metadata, bad), "below the 62400 IOPS")
    assert hit.path == "metadataConfiguration.iops" and hit.value == "12000"


def test_efa_only_primary_and_duplicate_slots_are_refused() -> None:
    rec = recording("prod")

    def edit(inputs: dict[str, Any]) -> None:
        inputs["networkInterfaces"][0]["interfaceType"] = "efa-only"
        inputs["networkInterfaces"].append(dict(inputs["networkInterfaces"][-1]))

    bad = found(aws_rules.launch_template_interfaces, mutated(rec, gpu_template(rec), edit))
    assert one(bad, "primary interface (card 0, device 0) cannot be efa-only").path == "networkInterfaces[0]"
    assert one(bad, "same network card and device index").path == f"networkInterfaces[{33}]"


def test_unprotected_bucket_without_force_destroy_is_refused_and_prod_keeps_its_buckets() -> None:
    # Issue 11 regression: dev's versioned data buckets made `pulumi destroy` fail with BucketNotEmpty.
    dev = recording("dev")
    buckets = dev.by_type("aws:s3/bucket:Bucket")
    assert buckets and all(b.inputs["forceDestroy"] is True and not b.protect for b in buckets)
    bad = mutated(dev, "-data-datasets", lambda i: i.update(forceDestroy=False))
    assert one(found(aws_rules.destroyable_buckets, bad), "must set force_destroy").path == "forceDestroy"
    prod = [b for b in recording("prod").by_type("aws:s3/bucket:Bucket") if b.name.startswith("data-")]
    assert prod and all(b.protect and b.inputs["forceDestroy"] is False for b in prod)


def test_hyperpod_without_its_dependencies_chart_or_core_addons_is_refused() -> None:
    # Issue 11 regression: HyperPod on EKS was created without the dependencies chart SageMaker requires.
    rec = recording("staging")
    resources = [replace(r, dependencies=()) if r.type == HYPERPOD else r for r in rec.resources]
    bare = Recording(stack=rec.stack, preview=rec.preview, resources=resources, outputs=rec.outputs)
    bad = found(aws_rules.hyperpod_on_eks, bare)
    assert one(bad, "after the HyperPod dependencies Helm chart").source.startswith("SageMaker Developer Guide")
    assert "coredns" in one(bad, "after the core add-ons and the system node group").value


def test_hyperpod_on_an_unsupported_kubernetes_version_is_refused() -> None:
    rec = mutated(recording("staging"), "aws:eks/cluster:Cluster", lambda i: i.update(version="1.27"))
    hit = one(found(aws_rules.hyperpod_on_eks, rec), "does not support Kubernetes 1.27")
    assert hit.value == "1.27" and "Kubernetes version support" in hit.source


@pytest.mark.e2e
def test_the_longest_valid_cluster_name_passes() -> None:
    # Physical and auto-generated names derive from `name` (a DNS label of at most 32 characters): at its longest
    # every name must still fit its API's limit (IAM role names 64, and so on).
    def edit(raw: dict[str, Any]) -> None:
        raw["name"] = "trainstack-production-gpu-east-1"

    assert len("trainstack-production-gpu-east-1") == 32
    assert contracts.check(program_recording(edited_config("staging", edit), "staging")) == ()


# ------------------------------------------------------------------------------ every type the program writes


def test_every_aws_type_the_shipped_stacks_record_is_mapped_to_its_api() -> None:
    """A type `API_MAP` leaves out is not judged at all: every pulumi-aws type a shipped stack records is mapped
    (aws-native types meet their CloudFormation schema instead)."""
    recorded = {
        r.type for stack in STACKS for r in recording(stack).resources if r.custom and r.type.startswith("aws:")
    }
    assert recorded - set(aws_models.API_MAP) == set()


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set inputs[a][b]... = value, creating mappings on the way; a value of DROP deletes the key."""

    def edit(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = inputs
        for step in parents:
            node = node.setdefault(step, {})
        if value is DROP:
            node.pop(last, None)
        else:
            node[last] = value

    return edit


DROP = object()
OBJECT_LOCK = "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"

# (stack, resource type or name tail, edit, contract, the violation's path, a phrase of its rule): one failing case
# per mapping the contract tier gained in issue 29 (the AWS types its docs claimed or never named).
NEW_MAPPINGS: list[tuple[str, str, Callable[[dict[str, Any]], None], str, str, str]] = [
    (
        "prod",
        "-gpu-p5-train-ng",
        _set("nodeRepairConfig.maxParallelNodesRepairedCount", 0),
        "aws_models",
        "nodeRepairConfig.maxParallelNodesRepairedCount",
        "NonZeroInteger must be at least 1",
    ),
    (
        "prod",
        "-gpu-p5-train-ng",
        _set("nodeRepairConfig.maxUnhealthyNodeThresholdPercentage", 101),
        "aws_models",
        "nodeRepairConfig.maxUnhealthyNodeThresholdPercentage",
        "PercentCapacity must be at most 100",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.rootSquash", "12345678901:1"),
        "aws_models",
        "rootSquashConfiguration.rootSquash",
        "LustreRootSquash",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.rootSquash", "4294967295:65534"),
        "aws_rules",
        "rootSquashConfiguration.rootSquash",
        "above 4294967294",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.rootSquash", "0:65534"),
        "aws_rules",
        "rootSquashConfiguration.rootSquash",
        "both be non-zero",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.noSquashNids", ["10.0.300.1@tcp"]),
        "aws_rules",
        "rootSquashConfiguration.noSquashNids[0]",
        "not an address byte",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.noSquashNids", ["10.0.[9-2].1@tcp"]),
        "aws_rules",
        "rootSquashConfiguration.noSquashNids[0]",
        "runs backwards",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.noSquashNids", ["admin-host@tcp"]),
        "aws_models",
        "rootSquashConfiguration.noSquashNids",
        "LustreNoSquashNid must match",
    ),
    (
        "prod",
        FSX,
        _set("rootSquashConfiguration.noSquashNids", ["10.0.0.1@tcp"] * 65),
        "aws_models",
        "rootSquashConfiguration.noSquashNids",
        "takes at most 64 items",
    ),
    (
        "prod",
        OBJECT_LOCK,
        _set("rule.defaultRetention.mode", "FOREVER"),
        "aws_models",
        "rule.defaultRetention.mode",
        "must be one of: GOVERNANCE, COMPLIANCE",
    ),
    (
        "prod",
        OBJECT_LOCK,
        _set("rule.defaultRetention.years", 1),
        "aws_rules",
        "rule.defaultRetention",
        "exactly one of them",
    ),
    (
        "prod",
        OBJECT_LOCK,
        _set("rule.defaultRetention.days", 0),
        "aws_rules",
        "rule.defaultRetention.days",
        "positive whole number of days",
    ),
    (
        "prod",
        OBJECT_LOCK,
        _set("objectLockEnabled", "Disabled"),
        "aws_models",
        "objectLockEnabled",
        "must be one of: Enabled",
    ),
    ("prod", "aws:amp/workspace:Workspace", _set("alias", ""), "aws_models", "alias", "at least 1 characters"),
    (
        "prod",
        "aws:amp/ruleGroupNamespace:RuleGroupNamespace",
        _set("name", "n" * 129),
        "aws_models",
        "name",
        "at most 128 characters",
    ),
    (
        "prod",
        "aws:amp/alertManagerDefinition:AlertManagerDefinition",
        _set("workspaceId", DROP),
        "aws_models",
        "workspaceId",
        "workspaceId is required",
    ),
    (
        "prod",
        "aws:amp/scraper:Scraper",
        _set("source.eks.subnetIds", [f"subnet-{i}" for i in range(6)]),
        "aws_models",
        "source.eks.subnetIds",
        "takes at most 5 items",
    ),
    (
        "prod",
        "aws:amp/scraper:Scraper",
        _set("destination.amp.workspaceArn", "arn:aws:s3:::bucket"),
        "aws_models",
        "destination.amp.workspaceArn",
        "WorkspaceArn must match",
    ),
    ("prod", "aws:sns/topic:Topic", _set("name", "alerts for prod"), "aws_rules", "name", "a topic name is"),
    ("prod", "aws:sns/topicPolicy:TopicPolicy", _set("arn", DROP), "aws_models", "arn", "TopicArn is required"),
    (
        "staging",
        "aws:ec2/placementGroup:PlacementGroup",
        _set("strategy", "clustered"),
        "aws_models",
        "strategy",
        "must be one of: cluster, spread, partition",
    ),
    (
        "prod",
        "aws:ec2/flowLog:FlowLog",
        _set("trafficType", "SOME"),
        "aws_models",
        "trafficType",
        "must be one of: ACCEPT, REJECT, ALL",
    ),
    ("prod", "aws:ec2/flowLog:FlowLog", _set("vpcId", DROP), "aws_models", "vpcId", "ResourceIds is required"),
    ("prod", "aws:ec2/eip:Eip", _set("domain", "classic"), "aws_models", "domain", "must be one of: vpc, standard"),
    (
        "prod",
        "aws:ec2/natGateway:NatGateway",
        _set("connectivityType", "internet"),
        "aws_models",
        "connectivityType",
        "must be one of: private, public",
    ),
    (
        "prod",
        "aws:ec2/vpc:Vpc",
        _set("instanceTenancy", "shared"),
        "aws_models",
        "instanceTenancy",
        "must be one of: default, dedicated, host",
    ),
    (
        "prod",
        "aws:ec2/vpc:Vpc",
        _set("enableDnsHostnames", "sometimes"),
        "aws_models",
        "enableDnsHostnames",
        "is a boolean",
    ),
    (
        "prod",
        "aws:ec2/internetGateway:InternetGateway",
        _set("vpcId", DROP),
        "aws_models",
        "vpcId",
        "VpcId is required",
    ),
    ("prod", "aws:ec2/routeTable:RouteTable", _set("vpcId", DROP), "aws_models", "vpcId", "VpcId is required"),
    (
        "prod",
        "aws:ec2/route:Route",
        _set("routeTableId", DROP),
        "aws_models",
        "routeTableId",
        "RouteTableId is required",
    ),
    (
        "prod",
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        _set("routeTableId", DROP),
        "aws_models",
        "routeTableId",
        "RouteTableId is required",
    ),
    (
        "prod",
        "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
        _set("url", "https://" + "x" * 260),
        "aws_models",
        "url",
        "at most 255 characters",
    ),
]


@pytest.mark.parametrize(
    ("stack", "match", "edit", "contract", "path", "phrase"),
    NEW_MAPPINGS,
    ids=[f"{m[1].rsplit(':', 1)[-1].lstrip('-')}-{m[4]}-{m[5][:24]}" for m in NEW_MAPPINGS],
)
def test_each_new_mapping_refuses_what_aws_refuses(
    stack: str, match: str, edit: Callable[[dict[str, Any]], None], contract: str, path: str, phrase: str
) -> None:
    rec = mutated(recording(stack), match, edit)
    hits = [v for v in AWS_CONTRACTS[contract](rec) if phrase in v.rule]
    assert len(hits) == 1, sorted(AWS_CONTRACTS[contract](rec))
    assert hits[0].path == path
    assert hits[0].source.startswith("botocore ") or contract == "aws_rules"


def test_backups_of_a_file_system_linked_to_s3_are_refused() -> None:
    rec = recording("prod")
    days = found(aws_rules.lustre_backups_unlinked, mutated(rec, FSX, _set("automaticBackupRetentionDays", 7)))
    assert one(days, "takes no backups: 0").path == "automaticBackupRetentionDays"
    assert "Working with backups" in days[0].source
    final = found(aws_rules.lustre_backups_unlinked, mutated(rec, FSX, _set("skipFinalBackup", False)))
    assert one(final, "no final backup on delete").path == "skipFinalBackup"
    # Unlinked (no association names it): backups are FSx's to take, and no rule of this kind applies.
    unlinked = Recording(
        stack=rec.stack,
        preview=rec.preview,
        resources=[r for r in rec.resources if r.type != "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"],
        outputs=rec.outputs,
    )
    assert (
        found(aws_rules.lustre_backups_unlinked, mutated(unlinked, FSX, _set("automaticBackupRetentionDays", 7))) == []
    )
