"""Versions that must move together (stacks/compatibility.py), each rule at its bounds: the release numbers read
from a version, the Kueue and Trainer TrainJob field, kube-proxy's and the kubelets' skew, and the first EFA
device plugin a family needs."""

from __future__ import annotations

import pytest

from stacks.compatibility import (
    Span,
    efa_plugin_problem,
    kube_proxy_problem,
    kubelet_problem,
    kueue_trainer_problem,
    kueue_trainjob_field,
    version,
)


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("v1.2.3", (1, 2, 3)),
        ("1.36", (1, 36)),
        ("v1.36.0-eksbuild.21", (1, 36, 0)),
        (" 2.1.0\n", (2, 1, 0)),
        ("7", (7,)),
    ],
)
def test_a_version_is_its_numeric_release(text: str, numbers: tuple[int, ...]) -> None:
    assert version(text) == numbers


@pytest.mark.parametrize("text", ["", "latest", "x1.2", "vv1.2"])
def test_text_that_is_no_version_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="^not a version: " + repr(text).replace(".", r"\.") + "$"):
        version(text)


def test_a_span_covers_from_its_start_up_to_not_including_its_end() -> None:
    closed, open_ended = Span((1, 0), (2, 0), "f", "s"), Span((1, 0), None, "f", "s")
    assert [closed.covers(v) for v in ((0, 9), (1, 0), (1, 9, 9), (2, 0))] == [False, True, True, False]
    assert [open_ended.covers(v) for v in ((0, 9), (1, 0), (99, 0))] == [False, True, True]


@pytest.mark.parametrize(
    ("kueue", "field"),
    [
        ("0.13.9", None),
        ("v0.14.0", "podSpecOverrides"),
        ("0.14.4", "podSpecOverrides"),
        ("0.14.5", "podTemplateOverrides"),
        ("0.16.9", "podTemplateOverrides"),
        ("0.17.0", "runtimePatches"),
        ("1.0.0", "runtimePatches"),
    ],
)
def test_the_trainjob_field_each_kueue_writes(kueue: str, field: str | None) -> None:
    span = kueue_trainjob_field(kueue)
    assert (span.field if span else None) == field


@pytest.mark.parametrize(
    ("kueue", "trainer"), [("0.14.0", "2.0.1"), ("0.14.5", "v2.1.0"), ("0.16.2", "2.1.0"), ("0.17.0", "2.3.0")]
)
def test_kueue_and_trainer_that_share_the_field_work_together(kueue: str, trainer: str) -> None:
    assert kueue_trainer_problem(kueue, trainer) is None


def test_a_kueue_without_the_integration_or_a_trainer_without_the_api_is_refused() -> None:
    assert kueue_trainer_problem("0.13.9", "2.1.0") == (
        "Kueue 0.13.9 has no Kubeflow Trainer (TrainJob) integration; use Kueue 0.14.5 or newer"
    )
    assert kueue_trainer_problem("0.14.5", "1.9.0") == (
        "Kubeflow Trainer 1.9.0 has no TrainJob v1alpha1 API; use Trainer 2.1.0 or newer"
    )


@pytest.mark.parametrize(
    ("kueue", "trainer", "writes", "has", "fix"),
    [
        (
            "0.14.8",
            "2.2.0",
            "podTemplateOverrides",
            "runtimePatches",
            "pin a Kueue in [0.17.0, newest) for this Trainer",
        ),
        (
            "0.17.0",
            "2.1.0",
            "runtimePatches",
            "podTemplateOverrides",
            "pin a Kueue in [0.14.5, 0.17.0) for this Trainer",
        ),
        (
            "0.14.5",
            "2.0.1",
            "podTemplateOverrides",
            "podSpecOverrides",
            "pin a Kueue in [0.14.0, 0.14.5) for this Trainer",
        ),
    ],
)
def test_a_kueue_writing_a_field_the_trainer_lacks_names_both_and_the_kueue_that_fits(
    kueue: str, trainer: str, writes: str, has: str, fix: str
) -> None:
    problem = kueue_trainer_problem(kueue, trainer) or ""
    assert problem.startswith(
        f"Kueue {kueue} writes the admitted flavor's node selector and tolerations into TrainJob spec.{writes}, "
        f"which Kubeflow Trainer {trainer}'s TrainJob CRD does not have (it has spec.{has})"
    )
    assert f"GPU toleration; {fix} (kueue" in problem and "kubeflow/trainer v2." in problem


@pytest.mark.parametrize("addon", ["v1.36.0-eksbuild.2", "v1.35.1-eksbuild.1", "v1.33.0-eksbuild.9"])
def test_kube_proxy_up_to_three_minors_older_than_the_cluster_is_taken(addon: str) -> None:
    assert kube_proxy_problem("1.36", addon) is None


@pytest.mark.parametrize(
    ("addon", "minor"), [("v1.37.0-eksbuild.1", "1.37"), ("v1.32.6-eksbuild.2", "1.32"), ("v2.36.0-eksbuild.1", "2.36")]
)
def test_kube_proxy_newer_older_by_four_or_of_another_major_is_refused(addon: str, minor: str) -> None:
    assert kube_proxy_problem("1.36", addon) == (
        f"kube-proxy add-on {addon} is built for Kubernetes {minor} and the cluster runs 1.36: kube-proxy may not "
        "be newer than the API server nor more than 3 minors older (Kubernetes version skew policy); pick a "
        "v1.36.x-eksbuild.N build (aws eks describe-addon-versions --kubernetes-version 1.36 --addon-name kube-proxy)"
    )


@pytest.mark.parametrize("node", ["1.36", "1.35", "1.33"])
def test_kubelets_up_to_three_minors_behind_are_taken(node: str) -> None:
    assert kubelet_problem("1.36", node) is None


@pytest.mark.parametrize("node", ["1.37", "2.36", "2.1"])
def test_a_kubelet_newer_than_the_control_plane_or_of_another_major_is_refused(node: str) -> None:
    problem = kubelet_problem("1.36", node) or ""
    assert problem.startswith(f"nodes on Kubernetes {node} under a control plane on 1.36: a kubelet is never newer")


def test_a_kubelet_four_minors_behind_is_refused() -> None:
    problem = kubelet_problem("1.36", "1.32") or ""
    assert problem.startswith(
        "nodes on Kubernetes 1.32 under a control plane on 1.36: a kubelet may be at most 3 minor"
    )


def test_p6_b200_needs_the_efa_plugin_that_counts_its_devices_and_other_families_do_not() -> None:
    assert efa_plugin_problem("v0.5.9", "p6-b200.48xlarge") == (
        "aws-efa-k8s-device-plugin v0.5.9 miscounts EFA devices on p6-b200: use v0.5.10 or newer "
        "(aws/sagemaker-hyperpod-cli PR #282)"
    )
    assert efa_plugin_problem("v0.5.10", "p6-b200.48xlarge") is None
    assert efa_plugin_problem("v0.5.9", "p5.48xlarge") is None
