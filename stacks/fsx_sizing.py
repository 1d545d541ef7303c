"""Pure FSx for Lustre sizing rules: valid capacities, throughput tiers, metadata IOPS, aggregate throughput.

Used by the schema's validators and properties (`FsxSpec.throughput_mb_s`; the demand it is sized against is
`StackConfig.storage_demand_mb_s`) and by the contract checks. It imports nothing of the program's, so the
schema can import it without a circle; the policy pack gets the throughput facts it needs through
`make pack-facts` (policies/facts_generated.py). Sources (AWS, checked for this module):

- Capacity at creation: FSx API Reference, CreateFileSystem `StorageCapacity`: "For SCRATCH_2, PERSISTENT_2,
  and PERSISTENT_1 deployment types using SSD storage type, the valid values are 1200 GiB, 2400 GiB, and
  increments of 2400 GiB" -- the same steps for every PERSISTENT_2 throughput tier (125/250/500/1000).
- EFA-enabled file systems: FSx for Lustre User Guide, "Increasing storage capacity": multiples of 38400 GiB
  at 125 MB/s/TiB, 19200 at 250, 9600 at 500, 4800 at 1000 (one EFA file-server unit, 4800 MB/s, per step).
  The guide states these for increases; the API reference has no separate EFA creation rule, so we apply
  the same steps at creation (the FSx CSI driver's EFA example creates 4800 GiB at 1000 MB/s/TiB).
- Per-unit throughput: User Guide, "Managing provisioned throughput capacity": PERSISTENT_2 SSD takes 125,
  250, 500 or 1000 MB/s/TiB; SCRATCH_2 takes none (it has a fixed baseline).
- SCRATCH_2 baseline: User Guide, "Performance characteristics of SSD and HDD storage classes": 200 MB/s
  per TiB baseline (1300 burst, credit-based; we size on the baseline, never on burst).
- Metadata IOPS (PERSISTENT_2, USER_PROVISIONED): API Reference, CreateFileSystemLustreMetadataConfiguration:
  1500, 3000, 6000, 12000 and multiples of 12000 up to 192000 (SSD file systems).
- Metadata IOPS in AUTOMATIC mode by capacity: FSx for Lustre User Guide, "Amazon FSx for Lustre performance",
  "File system metadata performance" (the table `AUTOMATIC_METADATA_IOPS`). A USER_PROVISIONED value below what
  AUTOMATIC would provision for the capacity is refused by CreateFileSystem ("Lustre metadata performance
  configuration"; botocore's shape documents only the value steps). The table as recorded here was read
  from two public summaries of the guide that agree with each other and with the review in issue 11; the
  guide page itself was not reachable from this workplace, so check it when the capacity nears a tier edge.
"""

from __future__ import annotations

# Deployment types by value (stacks.schema.FsxDeploymentType is a StrEnum, so its members compare equal).
SCRATCH_2 = "SCRATCH_2"
PERSISTENT_2 = "PERSISTENT_2"

GIB_PER_TIB = 1024

# The least read throughput per accelerator, MB/s, that the storage floor (`storage-throughput-floor`) judges
# Lustre against in each environment. A committed fact, never the stack file's `storage.fsx.per_gpu_read_mb_s`:
# a stack cannot lower the floor that guards it, only raise it (`make pack-facts` writes the larger of the two).
# Source: trainstack's sizing assumption (the schema's default `per_gpu_read_mb_s`, 200 MB/s per accelerator,
# docs/storage.md), not a vendor figure: FSx for Lustre User Guide, "Amazon FSx for Lustre performance" gives
# throughput per TiB of storage only, and no public source gives a per-GPU read rate for training. Dev's 100
# MB/s is the small-GPU experiments' rate (stacks/Pulumi.dev.yaml: 2 x A10G). Change it with a measurement.
READ_MB_S_PER_ACCELERATOR_FLOOR: dict[str, float] = {"dev": 100.0, "staging": 200.0, "prod": 200.0}

SSD_FIRST_STEPS_GIB = (1200, 2400)  # CreateFileSystem StorageCapacity, SSD types
SSD_INCREMENT_GIB = 2400
PERSISTENT_2_THROUGHPUTS_MB_S_PER_TIB = (125, 250, 500, 1000)  # managing-throughput-capacity
SCRATCH_2_BASELINE_MB_S_PER_TIB = 200  # ssd-storage performance table; burst 1300 is not sized on
# EFA-enabled increments by throughput tier (User Guide, increase-storage-capacity).
EFA_INCREMENT_GIB: dict[int, int] = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
METADATA_IOPS_STEPS = (1500, 3000, 6000, 12000)  # then multiples of 12000 up to 192000
METADATA_IOPS_INCREMENT = 12000
METADATA_IOPS_MAX = 192000
# Metadata IOPS that AUTOMATIC mode provisions: (largest capacity in GiB, IOPS) tiers, then 12000 IOPS per 24000
# GiB from 48000 GiB on (User Guide, "File system metadata performance").
AUTOMATIC_METADATA_IOPS: tuple[tuple[int, int], ...] = ((1200, 1500), (2400, 3000), (9600, 6000), (45600, 12000))
AUTOMATIC_IOPS_PER_24000_GIB = 12000


def valid_throughputs(deployment_type: str) -> tuple[int, ...]:
    """The per-unit storage throughputs (MB/s/TiB) a deployment type accepts; empty when it takes none."""
    if deployment_type == PERSISTENT_2:
        return PERSISTENT_2_THROUGHPUTS_MB_S_PER_TIB
    return ()


def capacity_increment_gib(efa_enabled: bool = False, throughput_mb_s_per_tib: int | None = None) -> int:
    """The step (GiB) valid capacities grow by, past the SSD first steps for non-EFA file systems."""
    if efa_enabled:
        if throughput_mb_s_per_tib not in EFA_INCREMENT_GIB:
            raise ValueError(f"EFA file systems need a throughput tier in {sorted(EFA_INCREMENT_GIB)}")
        return EFA_INCREMENT_GIB[throughput_mb_s_per_tib]
    return SSD_INCREMENT_GIB


def is_valid_capacity(
    capacity_gib: int, *, efa_enabled: bool = False, throughput_mb_s_per_tib: int | None = None
) -> bool:
    """Whether AWS accepts `capacity_gib` at creation (SCRATCH_2 and PERSISTENT_2 SSD share the rule)."""
    if capacity_gib <= 0:
        return False
    step = capacity_increment_gib(efa_enabled, throughput_mb_s_per_tib)
    if efa_enabled:
        return capacity_gib % step == 0
    return capacity_gib in SSD_FIRST_STEPS_GIB or capacity_gib % step == 0


def valid_capacities_near(
    capacity_gib: int, *, efa_enabled: bool = False, throughput_mb_s_per_tib: int | None = None
) -> tuple[int | None, int]:
    """The nearest valid capacities (below or equal, above or equal); below is None under the minimum."""
    step = capacity_increment_gib(efa_enabled, throughput_mb_s_per_tib)
    first = () if efa_enabled else SSD_FIRST_STEPS_GIB
    floor_multiple = (capacity_gib // step) * step
    below_candidates = [c for c in (*first, floor_multiple) if 0 < c <= capacity_gib]
    above_candidates = [c for c in (*first, -(-capacity_gib // step) * step, step) if c >= capacity_gib and c > 0]
    return (max(below_candidates) if below_candidates else None, min(above_candidates))


def capacity_rule(efa_enabled: bool = False, throughput_mb_s_per_tib: int | None = None) -> str:
    """The capacity rule in words, for error messages and the docs."""
    if efa_enabled:
        step = capacity_increment_gib(True, throughput_mb_s_per_tib)
        return f"a multiple of {step} GiB (EFA-enabled at {throughput_mb_s_per_tib} MB/s/TiB)"
    return "1200, 2400 or a multiple of 2400 GiB"


def capacity_problem(
    capacity_gib: int, *, efa_enabled: bool = False, throughput_mb_s_per_tib: int | None = None
) -> str | None:
    """None when the capacity is valid, else what is wrong and the nearest valid values."""
    if efa_enabled and throughput_mb_s_per_tib not in EFA_INCREMENT_GIB:
        return None  # the throughput rule reports this; no capacity rule applies without a tier
    if is_valid_capacity(capacity_gib, efa_enabled=efa_enabled, throughput_mb_s_per_tib=throughput_mb_s_per_tib):
        return None
    below, above = valid_capacities_near(
        capacity_gib, efa_enabled=efa_enabled, throughput_mb_s_per_tib=throughput_mb_s_per_tib
    )
    nearest = f"{below} or {above}" if below else str(above)
    rule = capacity_rule(efa_enabled, throughput_mb_s_per_tib)
    return f"{capacity_gib} GiB is not a valid FSx for Lustre capacity: use {rule}; nearest valid: {nearest}"


def is_valid_metadata_iops(iops: int) -> bool:
    return iops in METADATA_IOPS_STEPS or (
        iops % METADATA_IOPS_INCREMENT == 0 and METADATA_IOPS_INCREMENT <= iops <= METADATA_IOPS_MAX
    )


def automatic_metadata_iops(capacity_gib: int) -> int:
    """Metadata IOPS AUTOMATIC mode provisions for an SSD file system of `capacity_gib`."""
    for largest_gib, iops in AUTOMATIC_METADATA_IOPS:
        if capacity_gib <= largest_gib:
            return iops
    return capacity_gib * AUTOMATIC_IOPS_PER_24000_GIB // 24000


def minimum_metadata_iops(capacity_gib: int) -> int | None:
    """The smallest valid USER_PROVISIONED value at or above AUTOMATIC's for the capacity; None if there is
    none (AUTOMATIC provisions more than 192000 there, so only AUTOMATIC fits)."""
    floor = automatic_metadata_iops(capacity_gib)
    candidates = [
        *METADATA_IOPS_STEPS,
        *range(2 * METADATA_IOPS_INCREMENT, METADATA_IOPS_MAX + 1, METADATA_IOPS_INCREMENT),
    ]
    return next((iops for iops in candidates if iops >= floor), None)


def metadata_iops_problem(iops: int, capacity_gib: int) -> str | None:
    """Why `iops` cannot be USER_PROVISIONED on `capacity_gib`, or None."""
    if not is_valid_metadata_iops(iops):
        return (
            f"metadata_iops {iops} is not valid: use 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000 "
            "(or leave it unset for AUTOMATIC)"
        )
    floor = automatic_metadata_iops(capacity_gib)
    if iops < floor:
        minimum = minimum_metadata_iops(capacity_gib)
        use = f"at least {minimum}" if minimum else "AUTOMATIC (leave it unset)"
        return (
            f"metadata_iops {iops} is below the {floor} IOPS that AUTOMATIC mode provisions for {capacity_gib} GiB, "
            f"which FSx refuses: use {use}, or leave it unset for AUTOMATIC"
        )
    return None


def aggregate_throughput_mb_s(capacity_gib: int, per_unit_mb_s_per_tib: int) -> float:
    """Baseline aggregate throughput: capacity in TiB x per-unit throughput (MB/s)."""
    return capacity_gib / GIB_PER_TIB * per_unit_mb_s_per_tib


def per_unit_throughput(deployment_type: str, provisioned_mb_s_per_tib: int | None) -> int:
    """The per-unit throughput (MB/s/TiB) sizing counts on: SCRATCH_2's fixed baseline, else the provisioned tier."""
    if deployment_type == SCRATCH_2:
        return SCRATCH_2_BASELINE_MB_S_PER_TIB
    if provisioned_mb_s_per_tib is None:
        raise ValueError(f"{deployment_type} needs a provisioned throughput_mb_s_per_tib")
    return provisioned_mb_s_per_tib
