"""Typed access to the facts the policy pack shares with the program.

The pack runs standalone (its own virtualenv, `requirements.txt`, any directory name) and imports nothing
from the trainstack program. The facts themselves (instance facts from `stacks/catalog.py`, FSx for Lustre
throughput from `stacks/fsx_sizing.py`, tag keys and labels the program sets) are generated into
`facts_generated.py` by `make pack-facts`; this module only gives the rules typed views of them. The type tokens
(trainstack/tokens.py's, under its names) are plain strings: the rules import them from `facts_generated` as they are.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

from . import facts_generated as generated
from .facts_generated import (
    DATA_CLASS_TAG,
    DATA_EMPTYING_ACTIONS,
    DATA_READ_WRITE_ACTIONS,
    DATASETS_CLAIM,
    EFA_PRESENT_LABEL,
    ENVIRONMENTS,
    FSX_CSI_DRIVER,
    GIB_PER_TIB,
    LUSTRE_PORT_RANGES,
    OPEN_REGISTRIES,
    PROVISIONING_PARAMETERS,
    PSA_ENFORCE,
    READ_MB_S_PER_ACCELERATOR_FLOOR,
    READ_ONLY_MOUNT_OPTION,
    REGISTRY_POLICY_NAME,
    REQUIRED_TAGS,
    RESTART_BACKOFF_ENV,
    SCRATCH_2_BASELINE_MB_S_PER_TIB,
    SERVICE_QUOTA,
    TEAM_GROUP_PREFIX,
    TENANT_LABEL,
    TENANT_TEAM,
)

__all__ = [
    "ACCELERATED_AMI_TYPES",
    "DATASETS_CLAIM",
    "DATA_CLASS_TAG",
    "DATA_EMPTYING_ACTIONS",
    "DATA_READ_WRITE_ACTIONS",
    "EFA_PRESENT_LABEL",
    "ENVIRONMENTS",
    "FSX_CSI_DRIVER",
    "GIB_PER_TIB",
    "INSTANCES",
    "LUSTRE_PORT_RANGES",
    "OPEN_REGISTRIES",
    "PROVISIONING_PARAMETERS",
    "PSA_ENFORCE",
    "READ_MB_S_PER_ACCELERATOR_FLOOR",
    "READ_ONLY_MOUNT_OPTION",
    "REGISTRY_POLICY_NAME",
    "REQUIRED_TAGS",
    "RESTART_BACKOFF_ENV",
    "SCRATCH_2_BASELINE_MB_S_PER_TIB",
    "SERVICE_QUOTA",
    "TAINT_KEYS",
    "TEAM_GROUP_PREFIX",
    "TENANT_LABEL",
    "TENANT_TEAM",
    "Instance",
    "instance",
]


class Instance(NamedTuple):
    """What the rules need to know about one accelerated instance type."""

    accelerator: str  # "nvidia" or "neuron"
    accelerators: int  # GPUs (or Trainium chips) per instance
    max_efa_interfaces: int  # EfaInfo.MaximumEfaInterfaces; 0 means no EFA
    efa_cards: tuple[int, ...]  # network card indices that carry one EFA interface each


INSTANCES: MappingProxyType[str, Instance] = MappingProxyType(
    {name: Instance(*row) for name, row in generated.INSTANCES.items()}
)
# Kubernetes taint keys (and extended resources) per accelerator family.
TAINT_KEYS: MappingProxyType[str, str] = MappingProxyType(generated.TAINT_KEYS)
# EKS-optimized accelerated AMI types per accelerator family (EKS API `amiType` values).
ACCELERATED_AMI_TYPES: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {family: frozenset(types) for family, types in generated.ACCELERATED_AMI_TYPES.items()}
)


def instance(instance_type: str) -> Instance | None:
    """The facts of an instance type, with or without SageMaker's `ml.` prefix; None when not accelerated."""
    return INSTANCES.get(instance_type.removeprefix("ml."))
