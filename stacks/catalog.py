"""The accelerator catalog: the instance types trainstack can build GPU node groups from.

One row per instance type, with the facts the rest of the project derives from: how many EFA interfaces a
launch template configures, how many GPUs count against a budget, what the plan prints as bandwidth, and
what the cost model charges. The EC2 API (`DescribeInstanceTypes`: `EfaInfo.MaximumEfaInterfaces`,
`NetworkInfo.MaximumNetworkCards`, `GpuInfo`) is the source of truth; this table is its offline copy, checked
against `../shared/reference/gpu-instances.md` and the sources named per row.

Prices are AWS list prices for On-Demand Linux in us-east-1 (`PRICE_REGION`), read on `PRICE_DATE`; they are
estimates for planning, not a bill. The June 2025 price cut for P4/P5 is included.

Pure data and pure functions: no Pulumi import, so the config schema can use it.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PRICE_REGION = "us-east-1"
PRICE_DATE = "2025-11-01"
# The day the rows added for issue 34 were checked against "ec2-api" and "price-2026".
CHECKED_2026 = "2026-12-01"
# The day each price source was read (or generated): what the plan prints as a price's date.
PRICE_SOURCE_DATES: MappingProxyType[str, str] = MappingProxyType({"price": PRICE_DATE, "price-2026": "2026-07-20"})

# Sources cited by rows below (short keys keep the table readable).
SOURCES: MappingProxyType[str, str] = MappingProxyType(
    {
        "ec2-efa": "AWS EC2 User Guide, 'Supported instance types for EFA' and 'Maximize network bandwidth on "
        "accelerated instances' (network cards and EFA interfaces per type)",
        "ec2-p4": "aws.amazon.com/ec2/instance-types/p4/ (P4d/P4de specifications)",
        "ec2-p5": "aws.amazon.com/ec2/instance-types/p5/ (P5, P5e, P5en specifications)",
        "ec2-p6": "aws.amazon.com/ec2/instance-types/p6/ (P6-B200, P6-B300, P6e-GB200 specifications; P6e-GB200 "
        "runs on NVIDIA Grace, Arm Neoverse V2, CPUs)",
        "ec2-trn": "aws.amazon.com/ec2/instance-types/trn1/ and /trn2/; AWS Neuron docs trn1-arch, trainium2-arch",
        "ec2-g5": "aws.amazon.com/ec2/instance-types/g5/ and /g6e/",
        "ec2-g4dn": "aws.amazon.com/ec2/instance-types/g4/ (G4dn: NVIDIA T4; EFA on 8xlarge and larger)",
        "ec2-g6": "aws.amazon.com/ec2/instance-types/g6/ (G6: NVIDIA L4)",
        "ec2-api": "EC2 DescribeInstanceTypes as recorded by moto 5.2.5 (moto/ec2/resources/instance_types.json.gz): "
        "VCpuInfo, MemoryInfo, GpuInfo, NeuronInfo, InstanceStorageInfo, NetworkInfo.MaximumNetworkCards, "
        "EfaInfo.MaximumEfaInterfaces, NetworkCards[].InterfaceTypes, NetworkPerformance; tests/unit/test_catalog.py "
        "checks every row against it",
        "price": f"aws.amazon.com/ec2/pricing/on-demand/, Linux, {PRICE_REGION}, read {PRICE_DATE}",
        "price-2026": f"AWS Pricing API On-Demand Linux rates for {PRICE_REGION} as aws/karpenter-provider-aws records "
        "them (pkg/providers/pricing/zz_generated.pricing_aws.go, 'generated at 2026-07-20T13:44:30Z', commit "
        "6fc13b5236fd04fd16ff3f9dc7490d0813994099)",
        "ref": "../shared/reference/gpu-instances.md (trainstack's checked facts)",
        "pcluster-b300": "aws/aws-parallelcluster issue #7143 (AWS engineering: P6-B300 has 17 network cards; card 0 "
        "is ENA-only, cards 1-16 take EFA) and PR #7210 (B300 support: ENA primary, efa-only on the others)",
        "pcluster-gb200": "aws/aws-parallelcluster PR #6930 (GB200 launch templates: 17 network cards, "
        "MaximumNetworkInterfaces 2 on even and 1 on odd card indices)",
        "eksctl-8692": "eksctl-io/eksctl PR #8692 (EFA count from EfaInfo.MaximumEfaInterfaces, not "
        "MaximumNetworkCards; the reviewer calls it the fix 'intended for p6-b200')",
    }
)


class Accelerator(StrEnum):
    """The accelerator family, which decides the device resource name and the software stack."""

    NVIDIA = "nvidia"
    NEURON = "neuron"


# The Kubernetes extended resource each accelerator family's device plugin advertises (NVIDIA device plugin,
# AWS Neuron device plugin); the GPU node groups also taint their nodes with it.
DEVICE_RESOURCE: MappingProxyType[Accelerator, str] = MappingProxyType(
    {Accelerator.NVIDIA: "nvidia.com/gpu", Accelerator.NEURON: "aws.amazon.com/neuron"}
)


# EC2 ProcessorInfo.SupportedArchitectures spelling; the EKS AMI types spell arm64 as ARM_64.
Architecture = Literal["x86_64", "arm64"]


class InstanceType(BaseModel):
    """Facts about one accelerated EC2 instance type."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="EC2 instance type, for example p5.48xlarge.")
    accelerator: Accelerator = Field(description="Accelerator vendor family.")
    accelerator_model: str = Field(description="Accelerator model, for example H100.")
    accelerator_count: int = Field(gt=0, description="Accelerators per instance.")
    accelerator_memory_gib: int = Field(gt=0, description="Memory per accelerator in GiB (GB as AWS lists it).")
    architecture: Architecture = Field(
        default="x86_64",
        description="CPU architecture (EC2 ProcessorInfo.SupportedArchitectures); decides the AMI's architecture.",
    )
    vcpus: int = Field(gt=0, description="vCPUs per instance.")
    memory_gib: int = Field(gt=0, description="Host memory per instance in GiB.")
    instance_store_gib: int = Field(ge=0, description="Local NVMe instance store in GiB (0 when none).")
    network_cards: int = Field(gt=0, description="EC2 MaximumNetworkCards.")
    max_efa_interfaces: int = Field(ge=0, description="EC2 EfaInfo.MaximumEfaInterfaces (0: no EFA).")
    efa_card_indices: tuple[int, ...] | None = Field(
        default=None,
        description="Network card indices that accept EFA, when they are not simply 0..max_efa_interfaces-1.",
    )
    network_gbps: int = Field(gt=0, description="Aggregate network bandwidth in Gbit/s.")
    intra_node_link: str = Field(description="Accelerator-to-accelerator link inside the node.")
    nccl_busbw_floor_gb_s: float = Field(
        ge=0,
        description="Expected minimum NCCL all-reduce bus bandwidth across nodes, GB/s, for large messages "
        "over EFA (about 80 percent of the fabric's line rate in bytes); the validation job fails below it.",
    )
    on_demand_usd_per_hour: float = Field(gt=0, description=f"On-Demand list price, {PRICE_REGION}.")
    sources: tuple[str, ...] = Field(description="Keys into SOURCES that back this row.")
    checked_on: str = Field(
        pattern=r"^\d{4}-\d{2}-\d{2}$",
        description="The day this row's facts and price were checked against its sources.",
    )
    verify: str | None = Field(default=None, description="What public sources disagree on, if anything.")
    price_estimated: bool = Field(
        default=False,
        description="The On-Demand rate is an estimate, not a list price read from the pricing page (the type is "
        "sold mainly or only through Capacity Blocks, or the reference doubts the rate); the plan says so.",
    )

    @model_validator(mode="after")
    def _efa_cards_fit(self) -> InstanceType:
        cards = self.efa_cards
        if (
            len(cards) != self.max_efa_interfaces
            or len(set(cards)) != len(cards)
            or any(not 0 <= c < self.network_cards for c in cards)
        ):
            raise ValueError(
                f"{self.name}: EFA cards {list(cards)} must be {self.max_efa_interfaces} distinct indices "
                f"below network_cards {self.network_cards}"
            )
        if not set(PRICE_SOURCE_DATES) & set(self.sources) and not self.price_estimated:
            raise ValueError(f"{self.name}: no list price was read (no 'price' source), so set price_estimated")
        return self

    @property
    def price_date(self) -> str:
        """The day this row's list price was read ("" when none was: the rate is an estimate)."""
        return next((PRICE_SOURCE_DATES[key] for key in self.sources if key in PRICE_SOURCE_DATES), "")

    @property
    def supports_efa(self) -> bool:
        return self.max_efa_interfaces > 0

    @property
    def efa_cards(self) -> tuple[int, ...]:
        """The network card indices an EFA layout uses, one interface per card."""
        if self.efa_card_indices is not None:
            return self.efa_card_indices
        return tuple(range(self.max_efa_interfaces))

    @property
    def efa_on_card_0(self) -> bool:
        """Whether the primary network card takes EFA (false on p6-b300 and p6e-gb200, whose card 0 is ENA-only)."""
        return 0 in self.efa_cards

    @property
    def total_accelerator_memory_gib(self) -> int:
        return self.accelerator_count * self.accelerator_memory_gib

    @property
    def device_resource(self) -> str:
        """The Kubernetes extended resource that counts this type's accelerators."""
        return DEVICE_RESOURCE[self.accelerator]


def _busbw_floor(network_gbps: int) -> float:
    # NCCL all-reduce bus bandwidth over EFA typically reaches 80-90 percent of line rate for 1-8 GiB
    # messages (aws-samples/awsome-distributed-training nccl-tests results); 80 percent is the floor.
    return round(network_gbps / 8 * 0.8, 1)


def _row(**fields: object) -> InstanceType:
    fields.setdefault("nccl_busbw_floor_gb_s", _busbw_floor(fields["network_gbps"]))  # type: ignore[arg-type]
    fields.setdefault("checked_on", PRICE_DATE)  # the first 15 rows were read with the pricing page
    return InstanceType.model_validate(fields)


CATALOG: MappingProxyType[str, InstanceType] = MappingProxyType(
    {
        row.name: row
        for row in (
            _row(
                name="p4d.24xlarge",
                accelerator="nvidia",
                accelerator_model="A100",
                accelerator_count=8,
                accelerator_memory_gib=40,
                vcpus=96,
                memory_gib=1152,
                instance_store_gib=8000,
                network_cards=4,
                max_efa_interfaces=4,
                network_gbps=400,
                intra_node_link="NVLink 3 / NVSwitch, 600 GB/s per GPU",
                on_demand_usd_per_hour=21.96,
                sources=("ec2-p4", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="p4de.24xlarge",
                accelerator="nvidia",
                accelerator_model="A100",
                accelerator_count=8,
                accelerator_memory_gib=80,
                vcpus=96,
                memory_gib=1152,
                instance_store_gib=8000,
                network_cards=4,
                max_efa_interfaces=4,
                network_gbps=400,
                intra_node_link="NVLink 3 / NVSwitch, 600 GB/s per GPU",
                on_demand_usd_per_hour=27.45,
                sources=("ec2-p4", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="p5.48xlarge",
                accelerator="nvidia",
                accelerator_model="H100",
                accelerator_count=8,
                accelerator_memory_gib=80,
                vcpus=192,
                memory_gib=2048,
                instance_store_gib=30400,  # 8 x 3,800 GB (the API; the product pages round to 8 x 3.84 TB)
                network_cards=32,
                max_efa_interfaces=32,
                network_gbps=3200,
                intra_node_link="NVLink 4 / NVSwitch, 900 GB/s per GPU",
                on_demand_usd_per_hour=55.04,
                sources=("ec2-p5", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="p5e.48xlarge",
                accelerator="nvidia",
                accelerator_model="H200",
                accelerator_count=8,
                accelerator_memory_gib=141,
                vcpus=192,
                memory_gib=2048,
                instance_store_gib=30400,  # 8 x 3,800 GB (the API; the product pages round to 8 x 3.84 TB)
                network_cards=32,
                max_efa_interfaces=32,
                network_gbps=3200,
                intra_node_link="NVLink 4 / NVSwitch, 900 GB/s per GPU",
                on_demand_usd_per_hour=60.20,
                sources=("ec2-p5", "ec2-efa", "price", "ref", "ec2-api"),
                verify="p5e is sold mainly through Capacity Blocks; the On-Demand rate is a list estimate.",
                price_estimated=True,
            ),
            _row(
                name="p5en.48xlarge",
                accelerator="nvidia",
                accelerator_model="H200",
                accelerator_count=8,
                accelerator_memory_gib=141,
                vcpus=192,
                memory_gib=2048,
                instance_store_gib=30400,  # 8 x 3,800 GB (the API; the product pages round to 8 x 3.84 TB)
                network_cards=16,
                max_efa_interfaces=16,
                network_gbps=3200,
                intra_node_link="NVLink 4 / NVSwitch, 900 GB/s per GPU (EFAv3, PCIe Gen5 to the NICs)",
                on_demand_usd_per_hour=63.30,
                sources=("ec2-p5", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="p6-b200.48xlarge",
                accelerator="nvidia",
                accelerator_model="B200",
                accelerator_count=8,
                accelerator_memory_gib=179,
                vcpus=192,
                memory_gib=2048,
                instance_store_gib=30400,  # 8 x 3,800 GB (the API; the product pages round to 8 x 3.84 TB)
                network_cards=8,
                max_efa_interfaces=8,
                network_gbps=3200,
                intra_node_link="NVLink 5 / NVSwitch, 1800 GB/s per GPU",
                on_demand_usd_per_hour=113.93,
                sources=("ec2-p6", "ec2-efa", "price", "ref", "eksctl-8692", "ec2-api"),
                verify="Reference lists 3200 Gbps EFAv4 as (verify); AWS's P6 page says 8 x 400 Gbps EFAv4. "
                "eksctl PR #8692 calls its MaximumNetworkCards > MaximumEfaInterfaces fix 'intended for p6-b200', so "
                "this type likely has more network cards than the 8 here, and which 8 take EFA is unconfirmed: no "
                "public source found names them. The EFA count (8, EfaInfo) is what the layout uses; check the "
                "cards with `aws ec2 describe-instance-types --instance-types p6-b200.48xlarge` before deploying.",
            ),
            _row(
                name="p6-b300.48xlarge",
                accelerator="nvidia",
                accelerator_model="B300",
                accelerator_count=8,
                accelerator_memory_gib=268,
                vcpus=192,
                memory_gib=4096,
                instance_store_gib=30400,  # 8 x 3,800 GB (the API; the product pages round to 8 x 3.84 TB)
                network_cards=17,
                max_efa_interfaces=16,
                efa_card_indices=tuple(range(1, 17)),  # card 0 is ENA-only (aws-parallelcluster #7143)
                network_gbps=6400,
                intra_node_link="NVLink 5 / NVSwitch, 1800 GB/s per GPU",
                on_demand_usd_per_hour=142.42,
                sources=("ec2-p6", "ec2-efa", "price", "ref", "pcluster-b300", "ec2-api"),
                verify="GPU memory, bandwidth and price are marked (verify) in the reference. 17 network cards, "
                "16 EFA: card 0 takes ENA only (4 ENIs), EFA is on cards 1-16 (AWS engineering quoted in "
                "aws-parallelcluster #7143; PR #7210 builds ENA primary + efa-only on them).",
                price_estimated=True,
            ),
            _row(
                name="p6e-gb200.36xlarge",
                accelerator="nvidia",
                accelerator_model="B200 (GB200)",
                accelerator_count=4,
                accelerator_memory_gib=185,
                architecture="arm64",  # 2 NVIDIA Grace CPUs
                vcpus=144,
                memory_gib=960,
                instance_store_gib=22500,
                network_cards=17,
                max_efa_interfaces=4,
                efa_card_indices=(1, 5, 9, 13),
                network_gbps=1600,
                intra_node_link="NVLink 5 across a 36/72-GPU UltraServer (needs IMEX)",
                on_demand_usd_per_hour=57.0,
                sources=("ec2-p6", "ec2-efa", "ref", "pcluster-gb200"),
                verify="Sold only as UltraServer Capacity Blocks; the hourly rate is an estimate. EFA cards are "
                "disputed: AWS's EFA guide (efa-acc-inst-types) lists an ENA primary on card 0 and EFA on cards 1, 5, "
                "9, 13, which matches EfaInfo's 4 and is what trainstack builds; the reference writes 'card indices "
                "0, 1, 5, 9, 13' (card 0 being the ENA primary, not an EFA card) and marks it verify; "
                "aws-parallelcluster PR #6930 instead puts an interface on all 17 cards (efa on even, efa-only on "
                "odd indices), which exceeds MaximumEfaInterfaces 4 unless most of them come up without an EFA "
                "device. Check with `aws ec2 describe-instance-types` (NetworkCards[].MaximumNetworkInterfaces) "
                "before deploying.",
                price_estimated=True,
            ),
            _row(
                name="trn1.32xlarge",
                accelerator="neuron",
                accelerator_model="Trainium",
                accelerator_count=16,
                accelerator_memory_gib=32,
                vcpus=128,
                memory_gib=512,
                instance_store_gib=7600,
                network_cards=8,
                max_efa_interfaces=8,
                network_gbps=800,
                intra_node_link="NeuronLink v2",
                on_demand_usd_per_hour=21.50,
                sources=("ec2-trn", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="trn1n.32xlarge",
                accelerator="neuron",
                accelerator_model="Trainium",
                accelerator_count=16,
                accelerator_memory_gib=32,
                vcpus=128,
                memory_gib=512,
                instance_store_gib=7600,
                network_cards=16,
                max_efa_interfaces=16,
                network_gbps=1600,
                intra_node_link="NeuronLink v2",
                on_demand_usd_per_hour=24.78,
                sources=("ec2-trn", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="trn2.48xlarge",
                accelerator="neuron",
                accelerator_model="Trainium2",
                accelerator_count=16,
                accelerator_memory_gib=96,
                vcpus=192,
                memory_gib=2048,
                instance_store_gib=7600,
                network_cards=16,
                max_efa_interfaces=16,
                network_gbps=3200,
                intra_node_link="NeuronLink v3",
                on_demand_usd_per_hour=44.70,
                sources=("ec2-trn", "ec2-efa", "ref", "ec2-api"),
                verify="EFA count and bandwidth are marked (verify) in the reference; trn2 is sold mainly "
                "through Capacity Blocks, so the hourly rate is an estimate.",
                price_estimated=True,
            ),
            _row(
                name="g5.48xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=8,
                accelerator_memory_gib=24,
                vcpus=192,
                memory_gib=768,
                instance_store_gib=7600,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=100,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=16.288,
                sources=("ec2-g5", "ec2-efa", "price", "ref", "ec2-api"),
            ),
            _row(
                name="g6e.48xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=8,
                accelerator_memory_gib=48,
                vcpus=192,
                memory_gib=1536,
                instance_store_gib=7600,
                network_cards=4,
                max_efa_interfaces=4,
                network_gbps=400,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=30.131,
                sources=("ec2-g5", "ec2-efa", "price", "ref", "ec2-api"),
                # The reference marks the EFA count (verify); the EC2 API ("ec2-api") says 4, one per network card.
            ),
            _row(
                name="g5.2xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=1,
                accelerator_memory_gib=24,
                vcpus=8,
                memory_gib=32,
                instance_store_gib=450,
                network_cards=1,
                max_efa_interfaces=0,
                network_gbps=10,
                intra_node_link="single GPU",
                nccl_busbw_floor_gb_s=0.0,
                on_demand_usd_per_hour=1.212,
                sources=("ec2-g5", "price", "ec2-api"),
            ),
            _row(
                name="g6e.xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=1,
                accelerator_memory_gib=48,
                vcpus=4,
                memory_gib=32,
                instance_store_gib=250,
                network_cards=1,
                max_efa_interfaces=0,
                network_gbps=20,
                intra_node_link="single GPU",
                nccl_busbw_floor_gb_s=0.0,
                on_demand_usd_per_hour=1.861,
                sources=("ec2-g5", "price", "ec2-api"),
            ),
            # Issue 34: the EFA-capable sizes the peers start people on (awsome-distributed-training, ai-on-eks).
            _row(
                name="g4dn.8xlarge",
                accelerator="nvidia",
                accelerator_model="T4",
                accelerator_count=1,
                accelerator_memory_gib=16,
                vcpus=32,
                memory_gib=128,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=50,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=2.176,
                sources=("ec2-g4dn", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g4dn.12xlarge",
                accelerator="nvidia",
                accelerator_model="T4",
                accelerator_count=4,
                accelerator_memory_gib=16,
                vcpus=48,
                memory_gib=192,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=50,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=3.912,
                sources=("ec2-g4dn", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g4dn.16xlarge",
                accelerator="nvidia",
                accelerator_model="T4",
                accelerator_count=1,
                accelerator_memory_gib=16,
                vcpus=64,
                memory_gib=256,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=50,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=4.352,
                sources=("ec2-g4dn", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g4dn.metal",
                accelerator="nvidia",
                accelerator_model="T4",
                accelerator_count=8,
                accelerator_memory_gib=16,
                vcpus=96,
                memory_gib=384,
                instance_store_gib=1800,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=100,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=7.824,
                sources=("ec2-g4dn", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g5.8xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=1,
                accelerator_memory_gib=24,
                vcpus=32,
                memory_gib=128,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=25,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=2.448,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g5.12xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=4,
                accelerator_memory_gib=24,
                vcpus=48,
                memory_gib=192,
                instance_store_gib=3800,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=40,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=5.672,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g5.16xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=1,
                accelerator_memory_gib=24,
                vcpus=64,
                memory_gib=256,
                instance_store_gib=1900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=25,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=4.096,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g5.24xlarge",
                accelerator="nvidia",
                accelerator_model="A10G",
                accelerator_count=4,
                accelerator_memory_gib=24,
                vcpus=96,
                memory_gib=384,
                instance_store_gib=3800,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=50,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=8.144,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6.8xlarge",
                accelerator="nvidia",
                accelerator_model="L4",
                accelerator_count=1,
                accelerator_memory_gib=24,
                vcpus=32,
                memory_gib=128,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=25,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=2.0144,
                sources=("ec2-g6", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6.12xlarge",
                accelerator="nvidia",
                accelerator_model="L4",
                accelerator_count=4,
                accelerator_memory_gib=24,
                vcpus=48,
                memory_gib=192,
                instance_store_gib=3760,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=40,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=4.6016,
                sources=("ec2-g6", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6.16xlarge",
                accelerator="nvidia",
                accelerator_model="L4",
                accelerator_count=1,
                accelerator_memory_gib=24,
                vcpus=64,
                memory_gib=256,
                instance_store_gib=1880,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=25,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=3.3968,
                sources=("ec2-g6", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6.24xlarge",
                accelerator="nvidia",
                accelerator_model="L4",
                accelerator_count=4,
                accelerator_memory_gib=24,
                vcpus=96,
                memory_gib=384,
                instance_store_gib=3760,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=50,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=6.6752,
                sources=("ec2-g6", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6.48xlarge",
                accelerator="nvidia",
                accelerator_model="L4",
                accelerator_count=8,
                accelerator_memory_gib=24,
                vcpus=192,
                memory_gib=768,
                instance_store_gib=7520,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=100,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=13.3504,
                sources=("ec2-g6", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6e.8xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=1,
                accelerator_memory_gib=48,
                vcpus=32,
                memory_gib=256,
                instance_store_gib=900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=25,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=4.52856,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6e.12xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=4,
                accelerator_memory_gib=48,
                vcpus=48,
                memory_gib=384,
                instance_store_gib=3800,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=100,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=10.49264,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6e.16xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=1,
                accelerator_memory_gib=48,
                vcpus=64,
                memory_gib=512,
                instance_store_gib=1900,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=35,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=7.57719,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="g6e.24xlarge",
                accelerator="nvidia",
                accelerator_model="L40S",
                accelerator_count=4,
                accelerator_memory_gib=48,
                vcpus=96,
                memory_gib=768,
                instance_store_gib=3800,
                network_cards=2,
                max_efa_interfaces=2,
                network_gbps=200,
                intra_node_link="PCIe only",
                on_demand_usd_per_hour=15.06559,
                sources=("ec2-g5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
            _row(
                name="p5.4xlarge",
                accelerator="nvidia",
                accelerator_model="H100",
                accelerator_count=1,
                accelerator_memory_gib=80,
                vcpus=16,
                memory_gib=256,
                instance_store_gib=3800,
                network_cards=1,
                max_efa_interfaces=1,
                network_gbps=100,
                intra_node_link="single GPU",
                on_demand_usd_per_hour=6.88,
                sources=("ec2-p5", "ec2-api", "price-2026"),
                checked_on=CHECKED_2026,
            ),
        )
    }
)


def lookup(instance_type: str) -> InstanceType:
    """The catalog row for an instance type; KeyError names the valid choices."""
    try:
        return CATALOG[instance_type]
    except KeyError:
        raise KeyError(f"unknown instance type {instance_type!r}; valid: {', '.join(sorted(CATALOG))}") from None


def efa_capable() -> list[str]:
    """Instance types with at least one EFA interface, sorted."""
    return sorted(name for name, row in CATALOG.items() if row.supports_efa)
