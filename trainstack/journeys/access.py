"""The access journeys: who reads and writes the stack's buckets through their keys, and who can destroy them.

Three families, each a question IAM answers only when every policy on the path is read together (the identity
policy, the bucket policy, the key policy with its root delegation, the S3 gateway endpoint's policy), so each
question goes to a real evaluator (`trainstack.journeys.iam`, principalmapper's local simulation):

- **writers and keys**, one journey per principal that must use a bucket: each team's Pod Identity role (reads
  the datasets, writes its own checkpoint prefix and no other team's), the SageMaker training role, the HyperPod
  execution role and the deployer (the lifecycle scripts), FSx for Lustre's S3 role (the data repository
  association), and every `security.outside_vpc_data_role_arns` role. Each step is one S3 call and the KMS calls
  S3 makes for it with the caller's permissions (kms:ViaService, the bucket ARN as encryption context).
- **destroy**, for a stack whose data is not protected (dev, staging): every call `pulumi destroy` makes to
  empty and delete the force-destroy buckets and to delete the keys, made by the deployer from outside the VPC.

Everything is read from the recording (what the program built), never from the config, except who the users are:
the teams, the outside-VPC roles and the key administrators (`trip.stack`). Principals whose own IAM policies are
not in this stack (the deployer, key administrators, outside-VPC roles) are given an allow-all identity policy:
their step asks whether this stack's bucket and key policies let them, which is all the stack decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainstack.engine import UNKNOWN, RecordedResource
from trainstack.journeys import DESTROY, WRITERS, Journey, Step, Trip
from trainstack.journeys.iam import Decision, Policy, UnsupportedPolicy, decide, request
from trainstack.tokens import (
    BUCKET,
    BUCKET_ENCRYPTION,
    BUCKET_OBJECT,
    BUCKET_OBJECT_LOCK,
    BUCKET_POLICY,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    HYPERPOD_CLUSTER,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_ALIAS,
    KMS_KEY,
    POD_IDENTITY_ASSOCIATION,
    VPC_ENDPOINT,
)

DATA_CLASS_TAG = "trainstack:data-class"  # components/storage/buckets.py DATA_CLASS_TAG
TEAM_SERVICE_ACCOUNT = "training"  # components/storage/team_storage.py TEAM_SERVICE_ACCOUNT

# Where each step's rule is stated.
EVALUATION = "IAM User Guide, Policy evaluation logic (identity and resource-based policies, explicit deny)"
S3_AUTH = "Amazon S3 User Guide, How Amazon S3 authorizes a request; " + EVALUATION
ENDPOINT_RULE = (
    "AWS PrivateLink Guide, Control access to VPC endpoints using endpoint policies; IAM User Guide, AWS global "
    "condition context keys (aws:SourceVpce)"
)
SSE_KMS = (
    "Amazon S3 User Guide, Using server-side encryption with AWS KMS keys (SSE-KMS): kms:GenerateDataKey to upload, "
    "kms:Decrypt to download and to complete multipart uploads; S3 Bucket Keys: the encryption context is the "
    "bucket ARN; AWS KMS Developer Guide, kms:ViaService and Default key policy (root delegation)"
)
POD_IDENTITY_RULE = "Amazon EKS User Guide, EKS Pod Identity: the association gives the service account's pods the role"
SAGEMAKER_RULE = (
    "SageMaker Developer Guide, How to use SageMaker AI execution roles (CreateTrainingJob: S3 and KMS "
    "permissions) and Give SageMaker training jobs access to resources in your Amazon VPC"
)
HYPERPOD_RULE = (
    "SageMaker Developer Guide, IAM role for SageMaker HyperPod (the execution role reads the lifecycle scripts)"
)
FSX_RULE = (
    "FSx for Lustre User Guide, Working with server-side encrypted Amazon S3 buckets and Using service-linked roles "
    "(the file system's S3 role reads, and on export writes, the linked bucket)"
)
DESTROY_ORDER = (
    "pulumi/pulumi v3.259.0 pkg/resource/deploy/step_generator.go ScheduleDeletes (a resource is deleted after every "
    "resource that depends on it); Amazon S3 User Guide, Amazon S3 data consistency model (bucket configurations "
    "are eventually consistent)"
)
FORCE_DESTROY = (
    "hashicorp/terraform-provider-aws (bridged by pulumi-aws 7.51.1) internal/service/s3/bucket.go "
    "resourceBucketDelete and delete.go emptyBucket: ListObjectVersions, DeleteObjects by version id "
    "(BypassGovernanceRetention when the bucket has Object Lock), then DeleteBucket"
)
OBJECT_LOCK_RULE = (
    "Amazon S3 User Guide, Object Lock retention modes: governance yields to s3:BypassGovernanceRetention, "
    "compliance to no one until the retention ends"
)
KEY_DELETION = (
    "AWS KMS Developer Guide, Deleting AWS KMS keys (kms:ScheduleKeyDeletion) and Managing aliases (kms:DeleteAlias "
    "needs permission on the alias and on the key)"
)

# A principal whose IAM policies are not in this stack: only the stack's resource policies decide.
OUTSIDE_IDENTITY = Policy.of(
    "its own IAM policy (not in this stack: taken as allow-all)",
    {"Version": "2012-10-17", "Statement": [{"Sid": "Everything", "Effect": "Allow", "Action": "*", "Resource": "*"}]},
)
# The S3 grant of the HyperPod execution role's managed policy, AmazonSageMakerClusterInstanceRolePolicy (SageMaker
# API reference, ClusterLifeCycleConfig.SourceS3Uri: the managed policy "allows access to S3 buckets with the
# specific prefix sagemaker-"): read and list every `sagemaker-*` bucket. The role's inline policy must out-deny it.
HYPERPOD_MANAGED_S3 = Policy.of(
    "AmazonSageMakerClusterInstanceRolePolicy (its S3 grant)",
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SageMakerBuckets",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:ListBucket"],
                "Resource": ["arn:aws:s3:::sagemaker-*", "arn:aws:s3:::sagemaker-*/*"],
            }
        ],
    },
)
# A bucket someone who may call sagemaker:UpdateCluster owns and opens to everyone (its policy allows any reader).
REPOINTED_BUCKET = "sagemaker-repointed-source"
REPOINTED_POLICY = Policy.of(
    "the repointed bucket's policy (open to any reader)",
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AnyReader",
                "Effect": "Allow",
                "Principal": "*",
                "Action": ["s3:GetObject", "s3:ListBucket"],
                "Resource": [f"arn:aws:s3:::{REPOINTED_BUCKET}", f"arn:aws:s3:::{REPOINTED_BUCKET}/*"],
            }
        ],
    },
)
REPOINT_RULE = (
    "SageMaker API reference, UpdateCluster (InstanceGroups[].LifeCycleConfig.SourceS3Uri) and "
    "ClusterLifeCycleConfig; " + EVALUATION
)
# FSx for Lustre's S3 service-linked role: the S3 calls a data repository association makes on its bucket (FSx for
# Lustre User Guide, Using service-linked roles for Amazon FSx, AWSServiceRoleForFSxS3Access_fs-*). It has no KMS
# permission of its own: the key policy must name it.
FSX_S3_ACTIONS = ("s3:GetObject", "s3:ListBucket", "s3:PutObject", "s3:GetBucketLocation", "s3:AbortMultipartUpload")
FSX_ROLE = "role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_{fs}"


def walk(trip: Trip) -> Iterator[Journey]:
    """The access journeys of one plan (module docstring)."""
    world = World.read(trip)
    if world is None:
        return
    yield from team_journeys(world, trip)
    yield from service_journeys(world, trip)
    yield from outside_vpc_journeys(world, trip.stack.security.outside_vpc_data_role_arns)
    if not trip.stack.protect_data:
        yield destroy_journey(world, trip.stack.security.key_administrator_arns)


# ------------------------------------------------------------------------------------------------ the world


@dataclass(frozen=True)
class Bucket:
    name: str
    arn: str
    role: str  # datasets, checkpoints, lifecycle (a bucket of HyperPod's scripts), or its logical name
    resource: RecordedResource
    policy: Policy | None
    key_arn: str | None  # the SSE-KMS key of its default encryption
    lock_mode: str | None  # GOVERNANCE / COMPLIANCE default retention, or None
    force_destroy: bool


@dataclass(frozen=True)
class World:
    """What the access journeys read from the recording, resolved once per plan."""

    account: str
    region: str
    buckets: Mapping[str, Bucket]  # by role
    keys: Mapping[str, tuple[RecordedResource, Policy]]  # key ARN -> the key and its policy
    aliases: Mapping[str, tuple[str, ...]]  # key id -> alias names
    roles: Mapping[str, tuple[Policy, ...]]  # role ARN -> its inline policies
    endpoint_id: str | None  # the S3 gateway endpoint requests from the VPC go through
    endpoint: Policy | None  # its policy, when this stack built it
    deployer: str  # the principal that ran `pulumi up`: the key administrator the config does not name
    recording: Any = field(repr=False)

    @classmethod
    def read(cls, trip: Trip) -> World | None:
        rec = trip.recording
        keys: dict[str, tuple[RecordedResource, Policy]] = {}
        for key in rec.by_type(KMS_KEY):
            arn, policy = key.outputs.get("arn"), key.inputs.get("policy")
            if _known(arn, policy):
                keys[str(arn)] = (key, Policy.of(f"key policy of {key.name}", str(policy)))
        if not keys:
            return None  # preview: nothing is known yet
        account = next(iter(keys)).split(":")[4]
        aliases: dict[str, list[str]] = {}
        for alias in rec.by_type(KMS_ALIAS):
            aliases.setdefault(str(alias.inputs.get("targetKeyId")), []).append(str(alias.inputs.get("name")))
        endpoints = [
            e
            for e in rec.by_type(VPC_ENDPOINT)
            if str(e.inputs.get("serviceName", "")).endswith(".s3") and e.inputs.get("vpcEndpointType") == "Gateway"
        ]
        existing = trip.stack.network.existing_vpc
        endpoint_id, endpoint = (existing.s3_endpoint_id if existing else None), None
        if endpoints:
            endpoint_id = endpoints[0].id
            document = endpoints[0].inputs.get("policy")
            if _known(document):
                endpoint = Policy.of(f"S3 gateway endpoint policy of {endpoints[0].name}", str(document))
        admins = _key_administrators(keys.values())
        named = set(trip.stack.security.key_administrator_arns)
        deployer = next((a for a in admins if a not in named), admins[0] if admins else "")
        return cls(
            account=account,
            region=trip.stack.region,
            buckets=_buckets(rec, keys),
            keys=keys,
            aliases={k: tuple(v) for k, v in aliases.items()},
            roles=_roles(rec),
            endpoint_id=endpoint_id,
            endpoint=endpoint,
            deployer=deployer,
            recording=rec,
        )

    def key_for(self, bucket: Bucket) -> tuple[RecordedResource, Policy] | None:
        return self.keys.get(bucket.key_arn or "")


def _known(*values: Any) -> bool:
    return all(v is not None and UNKNOWN not in json.dumps(v) for v in values)


def _key_administrators(keys: Iterable[tuple[RecordedResource, Policy]]) -> list[str]:
    """The principals of the keys' KeyAdministrators statements (components/kms.py), in order of first mention."""
    found: list[str] = []
    for _, policy in keys:
        for statement in policy.statements:
            if statement.get("Sid") == "KeyAdministrators":
                who = statement.get("Principal", {}).get("AWS", [])
                found += [a for a in (who if isinstance(who, list) else [who]) if a not in found]
    return found


def _buckets(rec: Any, keys: Mapping[str, tuple[RecordedResource, Policy]]) -> dict[str, Bucket]:
    by_id: dict[str, dict[str, Any]] = {}
    for kind in (BUCKET_POLICY, BUCKET_ENCRYPTION, BUCKET_OBJECT_LOCK):
        for r in rec.by_type(kind):
            by_id.setdefault(str(r.inputs.get("bucket")), {})[kind] = r
    found: dict[str, Bucket] = {}
    for b in rec.by_type(BUCKET):
        name, arn = b.outputs.get("bucket"), b.outputs.get("arn")
        if not _known(name, arn):
            continue
        parts = by_id.get(b.id, {})
        policy_resource = parts.get(BUCKET_POLICY)
        policy = None
        if policy_resource is not None and _known(policy_resource.inputs.get("policy")):
            policy = Policy.of(f"bucket policy of {name}", str(policy_resource.inputs["policy"]))
        encryption = parts.get(BUCKET_ENCRYPTION)
        key_arn = None
        if encryption is not None:
            rule = (encryption.inputs.get("rules") or [{}])[0]
            key_arn = rule.get("applyServerSideEncryptionByDefault", {}).get("kmsMasterKeyId")
        lock = parts.get(BUCKET_OBJECT_LOCK)
        mode = lock.inputs.get("rule", {}).get("defaultRetention", {}).get("mode") if lock is not None else None
        tags = b.inputs.get("tags") or {}
        role = tags.get(DATA_CLASS_TAG) or (
            "lifecycle" if str(b.inputs.get("bucketPrefix", "")).startswith("sagemaker-") else b.name
        )
        found[str(role)] = Bucket(
            name=str(name),
            arn=str(arn),
            role=str(role),
            resource=b,
            policy=policy,
            key_arn=str(key_arn) if key_arn and str(key_arn) in keys else None,
            lock_mode=str(mode) if mode else None,
            force_destroy=bool(b.inputs.get("forceDestroy")),
        )
    return found


def _roles(rec: Any) -> dict[str, tuple[Policy, ...]]:
    """Role ARN -> its inline policies (a RolePolicy names its role by name or by id)."""
    by_ref: dict[str, list[Policy]] = {}
    for p in rec.by_type(IAM_ROLE_POLICY):
        document = p.inputs.get("policy")
        if _known(document):
            label = f"identity policy {p.inputs.get('name') or p.name}"
            by_ref.setdefault(str(p.inputs.get("role")), []).append(Policy.of(label, str(document)))
    roles: dict[str, tuple[Policy, ...]] = {}
    for r in rec.by_type(IAM_ROLE):
        arn = r.outputs.get("arn")
        if _known(arn):
            roles[str(arn)] = tuple(by_ref.get(r.id, []) + by_ref.get(str(r.outputs.get("name")), []))
    return roles


# ------------------------------------------------------------------------------------------ the questions


def s3_call(
    world: World,
    principal: str,
    identity: Sequence[Policy],
    action: str,
    bucket: Bucket,
    key: str | None = None,
    *,
    from_vpc: bool,
    context: Mapping[str, str] | None = None,
) -> Decision:
    """One S3 call on `bucket` (on object `key`, or on the bucket itself), from the VPC through its S3 gateway
    endpoint (`from_vpc`) or from anywhere else."""
    keys: dict[str, str] = {"aws:ResourceAccount": world.account, **(context or {})}
    through = from_vpc and world.endpoint_id is not None
    if through:
        keys["aws:SourceVpce"] = str(world.endpoint_id)
    return decide(
        request(
            principal,
            identity,
            action,
            f"{bucket.arn}/{key}" if key is not None else bucket.arn,
            resource_account=world.account,
            context=keys,
            resource_policy=bucket.policy,
            endpoint_policy=world.endpoint if through else None,
        )
    )


def kms_through_s3(world: World, principal: str, identity: Sequence[Policy], action: str, bucket: Bucket) -> Decision:
    """The KMS call S3 makes with the caller's permissions for an object of `bucket` (SSE_KMS)."""
    found = world.key_for(bucket)
    if found is None:
        return Decision(True, f"{bucket.name} is not encrypted with a key of this stack")
    key, policy = found
    return decide(
        request(
            principal,
            identity,
            action,
            str(key.outputs["arn"]),
            resource_account=world.account,
            context={
                "kms:ViaService": f"s3.{world.region}.amazonaws.com",
                "kms:CallerAccount": principal.split(":")[4],
                "kms:EncryptionContext:aws:s3:arn": bucket.arn,
                "aws:ViaAWSService": "true",
            },
            resource_policy=policy,
        )
    )


def step(name: str, checks: Iterable[tuple[str, Decision]], source: str, *, expect: bool = True) -> Step:
    """A step that holds when every check's decision is `expect` (allowed, or for a boundary, denied)."""
    done = list(checks)
    wrong = [(what, d) for what, d in done if d.allowed is not expect]
    if wrong:
        verb = "denied" if expect else "allowed"
        detail = "; ".join(f"{what}: {verb}: {d.reason}" for what, d in wrong)
    else:
        detail = "; ".join(f"{what}: {d.reason}" for what, d in done)
    return Step(name, not wrong, detail, source)


def unsupported(name: str, error: UnsupportedPolicy, source: str) -> Step:
    return Step(name, False, f"cannot be evaluated: {error}", source)


def _checks(
    world: World,
    principal: str,
    identity: Sequence[Policy],
    bucket: Bucket,
    calls: Iterable[tuple[str, str | None, Mapping[str, str] | None]],
    *,
    from_vpc: bool,
) -> list[tuple[str, Decision]]:
    return [
        (
            f"{action} {bucket.name}{'/' + key if key is not None else ''}{_show(context)}",
            s3_call(world, principal, identity, action, bucket, key, from_vpc=from_vpc, context=context),
        )
        for action, key, context in calls
    ]


def _show(context: Mapping[str, str] | None) -> str:
    return "".join(f" ({k.split(':')[-1]}={v})" for k, v in (context or {}).items())


def _kms(
    world: World, principal: str, identity: Sequence[Policy], bucket: Bucket, *actions: str
) -> list[tuple[str, Decision]]:
    found = world.key_for(bucket)
    label = found[0].name if found else "no stack key"
    return [(f"{a} on {label} via S3", kms_through_s3(world, principal, identity, a, bucket)) for a in actions]


READ = ("kms:Decrypt",)
WRITE = ("kms:GenerateDataKey", "kms:Decrypt")  # Decrypt too: S3 needs it to complete a multipart upload


def access_steps(
    world: World,
    who: str,
    principal: str,
    identity: Sequence[Policy],
    reads: Sequence[tuple[Bucket, str]],
    writes: Sequence[tuple[Bucket, str]],
    *,
    from_vpc: bool,
    source: str,
) -> list[Step]:
    """`who` reads each (bucket, object) of `reads` and writes each of `writes`, then uses each bucket's key."""
    where = "through the VPC's S3 endpoint" if from_vpc and world.endpoint_id else "from outside the VPC"
    steps: list[Step] = []
    try:
        for bucket, key in reads:
            prefix = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
            calls: list[tuple[str, str | None, Mapping[str, str] | None]] = [
                ("s3:ListBucket", None, {"s3:prefix": prefix} if prefix else None),
                ("s3:GetObject", key, None),
            ]
            steps.append(
                step(
                    f"{who} reads s3://{bucket.name}/{key} {where}",
                    _checks(world, principal, identity, bucket, calls, from_vpc=from_vpc),
                    f"{source}; {S3_AUTH}; {ENDPOINT_RULE}",
                )
            )
            steps.append(
                step(
                    f"{who} decrypts {bucket.role} with its key",
                    _kms(world, principal, identity, bucket, *READ),
                    SSE_KMS,
                )
            )
        for bucket, key in writes:
            calls = [("s3:PutObject", key, None)]
            steps.append(
                step(
                    f"{who} writes s3://{bucket.name}/{key} {where}",
                    _checks(world, principal, identity, bucket, calls, from_vpc=from_vpc),
                    f"{source}; {S3_AUTH}; {ENDPOINT_RULE}",
                )
            )
            steps.append(
                step(
                    f"{who} encrypts {bucket.role} with its key",
                    _kms(world, principal, identity, bucket, *WRITE),
                    SSE_KMS,
                )
            )
    except UnsupportedPolicy as error:
        steps.append(unsupported(f"{who}'s policies", error, EVALUATION))
    return steps


# ------------------------------------------------------------------------------------------- the journeys


# Encryption an upload may name instead of the bucket's default: another KMS key, SSE-S3.
FOREIGN_ENCRYPTION: tuple[Mapping[str, str], ...] = (
    {
        "s3:x-amz-server-side-encryption": "aws:kms",
        "s3:x-amz-server-side-encryption-aws-kms-key-id": "arn:aws:kms:us-east-1:999999999999:key/another",
    },
    {"s3:x-amz-server-side-encryption": "AES256"},
)


def confinement_steps(
    world: World, who: str, role: str, identity: Sequence[Policy], checkpoints: Bucket, team: str, teams: Sequence[str]
) -> list[Step]:
    """`who` (a role of team `team`) lists its own checkpoint prefix, and cannot read, write, delete or list any
    other team's (nor `shared/`), nor upload its own checkpoints under another encryption than the bucket's key."""
    listing = _checks(
        world, role, identity, checkpoints, [("s3:ListBucket", None, {"s3:prefix": f"{team}/"})], from_vpc=True
    )
    others = [t for t in teams if t != team] + ["shared"]
    foreign: list[tuple[str, Decision]] = []
    for other in others:
        calls: list[tuple[str, str | None, Mapping[str, str] | None]] = [
            ("s3:GetObject", f"{other}/step-000100/model.pt", None),
            ("s3:PutObject", f"{other}/step-000100/model.pt", None),
            ("s3:DeleteObject", f"{other}/step-000100/model.pt", None),
            ("s3:ListBucket", None, {"s3:prefix": f"{other}/"}),
        ]
        foreign += _checks(world, role, identity, checkpoints, calls, from_vpc=True)
    own = f"{team}/step-000100/model.pt"
    rekeyed = _checks(
        world, role, identity, checkpoints, [("s3:PutObject", own, c) for c in FOREIGN_ENCRYPTION], from_vpc=True
    )
    return [
        step(f"{who} lists its own checkpoints", listing, S3_AUTH),
        step(f"{who} cannot read, write or list another prefix ({', '.join(others)})", foreign, S3_AUTH, expect=False),
        step(
            f"{who} cannot upload a checkpoint under another key",
            rekeyed,
            f"{S3_AUTH}; Amazon S3 User Guide, Requiring SSE-KMS with a specific AWS KMS key",
            expect=False,
        ),
    ]


def team_journeys(world: World, trip: Trip) -> Iterator[Journey]:
    """Each team's Pod Identity role: datasets in, its own checkpoint prefix out, and no other team's prefix."""
    datasets, checkpoints = world.buckets.get("datasets"), world.buckets.get("checkpoints")
    teams = [t.name for t in trip.stack.kubernetes.teams]
    associations = {
        (str(a.inputs.get("namespace")), str(a.inputs.get("serviceAccount"))): str(a.inputs.get("roleArn"))
        for a in world.recording.by_type(POD_IDENTITY_ASSOCIATION)
    }
    for team in teams:
        subject = f"team {team}: data through its Pod Identity role"
        role = associations.get((team, TEAM_SERVICE_ACCOUNT))
        bound = Step(
            f"pods on {team}/{TEAM_SERVICE_ACCOUNT} get a role",
            role is not None,
            f"Pod Identity association {team}/{TEAM_SERVICE_ACCOUNT} -> {role}"
            if role
            else f"no Pod Identity association for {team}/{TEAM_SERVICE_ACCOUNT}",
            POD_IDENTITY_RULE,
        )
        if role is None or datasets is None or checkpoints is None or not _known(role):
            yield Journey(WRITERS, subject, (bound,))
            continue
        identity = world.roles.get(role, ())
        own = f"{team}/step-000100/model.pt"
        steps = [
            bound,
            *access_steps(
                world,
                f"team {team}",
                role,
                identity,
                [(datasets, "datasets/tokens/shard-0000.bin")],
                [(checkpoints, own)],
                from_vpc=True,
                source=POD_IDENTITY_RULE,
            ),
        ]
        try:
            steps += confinement_steps(world, f"team {team}", role, identity, checkpoints, team, teams)
            if datasets.policy is not None and "aws:SourceVpce" in datasets.policy.document:
                outside = _checks(
                    world,
                    role,
                    identity,
                    datasets,
                    [("s3:GetObject", "datasets/tokens/shard-0000.bin", None)],
                    from_vpc=False,
                ) + _checks(world, role, identity, checkpoints, [("s3:GetObject", own, None)], from_vpc=False)
                steps.append(
                    step(
                        f"team {team}'s credentials cannot read the data from outside the VPC",
                        outside,
                        S3_AUTH,
                        expect=False,
                    )
                )
        except UnsupportedPolicy as error:
            steps.append(unsupported(f"team {team}'s policies", error, EVALUATION))
        yield Journey(WRITERS, subject, tuple(steps))


def service_journeys(world: World, trip: Trip) -> Iterator[Journey]:
    """The SageMaker training role, the HyperPod lifecycle scripts (uploaded by the deployer, read by the
    execution role) and FSx for Lustre's data repository associations."""
    yield from _sagemaker_training_journeys(world, trip)
    yield from _lifecycle_script_journeys(world, trip)
    yield from _fsx_repository_journeys(world)


def _sagemaker_training_journeys(world: World, trip: Trip) -> Iterator[Journey]:
    """Each team's SageMaker training role reads the datasets and writes its own checkpoints, and no one else's."""
    datasets, checkpoints = world.buckets.get("datasets"), world.buckets.get("checkpoints")
    training = world.recording.outputs.get("sagemaker_training_role_arns")
    teams = [t.name for t in trip.stack.kubernetes.teams]
    for team, arn in sorted(training.items()) if isinstance(training, Mapping) else []:
        if not _known(arn) or arn not in world.roles or datasets is None or checkpoints is None:
            continue
        who = f"team {team}'s training job"
        steps = access_steps(
            world,
            who,
            arn,
            world.roles[arn],
            [(datasets, "datasets/tokens/shard-0000.bin")],
            [(checkpoints, f"{team}/sagemaker/job-1/checkpoints/model.pt")],
            from_vpc=True,
            source=SAGEMAKER_RULE,
        )
        try:
            steps += confinement_steps(world, who, arn, world.roles[arn], checkpoints, team, teams)
        except UnsupportedPolicy as error:
            steps.append(unsupported(f"{who}'s policies", error, EVALUATION))
        yield Journey(
            WRITERS, f"SageMaker training role of team {team}: datasets in, its checkpoints out", tuple(steps)
        )


def _lifecycle_script_journeys(world: World, trip: Trip) -> Iterator[Journey]:
    """The deployer uploads HyperPod's lifecycle scripts from outside the VPC; the execution role reads them."""
    rec = world.recording
    lifecycle = world.buckets.get("lifecycle")
    scripts = [o for o in rec.by_type(BUCKET_OBJECT) if _known(o.inputs.get("key"))]
    if lifecycle is not None and scripts:
        first = scripts[0]
        key = str(first.inputs["key"])
        context = {"s3:x-amz-server-side-encryption": str(first.inputs.get("serverSideEncryption", ""))}
        if first.inputs.get("kmsKeyId"):
            context["s3:x-amz-server-side-encryption-aws-kms-key-id"] = str(first.inputs["kmsKeyId"])
        try:
            upload = step(
                f"the deployer uploads s3://{lifecycle.name}/{key} from outside the VPC",
                _checks(
                    world,
                    world.deployer,
                    [OUTSIDE_IDENTITY],
                    lifecycle,
                    [("s3:PutObject", key, context)],
                    from_vpc=False,
                ),
                f"{HYPERPOD_RULE}; {S3_AUTH}",
            )
            steps = [
                upload,
                step(
                    "the deployer encrypts them with the bucket's key",
                    _kms(world, world.deployer, [OUTSIDE_IDENTITY], lifecycle, *WRITE),
                    SSE_KMS,
                ),
            ]
        except UnsupportedPolicy as error:
            steps = [unsupported("the lifecycle bucket's policies", error, EVALUATION)]
        execution = rec.outputs.get("hyperpod_execution_role_arn")
        if _known(execution) and execution in world.roles:
            arn = str(execution)
            identity = (*world.roles[arn], HYPERPOD_MANAGED_S3)
            steps += access_steps(
                world,
                "the execution role",
                arn,
                identity,
                [(lifecycle, key)],
                [],
                from_vpc=True,
                source=HYPERPOD_RULE,
            )
            steps.append(repointed_source_step(world, arn, identity))
            steps.append(grant_step(world, arn, identity, lifecycle))
            login = rec.outputs.get("hyperpod_login_role_arn")
            if _known(login) and login in world.roles:
                steps += login_role_steps(world, trip, arn, str(login), lifecycle, key)
        yield Journey(
            WRITERS, "HyperPod lifecycle scripts: the deployer writes them, the execution role reads them", tuple(steps)
        )


def _fsx_repository_journeys(world: World) -> Iterator[Journey]:
    """FSx for Lustre's service-linked role imports from (and exports to) each data repository association's
    bucket, from outside the VPC."""
    rec = world.recording
    file_systems = {fs.id: fs for fs in rec.by_type(FSX_LUSTRE)}
    for dra in rec.by_type(FSX_DATA_REPOSITORY_ASSOCIATION):
        path = str(dra.inputs.get("dataRepositoryPath", ""))
        bucket = next(
            (b for b in world.buckets.values() if path.startswith(f"s3://{b.name}/") or path == f"s3://{b.name}"), None
        )
        fs_id = str(dra.inputs.get("fileSystemId"))
        if bucket is None or fs_id not in file_systems or not _known(fs_id):
            continue
        principal = f"arn:aws:iam::{world.account}:{FSX_ROLE.format(fs=fs_id)}"
        identity = [
            Policy.of(
                "FSx's S3 service-linked role policy",
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "LinkedBucket",
                            "Effect": "Allow",
                            "Action": list(FSX_S3_ACTIONS),
                            "Resource": [bucket.arn, f"{bucket.arn}/*"],
                        }
                    ],
                },
            )
        ]
        prefix = path.removeprefix(f"s3://{bucket.name}").strip("/")
        key = f"{prefix}/tokens/shard-0000.bin" if prefix else "tokens/shard-0000.bin"
        exports = bool((dra.inputs.get("s3") or {}).get("autoExportPolicy", {}).get("events"))
        steps = access_steps(
            world,
            "FSx",
            principal,
            identity,
            [(bucket, key)],
            [(bucket, key)] if exports else [],
            from_vpc=False,
            source=FSX_RULE,
        )
        yield Journey(
            WRITERS,
            f"FSx for Lustre: data repository association {dra.inputs.get('fileSystemPath')} <-> {path}",
            tuple(steps),
        )


def repointed_source_step(world: World, role: str, identity: Sequence[Policy], who: str = "the execution role") -> Step:
    """Someone repoints the cluster's SourceS3Uri at a `sagemaker-*` bucket of their own (in this account or
    another) that lets anyone read: the execution role, which HyperPod uses to fetch the scripts, must not read it."""
    try:
        decisions = [
            (
                f"{action} {REPOINTED_BUCKET}{'/' + key if key else ''} (owner {account})",
                decide(
                    request(
                        role,
                        identity,
                        action,
                        f"arn:aws:s3:::{REPOINTED_BUCKET}{'/' + key if key else ''}",
                        resource_account=account,
                        resource_policy=REPOINTED_POLICY,
                    )
                ),
            )
            for account in (world.account, "999999999999")
            for action, key in (("s3:GetObject", "on_create.sh"), ("s3:ListBucket", ""))
        ]
    except UnsupportedPolicy as error:
        return unsupported(f"{who}'s policies", error, EVALUATION)
    return step(
        f"{who} cannot read a repointed lifecycle source (s3://{REPOINTED_BUCKET}/)",
        decisions,
        REPOINT_RULE,
        expect=False,
    )


GRANT_RULE = (
    "AWS KMS Developer Guide, kms:GrantIsForAWSResource (true only when an integrated service such as EBS creates "
    "the grant for the caller) and Grants in AWS KMS; " + EVALUATION
)


def grant_step(
    world: World, role: str, identity: Sequence[Policy], lifecycle: Bucket, who: str = "the execution role"
) -> Step:
    """EBS attaches a HyperPod volume through a grant on the key, asked with the execution role's permissions; the
    same credentials (root on any node reads them from the instance metadata) must not grant the key themselves."""
    found = world.key_for(lifecycle)
    if found is None:
        return Step(f"{who} grants its key only to AWS services", True, "no stack key", GRANT_RULE)
    key, policy = found

    def grant(for_aws_resource: bool) -> Decision:
        return decide(
            request(
                role,
                identity,
                "kms:CreateGrant",
                str(key.outputs["arn"]),
                resource_account=world.account,
                context={
                    "kms:GrantIsForAWSResource": "true" if for_aws_resource else "false",
                    "kms:GranteePrincipal": f"arn:aws:iam::{world.account}:role/anyone",
                    "kms:CallerAccount": world.account,
                },
                resource_policy=policy,
            )
        )

    try:
        service, itself = grant(True), grant(False)
    except UnsupportedPolicy as error:
        return unsupported(f"{who}'s policies", error, EVALUATION)
    name = f"{who} grants its key only to AWS services"
    if not service.allowed:
        return Step(name, False, f"EBS's grant for a HyperPod volume: denied: {service.reason}", GRANT_RULE)
    if itself.allowed:
        return Step(
            name,
            False,
            f"kms:CreateGrant on {key.name} for any grantee, not through an AWS service: allowed: {itself.reason}",
            GRANT_RULE,
        )
    return Step(
        name,
        True,
        f"kms:CreateGrant on {key.name} through EBS: {service.reason}; for any grantee directly: {itself.reason}",
        GRANT_RULE,
    )


PER_GROUP_ROLE = (
    "SageMaker API reference, CreateCluster: ClusterInstanceGroupSpecification.ExecutionRole, required per instance "
    "group ('an IAM execution role to be assumed by the instance group'; botocore 1.44.5 "
    "data/sagemaker/2017-07-24/service-2.json)"
)
DIRECT_DECRYPT_RULE = (
    "AWS KMS Developer Guide, kms:ViaService and kms:EncryptionContext (S3 names the bucket's ARN when the bucket key "
    "is on); " + EVALUATION
)


def login_role_steps(world: World, trip: Trip, execution: str, login: str, lifecycle: Bucket, key: str) -> list[Step]:
    """Slurm users log in to the login group's nodes, so root there holds the login role's credentials: the group
    runs as a role of its own, which reads the scripts like every node but never the workers' role, and decrypts
    with the data key only through S3 for the lifecycle bucket."""
    who = "the login role"
    identity = (*world.roles[login], HYPERPOD_MANAGED_S3)
    steps = [login_group_step(world, trip, execution, login)]
    steps += access_steps(world, who, login, identity, [(lifecycle, key)], [], from_vpc=True, source=HYPERPOD_RULE)
    steps.append(repointed_source_step(world, login, identity, who))
    steps.append(grant_step(world, login, identity, lifecycle, who))
    found = world.key_for(lifecycle)
    if found is not None:
        data_key, policy = found
        try:
            direct = decide(
                request(
                    login,
                    identity,
                    "kms:Decrypt",
                    str(data_key.outputs["arn"]),
                    resource_account=world.account,
                    context={"kms:CallerAccount": world.account},
                    resource_policy=policy,
                )
            )
        except UnsupportedPolicy as error:
            steps.append(unsupported(f"{who}'s policies", error, EVALUATION))
        else:
            steps.append(
                step(
                    f"{who} cannot decrypt with {data_key.name} directly (only S3 for the lifecycle bucket)",
                    [(f"kms:Decrypt on {data_key.name}, not through S3", direct)],
                    DIRECT_DECRYPT_RULE,
                    expect=False,
                )
            )
    return steps


def login_group_step(world: World, trip: Trip, execution: str, login: str) -> Step:
    """The cluster's login group runs as the login role, and no other group does (nor the login group as theirs)."""
    name = "the login group runs as a role of its own, not the workers' execution role"
    hyperpod = trip.stack.sagemaker.hyperpod
    logins = {g.name for g in hyperpod.instance_groups if g.role.value == "login"}
    found: list[str] = []
    wrong: list[str] = []
    for cluster in world.recording.by_type(HYPERPOD_CLUSTER):
        for group in cluster.inputs.get("instanceGroups") or []:
            group_name, role = str(group.get("instanceGroupName")), group.get("executionRole")
            if not _known(role):
                continue
            expected = login if group_name in logins else execution
            found.append(f"{group_name}: {role}")
            if role != expected:
                wrong.append(f"{group_name} runs as {role}, not {expected}")
    if not found:
        return Step(name, True, "the instance groups' roles are not known yet", PER_GROUP_ROLE)
    return Step(name, not wrong, "; ".join(wrong or found), PER_GROUP_ROLE)


def outside_vpc_journeys(world: World, roles: Sequence[str]) -> Iterator[Journey]:
    """Each `security.outside_vpc_data_role_arns` role (an ingest job, break glass) reads and writes both data
    buckets from outside the VPC: the bucket policy exempts it, the key policy lets its IAM policies count."""
    data = [b for r, b in world.buckets.items() if r in ("datasets", "checkpoints")]
    for arn in roles:
        steps = access_steps(
            world,
            "it",
            arn,
            [OUTSIDE_IDENTITY],
            [(b, "ingest/part-0000") for b in data],
            [(b, "ingest/part-0000") for b in data],
            from_vpc=False,
            source="docs/security.md, outside_vpc_data_role_arns",
        )
        yield Journey(WRITERS, f"outside-VPC data role {arn}", tuple(steps))


def destroy_journey(world: World, administrators: Sequence[str]) -> Journey:
    """`pulumi destroy` by the deployer from outside the VPC: empty and delete each force-destroy bucket, delete each
    key's aliases and schedule its deletion. Each call is evaluated with the bucket policy still in force: Pulumi
    deletes a bucket's policy first, but S3 applies a bucket configuration change eventually, not at once."""
    steps: list[Step] = []
    try:
        for each in _deletion_steps(world):
            steps.append(each)  # one at a time: the steps before a policy the evaluator cannot read stay
    except UnsupportedPolicy as error:
        steps.append(unsupported("the stack's bucket and key policies", error, EVALUATION))
    steps.append(_who_else_can_destroy(world, administrators))
    return Journey(DESTROY, f"pulumi destroy by the deployer {world.deployer}, from outside the VPC", tuple(steps))


def _deletion_steps(world: World) -> Iterator[Step]:
    """Every bucket's deletion, then every key's, in the order `pulumi destroy` reaches them."""
    for bucket in world.buckets.values():
        yield from _bucket_deletion_steps(world, bucket)
    for key, policy in world.keys.values():
        yield _key_deletion_step(world, key, policy)


def _bucket_deletion_steps(world: World, bucket: Bucket) -> Iterator[Step]:
    """The deployer lists, empties and deletes a force-destroy bucket (any other is kept), and still cannot read or
    write a VPC-only one from outside the VPC."""
    deployer, identity = world.deployer, [OUTSIDE_IDENTITY]
    if not bucket.force_destroy:
        yield Step(
            f"{bucket.name} is kept",
            True,
            "force_destroy is off: destroy deletes it only when empty",
            FORCE_DESTROY,
        )
        return
    listing = _checks(
        world,
        deployer,
        identity,
        bucket,
        [("s3:DeleteBucketPolicy", None, None), ("s3:ListBucketVersions", None, None)],
        from_vpc=False,
    )
    yield step(f"the deployer lists every version of {bucket.name}", listing, f"{DESTROY_ORDER}; {FORCE_DESTROY}")
    calls: list[tuple[str, str | None, Mapping[str, str] | None]] = [
        ("s3:DeleteObjectVersion", "any/object", None),
        ("s3:DeleteObject", "any/object", None),
    ]
    if bucket.lock_mode is not None:
        calls.append(("s3:BypassGovernanceRetention", "any/object", None))
    deleting = step(
        f"the deployer deletes every version in {bucket.name}",
        _checks(world, deployer, identity, bucket, calls, from_vpc=False),
        FORCE_DESTROY,
    )
    if bucket.lock_mode == "COMPLIANCE":
        deleting = Step(
            deleting.name,
            False,
            "compliance-mode Object Lock: no one can delete a version before its retention ends, so "
            "destroy fails until then",
            OBJECT_LOCK_RULE,
        )
    yield deleting
    yield step(
        f"the deployer deletes {bucket.name}",
        _checks(world, deployer, identity, bucket, [("s3:DeleteBucket", None, None)], from_vpc=False),
        FORCE_DESTROY,
    )
    if bucket.policy is not None and "aws:SourceVpce" in bucket.policy.document:
        # The exemption that lets destroy empty a VPC-only bucket stops there (components/storage/buckets.py).
        reading = _checks(
            world,
            deployer,
            identity,
            bucket,
            [("s3:GetObject", "any/object", None), ("s3:PutObject", "any/object", None)],
            from_vpc=False,
        )
        yield step(
            f"the deployer still cannot read or write {bucket.name} from outside the VPC",
            reading,
            f"{S3_AUTH}; docs/security.md",
            expect=False,
        )


def _key_deletion_step(world: World, key: RecordedResource, policy: Policy) -> Step:
    """The deployer deletes a key's aliases (when it has any) and schedules the key's deletion."""
    deployer, identity = world.deployer, [OUTSIDE_IDENTITY]
    arn = str(key.outputs["arn"])
    actions = ("kms:ScheduleKeyDeletion",)
    if world.aliases.get(key.id):  # a key without aliases has none to delete
        actions = ("kms:DeleteAlias", *actions)
    checks = [
        (
            f"{action} {key.name}",
            decide(request(deployer, identity, action, arn, resource_account=world.account, resource_policy=policy)),
        )
        for action in actions
    ]
    return step(f"the deployer deletes {key.name}", checks, KEY_DELETION)


def _who_else_can_destroy(world: World, administrators: Sequence[str]) -> Step:
    """The other key administrators: a later deployer not among them cannot destroy the stack."""
    deployer = world.deployer
    others = sorted(set(administrators) - {deployer})
    same = [a for a in others if a.split(":")[4] == world.account]
    detail = (
        f"only {', '.join([deployer, *others])} may delete the keys (their DenyDestructionExceptAdministrators): a "
        "later deployer not among them is locked out of `pulumi destroy` and of key policy updates; add it to "
        "security.key_administrator_arns first"
    )
    if len(same) != len(others):
        detail += (
            "; administrators in another account may delete the keys but not the buckets' objects (no bucket "
            "policy grants them)"
        )
    return Step("who else can destroy this stack", True, detail, f"{KEY_DELETION}; components/kms.py")
