"""CloudFormation resource schemas as cfn-lint ships them, read as package data (no Pulumi, no cfn-lint code).

cfn-lint keeps one file per region naming each resource type's schema (`data/schemas/providers/<region>.json`
-> `data/schemas/resources/<hash>.json`) and, for a few types, regional enums it adds on top
(`data/schemas/extensions/...`). The contract tier (trainstack/contracts/cloudformation.py) validates the
aws-native resources against these; the stack schema uses the regional instance-type list of
AWS::SageMaker::Cluster, so an unoffered HyperPod type is a config error at its key path.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

SAGEMAKER_CLUSTER_INSTANCE_TYPES = "extensions/aws_sagemaker_cluster/instancetype_enum.json"


@functools.cache
def schemas_dir() -> Path:
    spec = importlib.util.find_spec("cfnlint")  # locates the package without running its __init__ (seconds)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("cfn-lint is not installed: trainstack reads its CloudFormation schema data")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "schemas"


@functools.cache
def read(relative: str) -> Any:
    return json.loads((schemas_dir() / relative).read_text(encoding="utf-8"))


@functools.cache
def cfn_lint_version() -> str:
    return importlib.metadata.version("cfn-lint")


def sagemaker_cluster_instance_types(region: str) -> list[str]:
    """The ml.* types AWS::SageMaker::Cluster takes in `region` (empty for a region cfn-lint does not list)."""
    by_region = read(SAGEMAKER_CLUSTER_INSTANCE_TYPES)
    return list(by_region[region]["enum"]) if region in by_region else []
