"""LustreVolume under the recording mocks: CSI add-on with a describe-only role, one bound PV + PVC per team."""

import json

import pulumi
import pytest

from components.storage.lustre_volume import CSI_DRIVER, LustreVolume, LustreVolumeArgs
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


def test_each_team_gets_its_own_directory_and_the_datasets_read_only(rec) -> None:
    volumes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.by_type(PV)}
    teams = ("pretraining", "research")
    assert set(volumes) == {f"fsx-{kind}-{team}" for kind in ("team", "datasets") for team in teams}
    for team in teams:
        own, datasets = volumes[f"fsx-team-{team}"], volumes[f"fsx-datasets-{team}"]
        # A subdirectory mount: never the root, never another team's directory.
        assert own["csi"]["volumeAttributes"] == {
            "dnsname": "fs-0123.fsx.us-east-1.amazonaws.com",
            "mountname": f"abcd1234/teams/{team}",
        }
        assert own["accessModes"] == ["ReadWriteMany"] and "readOnly" not in own["csi"]
        assert own["claimRef"] == {"namespace": team, "name": "fsx-lustre"}
        assert datasets["csi"]["volumeAttributes"]["mountname"] == "abcd1234/datasets"
        assert datasets["csi"]["readOnly"] is True and datasets["accessModes"] == ["ReadOnlyMany"]
        assert datasets["claimRef"] == {"namespace": team, "name": "fsx-datasets"}
        # The datasets mount `ro` whatever the pod says (the driver adds `ro` only when the pod asks); the team's own
        # directory stays writable.
        assert own["mountOptions"] == ["flock"] and datasets["mountOptions"] == ["flock", "ro"]
        for spec in (own, datasets):
            assert spec["csi"]["driver"] == CSI_DRIVER and spec["csi"]["volumeHandle"] == "fs-0123"
            assert spec["persistentVolumeReclaimPolicy"] == "Retain"
            assert spec["capacity"] == {"storage": "4800Gi"} and spec["storageClassName"] == ""


def test_each_claim_binds_its_own_volume(rec) -> None:
    claims = rec.by_type(PVC)
    assert {c.inputs["metadata"]["namespace"] for c in claims} == {"pretraining", "research"}
    for claim in claims:
        namespace = claim.inputs["metadata"]["namespace"]
        spec = claim.inputs["spec"]
        kind = "team" if claim.inputs["metadata"]["name"] == "fsx-lustre" else "datasets"
        assert spec["volumeName"] == f"fsx-{kind}-{namespace}" and spec["storageClassName"] == ""
        # A fixed, nominal request: a claim whose request changes is replaced, stranding its Retain PV.
        assert spec["resources"]["requests"] == {"storage": "1200Gi"}


def test_duplicate_namespaces_are_refused() -> None:
    with pytest.raises(Exception, match="duplicates"):
        run_component(lambda: build(["research", "research"]))
