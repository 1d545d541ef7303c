"""The cost model: an hourly and monthly estimate of what a plan builds, from dated list prices.

Every price lives in this file or in the accelerator catalog (`stacks/catalog.py`, GPU instances), with the
region, the date it was read and its source. The estimate prices what the program recorded (node groups at
desired and at max size, NAT gateways, interface endpoints, the EKS control plane, FSx for Lustre, root
volumes, HyperPod instance groups); what it cannot price from the plan (data processed, S3, CloudWatch) is
named in the notes, never silently left out. It is an estimate for review, not a bill.

GPU On-Demand rates are the catalog's (read 2025-11-01, after AWS's June 2025 P4/P5 price cut). Cross-checked
on 2026-11-29 against datareceipts/data-receipts `109-gpu-pricing/hyperscalers.json` (retrieved 2026-11-09:
p4d.24xlarge $21.96, p4de.24xlarge $27.45, p5.48xlarge $55.04 in us-east-1), which agrees. Sources disagree:
several 2026 blog posts still quote the pre-cut p5.48xlarge rate of about $98.32; we keep the list price.

Pure functions over a `Summary` (trainstack.model.summary); no Pulumi import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from stacks.catalog import CATALOG, PRICE_REGION, SOURCES, InstanceType
from trainstack.model.summary import Summary


@dataclass(frozen=True)
class Price:
    """One list price with where and when it was read."""

    usd: float
    unit: str
    source: str
    date: str


# Each row's date is the day its value was read from the source it names (2025-11-01 for every row here).
# Later cross-checks do not move that date; they are noted beside the row instead.
# EKS: aws.amazon.com/eks/pricing/ ($0.10 per cluster-hour in standard support, $0.60 in extended support
# since the April 2024 billing cycle; AWS Containers blog "Amazon EKS extended support for Kubernetes versions
# pricing"). Third-party guides that say "+$0.50" describe the same total of $0.60. Cross-checked 2026-11-29
# against cloudburn.io's "Amazon EKS pricing" guide (rates as of March 2026: $0.10 and $0.60), which agrees.
EKS_STANDARD = Price(0.10, "cluster-hour", "aws.amazon.com/eks/pricing/", "2025-11-01")
EKS_EXTENDED = Price(0.60, "cluster-hour", "aws.amazon.com/eks/pricing/ (extended support)", "2025-11-01")
# VPC: aws.amazon.com/vpc/pricing/ (NAT gateway $0.045 per hour plus $0.045 per GB processed) and
# aws.amazon.com/privatelink/pricing/ (interface endpoint $0.01 per hour per AZ plus $0.01 per GB).
NAT_GATEWAY = Price(0.045, "gateway-hour", "aws.amazon.com/vpc/pricing/", "2025-11-01")
INTERFACE_ENDPOINT = Price(0.01, "endpoint-AZ-hour", "aws.amazon.com/privatelink/pricing/", "2025-11-01")
# EBS gp3 storage: aws.amazon.com/ebs/pricing/ ($0.08 per GB-month; baseline 3,000 IOPS and 125 MB/s free).
EBS_GP3 = Price(0.08, "GB-month", "aws.amazon.com/ebs/pricing/", "2025-11-01")
# Data between AZs of one region: $0.01 per GB out of one AZ and $0.01 per GB into the other (EC2 On-Demand pricing,
# "Data Transfer within the same AWS Region"; FSx pricing: standard data transfer fees apply across AZs). The
# Duckbill Group measured the same $0.02 per GB that crosses ("AWS cross-AZ data transfer costs more than AWS
# says", lastweekinaws.com), so a GB a GPU node reads from Lustre in another AZ costs both halves.
CROSS_AZ_TRANSFER = Price(
    0.02, "GB", "aws.amazon.com/ec2/pricing/on-demand/ (data transfer between AZs, both ways)", ""
)
GB_PER_HOUR_PER_MB_S = 3.6  # 1 MB/s for an hour, in GB

# CPU instances for system node groups: aws.amazon.com/ec2/pricing/on-demand/, Linux, us-east-1.
_EC2 = "aws.amazon.com/ec2/pricing/on-demand/ (Linux)"
SYSTEM_INSTANCES: MappingProxyType[str, Price] = MappingProxyType(
    {
        "m7i.large": Price(0.1008, "instance-hour", _EC2, "2025-11-01"),
        "m7i.xlarge": Price(0.2016, "instance-hour", _EC2, "2025-11-01"),
        "m7i.2xlarge": Price(0.4032, "instance-hour", _EC2, "2025-11-01"),
        "m7i.4xlarge": Price(0.8064, "instance-hour", _EC2, "2025-11-01"),
        "m6i.large": Price(0.096, "instance-hour", _EC2, "2025-11-01"),
        "m6i.xlarge": Price(0.192, "instance-hour", _EC2, "2025-11-01"),
        "m6i.2xlarge": Price(0.384, "instance-hour", _EC2, "2025-11-01"),
        "m5.large": Price(0.096, "instance-hour", _EC2, "2025-11-01"),
        "m5.xlarge": Price(0.192, "instance-hour", _EC2, "2025-11-01"),
        "m5.2xlarge": Price(0.384, "instance-hour", _EC2, "2025-11-01"),
    }
)

# FSx for Lustre SSD storage per GB-month by deployment type and per-unit throughput (MB/s/TiB):
# aws.amazon.com/fsx/lustre/pricing/, us-east-1. SCRATCH_2 has no throughput tier.
_FSX = "aws.amazon.com/fsx/lustre/pricing/"
FSX_LUSTRE: MappingProxyType[tuple[str, int | None], Price] = MappingProxyType(
    {
        ("SCRATCH_2", None): Price(0.140, "GB-month", _FSX, "2025-11-01"),
        ("PERSISTENT_2", 125): Price(0.145, "GB-month", _FSX, "2025-11-01"),
        ("PERSISTENT_2", 250): Price(0.210, "GB-month", _FSX, "2025-11-01"),
        ("PERSISTENT_2", 500): Price(0.340, "GB-month", _FSX, "2025-11-01"),
        ("PERSISTENT_2", 1000): Price(0.600, "GB-month", _FSX, "2025-11-01"),
    }
)

# SageMaker HyperPod bills ml.* instances at SageMaker rates, which differ from EC2 and which we could not
# confirm from a source reachable offline on 2025-11-01. Until a dated ml.* row is added here, HyperPod
# groups are priced at the EC2 On-Demand rate of the same type from the catalog, as a lower bound, and the
# estimate says so.
HYPERPOD_INSTANCES: MappingProxyType[str, Price] = MappingProxyType({})
HYPERPOD_FALLBACK_SOURCE = "EC2 On-Demand rate of the same type (lower bound for ml.*)"


def catalog_price(row: InstanceType, unit: str = "instance-hour", source_prefix: str = "") -> tuple[Price, bool, str]:
    """A catalog row's On-Demand rate as a Price, whether it is an estimate, and the row's verify note.

    The row's own sources back the price, dated by the one it was read from (`InstanceType.price_date`). A row
    without a price source (no list price was read, e.g.
    p6e-gb200, sold only as UltraServer Capacity Blocks) has no read date; whether the rate is an estimate is
    the row's own `price_estimated` field (the catalog requires it where no list price was read).
    """
    cited = "; ".join(SOURCES[key] for key in row.sources if key in SOURCES)
    source = f"{source_prefix}stacks/catalog.py {row.name}: {cited}"
    price = Price(row.on_demand_usd_per_hour, unit, source, row.price_date)
    return price, row.price_estimated, row.verify or ""


@dataclass(frozen=True)
class CostItem:
    """One line of the estimate, in US dollars per hour at the group's desired and at its max size."""

    name: str
    category: str  # gpu, system-nodes, eks, nat, endpoints, fsx, ebs, hyperpod
    quantity_desired: float
    quantity_max: float
    unit: str
    unit_usd: float
    usd_per_hour_desired: float
    usd_per_hour_max: float
    source: str
    date: str  # the day the price was read from `source`; empty when no list price was read
    note: str = ""
    estimated: bool = False  # the unit price is an estimate, not a list price read from a source

    @property
    def date_label(self) -> str:
        """The price date as the reports print it, with estimates marked."""
        if not self.estimated:
            return self.date
        return f"{self.date} (estimate)" if self.date else "estimate (undated)"


@dataclass(frozen=True)
class CostEstimate:
    items: tuple[CostItem, ...]
    hours_per_month: float
    region: str
    notes: tuple[str, ...]

    @property
    def usd_per_hour_desired(self) -> float:
        return sum(i.usd_per_hour_desired for i in self.items)

    @property
    def usd_per_hour_max(self) -> float:
        return sum(i.usd_per_hour_max for i in self.items)

    @property
    def usd_per_month_desired(self) -> float:
        return self.usd_per_hour_desired * self.hours_per_month

    @property
    def usd_per_month_max(self) -> float:
        return self.usd_per_hour_max * self.hours_per_month

    @property
    def gpu_share_desired(self) -> float:
        """The GPU instances' part of the hourly total at desired size (0 when nothing costs)."""
        total = self.usd_per_hour_desired
        gpu = sum(i.usd_per_hour_desired for i in self.items if i.category in ("gpu", "hyperpod"))
        return gpu / total if total else 0.0

    @property
    def gpu_share_max(self) -> float:
        total = self.usd_per_hour_max
        gpu = sum(i.usd_per_hour_max for i in self.items if i.category in ("gpu", "hyperpod"))
        return gpu / total if total else 0.0

    def top(self, count: int = 5) -> tuple[CostItem, ...]:
        """The most expensive items at desired size (then max size), largest first."""
        ranked = sorted(self.items, key=lambda i: (i.usd_per_hour_desired, i.usd_per_hour_max), reverse=True)
        return tuple(ranked[:count])

    def to_dict(self) -> dict[str, object]:
        return {
            "region": self.region,
            "hoursPerMonth": self.hours_per_month,
            "usdPerHourDesired": round(self.usd_per_hour_desired, 4),
            "usdPerHourMax": round(self.usd_per_hour_max, 4),
            "usdPerMonthDesired": round(self.usd_per_month_desired, 2),
            "usdPerMonthMax": round(self.usd_per_month_max, 2),
            "gpuShareDesired": round(self.gpu_share_desired, 4),
            "gpuShareMax": round(self.gpu_share_max, 4),
            "items": [
                {
                    "name": i.name,
                    "category": i.category,
                    "quantityDesired": i.quantity_desired,
                    "quantityMax": i.quantity_max,
                    "unit": i.unit,
                    "unitUsd": i.unit_usd,
                    "usdPerHourDesired": round(i.usd_per_hour_desired, 4),
                    "usdPerHourMax": round(i.usd_per_hour_max, 4),
                    "source": i.source,
                    "date": i.date,
                    "note": i.note,
                    "estimated": i.estimated,
                }
                for i in self.items
            ],
            "notes": list(self.notes),
        }


def _hourly(
    item_name: str,
    category: str,
    desired: float,
    maximum: float,
    price: Price,
    note: str = "",
    estimated: bool = False,
) -> CostItem:
    return CostItem(
        name=item_name,
        category=category,
        quantity_desired=desired,
        quantity_max=maximum,
        unit=price.unit,
        unit_usd=price.usd,
        usd_per_hour_desired=desired * price.usd,
        usd_per_hour_max=maximum * price.usd,
        source=price.source,
        date=price.date,
        note=note,
        estimated=estimated,
    )


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _monthly(item_name: str, category: str, quantity: float, price: Price, hours_per_month: float) -> CostItem:
    """A per-month price (storage) spread over the hours of the month; the same at desired and max."""
    per_hour = quantity * price.usd / hours_per_month
    return CostItem(
        name=item_name,
        category=category,
        quantity_desired=quantity,
        quantity_max=quantity,
        unit=price.unit,
        unit_usd=price.usd,
        usd_per_hour_desired=per_hour,
        usd_per_hour_max=per_hour,
        source=price.source,
        date=price.date,
    )


def _capacity_note(capacity: str) -> str:
    if capacity.startswith("reservation"):
        return "ODCR: billed at the On-Demand rate for every reserved instance, running or not"
    if capacity.startswith("capacity-block"):
        return "Capacity Block: paid up front at the block's own rate; On-Demand shown for comparison"
    if capacity == "spot":
        return "Spot: the market price is usually far lower; On-Demand shown as the ceiling"
    return ""


def _cross_az_reads(summary: Summary) -> list[CostItem]:
    """What GPU groups outside a Lustre file system's AZ pay to read it across AZs, at the configured read rate."""
    found: list[CostItem] = []
    for fs in summary.file_systems:
        if not fs.availability_zones:
            continue
        for group in summary.node_groups:
            if not group.gpus_per_node or not group.availability_zones:
                continue
            if set(group.availability_zones) & set(fs.availability_zones):
                continue
            per_node_gb_h = group.gpus_per_node * summary.per_gpu_read_mb_s * GB_PER_HOUR_PER_MB_S
            found.append(
                CostItem(
                    name=f"cross-AZ reads: {group.name} ({', '.join(group.availability_zones)}) from {fs.name} "
                    f"({', '.join(fs.availability_zones)})",
                    category="data-transfer",
                    quantity_desired=per_node_gb_h * group.desired_size,
                    quantity_max=per_node_gb_h * group.max_size,
                    unit=CROSS_AZ_TRANSFER.unit,
                    unit_usd=CROSS_AZ_TRANSFER.usd,
                    usd_per_hour_desired=per_node_gb_h * group.desired_size * CROSS_AZ_TRANSFER.usd,
                    usd_per_hour_max=per_node_gb_h * group.max_size * CROSS_AZ_TRANSFER.usd,
                    source=CROSS_AZ_TRANSFER.source,
                    date=CROSS_AZ_TRANSFER.date,
                    note=f"GB per hour at {summary.per_gpu_read_mb_s:g} MB/s per GPU (upper bound)",
                    estimated=True,
                )
            )
    return found


@dataclass
class _Pricing:
    """What an estimate collects, section by section: its rows, its notes and what has no price."""

    items: list[CostItem] = field(default_factory=list[CostItem])
    notes: list[str] = field(default_factory=list[str])
    unpriced: list[str] = field(default_factory=list[str])


def estimate(summary: Summary, hours_per_month: float) -> CostEstimate:
    """The cost estimate of a plan's summary."""
    pricing = _Pricing(
        notes=[
            f"Estimate from list prices in {PRICE_REGION} (each row dated by the day its price was read); "
            "not a bill: no Savings Plans, discounts, taxes or data transfer."
        ]
    )
    if summary.region != PRICE_REGION:
        pricing.notes.append(
            f"The stack is in {summary.region}; prices are {PRICE_REGION} list prices and will differ."
        )
    _price_node_groups(summary, hours_per_month, pricing)
    _price_control_planes_and_network(summary, pricing)
    _price_file_systems(summary, hours_per_month, pricing)
    _price_hyperpod(summary, pricing)
    items, notes, unpriced = pricing.items, pricing.notes, pricing.unpriced
    if summary.bucket_count:
        notes.append(f"S3 ({summary.bucket_count} buckets) is billed by stored GB and requests: not estimated.")
    notes.append("CloudWatch logs and metrics (control plane, flow logs, Container Insights) are not estimated.")
    if unpriced:
        notes.append("Not priced (no list price in the project): " + "; ".join(unpriced) + ".")
    if estimated_items := [i.name for i in items if i.estimated]:
        notes.append(
            "Estimated unit prices (no list price read, or the catalog doubts it): " + "; ".join(estimated_items) + "."
        )
    return CostEstimate(items=tuple(items), hours_per_month=hours_per_month, region=PRICE_REGION, notes=tuple(notes))


def _price_node_groups(summary: Summary, hours_per_month: float, pricing: _Pricing) -> None:
    """Each node group's instances (GPU from the catalog, system from its table), then their root volumes."""
    for group in summary.node_groups:
        row = CATALOG.get(group.instance_type or "")
        label = f"{group.name}: {group.instance_type}"
        if row is not None:
            price, estimated, verify = catalog_price(row)
            note = _join(_capacity_note(group.capacity), verify)
            pricing.items.append(_hourly(label, "gpu", group.desired_size, group.max_size, price, note, estimated))
        elif (system := SYSTEM_INSTANCES.get(group.instance_type or "")) is not None:
            pricing.items.append(_hourly(label, "system-nodes", group.desired_size, group.max_size, system))
        else:
            pricing.unpriced.append(f"node group {group.name} ({group.instance_type or 'unknown type'})")

    ebs_gib_desired = sum(g.root_volume_gib * g.desired_size for g in summary.node_groups)
    ebs_gib_max = sum(g.root_volume_gib * g.max_size for g in summary.node_groups)
    if ebs_gib_max:
        per_gib_hour = EBS_GP3.usd / hours_per_month
        pricing.items.append(
            CostItem(
                name="node root volumes (gp3)",
                category="ebs",
                quantity_desired=ebs_gib_desired,
                quantity_max=ebs_gib_max,
                unit=EBS_GP3.unit,
                unit_usd=EBS_GP3.usd,
                usd_per_hour_desired=ebs_gib_desired * per_gib_hour,
                usd_per_hour_max=ebs_gib_max * per_gib_hour,
                source=EBS_GP3.source,
                date=EBS_GP3.date,
            )
        )


def _price_control_planes_and_network(summary: Summary, pricing: _Pricing) -> None:
    """EKS control planes, NAT gateways, interface endpoints and the cross-AZ Lustre reads."""
    items, notes = pricing.items, pricing.notes
    for name, _version, support in summary.eks_clusters:
        price = EKS_EXTENDED if support == "EXTENDED" else EKS_STANDARD
        items.append(_hourly(f"EKS control plane {name} ({support.lower()} support)", "eks", 1, 1, price))

    if summary.nat_gateways:
        items.append(
            _hourly(
                "NAT gateways",
                "nat",
                summary.nat_gateways,
                summary.nat_gateways,
                NAT_GATEWAY,
                "plus $0.045 per GB processed (not estimated)",
            )
        )
        notes.append("NAT data processing ($0.045/GB) is not estimated: it depends on traffic.")
    if summary.interface_endpoint_azs:
        items.append(
            _hourly(
                f"interface endpoints ({summary.interface_endpoints})",
                "endpoints",
                summary.interface_endpoint_azs,
                summary.interface_endpoint_azs,
                INTERFACE_ENDPOINT,
                "per endpoint per AZ; plus $0.01 per GB",
            )
        )

    items += _cross_az_reads(summary)
    if any(i.category == "data-transfer" for i in items):
        notes.append(
            "Cross-AZ Lustre reads assume every GPU outside the file system's AZ reads at "
            "storage.fsx.per_gpu_read_mb_s all hour: an upper bound for a data-loading job, $0.02 per GB that crosses."
        )


def _price_file_systems(summary: Summary, hours_per_month: float, pricing: _Pricing) -> None:
    """Each FSx for Lustre file system by its deployment type and throughput tier."""
    for fs in summary.file_systems:
        key = (fs.deployment_type or "", None if fs.deployment_type == "SCRATCH_2" else fs.throughput_mb_s_per_tib)
        price = FSX_LUSTRE.get(key)
        if price is None:
            pricing.unpriced.append(
                f"FSx for Lustre {fs.name} ({fs.deployment_type}, {fs.throughput_mb_s_per_tib} MB/s/TiB)"
            )
            continue
        tier = f", {fs.throughput_mb_s_per_tib} MB/s/TiB" if fs.throughput_mb_s_per_tib else ""
        pricing.items.append(
            _monthly(f"FSx for Lustre {fs.deployment_type}{tier}", "fsx", fs.capacity_gib, price, hours_per_month)
        )
    if summary.file_systems:
        pricing.notes.append("FSx backups, user-provisioned metadata IOPS and data transfer are not estimated.")


def _price_hyperpod(summary: Summary, pricing: _Pricing) -> None:
    """Each HyperPod group at its ml.* rate, or at the EC2 rate of the same instance where the table has none."""
    for group in summary.hyperpod:
        price = HYPERPOD_INSTANCES.get(group.instance_type)
        estimated, verify = False, ""
        if price is None and (row := CATALOG.get(group.instance_type.removeprefix("ml."))) is not None:
            price, estimated, verify = catalog_price(row, source_prefix=f"{HYPERPOD_FALLBACK_SOURCE}: ")
            pricing.notes.append(
                f"HyperPod {group.instance_type} is priced at the EC2 rate of {row.name}: SageMaker's ml.* rate is "
                "higher and not in the project's price table."
            )
        if price is None:
            pricing.unpriced.append(f"HyperPod group {group.name} ({group.instance_type})")
            continue
        pricing.items.append(
            _hourly(
                f"HyperPod {group.cluster}/{group.name}: {group.instance_type}",
                "hyperpod",
                group.count,
                group.count,
                price,
                verify,
                estimated,
            )
        )


# ------------------------------------------------------------------------------------ observability
# Amazon Managed Service for Prometheus, us-east-1 (aws.amazon.com/prometheus/pricing/): samples ingested are
# billed per 10 million (first tier $0.90, up to 2 billion a month; later tiers are cheaper, so this is an upper
# bound), and the AWS managed collector per collector-hour plus per sample collected. The stored copies of the
# pricing page read offline on 2026-11-30 name these dimensions but not their figures: the rates below are the
# first-tier figures as we know them, unconfirmed, so every AMP line is marked an estimate. Storage
# ($0.03/GB-month) and queries are not estimated.
AMP_INGESTION = Price(0.90 / 10_000_000, "sample", "aws.amazon.com/prometheus/pricing/ (first tier)", "")
AMP_COLLECTOR = Price(0.04, "collector-hour", "aws.amazon.com/prometheus/pricing/ (managed collector)", "")
AMP_COLLECTED = Price(0.10 / 10_000_000, "sample", "aws.amazon.com/prometheus/pricing/ (managed collector)", "")
# Series a node exposes (trainstack's own estimate): node-exporter ~1,000 on an EKS AL2023 node,
# kube-state-metrics ~50 per node, 17 DCGM fields per GPU, ~20 hardware counters per EFA device.
SERIES_PER_NODE = 1_050
SERIES_PER_GPU = 17
SERIES_PER_EFA_DEVICE = 20
SERIES_CLUSTER = 500  # Kueue, kube-state-metrics cluster objects, YACE


def fleet_series(summary: Summary, at_max: bool) -> int:
    """Active series the collector scrapes, at the node groups' desired or max size."""
    total = SERIES_CLUSTER
    for group in summary.node_groups:
        nodes = group.max_size if at_max else group.desired_size
        total += nodes * (
            SERIES_PER_NODE + SERIES_PER_GPU * group.gpus_per_node + SERIES_PER_EFA_DEVICE * group.efa_interfaces
        )
    return total


def observability_items(summary: Summary, scrape_interval_s: int) -> tuple[CostItem, ...]:
    """The metrics stack's hourly cost: the collector, and samples collected and ingested."""
    desired, maximum = (fleet_series(summary, at_max) * 3600 / scrape_interval_s for at_max in (False, True))
    note = f"{fleet_series(summary, False):,} series at desired, every {scrape_interval_s}s"
    return (
        _hourly("AMP managed collector", "observability", 1, 1, AMP_COLLECTOR, estimated=True),
        _hourly("AMP samples collected", "observability", desired, maximum, AMP_COLLECTED, note=note, estimated=True),
        _hourly("AMP samples ingested", "observability", desired, maximum, AMP_INGESTION, note=note, estimated=True),
    )
