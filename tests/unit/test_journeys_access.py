"""The access journeys (trainstack/journeys/access.py): every one holds on every committed stack, and one edit of
the recording (or of a stack file, in the e2e tier) breaks the named step."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from stacks.load import load_file
from stacks.schema import StackConfig
from tests.conftest import ROOT, STACKS, edited_config, program_recording, recording, stack_config
from trainstack.engine import UNKNOWN, Recording
from trainstack.journeys import DESTROY, WRITERS, Journey, Trip, access
from trainstack.journeys.iam import Policy
from trainstack.tokens import BUCKET_OBJECT, FSX_DATA_REPOSITORY_ASSOCIATION

EXAMPLES = sorted((ROOT / "stacks" / "examples").glob("*.yaml"))


def walked(rec: Recording, stack: StackConfig) -> list[Journey]:
    return list(access.walk(Trip(recording=rec, stack=stack)))


def edited(rec: Recording, name: str, edit: Callable[[dict[str, Any]], None]) -> Recording:
    """`rec` with the inputs of the resource named `name` edited (a copy: the shared recording stays whole)."""
    resources = []
    for r in rec.resources:
        if r.name == name:
            inputs = copy.deepcopy(r.inputs)
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
        resources.append(r)
    assert any(r.name == name for r in rec.resources), name
    return dataclasses.replace(rec, resources=tuple(resources))


def without(rec: Recording, name: str) -> Recording:
    return dataclasses.replace(rec, resources=tuple(r for r in rec.resources if r.name != name))


def policy_edit(edit: Callable[[list[dict[str, Any]]], Any]) -> Callable[[dict[str, Any]], None]:
    def apply(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        edit(document["Statement"])
        inputs["policy"] = json.dumps(document)

    return apply


def drop_sid(sid: str) -> Callable[[dict[str, Any]], None]:
    def edit(statements: list[dict[str, Any]]) -> None:
        statements[:] = [s for s in statements if s.get("Sid") != sid]

    return policy_edit(edit)


def broken(journeys: list[Journey], subject: str) -> tuple[str, str]:
    """The first failing step's name and detail of the journey whose subject starts with `subject`."""
    [journey] = [j for j in journeys if j.subject.startswith(subject)]
    step = journey.broken_step
    assert step is not None, f"{journey.subject} holds"
    return step.name, step.detail


def assert_holds_and_is_complete(journeys: list[Journey], stack: StackConfig, rec: Recording) -> None:
    assert journeys and all(j.holds for j in journeys), [(j.subject, j.broken_step) for j in journeys if not j.holds]
    subjects = [j.subject for j in journeys]
    for team in stack.kubernetes.teams:
        assert f"team {team.name}: data through its Pod Identity role" in subjects
    assert any(s.startswith("FSx for Lustre") for s in subjects) == bool(rec.by_type(FSX_DATA_REPOSITORY_ASSOCIATION))
    assert [s for s in subjects if s.startswith("SageMaker training role")] == (
        [
            f"SageMaker training role of team {team.name}: datasets in, its checkpoints out"
            for team in sorted(stack.kubernetes.teams, key=lambda t: t.name)
        ]
        if stack.sagemaker.training_job_role
        else []
    )
    assert any(j.kind == DESTROY for j in journeys) is not stack.protect_data
    assert all(j.kind in (WRITERS, DESTROY) and all(s.source for s in j.steps) for j in journeys)


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_every_access_journey_holds_on_the_committed_stacks(stack: str) -> None:
    rec = recording(stack)
    assert_holds_and_is_complete(walked(rec, stack_config(stack)), stack_config(stack), rec)


@pytest.mark.e2e
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_access_journey_holds_on_the_examples(path: Any) -> None:
    stack = load_file(path)
    rec = program_recording(stack, stack.environment.value)
    assert_holds_and_is_complete(walked(rec, stack), stack, rec)


@pytest.mark.slow
def test_a_preview_knows_no_key_policy_yet_and_breaks_nothing() -> None:
    assert not [j for j in walked(recording("dev", preview=True), stack_config("dev")) if not j.holds]


# ---------------------------------------------------------------------------------- writers and keys


@pytest.mark.slow
def test_the_training_role_without_the_checkpoints_key_cannot_write_checkpoints() -> None:
    # The setting before issue 29: the role writes the checkpoints bucket, which S3 encrypts with a key it had
    # no grant on.
    rec = edited(recording("staging"), "sagemaker-training-research-inline", drop_sid("CheckpointsKey"))
    name, detail = broken(walked(rec, stack_config("staging")), "SageMaker training role of team research")
    assert name == "team research's training job encrypts checkpoints with its key"
    assert (
        "kms:GenerateDataKey on data-checkpoints-key via S3: denied: no identity policy statement allows it" in detail
    )


@pytest.mark.slow
def test_the_training_role_widened_to_the_whole_bucket_reaches_every_team() -> None:
    # The setting before issue 33: one SageMaker role writing the whole checkpoints bucket.
    def widen(statements: list[dict[str, Any]]) -> None:
        [own] = [s for s in statements if s["Sid"] == "ReadWriteOwnCheckpoints"]
        own["Resource"] = [own["Resource"][0].split("/")[0] + "/*"]

    rec = edited(recording("staging"), "sagemaker-training-research-inline", policy_edit(widen))
    name, detail = broken(walked(rec, stack_config("staging")), "SageMaker training role of team research")
    assert name == "team research's training job cannot read, write or list another prefix (shared)"
    assert "s3:PutObject data-checkpoints-" in detail and "/shared/step-000100/model.pt: allowed" in detail


@pytest.mark.slow
def test_without_the_own_key_deny_an_upload_under_another_key_lands() -> None:
    rec = edited(recording("staging"), "data-checkpoints-policy", drop_sid("DenyUploadUnderAnotherKey"))
    name, detail = broken(walked(rec, stack_config("staging")), "team research: data")
    assert name == "team research cannot upload a checkpoint under another key"
    assert "key/another" in detail and "allowed" in detail
    # An upload that names no key (the bucket's default) still lands: the deny needs the header.
    assert all(j.holds for j in walked(recording("staging"), stack_config("staging")))


@pytest.mark.slow
def test_a_team_prefix_widened_to_the_whole_bucket_reaches_the_other_team() -> None:
    def widen(statements: list[dict[str, Any]]) -> None:
        [own] = [s for s in statements if s["Sid"] == "OwnCheckpoints"]
        own["Resource"] = own["Resource"].split("/")[0] + "/*"

    rec = edited(recording("prod"), "team-storage-research-inline", policy_edit(widen))
    name, detail = broken(walked(rec, stack_config("prod")), "team research")
    assert name == "team research cannot read, write or list another prefix (pretraining, shared)"
    assert "s3:PutObject data-checkpoints-3e76139/pretraining/step-000100/model.pt: allowed" in detail


@pytest.mark.slow
def test_a_key_policy_without_the_account_statement_makes_iam_grants_void() -> None:
    rec = edited(recording("staging"), "data-key", drop_sid("AccountUsesKeyThroughIam"))
    name, detail = broken(walked(rec, stack_config("staging")), "team research")
    assert name == "team research decrypts datasets with its key"
    assert "neither names the principal nor lets its account's IAM policies grant it" in detail


@pytest.mark.slow
def test_a_team_key_grant_for_another_service_does_not_serve_s3() -> None:
    def elsewhere(statements: list[dict[str, Any]]) -> None:
        for s in statements:
            if s["Sid"] == "EncryptCheckpoints":
                s["Condition"] = {"StringEquals": {"kms:ViaService": "ec2.us-east-1.amazonaws.com"}}

    rec = edited(recording("staging"), "team-storage-research-inline", policy_edit(elsewhere))
    name, _ = broken(walked(rec, stack_config("staging")), "team research")
    assert name == "team research encrypts checkpoints with its key"


@pytest.mark.slow
def test_an_endpoint_policy_without_the_account_buckets_stops_the_team_at_the_endpoint() -> None:
    rec = edited(recording("staging"), "network-s3", drop_sid("AccountPrincipalsToAccountBuckets"))
    name, detail = broken(walked(rec, stack_config("staging")), "team research")
    assert name.startswith("team research reads s3://data-datasets-")
    assert "S3 gateway endpoint policy of network-s3 allows no statement for it" in detail


@pytest.mark.slow
def test_a_team_without_its_pod_identity_association_gets_no_credentials() -> None:
    rec = without(recording("staging"), "team-storage-research-association")
    name, _ = broken(walked(rec, stack_config("staging")), "team research")
    assert name == "pods on research/training get a role"


@pytest.mark.slow
def test_fsx_without_its_key_policy_statement_cannot_read_the_linked_bucket() -> None:
    rec = edited(recording("dev"), "data-key", drop_sid("AllowFsxDataRepositoryThroughS3"))
    name, _ = broken(walked(rec, stack_config("dev")), "FSx for Lustre")
    assert name == "FSx decrypts datasets with its key"


@pytest.mark.slow
def test_a_lifecycle_upload_without_the_stack_key_is_refused() -> None:
    def other_key(inputs: dict[str, Any]) -> None:
        inputs["kmsKeyId"] = inputs["kmsKeyId"].rsplit("/", 1)[0] + "/not-the-stack-key"

    rec = edited(recording("staging"), "hyperpod-lifecycle-on-create-sh", other_key)
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod lifecycle scripts")
    assert name.startswith("the deployer uploads s3://sagemaker-")
    assert "DenyLifecycleUploadWithoutStackKey" in detail


def _vpc_only(sid: str, actions: list[str], statements: list[dict[str, Any]]) -> dict[str, Any]:
    """A Deny of `actions` from outside the VPC, with the data buckets' own endpoint condition."""
    condition = next(s for s in statements if s["Sid"] == "DenyDataAccessOutsideVpc")["Condition"]
    endpoint = {"StringNotEqualsIfExists": condition["StringNotEqualsIfExists"]}
    return {"Sid": sid, "Effect": "Deny", "Principal": "*", "Action": actions, "Resource": "*", "Condition": endpoint}


@pytest.mark.slow
def test_fsx_reads_its_bucket_from_outside_the_vpc_only_by_its_exemption() -> None:
    """FSx's service-linked role reaches the linked bucket from AWS's network, not through the stack's endpoint."""

    def no_exemption(statements: list[dict[str, Any]]) -> None:
        deny = next(s for s in statements if s["Sid"] == "DenyDataAccessOutsideVpc")
        del deny["Condition"]["ArnNotLike"]

    rec = edited(recording("staging"), "data-datasets-policy", policy_edit(no_exemption))
    name, detail = broken(walked(rec, stack_config("staging")), "FSx for Lustre")
    assert "DenyDataAccessOutsideVpc" in detail, (name, detail)


@pytest.mark.slow
def test_the_deployer_uploads_lifecycle_scripts_from_outside_the_vpc() -> None:
    [datasets] = [r for r in recording("staging").resources if r.name == "data-datasets-policy"]
    stack_endpoint = _vpc_only(
        "OnlyThroughTheEndpoint", ["s3:PutObject"], json.loads(datasets.inputs["policy"])["Statement"]
    )
    rec = edited(
        recording("staging"),
        "hyperpod-lifecycle-bucket-policy",
        policy_edit(lambda statements: statements.append(stack_endpoint)),
    )
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod lifecycle scripts")
    assert name.startswith("the deployer uploads s3://sagemaker-") and "OnlyThroughTheEndpoint" in detail


@pytest.mark.slow
def test_destroy_deletes_each_emptied_bucket_from_outside_the_vpc() -> None:
    def vpc_only_delete(statements: list[dict[str, Any]]) -> None:
        statements.append(_vpc_only("NoBucketDeletionOutsideVpc", ["s3:DeleteBucket"], statements))

    rec = edited(recording("staging"), "data-datasets-policy", policy_edit(vpc_only_delete))
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer deletes data-datasets-1a59e9f" and "NoBucketDeletionOutsideVpc" in detail


@pytest.mark.slow
def test_a_bucket_without_a_policy_has_no_vpc_only_step_and_the_walk_goes_on() -> None:
    journeys = walked(without(recording("staging"), "data-datasets-policy"), stack_config("staging"))
    [destroy] = [j for j in journeys if j.kind == DESTROY]
    names = [s.name for s in destroy.steps]
    assert "the deployer deletes data-datasets-1a59e9f" in names
    assert "the deployer still cannot read or write data-datasets-1a59e9f from outside the VPC" not in names
    assert "the deployer still cannot read or write data-checkpoints-3e76139 from outside the VPC" in names


@pytest.mark.slow
def test_the_execution_role_without_its_ebs_grant_cannot_attach_volumes() -> None:
    rec = edited(recording("staging"), "hyperpod-execution-inline", drop_sid("EbsVolumeKeyGrants"))
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod")
    assert name == "the execution role grants its key only to AWS services"
    assert detail.startswith("EBS's grant for a HyperPod volume: denied")


@pytest.mark.slow
def test_a_bucket_without_a_stack_key_needs_no_key_permission() -> None:
    journeys = walked(without(recording("staging"), "data-datasets-encryption"), stack_config("staging"))
    details = [s.detail for j in journeys for s in j.steps if "decrypts datasets" in s.name]
    assert details and all(
        d == "kms:Decrypt on no stack key via S3: data-datasets-1a59e9f is not encrypted with a key of this stack"
        for d in details
    )
    assert all(j.holds for j in journeys if j.subject.startswith("team "))


@pytest.mark.slow
def test_a_team_lists_and_reads_its_own_checkpoints_prefix_only() -> None:
    """ListBucket is asked with the object's folder as s3:prefix, which the team's ListOwnCheckpoints allows only
    under the team's own prefix (S3 User Guide, "ListObjectsV2" and the s3:prefix condition key)."""
    world = access.World.read(Trip(recording=recording("staging"), stack=stack_config("staging")))
    assert world is not None
    [role] = [arn for arn in world.roles if arn.endswith("-research")]
    checkpoints = world.buckets["checkpoints"]

    def reads(key: str) -> bool:
        steps = access.access_steps(world, "research", role, world.roles[role], [(checkpoints, key)], [],
                                    from_vpc=True, source="test")  # fmt: skip
        return steps[0].holds

    assert reads("research/run-1/step-100.pt")
    assert not reads("pretraining/run-1/step-100.pt")


@pytest.mark.slow
def test_destroy_deletes_a_keys_aliases_before_the_key() -> None:
    def no_alias_deletion(statements: list[dict[str, Any]]) -> None:
        statements.append({"Sid": "KeepAliases", "Effect": "Deny", "Principal": "*", "Action": "kms:DeleteAlias",
                           "Resource": "*"})  # fmt: skip

    rec = edited(recording("staging"), "data-key", policy_edit(no_alias_deletion))
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer deletes data-key" and "KeepAliases" in detail


@pytest.mark.slow
def test_a_team_role_unknown_in_preview_gets_only_its_binding_step() -> None:
    rec = edited(recording("staging"), "team-storage-research-association", lambda i: i.update(roleArn=UNKNOWN))
    [journey] = [j for j in walked(rec, stack_config("staging")) if j.subject.startswith("team research")]
    assert [s.name for s in journey.steps] == ["pods on research/training get a role"] and journey.holds


@pytest.mark.slow
def test_listing_asks_for_the_objects_own_folder() -> None:
    world = access.World.read(Trip(recording=recording("staging"), stack=stack_config("staging")))
    assert world is not None
    checkpoints = world.buckets["checkpoints"]
    exact = Policy.of("exact folder", {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": checkpoints.arn,
         "Condition": {"StringEquals": {"s3:prefix": "research/run-1/"}}},
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{checkpoints.arn}/*"},
        {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}]})  # fmt: skip
    [role] = [arn for arn in world.roles if arn.endswith("-research")]

    def reads(key: str) -> bool:
        steps = access.access_steps(world, "r", role, [exact], [(checkpoints, key)], [], from_vpc=True, source="t")
        return steps[0].holds

    assert reads("research/run-1/step-100.pt") and not reads("research/run-1/sub/step-100.pt")


@pytest.mark.slow
def test_a_team_that_reads_the_data_from_outside_the_vpc_is_seen() -> None:
    rec = edited(recording("staging"), "data-datasets-policy", drop_sid("DenyDataAccessOutsideVpc"))
    name, _ = broken(walked(rec, stack_config("staging")), "team research")
    assert name == "team research's credentials cannot read the data from outside the VPC"


@pytest.mark.slow
def test_a_bucket_destroy_keeps_is_not_emptied() -> None:
    rec = edited(recording("staging"), "data-datasets", lambda i: i.update(forceDestroy=False))
    [destroy] = [j for j in walked(rec, stack_config("staging")) if j.kind == DESTROY]
    kept = [s for s in destroy.steps if "data-datasets-1a59e9f" in s.name]
    assert [(s.name, s.holds) for s in kept] == [("data-datasets-1a59e9f is kept", True)]


@pytest.mark.slow
def test_no_lifecycle_scripts_no_lifecycle_journey_and_a_login_role_without_policies_adds_no_step() -> None:
    staging = recording("staging")
    without_scripts = dataclasses.replace(
        staging, resources=tuple(r for r in staging.resources if r.type != BUCKET_OBJECT)
    )
    subjects = [j.subject for j in walked(without_scripts, stack_config("staging"))]
    assert not [s for s in subjects if s.startswith("HyperPod lifecycle scripts")]
    stranger = dataclasses.replace(
        staging, outputs={**staging.outputs, "hyperpod_login_role_arn": "arn:aws:iam::123456789012:role/elsewhere"}
    )
    [journey] = [j for j in walked(stranger, stack_config("staging")) if j.subject.startswith("HyperPod lifecycle")]
    [plain] = [j for j in walked(staging, stack_config("staging")) if j.subject.startswith("HyperPod lifecycle")]
    assert [s.name for s in journey.steps] == [s.name for s in plain.steps]


@pytest.mark.slow
def test_an_execution_role_the_plan_has_no_policies_for_adds_no_step() -> None:
    staging = recording("staging")
    [plain] = [j for j in walked(staging, stack_config("staging")) if j.subject.startswith("HyperPod lifecycle")]
    other = dataclasses.replace(
        staging, outputs={**staging.outputs, "hyperpod_execution_role_arn": "arn:aws:iam::123456789012:role/elsewhere"}
    )
    [journey] = [j for j in walked(other, stack_config("staging")) if j.subject.startswith("HyperPod lifecycle")]
    assert [s.name for s in journey.steps] == [s.name for s in plain.steps][:2]  # the deployer's upload only


@pytest.mark.slow
def test_a_lifecycle_bucket_without_a_stack_key_has_no_grant_to_limit() -> None:
    rec = without(recording("staging"), "hyperpod-lifecycle-bucket-encryption")
    [journey] = [j for j in walked(rec, stack_config("staging")) if j.subject.startswith("HyperPod lifecycle")]
    [grant] = [s for s in journey.steps if s.name == "the execution role grants its key only to AWS services"]
    assert grant.holds and grant.detail == "no stack key"


@pytest.mark.slow
def test_a_policy_the_evaluator_cannot_judge_stops_destroy_with_the_reason() -> None:
    def unjudgeable(statements: list[dict[str, Any]]) -> None:
        statements[0]["Condition"] = {"StringNotLike": {"aws:userid": "AROA*"}}

    rec = edited(recording("staging"), "data-datasets-policy", policy_edit(unjudgeable))
    [destroy] = [j for j in walked(rec, stack_config("staging")) if j.kind == DESTROY]
    assert destroy.broken_step is not None and destroy.broken_step.name == "the stack's bucket and key policies"
    assert destroy.steps[-1].name == "who else can destroy this stack"


@pytest.mark.slow
def test_administrators_of_the_stacks_own_account_need_no_cross_account_note() -> None:
    same = "arn:aws:iam::123456789012:role/platform-admin"
    cluster = edited_config("staging", lambda c: c["security"].update(key_administrator_arns=[same]))
    [destroy] = [j for j in walked(recording("staging"), cluster) if j.kind == DESTROY]
    last = destroy.steps[-1]
    assert same in last.detail and "another account" not in last.detail


@pytest.mark.slow
def test_emptying_a_governance_locked_bucket_needs_the_bypass_permission() -> None:
    def no_bypass(statements: list[dict[str, Any]]) -> None:
        statements.append({"Sid": "NoBypass", "Effect": "Deny", "Principal": "*",
                           "Action": "s3:BypassGovernanceRetention", "Resource": "*"})  # fmt: skip

    rec = edited(recording("staging"), "data-checkpoints-policy", policy_edit(no_bypass))
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer deletes every version in data-checkpoints-3e76139" and "NoBypass" in detail
    # a bucket without Object Lock is emptied without it
    rec = edited(recording("staging"), "data-datasets-policy", policy_edit(no_bypass))
    [destroy] = [j for j in walked(rec, stack_config("staging")) if j.kind == DESTROY]
    assert destroy.holds


@pytest.mark.slow
def test_a_data_repository_outside_the_stacks_buckets_has_no_fsx_journey() -> None:
    [dra] = recording("dev").by_type(FSX_DATA_REPOSITORY_ASSOCIATION)
    rec = edited(recording("dev"), dra.name, lambda i: i.update(dataRepositoryPath="s3://someone-elses-bucket/data"))
    assert not [j for j in walked(rec, stack_config("dev")) if j.subject.startswith("FSx for Lustre")]


@pytest.mark.slow
def test_a_training_role_the_plan_has_no_policies_for_or_does_not_know_has_no_journey() -> None:
    staging = recording("staging")
    roles = dict(staging.outputs["sagemaker_training_role_arns"])
    team = sorted(roles)[0]
    for arn in ("arn:aws:iam::123456789012:role/elsewhere", UNKNOWN):
        rec = dataclasses.replace(
            staging, outputs={**staging.outputs, "sagemaker_training_role_arns": {**roles, team: arn}}
        )
        subjects = [j.subject for j in walked(rec, stack_config("staging"))]
        assert f"SageMaker training role of team {team}: datasets in, its checkpoints out" not in subjects
        assert len([s for s in subjects if s.startswith("SageMaker training role")]) == len(roles) - 1


@pytest.mark.slow
def test_an_outside_vpc_role_the_bucket_policy_does_not_exempt_is_refused() -> None:
    """The recording's bucket policies name no outside-VPC role: one added to the config alone reads nothing."""
    ingest = "arn:aws:iam::123456789012:role/ingest"
    cluster = edited_config("staging", lambda c: c["security"].update(outside_vpc_data_role_arns=[ingest]))
    name, detail = broken(walked(recording("staging"), cluster), f"outside-VPC data role {ingest}")
    assert name.endswith("from outside the VPC") and "DenyDataAccessOutsideVpc" in detail


@pytest.mark.slow
def test_the_execution_role_reads_the_lifecycle_scripts_only_by_its_exemption() -> None:
    def no_execution_role(statements: list[dict[str, Any]]) -> None:
        deny = next(s for s in statements if s["Sid"] == "DenyLifecycleReadExceptDeployerAndHyperPod")
        deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] = ["arn:aws:iam::123456789012:user/offline-plan"]

    rec = edited(recording("staging"), "hyperpod-lifecycle-bucket-policy", policy_edit(no_execution_role))
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod lifecycle scripts")
    assert name.startswith("the execution role reads s3://sagemaker-")
    assert "DenyLifecycleReadExceptDeployerAndHyperPod" in detail


def _slurm_example() -> tuple[Recording, StackConfig]:
    stack = load_file(ROOT / "stacks" / "examples" / "hyperpod-slurm.yaml")
    return program_recording(stack, stack.environment.value), stack


@pytest.mark.e2e
def test_a_login_group_on_the_workers_role_breaks_the_lifecycle_journey() -> None:
    rec, stack = _slurm_example()

    def login_as_workers(inputs: dict[str, Any]) -> None:
        by_name = {g["instanceGroupName"]: g for g in inputs["instanceGroups"]}
        by_name["login"]["executionRole"] = by_name["p5"]["executionRole"]

    name, detail = broken(walked(edited(rec, "hyperpod-cluster", login_as_workers), stack), "HyperPod lifecycle")
    assert name == "the login group runs as a role of its own, not the workers' execution role"
    assert detail.startswith("login runs as arn:aws:iam::") and detail.endswith("-hyperpod-login")


@pytest.mark.e2e
def test_the_login_role_is_walked_through_every_step_the_execution_role_is_and_one_more() -> None:
    """Root on a login node holds the login role's credentials: each check of the execution role holds for it too."""
    rec, stack = _slurm_example()
    [journey] = [j for j in walked(rec, stack) if j.subject.startswith("HyperPod lifecycle scripts")]
    names = [s.name for s in journey.steps]
    workers = [n.removeprefix("the execution role ") for n in names if n.startswith("the execution role ")]
    login = [n.removeprefix("the login role ") for n in names if n.startswith("the login role ")]
    assert len(workers) == 4 and login == [
        *workers,
        "cannot decrypt with data-key directly (only S3 for the lifecycle bucket)",
    ]
    assert journey.holds


@pytest.mark.e2e
def test_a_login_role_policy_the_evaluator_cannot_judge_stops_each_of_its_checks() -> None:
    rec, stack = _slurm_example()

    def unjudgeable(statements: list[dict[str, Any]]) -> None:
        statements[0]["Condition"] = {"StringNotLike": {"aws:userid": "AROA*"}}

    rec = edited(rec, "hyperpod-login-inline", policy_edit(unjudgeable))
    [journey] = [j for j in walked(rec, stack) if j.subject.startswith("HyperPod lifecycle scripts")]
    unjudged = [s for s in journey.steps if s.name == "the login role's policies"]
    # the reads, the repointed source, the grant and the direct decrypt: each says it cannot be evaluated
    assert len(unjudged) == 4 and all("condition operator StringNotLike" in s.detail for s in unjudged)
    assert journey.broken_step is unjudged[0]


@pytest.mark.e2e
def test_a_login_role_that_decrypts_directly_breaks_the_lifecycle_journey() -> None:
    rec, stack = _slurm_example()

    def direct(statements: list[dict[str, Any]]) -> None:
        [decrypt] = [s for s in statements if s.get("Sid") == "LifecycleDecrypt"]
        del decrypt["Condition"]

    name, detail = broken(walked(edited(rec, "hyperpod-login-inline", policy_edit(direct)), stack), "HyperPod")
    assert name == "the login role cannot decrypt with data-key directly (only S3 for the lifecycle bucket)"
    assert "allowed" in detail and "LifecycleDecrypt" in detail


@pytest.mark.slow
def test_an_execution_role_without_its_read_deny_reads_a_repointed_source() -> None:
    def no_deny(statements: list[dict[str, Any]]) -> None:
        statements[:] = [s for s in statements if s.get("Sid") != "DenyReadOutsideLifecycle"]

    rec = edited(recording("staging"), "hyperpod-execution-inline", policy_edit(no_deny))
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod lifecycle scripts")
    assert name == "the execution role cannot read a repointed lifecycle source (s3://sagemaker-repointed-source/)"
    assert "s3:GetObject sagemaker-repointed-source/on_create.sh (owner 999999999999): allowed" in detail


@pytest.mark.slow
def test_a_policy_the_evaluator_cannot_judge_fails_its_step_with_the_reason() -> None:
    def unjudgeable(statements: list[dict[str, Any]]) -> None:
        statements[0]["Condition"] = {"StringNotLike": {"aws:userid": "AROA*"}}

    rec = edited(recording("staging"), "team-storage-research-inline", policy_edit(unjudgeable))
    name, detail = broken(walked(rec, stack_config("staging")), "team research")
    assert name == "team research's policies"
    assert "condition operator StringNotLike is not evaluated as AWS does" in detail


# ------------------------------------------------------------------------------------------------ destroy


def _old_vpc_only_deny(statements: list[dict[str, Any]]) -> None:
    """The data buckets' VPC-only deny before issue 29: one statement, every object action, no destroyer."""
    reads = next(s for s in statements if s["Sid"] == "DenyDataAccessOutsideVpc")
    empties = next(s for s in statements if s["Sid"] == "DenyEmptyingOutsideVpc")
    reads["Action"] = reads["Action"] + empties["Action"]
    statements.remove(empties)


@pytest.mark.slow
def test_the_old_vpc_only_deny_stops_destroy_at_the_first_listing() -> None:
    rec = edited(recording("staging"), "data-checkpoints-policy", policy_edit(_old_vpc_only_deny))
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer lists every version of data-checkpoints-3e76139"
    assert "s3:ListBucketVersions data-checkpoints-3e76139: denied: bucket policy of" in detail
    assert "denies (DenyDataAccessOutsideVpc)" in detail


@pytest.mark.slow
def test_a_destroy_exemption_widened_to_reads_is_seen() -> None:
    def widen(statements: list[dict[str, Any]]) -> None:
        by_sid = {s["Sid"]: s for s in statements}
        by_sid["DenyDataAccessOutsideVpc"]["Condition"] = by_sid["DenyEmptyingOutsideVpc"]["Condition"]

    rec = edited(recording("staging"), "data-datasets-policy", policy_edit(widen))
    name, _ = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer still cannot read or write data-datasets-1a59e9f from outside the VPC"


@pytest.mark.slow
def test_compliance_mode_object_lock_makes_destroy_wait_for_retention() -> None:
    def compliance(inputs: dict[str, Any]) -> None:
        inputs["rule"]["defaultRetention"]["mode"] = "COMPLIANCE"

    rec = edited(recording("staging"), "data-checkpoints-object-lock", compliance)
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer deletes every version in data-checkpoints-3e76139"
    assert "compliance-mode Object Lock" in detail


@pytest.mark.slow
def test_a_key_policy_that_forgets_the_deployer_locks_destroy_out() -> None:
    def forget(statements: list[dict[str, Any]]) -> None:
        for s in statements:
            if s["Sid"] == "KeyAdministrators":
                s["Principal"]["AWS"] = [a for a in s["Principal"]["AWS"] if not a.endswith(":user/offline-plan")]
            if s["Sid"] == "DenyDestructionExceptAdministrators":
                arns = s["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
                s["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] = [a for a in arns if "offline-plan" not in a]

    rec = edited(recording("staging"), "eks-secrets-key", policy_edit(forget))
    name, detail = broken(walked(rec, stack_config("staging")), "pulumi destroy")
    assert name == "the deployer deletes eks-secrets-key"
    assert "denies (DenyDestructionExceptAdministrators)" in detail


@pytest.mark.slow
def test_the_plan_names_who_may_destroy_and_who_is_locked_out() -> None:
    [journey] = [j for j in walked(recording("staging"), stack_config("staging")) if j.kind == DESTROY]
    last = journey.steps[-1]
    assert last.name == "who else can destroy this stack" and last.holds
    assert "arn:aws:iam::111122223333:role/ml-platform-admin" in last.detail
    assert "a later deployer not among them is locked out" in last.detail
    assert "administrators in another account may delete the keys but not the buckets' objects" in last.detail


@pytest.mark.slow
def test_a_protected_stack_has_no_destroy_journey() -> None:
    assert not [j for j in walked(recording("prod"), stack_config("prod")) if j.kind == DESTROY]


@pytest.mark.e2e
def test_a_compliance_lock_in_the_staging_stack_file_breaks_destroy() -> None:
    stack = edited_config("staging", lambda c: c["security"]["checkpoint_lock"].update(mode="COMPLIANCE"))
    name, _ = broken(walked(program_recording(stack, "staging"), stack), "pulumi destroy")
    assert name.startswith("the deployer deletes every version in data-checkpoints-")


@pytest.mark.e2e
def test_an_outside_vpc_role_in_the_stack_file_reads_and_writes_both_buckets() -> None:
    ingest = "arn:aws:iam::123456789012:role/ingest"
    stack = edited_config("staging", lambda c: c["security"].update(outside_vpc_data_role_arns=[ingest]))
    journeys = walked(program_recording(stack, "staging"), stack)
    [journey] = [j for j in journeys if j.subject == f"outside-VPC data role {ingest}"]
    assert journey.holds and len(journey.steps) == 8  # read, decrypt, write, encrypt on each of two buckets
    assert all(j.holds for j in journeys)


@pytest.mark.slow
def test_an_unconditioned_grant_lets_the_execution_role_grant_the_key_to_anyone() -> None:
    def unscoped(statements: list[dict[str, Any]]) -> None:
        [grant] = [s for s in statements if s["Sid"] == "EbsVolumeKeyGrants"]
        grant.pop("Condition")

    rec = edited(recording("staging"), "hyperpod-execution-inline", policy_edit(unscoped))
    name, detail = broken(walked(rec, stack_config("staging")), "HyperPod lifecycle scripts")
    assert name == "the execution role grants its key only to AWS services"
    assert "for any grantee, not through an AWS service: allowed" in detail
    holds = next(j for j in walked(recording("staging"), stack_config("staging")) if j.subject.startswith("HyperPod"))
    assert next(s for s in holds.steps if s.name == name).holds


@pytest.mark.slow
def test_the_endpoint_judged_is_the_s3_gateway_not_another_gateway_or_an_s3_interface() -> None:
    def dynamodb_gateway(inputs: dict[str, Any]) -> None:
        inputs.update(serviceName="com.amazonaws.us-east-1.dynamodb", vpcEndpointType="Gateway")

    def s3_interface(inputs: dict[str, Any]) -> None:
        inputs.update(serviceName="com.amazonaws.us-east-1.s3", vpcEndpointType="Interface")

    rec = recording("prod")
    [s3] = [e for e in rec.by_type("aws:ec2/vpcEndpoint:VpcEndpoint") if e.name == "network-s3"]
    rec = edited(edited(rec, "network-ec2", dynamodb_gateway), "network-ecr-api", s3_interface)  # both listed first
    world = access.World.read(Trip(recording=rec, stack=stack_config("prod")))
    assert world is not None and world.endpoint_id == s3.id
    assert world.endpoint is not None and world.endpoint.label == "S3 gateway endpoint policy of network-s3"


@pytest.mark.slow
def test_a_repository_that_exports_is_walked_for_fsx_writing_to_its_bucket() -> None:
    def exports(inputs: dict[str, Any]) -> None:
        inputs["s3"]["autoExportPolicy"] = {"events": ["NEW", "CHANGED"]}

    steps = lambda rec: next(  # noqa: E731
        [s.name for s in j.steps] for j in walked(rec, stack_config("prod")) if j.subject.startswith("FSx for Lustre")
    )
    reading = steps(recording("prod"))
    writing = steps(edited(recording("prod"), "lustre-dra", exports))
    assert not [n for n in reading if n.startswith("FSx writes")]
    assert [n for n in writing if n.startswith("FSx writes")] and set(reading) < set(writing)
