"""The data layer in each committed stack, as the whole program registers it."""

import pytest

from tests.conftest import recording, stack_config

FS = "aws:fsx/lustreFileSystem:LustreFileSystem"


def test_prod_file_system_is_encrypted_persistent_in_the_gpu_az_and_protected() -> None:
    rec, config = recording("prod"), stack_config("prod")
    fs = rec.one(FS)
    assert fs.inputs["deploymentType"] == "PERSISTENT_2" and fs.inputs["kmsKeyId"].startswith("arn:aws:kms:")
    subnets = {s.id: s.inputs["availabilityZone"] for s in rec.by_type("aws:ec2/subnet:Subnet")}
    assert subnets[fs.inputs["subnetIds"]] == config.gpu_availability_zone
    assert fs.protect and fs.retain_on_delete
    assert rec.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").protect
    assert all(
        r.protect
        for t in ("aws:s3/bucket:Bucket", "aws:kms/key:Key")
        for r in rec.by_type(t)
        if r.parent.endswith("-data")
    )


def test_dev_is_scratch_and_unprotected() -> None:
    rec = recording("dev")
    fs = rec.one(FS)
    assert fs.inputs["deploymentType"] == "SCRATCH_2" and not fs.protect and not fs.retain_on_delete
    assert not any(r.protect for r in rec.by_type("aws:s3/bucket:Bucket"))


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_storage_exports(stack: str) -> None:
    outputs = recording(stack).outputs
    for key in ("datasets_bucket", "checkpoints_bucket", "fsx_file_system_id", "fsx_dns_name", "fsx_mount_name"):
        assert outputs.get(key), key
    assert outputs["fsx_file_system_id"].startswith("fs-")


def test_fsx_security_group_admits_the_cluster(stack_name: str) -> None:
    rec = recording(stack_name)
    cluster = rec.one("aws:eks/cluster:Cluster")
    cluster_sg = cluster.outputs["vpcConfig"]["clusterSecurityGroupId"]
    lustre_sg = next(r.id for r in rec.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("lustre-sg"))
    rules = [
        r.inputs
        for r in rec.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.inputs["securityGroupId"] == lustre_sg and r.inputs.get("referencedSecurityGroupId") == cluster_sg
    ]
    assert {(r["fromPort"], r["toPort"]) for r in rules} == {(988, 988), (1018, 1023)}


def test_fsx_security_group_admits_the_workload_group(stack_name: str) -> None:
    # SageMaker training jobs and Slurm HyperPod nodes mount FSx through the workload group.
    rec = recording(stack_name)
    workload_sg = rec.outputs["workload_security_group_id"]
    lustre_sg = next(r.id for r in rec.by_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("lustre-sg"))
    for kind in ("Ingress", "Egress"):
        rules = [
            r.inputs
            for r in rec.by_type(f"aws:vpc/securityGroup{kind}Rule:SecurityGroup{kind}Rule")
            if r.inputs["securityGroupId"] == lustre_sg and r.inputs.get("referencedSecurityGroupId") == workload_sg
        ]
        assert {(r["fromPort"], r["toPort"]) for r in rules} == {(988, 988), (1018, 1023)}, kind
