"""The policy pack's own copy of the facts its rules need.

The pack runs standalone (its own virtualenv, `requirements.txt`, any directory name) and imports nothing
from the trainstack program, so it keeps this copy of `stacks/catalog.py`: accelerators per instance and EFA
interfaces per instance (EC2 `DescribeInstanceTypes`: `GpuInfo` / `NeuronInfo`, `EfaInfo.MaximumEfaInterfaces`,
and the network cards that accept EFA), and of the FSx for Lustre throughput fact in `stacks/fsx_sizing.py`.
`tests/policy/test_pack.py::test_facts_equal_the_catalog` and `::test_lustre_facts_equal_the_sizing` prove
them equal, so the copies cannot drift.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple


class Instance(NamedTuple):
    """What the rules need to know about one accelerated instance type."""

    accelerator: str  # "nvidia" or "neuron"
    accelerators: int  # GPUs (or Trainium chips) per instance
    max_efa_interfaces: int  # EfaInfo.MaximumEfaInterfaces; 0 means no EFA
    efa_cards: tuple[int, ...]  # network card indices that carry one EFA interface each


def _cards(count: int) -> tuple[int, ...]:
    return tuple(range(count))


INSTANCES: MappingProxyType[str, Instance] = MappingProxyType(
    {
        "p4d.24xlarge": Instance("nvidia", 8, 4, _cards(4)),
        "p4de.24xlarge": Instance("nvidia", 8, 4, _cards(4)),
        "p5.48xlarge": Instance("nvidia", 8, 32, _cards(32)),
        "p5e.48xlarge": Instance("nvidia", 8, 32, _cards(32)),
        "p5en.48xlarge": Instance("nvidia", 8, 16, _cards(16)),
        "p6-b200.48xlarge": Instance("nvidia", 8, 8, _cards(8)),
        # B300: 17 network cards, card 0 ENA-only, EFA on cards 1-16 (aws-parallelcluster #7143).
        "p6-b300.48xlarge": Instance("nvidia", 8, 16, tuple(range(1, 17))),
        # GB200: an ENA primary on card 0 and EFA on cards 1, 5, 9 and 13 (EC2 User Guide, P6e-GB200).
        "p6e-gb200.36xlarge": Instance("nvidia", 4, 4, (1, 5, 9, 13)),
        "trn1.32xlarge": Instance("neuron", 16, 8, _cards(8)),
        "trn1n.32xlarge": Instance("neuron", 16, 16, _cards(16)),
        "trn2.48xlarge": Instance("neuron", 16, 16, _cards(16)),
        "g5.48xlarge": Instance("nvidia", 8, 1, _cards(1)),
        "g6e.48xlarge": Instance("nvidia", 8, 4, _cards(4)),
        "g5.2xlarge": Instance("nvidia", 1, 0, ()),
        "g6e.xlarge": Instance("nvidia", 1, 0, ()),
    }
)

# Kubernetes taint keys (and extended resources) per accelerator family.
TAINT_KEYS: MappingProxyType[str, str] = MappingProxyType(
    {"nvidia": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}
)

# EKS-optimized accelerated AMI types per accelerator family (EKS API `amiType` values). Both NVIDIA AMIs ship
# the driver and the container toolkit (EKS User Guide, "Use EKS-optimized accelerated AMIs").
ACCELERATED_AMI_TYPES: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "nvidia": frozenset(
            {"AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA"}
        ),
        "neuron": frozenset({"AL2023_x86_64_NEURON"}),
    }
)

# FSx for Lustre SCRATCH_2 baseline throughput per TiB of storage (FSx Lustre User Guide, "Performance
# characteristics of SSD and HDD storage classes": 200 MB/s/TiB baseline, 1300 burst, which is never sized on).
# PERSISTENT_2 has no such constant: its perUnitStorageThroughput is provisioned (125/250/500/1000).
SCRATCH_2_BASELINE_MB_S_PER_TIB = 200
GIB_PER_TIB = 1024


def instance(instance_type: str) -> Instance | None:
    """The facts of an instance type, with or without SageMaker's `ml.` prefix; None when not accelerated."""
    return INSTANCES.get(instance_type.removeprefix("ml."))
