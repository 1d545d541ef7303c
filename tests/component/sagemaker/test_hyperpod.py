"""HyperPodCluster and TrainingJobRole under the recording mocks, with both orchestrators."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest

from components.sagemaker.hyperpod import (
    LIFECYCLE_ROOT,
    PROVISIONING_PARAMETERS,
    HyperPodCluster,
    HyperPodClusterArgs,
    aws_native_provider,
)
from components.sagemaker.sagemaker_roles import TrainingJobRole, TrainingJobRoleArgs
from stacks.schema import HyperPodSpec
from tests.conftest import run_component
from trainstack.engine import Recording

CLUSTER = "aws-native:sagemaker:Cluster"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/trainstack-test"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-plan"
KEY = "arn:aws:kms:us-east-1:123456789012:key/k"

EKS_SPEC = HyperPodSpec.model_validate(
    {
        "enabled": True,
        "orchestrator": "eks",
        "instance_groups": [
            {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2, "ebs_volume_size_gib": 1000}
        ],
    }
)
SLURM_SPEC = HyperPodSpec.model_validate(
    {
        "enabled": True,
        "orchestrator": "slurm",
        "training_plan_arn": PLAN_ARN,
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
            {"name": "login", "instance_type": "ml.m5.xlarge", "instance_count": 1, "role": "login"},
            {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 4, "capacity": "training_plan"},
        ],
    }
)


def build(spec: HyperPodSpec, **overrides: Any) -> Recording:
    def program() -> None:
        aws_provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
        native = aws_native_provider("aws-native", "us-east-1", {"env": "test"})
        kwargs: dict[str, Any] = {
            "spec": spec,
            "base_name": "trainstack-test",
            "region": "us-east-1",
            "subnet_ids": ["subnet-0gpu"],
            "security_group_ids": ["sg-0efa"],
            "vpc_id": "vpc-0a1",
            "eks_cluster_arn": EKS_ARN if spec.orchestrator.value == "eks" else None,
            "kms_key_arn": KEY,
            "fsx_dns_name": "fs-0abc.fsx.us-east-1.amazonaws.com",
            "fsx_mount_name": "mnt1234",
        }
        HyperPodCluster(
            "hp", HyperPodClusterArgs(**(kwargs | overrides)), pulumi.ResourceOptions(providers=[aws_provider, native])
        )

    return run_component(program)


@pytest.fixture(scope="module")
def eks_run() -> Recording:
    return build(EKS_SPEC)


@pytest.fixture(scope="module")
def slurm_run() -> Recording:
    return build(SLURM_SPEC)


def groups(recording: Recording) -> dict[str, dict[str, Any]]:
    return {g["instanceGroupName"]: g for g in recording.one(CLUSTER).inputs["instanceGroups"]}


def test_eks_cluster_settings(eks_run: Recording) -> None:
    cluster = eks_run.one(CLUSTER)
    assert cluster.inputs["orchestrator"] == {"eks": {"clusterArn": EKS_ARN}}
    assert cluster.inputs["nodeRecovery"] == "Automatic"
    assert cluster.inputs["vpcConfig"] == {"subnets": ["subnet-0gpu"], "securityGroupIds": ["sg-0efa"]}
    assert cluster.inputs["clusterName"] == "trainstack-test-hyperpod"
    [group] = groups(eks_run).values()
    assert group["instanceType"] == "ml.p5.48xlarge" and group["instanceCount"] == 2
    assert group["threadsPerCore"] == 1
    assert group["onStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    # The extra volume and the root volume on the data key (a root volume config takes a key and no size).
    assert group["instanceStorageConfigs"] == [
        {"ebsVolumeConfig": {"volumeSizeInGb": 1000, "volumeKmsKeyId": KEY}},
        {"ebsVolumeConfig": {"rootVolume": True, "volumeKmsKeyId": KEY}},
    ]
    assert cluster.inputs["nodeProvisioningMode"] == "Continuous"  # a customer managed EBS key needs it
    assert "trainingPlanArn" not in group


def test_without_a_data_key_volumes_use_the_default_and_provisioning_stays_default() -> None:
    recording = build(EKS_SPEC, kms_key_arn=None)
    [group] = groups(recording).values()
    assert group["instanceStorageConfigs"] == [{"ebsVolumeConfig": {"volumeSizeInGb": 1000}}]
    assert "nodeProvisioningMode" not in recording.one(CLUSTER).inputs


def test_lifecycle_objects_sit_under_the_groups_source_uri(eks_run: Recording) -> None:
    [group] = groups(eks_run).values()
    uri = group["lifeCycleConfig"]["sourceS3Uri"]
    assert group["lifeCycleConfig"]["onCreate"] == "on_create.sh"
    bucket = eks_run.one("aws:s3/bucket:Bucket")
    assert bucket.outputs["bucket"].startswith("sagemaker-")  # HyperPod reads s3://sagemaker-* paths
    prefix = uri.removeprefix(f"s3://{bucket.outputs['bucket']}/")
    keys = {o.inputs["key"] for o in eks_run.by_type(OBJECT)}
    assert keys == {f"{prefix}{p.name}" for p in (LIFECYCLE_ROOT / "eks").iterdir()}
    script = next(o for o in eks_run.by_type(OBJECT) if o.inputs["key"].endswith("on_create.sh"))
    assert script.inputs["content"] == (LIFECYCLE_ROOT / "eks" / "on_create.sh").read_text()


def test_cluster_waits_for_scripts_and_role_policies(eks_run: Recording) -> None:
    cluster = eks_run.one(CLUSTER)
    needed = {r.urn for r in eks_run.by_type(OBJECT)} | {
        r.urn for r in eks_run.resources if r.type.startswith("aws:iam/rolePolicy")
    }
    assert needed <= set(cluster.dependencies)


def test_providers_are_explicit(eks_run: Recording) -> None:
    assert eks_run.one(CLUSTER).provider_urn.endswith("pulumi:providers:aws-native::aws-native")
    for resource in eks_run.resources:
        if resource.custom and resource.type.startswith("aws:"):
            assert resource.provider_urn.endswith("pulumi:providers:aws::aws"), resource.name


def test_execution_role_gets_managed_and_scoped_policies(eks_run: Recording) -> None:
    role = eks_run.one("aws:iam/role:Role")
    [trust] = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    # Confused-deputy guard: SageMaker may assume it only on behalf of this account.
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    attachment = eks_run.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"
    inline = json.loads(eks_run.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    assert {"EksDescribe", "LifecycleRead", "VpcManageInterfaces"} <= {s["Sid"] for s in inline["Statement"]}
    [group] = groups(eks_run).values()
    assert group["executionRole"] == role.outputs["arn"]


def test_lifecycle_bucket_is_locked_down(eks_run: Recording) -> None:
    block = eks_run.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(block[k] for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
    sse = eks_run.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    [rule] = sse.inputs["rules"]
    assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms" and rule["bucketKeyEnabled"]
    policy = json.loads(eks_run.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    assert policy["Statement"][0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_lifecycle_bucket_aborts_stale_uploads_and_expires_old_bundles(eks_run: Recording) -> None:
    config = eks_run.one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs
    rules = {r["id"]: r for r in config["rules"]}
    assert set(rules) == {"expire-old-bundles", "abort-incomplete-multipart-uploads"}
    abort = rules["abort-incomplete-multipart-uploads"]
    assert abort["status"] == "Enabled" and abort["filter"] == {"prefix": ""}
    assert abort["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 1}


def test_lifecycle_prefix_is_the_deployers_and_read_only_for_the_execution_role(eks_run: Recording) -> None:
    statements = {
        s["Sid"]: s for s in json.loads(eks_run.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])["Statement"]
    }
    deployer = "arn:aws:iam::123456789012:user/offline-plan"  # the mocks' caller: its session issuer is itself
    role = eks_run.one("aws:iam/role:Role")
    role_arn = f"arn:aws:iam::123456789012:role/{role.inputs['name']}"
    read = statements["DenyLifecycleReadExceptDeployerAndHyperPod"]
    write = statements["DenyLifecycleWriteExceptDeployer"]
    assert read["Effect"] == write["Effect"] == "Deny" and read["Principal"] == "*"
    assert read["Resource"].endswith("/hyperpod/lifecycle/*")
    assert write["Resource"] == read["Resource"].removesuffix("hyperpod/lifecycle/*") + "*"  # the whole bucket
    assert read["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": sorted([deployer, role_arn])}}
    assert write["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": deployer}}
    assert "s3:PutObject" in write["Action"] and "s3:GetObject" in read["Action"]
    # Replication into the bucket is authorized as Replicate*, not PutObject: denied alike.
    assert {"s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags"} <= set(write["Action"])
    key = statements["DenyLifecycleUploadWithoutStackKey"]["Condition"]["StringNotEquals"]
    assert key == {"s3:x-amz-server-side-encryption-aws-kms-key-id": "arn:aws:kms:us-east-1:123456789012:key/k"}
    # ...and every upload names that key, so the deny never refuses our own scripts.
    for script in eks_run.by_type("aws:s3/bucketObjectv2:BucketObjectv2"):
        assert script.inputs["serverSideEncryption"] == "aws:kms"
        assert script.inputs["kmsKeyId"] == "arn:aws:kms:us-east-1:123456789012:key/k"


def test_slurm_cluster_settings(slurm_run: Recording) -> None:
    cluster = slurm_run.one(CLUSTER)
    assert "orchestrator" not in cluster.inputs  # Slurm is the API's orchestrator when none is given
    assert cluster.inputs["nodeRecovery"] == "Automatic"
    by_name = groups(slurm_run)
    assert set(by_name) == {"controller", "login", "p5"}
    assert by_name["p5"]["onStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert by_name["p5"]["trainingPlanArn"] == PLAN_ARN
    for name in ("controller", "login"):
        assert "onStartDeepHealthChecks" not in by_name[name] and "trainingPlanArn" not in by_name[name]
    assert {g["threadsPerCore"] for g in by_name.values()} == {1}
    uris = {g["lifeCycleConfig"]["sourceS3Uri"] for g in by_name.values()}
    assert len(uris) == 1


def test_slurm_provisioning_parameters_mount_fsx(slurm_run: Recording) -> None:
    [params_object] = [o for o in slurm_run.by_type(OBJECT) if o.inputs["key"].endswith(PROVISIONING_PARAMETERS)]
    params = json.loads(params_object.inputs["content"])
    assert params["controller_group"] == "controller" and params["login_group"] == "login"
    assert params["worker_groups"] == [{"instance_group_name": "p5", "partition_name": "p5"}]
    assert params["fsx_dns_name"] == "fs-0abc.fsx.us-east-1.amazonaws.com" and params["fsx_mountname"] == "mnt1234"
    uri = groups(slurm_run)["p5"]["lifeCycleConfig"]["sourceS3Uri"]
    assert uri.endswith(params_object.inputs["key"].removesuffix(PROVISIONING_PARAMETERS))
    for policy in slurm_run.by_type("aws:iam/rolePolicy:RolePolicy"):
        inline = json.loads(policy.inputs["policy"])
        assert not [s for s in inline["Statement"] if s["Sid"].startswith("Eks")]


def test_the_login_group_runs_as_a_role_of_its_own(slurm_run: Recording) -> None:
    """CreateCluster takes an ExecutionRole per instance group: login nodes, where users work, get their own."""
    roles = {r.inputs["name"]: r for r in slurm_run.by_type("aws:iam/role:Role")}
    assert set(roles) == {"trainstack-test-hyperpod-exec", "trainstack-test-hyperpod-login"}
    execution, login = (roles[f"trainstack-test-hyperpod-{k}"].outputs["arn"] for k in ("exec", "login"))
    by_name = groups(slurm_run)
    assert by_name["login"]["executionRole"] == login
    assert by_name["controller"]["executionRole"] == by_name["p5"]["executionRole"] == execution
    # Both hold the managed instance policy and read the scripts; the bucket exempts both from its read deny.
    attached = slurm_run.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert len(attached) == 2 and {a.inputs["policyArn"].rsplit("/", 1)[1] for a in attached} == {
        "AmazonSageMakerClusterInstanceRolePolicy"
    }
    policy = json.loads(slurm_run.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    [read] = [s for s in policy["Statement"] if s["Sid"] == "DenyLifecycleReadExceptDeployerAndHyperPod"]
    named = read["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert [a for a in named if ":role/" in a] == sorted(
        f"arn:aws:iam::123456789012:role/{n}"
        for n in ("trainstack-test-hyperpod-exec", "trainstack-test-hyperpod-login")
    )
    inline = {p.name: json.loads(p.inputs["policy"]) for p in slurm_run.by_type("aws:iam/rolePolicy:RolePolicy")}
    [login_inline] = [d for n, d in inline.items() if "login" in n]
    [decrypt] = [s for s in login_inline["Statement"] if s["Sid"] == "LifecycleDecrypt"]
    assert decrypt["Condition"]["StringEquals"] == {"kms:ViaService": "s3.us-east-1.amazonaws.com"}


def test_without_a_login_group_there_is_one_role(eks_run: Recording) -> None:
    assert len(eks_run.by_type("aws:iam/role:Role")) == 1


def test_a_changed_script_changes_source_uri_and_keys(tmp_path: Path, eks_run: Recording) -> None:
    changed = tmp_path / "eks"
    shutil.copytree(LIFECYCLE_ROOT / "eks", changed)
    with (changed / "on_create.sh").open("a") as script:
        script.write("# tuned\n")
    rerun = build(EKS_SPEC, lifecycle_dir=changed)
    old_uri = next(iter(groups(eks_run).values()))["lifeCycleConfig"]["sourceS3Uri"]
    new_uri = next(iter(groups(rerun).values()))["lifeCycleConfig"]["sourceS3Uri"]
    assert old_uri != new_uri
    assert {o.inputs["key"] for o in rerun.by_type(OBJECT)}.isdisjoint(
        {o.inputs["key"] for o in eks_run.by_type(OBJECT)}
    )


def test_protect_reaches_cluster_and_bucket() -> None:
    recording = build(EKS_SPEC, protect=True)
    assert recording.one(CLUSTER).protect and recording.one("aws:s3/bucket:Bucket").protect


def test_children_are_parented_and_named_after_the_component(eks_run: Recording) -> None:
    component = eks_run.one("trainstack:sagemaker:HyperPodCluster")
    urns = eks_run.by_urn()
    for resource in eks_run.resources:
        if resource.type.startswith(("aws:", "aws-native:", "trainstack:sagemaker:HyperPodExecutionRole")):
            assert resource.name.startswith("hp-"), resource.name
            ancestor = resource.parent
            while ancestor and ancestor != component.urn:
                ancestor = urns[ancestor].parent
            assert ancestor == component.urn, resource.name


def test_eks_orchestrator_needs_the_cluster_arn() -> None:
    with pytest.raises(Exception, match="eks_cluster_arn"):
        build(EKS_SPEC, eks_cluster_arn=None)


def test_training_job_role_and_vpc_settings() -> None:
    def program() -> None:
        provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
        role = TrainingJobRole(
            "tj",
            TrainingJobRoleArgs(
                base_name="trainstack-test",
                region="us-east-1",
                teams=["research", "pretraining"],
                datasets_bucket_arn="arn:aws:s3:::ds",
                checkpoints_bucket_arn="arn:aws:s3:::ck",
                subnet_ids=["subnet-0gpu"],
                security_group_ids=["sg-0efa"],
                vpc_id="vpc-0a1",
                fsx_arn="arn:aws:fsx:us-east-1:123456789012:file-system/fs-0abc",
                kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/k",
            ),
            pulumi.ResourceOptions(provider=provider),
        )
        pulumi.export("subnets", role.subnet_ids)
        pulumi.export("sgs", role.security_group_ids)
        pulumi.export("roles", role.role_arns)

    recording = run_component(program)
    roles = recording.by_type("aws:iam/role:Role")
    assert sorted(r.inputs["name"] for r in roles) == [
        "trainstack-test-sm-train-pretraining",
        "trainstack-test-sm-train-research",
    ]
    for role in roles:
        trust = json.loads(role.inputs["assumeRolePolicy"])
        assert trust["Statement"][0]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    for policy in recording.by_type("aws:iam/rolePolicy:RolePolicy"):
        team = policy.name.split("-")[1]
        statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
        assert {"ReadDatasets", "ReadWriteOwnCheckpoints", "FsxInput", "DataKey", "EcrPull"} <= set(statements)
        assert statements["ReadWriteOwnCheckpoints"]["Resource"] == [f"arn:aws:s3:::ck/{team}/*"]
    assert set(recording.outputs["roles"]) == {"research", "pretraining"}
    assert {k: recording.outputs[k] for k in ("subnets", "sgs")} == {"subnets": ["subnet-0gpu"], "sgs": ["sg-0efa"]}
