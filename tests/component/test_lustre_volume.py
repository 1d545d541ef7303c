"""LustreVolume under the recording mocks: CSI add-on with a describe-only role, one bound PV + PVC per team."""

import json

import pulumi
import pytest

from components.lustre_volume import CSI_DRIVER, LustreVolume, LustreVolumeArgs
from tests.component.helpers import aws_opts, k8s_opts
from tests.conftest import run_component

PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def build(namespaces: list[str]) -> LustreVolume:
    providers = [aws_opts().provider, k8s_opts().provider]
    return LustreVolume(
        "vol",
        LustreVolumeArgs(
            cluster_name="trainstack-test",
            addon_version="v1.5.0-eksbuild.1",
            namespaces=namespaces,
            file_system_id="fs-0123",
            dns_name="fs-0123.fsx.us-east-1.amazonaws.com",
            mount_name="abcd1234",
            capacity_gib=4800,
        ),
        opts=pulumi.ResourceOptions(providers=providers),
    )


@pytest.fixture(scope="module")
def rec():
    return run_component(lambda: build(["pretraining", "research"]))


def test_addon_controller_can_only_describe_file_systems(rec) -> None:
    # Static provisioning creates and deletes nothing; AmazonFSxFullAccess could delete every file system.
    addon = rec.one("aws:eks/addon:Addon")
    assert addon.inputs["addonName"] == "aws-fsx-csi-driver" and addon.inputs["addonVersion"] == "v1.5.0-eksbuild.1"
    association = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.inputs["namespace"] == "kube-system"
    assert association.inputs["serviceAccount"] == "fsx-csi-controller-sa"
    assert association.urn in addon.dependencies
    assert not rec.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")  # no managed policy at all
    [inline] = [json.loads(r.inputs["policy"]) for r in rec.by_type("aws:iam/rolePolicy:RolePolicy")]
    assert [action for statement in inline["Statement"] for action in statement["Action"]] == [
        "fsx:DescribeFileSystems"
    ]


def test_one_pv_per_team_with_the_file_system(rec) -> None:
    volumes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.by_type(PV)}
    assert set(volumes) == {"fsx-lustre-pretraining", "fsx-lustre-research"}
    for name, spec in volumes.items():
        assert spec["csi"] == {
            "driver": CSI_DRIVER,
            "volumeHandle": "fs-0123",
            "volumeAttributes": {"dnsname": "fs-0123.fsx.us-east-1.amazonaws.com", "mountname": "abcd1234"},
        }
        assert spec["accessModes"] == ["ReadWriteMany"] and spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["mountOptions"] == ["flock"] and spec["capacity"] == {"storage": "4800Gi"}
        assert spec["storageClassName"] == ""
        assert spec["claimRef"] == {"namespace": name.removeprefix("fsx-lustre-"), "name": "fsx-lustre"}


def test_each_claim_binds_its_own_volume(rec) -> None:
    claims = rec.by_type(PVC)
    assert {c.inputs["metadata"]["namespace"] for c in claims} == {"pretraining", "research"}
    for claim in claims:
        namespace = claim.inputs["metadata"]["namespace"]
        spec = claim.inputs["spec"]
        assert spec["volumeName"] == f"fsx-lustre-{namespace}" and spec["storageClassName"] == ""
        assert spec["accessModes"] == ["ReadWriteMany"]
        # A fixed, nominal request: a claim whose request changes is replaced, stranding its Retain PV.
        assert spec["resources"]["requests"] == {"storage": "1200Gi"}


def test_duplicate_namespaces_are_refused() -> None:
    with pytest.raises(Exception, match="duplicates"):
        run_component(lambda: build(["research", "research"]))
