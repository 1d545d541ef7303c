"""The team job's admission path per group kind (trainstack/journeys/capacity.py), one broken link at a time."""

from __future__ import annotations

from typing import Any

import pytest

from components.gpu.gpu_nodes import node_labels, node_taint
from components.k8s.autoscaling import (
    admission,
    admission_check_name,
    admission_check_spec,
    cluster_autoscaler_values,
    node_template_tags,
    provisioning_request_config_spec,
)
from components.k8s.scheduling import cluster_queue_spec, node_group_target
from components.k8s_common import NODE_GROUP_LABEL, taint_key
from stacks.catalog import CATALOG
from stacks.schema import ClusterAutoscalerSpec, GpuNodeGroupSpec
from tests.unit.test_capacity import block, group, odcr, spot
from trainstack.journeys.capacity import Capacity, admission_step

EFA_REQUESTS = dict.fromkeys(["nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi", "cpu", "memory"])


def built(*groups: GpuNodeGroupSpec) -> Capacity:
    """What the program builds for these groups (the same pure functions the components call)."""
    capacity = Capacity(
        autoscaler_args=cluster_autoscaler_values(
            ClusterAutoscalerSpec(),
            kubernetes_version="1.36",
            cluster_name="c",
            region="us-east-1",
            system_node_group="s",
        )["extraArgs"],
        provisioning_crd=True,
    )
    for g in groups:
        if admission(g).provisioning_class:
            capacity.admission_checks[admission_check_name(g)] = admission_check_spec(g)
            capacity.provisioning_configs[admission_check_name(g)] = provisioning_request_config_spec(g)
        taint = node_taint(CATALOG[g.instance_type])
        capacity.asg_tags[g.name] = node_template_tags(g, node_labels(g), (taint.key, taint.value, taint.effect))
    return capacity


def step(capacity: Capacity, g: GpuNodeGroupSpec, nodes: int, queue: dict[str, Any] | None = None, **kw: Any):
    spec = queue if queue is not None else cluster_queue_spec(node_group_target(g), "c")
    requests = kw.get("requests", EFA_REQUESTS if g.efa_enabled else dict.fromkeys(["nvidia.com/gpu", "cpu"]))
    return admission_step(capacity, g, spec, nodes, requests, {NODE_GROUP_LABEL: g.name}, taint_key(g.instance_type))


@pytest.mark.parametrize(
    ("g", "nodes", "words"),
    [
        (group(), 2, "best-effort-atomic-scale-up for 2 node(s)"),  # on-demand from zero
        (spot(), 2, "grows g5 (0 to 2)"),
        (odcr((16, 16, 16)), 16, "onto the 16 node(s) that exist"),
        (block(window={"starts_at": "2026-10-01T11:30:00Z", "ends_at": "2026-10-08T11:30:00Z"}), 2, "check-capacity"),
    ],
)
def test_each_group_kind_has_a_whole_path(g: GpuNodeGroupSpec, nodes: int, words: str) -> None:
    result = step(built(g), g, nodes)
    assert result.holds, result.detail
    assert words in result.detail


def test_a_capacity_block_says_when_its_nodes_appear_and_go() -> None:
    g = block(window={"starts_at": "2026-10-01T11:30:00Z", "ends_at": "2026-10-08T11:30:00Z"})
    detail = step(built(g), g, 2).detail
    assert "from 2026-10-01T11:30:00+00:00 to 2026-10-08T11:00:00+00:00" in detail
    assert "every 1800 s" in detail


def test_a_growing_group_without_a_check_is_broken() -> None:
    g = group()
    queue = cluster_queue_spec(node_group_target(g), "c")
    del queue["admissionChecks"]
    result = step(built(g), g, 2, queue)
    assert not result.holds and "nodes that may never appear" in result.detail


def test_a_fixed_group_with_a_check_is_broken() -> None:
    g = odcr((16, 16, 16))
    queue = {**cluster_queue_spec(node_group_target(g), "c"), "admissionChecks": ["x"]}
    assert not step(built(g), g, 16, queue).holds


def test_no_queue() -> None:
    g = group()
    result = admission_step(built(g), g, None, 2, {}, {}, "nvidia.com/gpu")
    assert not result.holds and "no ClusterQueue" in result.detail


@pytest.mark.parametrize(
    ("breaks", "words"),
    [
        (lambda c: c.admission_checks.clear(), "not Kueue's provisioning check"),
        (lambda c: c.admission_checks["p5-capacity"].update(controllerName="example.com/other"), "not Kueue's"),
        (lambda c: c.provisioning_configs.clear(), "names no ProvisioningRequestConfig"),
        (
            lambda c: c.provisioning_configs["p5-capacity"].update(
                provisioningClassName="check-capacity.autoscaling.x-k8s.io"
            ),
            "needs best-effort-atomic-scale-up",
        ),
        (lambda c: setattr(c, "provisioning_crd", False), "CRD is not installed"),
        (lambda c: setattr(c, "autoscaler_args", None), "no cluster-autoscaler"),
        (lambda c: c.autoscaler_args.update({"enable-provisioning-requests": "false"}), "never answered"),
        (lambda c: c.asg_tags.clear(), "leave out resource hugepages-2Mi, resource nvidia.com/gpu"),
        (
            lambda c: c.asg_tags["p5"].pop("k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"),
            "leave out resource vpc.amazonaws.com/efa",
        ),
        (
            lambda c: c.asg_tags["p5"].pop("k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"),
            "taint nvidia.com/gpu",
        ),
        (
            lambda c: c.asg_tags["p5"].update(
                {"k8s.io/cluster-autoscaler/node-template/label/trainstack.io/node-group": "other"}
            ),
            "label trainstack.io/node-group=p5",
        ),
    ],
)
def test_one_broken_link_breaks_the_path(breaks: Any, words: str) -> None:
    g = group()
    capacity = built(g)
    breaks(capacity)
    result = step(capacity, g, 2)
    assert not result.holds
    assert words in result.detail


def test_cpu_and_memory_need_no_tag_and_a_job_within_min_size_needs_none() -> None:
    g = group(sizes=(1, 1, 2))
    capacity = built(g)
    capacity.asg_tags.clear()
    assert step(capacity, g, 1).holds  # the one node exists already
    assert not step(capacity, g, 2).holds


def test_a_job_larger_than_the_group_is_refused() -> None:
    g = group()
    result = step(built(g), g, 3)
    assert not result.holds and "more than max_size 2" in result.detail
