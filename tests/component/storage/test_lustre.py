"""LustreFileSystem under the recording mocks: ports, placement, encryption, metadata, DRA, protection."""

import pytest

from components.storage.lustre import LustreFileSystem, LustreFileSystemArgs, data_repository_path, log_group_name
from stacks.schema import FsxSpec
from tests.component.helpers import aws_opts
from tests.conftest import run_component

PERSISTENT = FsxSpec(
    deployment_type="PERSISTENT_2",
    throughput_mb_s_per_tib=250,
    storage_capacity_gib=4800,
)
SCRATCH = FsxSpec(deployment_type="SCRATCH_2", storage_capacity_gib=1200)
EFA = FsxSpec(
    deployment_type="PERSISTENT_2",
    throughput_mb_s_per_tib=1000,
    storage_capacity_gib=4800,
    efa_enabled=True,
    metadata_iops=6000,
)
FS = "aws:fsx/lustreFileSystem:LustreFileSystem"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"


def record(spec: FsxSpec, protect: bool = False, efa_sg: str | None = "sg-efa"):
    return run_component(
        lambda: LustreFileSystem(
            "lustre",
            LustreFileSystemArgs(
                spec=spec,
                base_name="trainstack-test",
                vpc_id="vpc-1",
                subnet_id="subnet-gpu",
                client_security_group_ids=["sg-cluster"],
                kms_key_arn="arn:aws:kms:us-east-1:1:key/k",
                datasets_bucket_name="datasets-bkt",
                efa_security_group_id=efa_sg,
                protect=protect,
            ),
            opts=aws_opts(),
        )
    )


@pytest.fixture(scope="module")
def prod():
    return record(PERSISTENT, protect=True)


def test_lustre_ports_from_clients_and_between_servers(prod) -> None:
    sg_id = prod.one("aws:ec2/securityGroup:SecurityGroup").id
    everything = prod.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    ingress = [r for r in everything if r.inputs["securityGroupId"] == sg_id]
    seen = {(r.inputs["referencedSecurityGroupId"], r.inputs["fromPort"], r.inputs["toPort"]) for r in ingress}
    assert seen == {(peer, low, high) for peer in (sg_id, "sg-cluster") for low, high in ((988, 988), (1018, 1023))}
    assert all(r.inputs["ipProtocol"] == "tcp" for r in everything)
    egress = prod.by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert len(egress) == 4
    # Issue 11: the file servers also open connections to clients, so each client group admits them.
    client_side = {
        (r.inputs["securityGroupId"], r.inputs["referencedSecurityGroupId"], r.inputs["fromPort"])
        for r in everything
        if r.inputs["securityGroupId"] != sg_id
    }
    assert client_side == {("sg-cluster", sg_id, 988), ("sg-cluster", sg_id, 1018)}


def test_persistent_file_system_settings(prod) -> None:
    fs = prod.one(FS).inputs
    assert fs["deploymentType"] == "PERSISTENT_2" and fs["fileSystemTypeVersion"] == "2.15"
    assert fs["subnetIds"] == "subnet-gpu"
    assert fs["kmsKeyId"] == "arn:aws:kms:us-east-1:1:key/k"
    assert fs["perUnitStorageThroughput"] == 250 and fs["storageCapacity"] == 4800
    assert fs["dataCompressionType"] == "LZ4"
    assert fs["metadataConfiguration"] == {"mode": "AUTOMATIC"}
    # Linked to S3 by the association: FSx takes no backups of it, automatic or final (User Guide, "Working
    # with backups"); the contract tier and the policy pack refuse either.
    assert fs["automaticBackupRetentionDays"] == 0 and "copyTagsToBackups" not in fs
    assert fs["skipFinalBackup"] is True
    assert prod.one(DRA).property_dependencies["fileSystemId"] == (prod.one(FS).urn,)
    assert fs["logConfiguration"]["level"] == "WARN_ERROR"
    assert fs["logConfiguration"]["destination"].endswith(":log-group:/aws/fsx/trainstack-test")
    assert "efaEnabled" not in fs


def test_file_system_waits_for_its_security_group_rules(prod) -> None:
    fs = prod.one(FS)
    rules = [r.urn for r in prod.resources if r.type.startswith("aws:vpc/securityGroup")]
    assert set(rules) <= set(fs.dependencies)


def test_dra_imports_every_change_and_exports_nothing_by_default(prod) -> None:
    dra = prod.one(DRA).inputs
    assert dra["dataRepositoryPath"] == "s3://datasets-bkt/datasets/" and dra["fileSystemPath"] == "/datasets"
    # Import-only: no file system user can change or delete the bucket, the source of truth.
    assert dra["s3"] == {"autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}}
    assert dra["deleteDataInFilesystem"] is False


def test_root_is_squashed_to_nobody(prod) -> None:
    assert prod.one(FS).inputs["rootSquashConfiguration"] == {"rootSquash": "65534:65534"}


def test_prod_protects_and_retains(prod) -> None:
    fs = prod.one(FS)
    assert fs.protect and fs.retain_on_delete and prod.one(DRA).protect


def test_scratch_has_no_persistent_settings_and_no_protection() -> None:
    rec = record(SCRATCH)
    fs = rec.one(FS)
    for key in ("kmsKeyId", "perUnitStorageThroughput", "metadataConfiguration", "automaticBackupRetentionDays"):
        assert key not in fs.inputs, key
    assert fs.inputs["deploymentType"] == "SCRATCH_2"
    assert not fs.protect and not fs.retain_on_delete
    assert rec.one(DRA).inputs["dataRepositoryPath"] == "s3://datasets-bkt/datasets/"


def test_efa_file_system_has_its_prerequisites() -> None:
    rec = record(EFA)
    fs = rec.one(FS).inputs
    sg_id = rec.one("aws:ec2/securityGroup:SecurityGroup").id
    assert fs["efaEnabled"] is True
    assert fs["metadataConfiguration"] == {"mode": "USER_PROVISIONED", "iops": 6000}
    assert fs["securityGroupIds"] == [sg_id, "sg-efa"]
    everything = [r.inputs for r in rec.resources if r.type.startswith("aws:vpc/") and r.inputs["ipProtocol"] == "-1"]
    assert len(everything) == 2 and all(r["referencedSecurityGroupId"] == sg_id for r in everything)


def test_efa_without_an_efa_security_group_is_refused() -> None:
    with pytest.raises(Exception, match="efa_security_group_id"):
        record(EFA, efa_sg=None)


def test_pure_names() -> None:
    assert log_group_name("trainstack-prod") == "/aws/fsx/trainstack-prod"
    assert data_repository_path("b", "") == "s3://b/"
