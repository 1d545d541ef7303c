"""The HyperPod-on-EKS contract (trainstack/contracts/aws_rules.py `hyperpod_on_eks`), one dependency at a time on
hand-built recordings: the dependencies chart (that chart, not any release), each core add-on, the system node
group, and the Kubernetes versions HyperPod supports. Sources: SageMaker Developer Guide, "Installing packages on
the Amazon EKS cluster using Helm" and "Getting started with Amazon EKS support in SageMaker HyperPod"."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.sagemaker.hyperpod_dependencies import CHART_PATH
from stacks.schema import HYPERPOD_EKS_VERSIONS
from trainstack import tokens
from trainstack.contracts import aws_rules
from trainstack.engine import UNKNOWN, RecordedResource, Recording


def _urn(type_: str, name: str) -> str:
    return f"urn:pulumi:staging::trainstack::{type_}::{name}"


def _resource(type_: str, name: str, inputs: dict[str, Any], dependencies: tuple[str, ...] = ()) -> RecordedResource:
    return RecordedResource(type_, name, _urn(type_, name), "", True, inputs, dependencies, {}, False, False, "")


CLUSTER = _resource(tokens.EKS_CLUSTER, "eks", {"version": HYPERPOD_EKS_VERSIONS[0]})
CHART = _resource(tokens.HELM_RELEASE, "hyperpod-deps", {"chart": f"/charts/{CHART_PATH}"})
ADDONS = tuple(_resource(tokens.EKS_ADDON, a, {"addonName": a}) for a in aws_rules.CORE_ADDONS)
SYSTEM = _resource(tokens.NODE_GROUP, "system", {"labels": {aws_rules.SYSTEM_LABEL: "system"}})
EVERYTHING = (CHART, *ADDONS, SYSTEM)


def _hyperpod(after: tuple[RecordedResource, ...], eks: bool = True) -> RecordedResource:
    orchestrator = {"eks": {"clusterArn": "arn:aws:eks:us-east-1:111122223333:cluster/eks"}} if eks else {}
    return _resource(tokens.HYPERPOD_CLUSTER, "hp", {"orchestrator": orchestrator}, tuple(r.urn for r in after))


def _found(*resources: RecordedResource) -> list[tuple[str, str]]:
    rec = Recording("staging", False, resources, {})
    return [(v.value, v.rule) for v in aws_rules.hyperpod_on_eks(rec)]


def test_a_hyperpod_created_after_everything_it_needs_passes() -> None:
    assert _found(CLUSTER, *EVERYTHING, _hyperpod(EVERYTHING)) == []


def test_a_slurm_hyperpod_needs_none_of_it() -> None:
    assert _found(CLUSTER, *EVERYTHING, _hyperpod((), eks=False)) == []


def test_without_the_chart_only_the_chart_is_refused() -> None:
    after = (*ADDONS, SYSTEM)
    assert _found(CLUSTER, *EVERYTHING, _hyperpod(after)) == [
        (
            "(no dependency)",
            "the HyperPod cluster must be created after the HyperPod dependencies Helm chart is installed",
        )
    ]


def test_another_helm_release_is_not_the_chart() -> None:
    other = _resource(tokens.HELM_RELEASE, "kueue", {"chart": "oci://registry.k8s.io/kueue/charts/kueue"})
    after = (other, *ADDONS, SYSTEM)
    assert [rule for _, rule in _found(CLUSTER, other, *EVERYTHING, _hyperpod(after))] == [
        "the HyperPod cluster must be created after the HyperPod dependencies Helm chart is installed"
    ]


def test_the_chart_path_on_something_that_is_no_helm_release_is_not_the_chart() -> None:
    impostor = _resource("kubernetes:core/v1:ConfigMap", "cm", {"chart": CHART_PATH})
    after = (impostor, *ADDONS, SYSTEM)
    assert len(_found(CLUSTER, impostor, *EVERYTHING, _hyperpod(after))) == 1


def test_a_dependency_outside_the_recording_is_not_the_chart() -> None:
    hp = _hyperpod((*ADDONS, SYSTEM))
    hp = dataclasses.replace(hp, dependencies=(*hp.dependencies, CHART.urn))
    assert len(_found(CLUSTER, *ADDONS, SYSTEM, hp)) == 1  # the chart's URN, but no chart recorded under it


@pytest.mark.parametrize("left_out", [*aws_rules.CORE_ADDONS, "system"])
def test_each_core_addon_and_the_system_group_is_needed_alone(left_out: str) -> None:
    after = tuple(r for r in EVERYTHING if r.name != left_out)
    assert _found(CLUSTER, *EVERYTHING, _hyperpod(after)) == [
        (f'["{left_out}"]', "the HyperPod cluster must be created after the core add-ons and the system node group")
    ]


def test_other_addons_and_gpu_groups_are_not_needed_first() -> None:
    csi = _resource(tokens.EKS_ADDON, "aws-ebs-csi-driver", {"addonName": "aws-ebs-csi-driver"})
    gpu = _resource(tokens.NODE_GROUP, "gpu", {"labels": {aws_rules.SYSTEM_LABEL: "gpu"}})
    unlabelled = _resource(tokens.NODE_GROUP, "plain", {})
    assert _found(CLUSTER, *EVERYTHING, csi, gpu, unlabelled, _hyperpod(EVERYTHING)) == []


@pytest.mark.parametrize("version", [HYPERPOD_EKS_VERSIONS[0], HYPERPOD_EKS_VERSIONS[-1], UNKNOWN, None])
def test_a_supported_or_unknown_version_passes(version: str | None) -> None:
    cluster = _resource(tokens.EKS_CLUSTER, "eks", {"version": version} if version else {})
    assert _found(cluster, *EVERYTHING, _hyperpod(EVERYTHING)) == []


def test_an_unsupported_version_is_refused_with_its_value() -> None:
    minor = int(HYPERPOD_EKS_VERSIONS[0].split(".")[1]) - 1
    old = f"1.{minor}"
    cluster = _resource(tokens.EKS_CLUSTER, "eks", {"version": old})
    ((value, rule),) = _found(cluster, *EVERYTHING, _hyperpod(EVERYTHING))
    assert value == old and rule.startswith(f"HyperPod does not support Kubernetes {old}")
