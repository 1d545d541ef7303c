"""TeamStorageAccess under the recording mocks: each team's role reaches only its own checkpoint prefix."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.storage.team_storage import TEAM_SERVICE_ACCOUNT, TeamStorageAccess, TeamStorageAccessArgs
from tests.conftest import run_component

DATASETS = "arn:aws:s3:::datasets-bkt"
CHECKPOINTS = "arn:aws:s3:::checkpoints-bkt"


def record():
    def program() -> None:
        aws_provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
        k8s_provider = k8s.Provider("k8s", k8s.ProviderArgs(kubeconfig="{}"))
        namespaces = {
            team: k8s.core.v1.Namespace(
                f"ns-{team}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=team),
                opts=pulumi.ResourceOptions(provider=k8s_provider),
            )
            for team in ("pretraining", "research")
        }
        TeamStorageAccess(
            "ts",
            TeamStorageAccessArgs(
                cluster_name="trainstack-test",
                teams=list(namespaces),
                namespaces=namespaces,
                datasets_bucket_arn=DATASETS,
                checkpoints_bucket_arn=CHECKPOINTS,
                data_key_arn="arn:aws:kms:us-east-1:123456789012:key/data",
                checkpoints_key_arn="arn:aws:kms:us-east-1:123456789012:key/ckpt",
                region="us-east-1",
            ),
            pulumi.ResourceOptions(providers=[aws_provider, k8s_provider]),
        )

    return run_component(program)


def test_each_team_writes_only_under_its_own_checkpoint_prefix() -> None:
    rec = record()
    policies = {r.name: json.loads(r.inputs["policy"]) for r in rec.by_type("aws:iam/rolePolicy:RolePolicy")}
    assert set(policies) == {"ts-pretraining-inline", "ts-research-inline"}
    for team in ("pretraining", "research"):
        statements = {s["Sid"]: s for s in policies[f"ts-{team}-inline"]["Statement"]}
        assert statements["OwnCheckpoints"]["Resource"] == f"{CHECKPOINTS}/{team}/*"
        assert statements["ListOwnCheckpoints"]["Condition"] == {"StringLike": {"s3:prefix": [f"{team}/", f"{team}/*"]}}
        assert statements["ReadDatasets"] == {
            "Sid": "ReadDatasets",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"{DATASETS}/*",
        }
        # Nothing else in either bucket: no other prefix, no version deletes, no bucket configuration.
        resources = [s["Resource"] for s in statements.values() if s["Resource"].startswith("arn:aws:s3")]
        assert all(r in (DATASETS, f"{DATASETS}/*", CHECKPOINTS, f"{CHECKPOINTS}/{team}/*") for r in resources)
        assert "s3:DeleteObjectVersion" not in json.dumps(statements)


def test_the_association_names_the_team_service_account() -> None:
    rec = record()
    associations = rec.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert {(a.inputs["namespace"], a.inputs["serviceAccount"]) for a in associations} == {
        ("pretraining", TEAM_SERVICE_ACCOUNT),
        ("research", TEAM_SERVICE_ACCOUNT),
    }
    accounts = rec.by_type("kubernetes:core/v1:ServiceAccount")
    assert sorted(a.inputs["metadata"]["namespace"] for a in accounts) == ["pretraining", "research"]


def test_the_keys_serve_the_team_only_through_s3() -> None:
    rec = record()
    for policy in rec.by_type("aws:iam/rolePolicy:RolePolicy"):
        statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
        kms = {sid: s for sid, s in statements.items() if "kms:" in json.dumps(s["Action"])}
        assert set(kms) == {"DecryptDatasets", "EncryptCheckpoints"}
        for statement in kms.values():
            assert statement["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
