"""`storage`: the S3 buckets and FSx for Lustre, validated against AWS's capacity and throughput steps."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from stacks import fsx_sizing, fsx_squash
from stacks.schema.base import RetentionDays, Spec
from stacks.schema.values import Limits


class DraEvent(StrEnum):
    """Kinds of change a data repository association imports or exports (FSx API, AutoImportPolicy/
    AutoExportPolicy `Events`)."""

    NEW = "NEW"
    CHANGED = "CHANGED"
    DELETED = "DELETED"


# Root squash maps root on every client to this UID:GID (the conventional `nobody`), as the FSx for Lustre
# User Guide's root squash example does.
NOBODY = "65534:65534"
# A Lustre client NID: an IPv4 address (each octet a number or a `[a-b]` range) on the tcp network
# (FSx API, LustreRootSquashConfiguration.NoSquashNids).
NID_PATTERN = r"^((\d{1,3}|\[\d{1,3}-\d{1,3}\])\.){3}(\d{1,3}|\[\d{1,3}-\d{1,3}\])@tcp$"


class FsxDeploymentType(StrEnum):
    SCRATCH_2 = "SCRATCH_2"  # not replicated; dev only (StackConfig refuses it elsewhere)
    PERSISTENT_2 = "PERSISTENT_2"


def _deployment(info: ValidationInfo) -> FsxDeploymentType | None:
    """The already-validated deployment type, or None when it was itself invalid (reported there)."""
    value = info.data.get("deployment_type")
    return value if isinstance(value, FsxDeploymentType) else None


class ExistingFsxSpec(Spec):
    """An FSx for Lustre file system trainstack did not create: its id and the two names a Lustre client mounts
    (`aws fsx describe-file-systems --file-system-ids <id>`: DNSName, LustreConfiguration.MountName)."""

    file_system_id: str = Field(pattern=r"^fs-[0-9a-f]{17}$", description="The file system's id.")
    dns_name: str = Field(
        pattern=r"^fs-[0-9a-f]{17}\.fsx\.[a-z0-9-]+\.amazonaws\.com$", description="Its DNS name (DNSName)."
    )
    mount_name: str = Field(pattern=r"^[a-z0-9]{8}$|^fsx$", description="Its Lustre mount name (MountName).")


class FsxSpec(Spec):
    """FSx for Lustre in the GPU node groups' AZ, linked to the datasets bucket.

    Rules that span fields are field validators reading the fields declared before them, so each problem is
    reported at its own key (storage.fsx.storage_capacity_gib, ...) with the value given. Field order matters.
    """

    enabled: bool = Field(default=True, description="Create the file system (or, with `existing`, use one).")
    existing: ExistingFsxSpec | None = Field(
        default=None,
        description="Use this existing file system instead of creating one: trainstack installs the FSx CSI driver "
        "and the teams' volumes on it. The other keys then describe it (deployment_type, storage_capacity_gib for "
        "the volumes' size, root_squash); its security group must admit the cluster's nodes on the Lustre ports.",
    )
    deployment_type: FsxDeploymentType = Field(description="SCRATCH_2 (dev only) or PERSISTENT_2.")
    throughput_mb_s_per_tib: int | None = Field(
        default=None,
        validate_default=True,
        description="Per-unit storage throughput in MB/s/TiB: PERSISTENT_2 needs 125, 250, 500 or 1000; "
        "SCRATCH_2 takes none (fixed 200 MB/s/TiB baseline).",
    )
    efa_enabled: bool = Field(
        default=False,
        description="EFA-enabled file system (GPUDirect Storage): PERSISTENT_2 only; trainstack then adds the "
        "metadata configuration and the EFA security group. Set at creation, cannot change later.",
    )
    storage_capacity_gib: int = Field(
        gt=0,
        description="Capacity in GiB: 1200, 2400 or a multiple of 2400; EFA-enabled: a multiple of 38400/19200/"
        "9600/4800 at 125/250/500/1000 MB/s/TiB.",
    )
    metadata_iops: int | None = Field(
        default=None,
        description="PERSISTENT_2 metadata IOPS (USER_PROVISIONED): 1500, 3000, 6000, 12000 or a multiple of "
        "12000 up to 192000, and no fewer than AUTOMATIC mode provisions for the capacity (12000 per 24000 GiB "
        "from 48000 GiB). Unset: AUTOMATIC mode (scales with capacity).",
    )
    data_compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="Lustre data compression.")
    import_path_prefix: str = Field(
        default="datasets/",
        pattern=r"^([A-Za-z0-9._-]+/)*$",
        examples=["datasets/"],
        description="Prefix in the datasets bucket linked to Lustre: empty (whole bucket) or ending in `/`.",
    )
    file_system_path: str = Field(
        default="/datasets",
        pattern=r"^/[A-Za-z0-9._/-]*$",
        examples=["/datasets"],
        description="Lustre directory the bucket prefix appears at (the data repository association's path).",
    )
    auto_import_events: list[DraEvent] = Field(
        default_factory=lambda: [DraEvent.NEW, DraEvent.CHANGED, DraEvent.DELETED],
        description="Changes in the datasets prefix that Lustre picks up automatically.",
    )
    auto_export_events: list[DraEvent] = Field(
        default_factory=list[DraEvent],
        description="Changes on Lustre written back to the datasets bucket. Empty (the default) keeps the "
        "bucket the source of truth: no file system user can change or delete it. DELETED propagates every "
        "deletion on Lustre to S3 and is refused in prod by the policy pack.",
    )
    root_squash: str | None = Field(
        default=NOBODY,
        pattern=r"^\d{1,10}:\d{1,10}$",
        description="UID:GID that root on every client is mapped to, so a root container or node cannot read or "
        "change other teams' files: each from 1 to 4294967294; null turns root squash off (dev only).",
    )
    no_squash_nids: list[Annotated[str, Field(pattern=NID_PATTERN)]] = Field(
        default_factory=list,
        max_length=fsx_squash.MAX_NO_SQUASH_NIDS,
        description="Client NIDs exempt from root squash (an administration host that creates team "
        "directories), for example 10.0.1.6@tcp or 10.0.[2-10].[1-255]@tcp; each part 0-255, ranges low-high.",
    )
    team_directory: str = Field(
        default="/teams",
        validate_default=True,  # judged against file_system_path even when left at its default
        pattern=r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$",
        description="Lustre directory holding one subdirectory per team; each team's claim mounts only its own.",
    )
    automatic_backup_retention_days: int = Field(
        default=0,
        ge=0,
        json_schema_extra={"maximum": 0},  # refused above 0 by `_backups`, which says why
        description="Daily automatic backups kept: 0. FSx takes no backups of a file system linked to S3, and "
        "trainstack always links it to the datasets bucket; the durable copies live in S3.",
    )
    weekly_maintenance_start_time: str = Field(
        default="7:03:00",
        pattern=r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$",
        examples=["7:03:00"],
        description="d:HH:MM in UTC (1 is Monday); quote it in YAML.",
    )
    log_retention_days: RetentionDays = Field(
        default=90, description="CloudWatch retention of the file system's data-repository event log."
    )
    # At least 1 MB/s: a vanishing rate (a denormal such as 5e-324) made the storage coverage ratio infinite.
    per_gpu_read_mb_s: float = Field(
        default=200.0,
        ge=1,
        le=Limits.READ_MB_S_PER_GPU,
        description="Read throughput each GPU needs from storage in MB/s (sizing demand).",
    )

    @property
    def squashes_root(self) -> bool:
        """Whether root squash is on: a UID and a GID, both non-zero (FSx API, LustreRootSquashConfiguration)."""
        return self.root_squash is not None and all(int(part) for part in self.root_squash.split(":"))

    @field_validator("throughput_mb_s_per_tib")
    @classmethod
    def _throughput_tier(cls, value: int | None, info: ValidationInfo) -> int | None:
        deployment = _deployment(info)
        if deployment is FsxDeploymentType.SCRATCH_2 and value is not None:
            raise ValueError(
                "SCRATCH_2 takes no throughput_mb_s_per_tib (its baseline is fixed at 200 MB/s/TiB): remove it"
            )
        if deployment is FsxDeploymentType.PERSISTENT_2:
            valid = fsx_sizing.valid_throughputs(deployment)
            if value is None:
                raise ValueError(f"PERSISTENT_2 needs throughput_mb_s_per_tib: one of {', '.join(map(str, valid))}")
            if value not in valid:
                raise ValueError(
                    f"throughput_mb_s_per_tib {value} is not a PERSISTENT_2 tier: use {', '.join(map(str, valid))}"
                )
        return value

    @field_validator("efa_enabled")
    @classmethod
    def _efa_prerequisites(cls, value: bool, info: ValidationInfo) -> bool:
        deployment = _deployment(info)
        if value and deployment is not None and deployment is not FsxDeploymentType.PERSISTENT_2:
            raise ValueError(
                f"efa_enabled needs deployment_type PERSISTENT_2 (with a metadata configuration and an EFA "
                f"security group, which trainstack adds), not {deployment.value}"
            )
        return value

    @field_validator("metadata_iops")
    @classmethod
    def _metadata_iops(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return value
        deployment = _deployment(info)
        if deployment is FsxDeploymentType.SCRATCH_2:
            raise ValueError("metadata_iops is for PERSISTENT_2 only; SCRATCH_2 has no metadata configuration")
        # The capacity is validated first (field order); absent when it failed its own rule, reported there.
        capacity = info.data.get("storage_capacity_gib", 0)
        if problem := fsx_sizing.metadata_iops_problem(value, capacity):
            raise ValueError(problem)
        return value

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity_step(cls, value: int, info: ValidationInfo) -> int:
        if _deployment(info) is None or "throughput_mb_s_per_tib" not in info.data or "efa_enabled" not in info.data:
            return value  # an earlier field is invalid and reported; the step depends on it
        problem = fsx_sizing.capacity_problem(
            value,
            efa_enabled=info.data["efa_enabled"],
            throughput_mb_s_per_tib=info.data["throughput_mb_s_per_tib"],
        )
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("root_squash")
    @classmethod
    def _root_squash(cls, value: str | None) -> str | None:
        if value is not None and (problem := fsx_squash.root_squash_problem(value)):
            raise ValueError(problem)
        if value == "0:0":
            raise ValueError("0:0 maps root to root, which is no squash: set root_squash to null to turn it off")
        return value

    @field_validator("no_squash_nids")
    @classmethod
    def _no_squash_nids(cls, value: list[str], info: ValidationInfo) -> list[str]:
        problems = [f"{nid}: {problem}" for nid in value if (problem := fsx_squash.nid_problem(nid))]
        problems += [
            f"{nid} covers {fsx_squash.nid_addresses(nid):,} addresses, more than the {fsx_squash.MAX_NID_ADDRESSES:,} "
            "of the largest VPC (a /16): list the administration hosts themselves, such as 10.0.1.6@tcp"
            for nid in value
            if not fsx_squash.nid_problem(nid) and fsx_squash.nid_addresses(nid) > fsx_squash.MAX_NID_ADDRESSES
        ]
        if problems:
            raise ValueError("; ".join(problems))
        if value and "root_squash" in info.data and info.data["root_squash"] is None:
            raise ValueError("exempts clients from a root squash that is off: set root_squash, or remove them")
        return value

    @field_validator("team_directory")
    @classmethod
    def _apart_from_the_datasets(cls, value: str, info: ValidationInfo) -> str:
        """Every team mounts the datasets directory read-only and its own team directory read-write: if either
        holds the other, a team's view contains the others' directories (their checkpoints), or the shared data
        sits inside one team's writable directory."""
        datasets = info.data.get("file_system_path")
        if isinstance(datasets, str) and nested(datasets, value):
            raise ValueError(
                f"{value} and file_system_path {datasets} overlap: the datasets directory every team reads and the "
                "directory of the teams' own directories must be apart (neither inside the other), such as "
                "/datasets and /teams"
            )
        return value

    @field_validator("automatic_backup_retention_days")
    @classmethod
    def _backups(cls, value: int, info: ValidationInfo) -> int:
        if value > 0:
            if _deployment(info) is FsxDeploymentType.SCRATCH_2:
                raise ValueError("SCRATCH_2 has no automatic backups: set automatic_backup_retention_days to 0")
            raise ValueError(
                "FSx takes no backups of a file system linked to an S3 data repository (FSx for Lustre User Guide, "
                "'Working with backups'), and this one is linked to the datasets bucket: set it to 0 or remove it; "
                "keep what must outlive the file system in S3"
            )
        return value

    @property
    def persistent(self) -> bool:
        return self.deployment_type is FsxDeploymentType.PERSISTENT_2

    @property
    def squash_identity(self) -> tuple[int, int]:
        """The UID and GID a team's processes reach Lustre as: root is squashed to `root_squash`, and the torch
        runtime runs as it; `nobody` when root squash is off."""
        uid, gid = (self.root_squash or NOBODY).split(":")
        return int(uid), int(gid)

    @property
    def throughput_mb_s(self) -> float:
        """Baseline aggregate throughput (MB/s) the file system delivers: TiB of storage x the provisioned tier,
        or SCRATCH_2's fixed baseline. The supply side of sizing; the demand is `StackConfig.storage_demand_mb_s`."""
        per_unit = fsx_sizing.per_unit_throughput(self.deployment_type, self.throughput_mb_s_per_tib)
        return fsx_sizing.aggregate_throughput_mb_s(self.storage_capacity_gib, per_unit)


def nested(a: str, b: str) -> bool:
    """Whether Lustre directories `a` and `b` are the same or one holds the other ("/" holds every directory)."""
    first, second = a.rstrip("/") + "/", b.rstrip("/") + "/"
    return first.startswith(second) or second.startswith(first)


class BucketsSpec(Spec):
    """S3 buckets for datasets and checkpoints: SSE-KMS with a bucket key, versioning, public access blocked,
    TLS only, lifecycle rules for old versions and stale multipart uploads."""

    noncurrent_version_expiration_days: int = Field(
        default=30,
        ge=1,
        le=Limits.DAYS,
        description="Days after which an object version that is no longer current is deleted.",
    )
    noncurrent_versions_kept: int = Field(
        default=3, ge=0, le=100, description="Newest noncurrent versions kept regardless of age (S3 allows 100)."
    )
    abort_incomplete_multipart_days: int = Field(
        default=7,
        ge=1,
        le=Limits.DAYS,
        description="Days after which an unfinished multipart upload is aborted and its parts freed.",
    )


class StorageSpec(Spec):
    """Training data: the S3 buckets and the FSx for Lustre file system in front of the datasets bucket."""

    buckets: BucketsSpec = Field(default_factory=BucketsSpec, description="S3 datasets and checkpoints buckets.")
    fsx: FsxSpec = Field(description="FSx for Lustre.")
