"""The typed schema of a trainstack stack: one `trainstack:cluster` object per `stacks/Pulumi.<env>.yaml`.

It describes the whole platform and decides what exists and how many. One module per area of the config
(`network`, `eks`, `gpu`, `storage`, `kubernetes`, `sagemaker`), and `cluster` for the root object and the
rules that span areas. Models are frozen and refuse unknown keys; units are in the field names; closed sets
are enums or Literals; rules that span fields are model validators, so a bad file fails with every problem
listed at once, before any resource is registered.

No Pulumi import here: components and tooling depend on this package, never the other way round.
"""

from stacks.schema.base import (
    AZ_PATTERN,
    CONFIG_KEY,
    CONFIG_NAMESPACE,
    DNS_LABEL,
    LOG_RETENTION_DAYS,
    REGION_PATTERN,
    CatalogInstanceType,
    Cidr,
    Environment,
    RetentionDays,
    Spec,
)
from stacks.schema.cluster import ClusterConfig, CostSpec, TagsSpec, json_schema
from stacks.schema.eks import AuthenticationMode, EksAddonVersions, EksSpec, LogType, SystemNodeGroupSpec
from stacks.schema.gpu import (
    ACCELERATOR_LABEL,
    EFA_HUGEPAGES_2MI,
    EFA_PRESENT_LABEL,
    INSTANCE_TYPE_LABEL,
    NODE_GROUP_LABEL,
    NVIDIA_GPU_PRESENT_LABEL,
    RESERVED_NODE_LABELS,
    AmiFamily,
    CapacitySpec,
    CapacityType,
    EfaLayout,
    GpuNodeGroupSpec,
    PlacementMode,
    ami_families_for,
    default_ami_family,
    efa_layout_problem,
)
from stacks.schema.kubernetes import (
    CHART_VERSION,
    NEURON_HELM_CHART_VERSION,
    EfaDevicePluginSpec,
    GpuOperatorSpec,
    KubernetesSpec,
    KueueSpec,
    MigStrategy,
    NeuronDevicePluginSpec,
    PinnedImage,
    TeamSpec,
    TrainerRuntimesSpec,
    TrainingOperatorSpec,
    ValidationSpec,
)
from stacks.schema.network import NatGateways, NetworkSpec
from stacks.schema.sagemaker import (
    HyperPodCapacity,
    HyperPodGroupRole,
    HyperPodInstanceGroupSpec,
    HyperPodOrchestrator,
    HyperPodSpec,
    SageMakerSpec,
)
from stacks.schema.storage import BucketsSpec, FsxDeploymentType, FsxSpec, StorageSpec

__all__ = [
    "ACCELERATOR_LABEL",
    "AZ_PATTERN",
    "CHART_VERSION",
    "CONFIG_KEY",
    "CONFIG_NAMESPACE",
    "DNS_LABEL",
    "EFA_HUGEPAGES_2MI",
    "EFA_PRESENT_LABEL",
    "INSTANCE_TYPE_LABEL",
    "LOG_RETENTION_DAYS",
    "NEURON_HELM_CHART_VERSION",
    "NODE_GROUP_LABEL",
    "NVIDIA_GPU_PRESENT_LABEL",
    "REGION_PATTERN",
    "RESERVED_NODE_LABELS",
    "AmiFamily",
    "AuthenticationMode",
    "BucketsSpec",
    "CapacitySpec",
    "CapacityType",
    "CatalogInstanceType",
    "Cidr",
    "ClusterConfig",
    "CostSpec",
    "EfaDevicePluginSpec",
    "EfaLayout",
    "EksAddonVersions",
    "EksSpec",
    "Environment",
    "FsxDeploymentType",
    "FsxSpec",
    "GpuNodeGroupSpec",
    "GpuOperatorSpec",
    "HyperPodCapacity",
    "HyperPodGroupRole",
    "HyperPodInstanceGroupSpec",
    "HyperPodOrchestrator",
    "HyperPodSpec",
    "KubernetesSpec",
    "KueueSpec",
    "LogType",
    "MigStrategy",
    "NatGateways",
    "NetworkSpec",
    "NeuronDevicePluginSpec",
    "PinnedImage",
    "PlacementMode",
    "RetentionDays",
    "SageMakerSpec",
    "Spec",
    "StorageSpec",
    "SystemNodeGroupSpec",
    "TagsSpec",
    "TeamSpec",
    "TrainerRuntimesSpec",
    "TrainingOperatorSpec",
    "ValidationSpec",
    "ami_families_for",
    "default_ami_family",
    "efa_layout_problem",
    "json_schema",
]
