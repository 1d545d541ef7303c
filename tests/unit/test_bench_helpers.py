"""The benchmark's pure helpers: the linear fit, the scaled stack configs and the docs/bench.md section rewrite."""

from __future__ import annotations

import ast
import importlib.util
import sys
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stacks.load import FULL_KEY, validate_object
from tests.conftest import ROOT, stack_document
from trainstack import contracts, journeys


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_scaling", ROOT / "bench" / "plan_scaling.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("plan_scaling", module)
    spec.loader.exec_module(module)
    return module


bench = _bench()


@given(st.floats(0.0001, 10), st.floats(0, 5), st.lists(st.integers(1, 5000), min_size=2, max_size=8, unique=True))
def test_fit_recovers_a_straight_line(slope: float, intercept: float, xs: list[int]) -> None:
    ys = [slope * x + intercept for x in xs]
    got_slope, got_intercept, r2 = bench.linear_fit(xs, ys)
    assert got_slope == pytest.approx(slope, rel=1e-6)
    assert got_intercept == pytest.approx(intercept, rel=1e-6, abs=1e-6)
    assert r2 == pytest.approx(1.0)


def test_fit_flags_quadratic_growth() -> None:
    xs = [2**i for i in range(1, 8)]
    _, _, r2 = bench.linear_fit(xs, [x * x for x in xs])
    assert r2 < bench.LINEAR_R2


def test_fit_needs_two_distinct_points() -> None:
    with pytest.raises(ValueError):
        bench.linear_fit([3, 3], [1, 2])


@pytest.mark.parametrize("groups", [1, 64])
def test_scaled_configs_validate_and_have_the_asked_groups(groups: int) -> None:
    prod = stack_document("prod")["config"][FULL_KEY]
    config = validate_object(bench.scaled_cluster(prod, groups), "bench")
    assert len(config.gpu_node_groups) == groups
    assert sum(g.max_gpus for g in config.gpu_node_groups) <= config.cost.max_gpus
    assert prod["gpu_node_groups"][0]["name"] == "p5-train"  # the source is not modified


def test_the_section_rewrite_keeps_prose_and_replaces_only_the_generated_block() -> None:
    text = "# t\n<!-- section:benchmarks -->\nprose\n<!-- /section:benchmarks -->\ntail\n"
    once = bench.replace_section(text, "benchmarks", "| a |")
    twice = bench.replace_section(once, "benchmarks", "| b |")
    assert "prose" in twice and "| a |" not in twice and twice.count("| b |") == 1
    assert twice.endswith("<!-- /section:benchmarks -->\ntail\n")
    with pytest.raises(ValueError):
        bench.replace_section(text, "missing", "x")


def test_the_prose_is_generated_from_the_measurements() -> None:
    rows = [bench.Row(1, 100, 0.50, 0.40), bench.Row(64, 600, 3.60, 2.40)]
    fit = bench.linear_fit([r.resources for r in rows], [r.plan_s for r in rows])
    floor_fit = bench.linear_fit([r.resources for r in rows], [r.floor_s for r in rows])
    ratio, linear, trend = bench.findings(rows, fit, floor_fit)
    assert "1.2 to 1.5 times" in ratio  # 0.50 / 0.40 and 3.60 / 2.40
    assert "linear in resources" in linear and "6.20 ms" in linear and "4.00 ms" in linear
    # 5.00 -> 6.00 ms per resource is a 20% rise even though two points fit a line exactly.
    assert "rising for the plan: 5.00 ms at 100 resources, 6.00 ms at 600 (+20%)" in trend
    assert "about flat (4.00 to 4.00 ms, +0%)" in trend


def test_each_added_resource_is_measured_against_the_floors() -> None:
    floor_fit = (0.004, 0.1, 0.99)
    assert bench.marginal_ratio((0.0052, 0.5, 0.99), floor_fit) == pytest.approx(1.3)
    assert bench.met((0.0052, 0.5, bench.LINEAR_R2), floor_fit)  # both targets met at their boundaries
    assert not bench.met((0.00521, 0.5, 0.99), floor_fit)  # linear, but each resource dearer than 1.3 floors
    assert not bench.met((0.004, 0.5, 0.979), floor_fit)  # cheap per resource, but not linear


def test_the_prose_says_whether_the_added_resource_is_within_target() -> None:
    rows = [bench.Row(1, 100, 0.50, 0.40), bench.Row(64, 600, 3.60, 2.40)]
    fit = bench.linear_fit([r.resources for r in rows], [r.plan_s for r in rows])
    floor_fit = bench.linear_fit([r.resources for r in rows], [r.floor_s for r in rows])
    _, linear, _ = bench.findings(rows, fit, floor_fit)
    assert "1.55 times the floor's: NOT within the target of 1.3" in linear  # 6.20 / 4.00 ms
    _, linear, _ = bench.findings(rows, floor_fit, floor_fit)
    assert "1.00 times the floor's: within the target of 1.3" in linear


def _prod_plan() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prod_plan", ROOT / "bench" / "prod_plan.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tier_driver_calls_only_what_the_tiers_export() -> None:
    # The driver runs in a child process, where a renamed tier function only shows as `make bench` failing late
    # (journeys.broken() was removed while the driver still called it).
    modules = {"contracts": contracts, "journeys": journeys}
    called = {
        (node.value.id, node.attr)
        for node in ast.walk(ast.parse(_prod_plan()._TIER_DRIVER))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
    }
    assert called == {("contracts", "check"), ("journeys", "walk")}
    assert all(callable(getattr(modules[module], name, None)) for module, name in called)


def test_the_typed_floor_imports_the_sdk_module_of_each_type_once_in_first_seen_order() -> None:
    types = [
        "pulumi:providers:aws",
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "trainstack:network:Network",  # a component: no module
        "aws:iam/role:Role",
        "pulumi:providers:kubernetes",
        "kubernetes:core/v1:Namespace",
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",  # a CRD's kind: a CustomResource
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob",
        "aws:index/provider:Provider",
    ]
    assert _prod_plan().provider_modules(types) == [
        "pulumi_aws",
        "pulumi_aws.ec2",
        "pulumi_aws.iam",
        "pulumi_kubernetes",
        "pulumi_kubernetes.core.v1",
        "pulumi_kubernetes.admissionregistration.v1",
        "pulumi_kubernetes.helm.v3",
        "pulumi_kubernetes.apiextensions",
    ]
