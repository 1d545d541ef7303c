"""Stack-file keys that would break an AWS contract are refused by the schema first, with their key path (exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stacks.cfn_data import sagemaker_cluster_instance_types
from stacks.load import FULL_KEY, ConfigError
from stacks.schema import (
    HYPERPOD_EKS_VERSIONS_DOCUMENTED,
    HYPERPOD_EKS_VERSIONS_UNCONFIRMED,
    hyperpod_eks_version_problem,
)
from tests.conftest import edited_config


def problems(stack: str, edit: Callable[[dict[str, Any]], None]) -> list:
    with pytest.raises(ConfigError) as caught:
        edited_config(stack, edit)
    return caught.value.problems


def group_labels(labels: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["labels"] = labels

    return edit


@pytest.mark.parametrize(
    "key", ["node.kubernetes.io/instance-type", "kubernetes.io/arch", "team.k8s.io/x", "eks.amazonaws.com/capacity"]
)
def test_reserved_label_prefixes_are_refused_at_the_group(key: str) -> None:
    [problem] = problems("prod", group_labels({key: "x"}))
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0" and key in problem.message
    assert "EKS managed node groups refuse" in problem.message


def test_label_keys_and_values_longer_than_eks_takes_are_refused() -> None:
    [problem] = problems("prod", group_labels({"example.com/" + "k" * 60: "v", "team": "v" * 64}))
    assert "1-63 characters" in problem.message and problem.key.endswith("labels.team")


def test_a_hyperpod_type_not_offered_in_the_region_is_refused() -> None:
    assert "ml.p5.48xlarge" in sagemaker_cluster_instance_types("us-east-1")
    assert "ml.p6e-gb200.36xlarge" not in sagemaker_cluster_instance_types("us-east-1")

    def edit(raw: dict[str, Any]) -> None:
        raw["sagemaker"]["hyperpod"]["instance_groups"][0]["instance_type"] = "ml.p6e-gb200.36xlarge"

    [problem] = problems("staging", edit)
    assert "sagemaker.hyperpod.instance_groups.0.instance_type ml.p6e-gb200.36xlarge" in problem.message
    assert "not offered for HyperPod in us-east-1" in problem.message


def test_hyperpod_kubernetes_versions_table() -> None:
    for version in (*HYPERPOD_EKS_VERSIONS_DOCUMENTED, *HYPERPOD_EKS_VERSIONS_UNCONFIRMED):
        assert hyperpod_eks_version_problem(version) is None
    problem = hyperpod_eks_version_problem("1.37")
    assert problem is not None and "1.28, 1.29" in problem and "unconfirmed: 1.35, 1.36" in problem
    assert hyperpod_eks_version_problem("1.27") is not None
