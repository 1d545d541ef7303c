"""A cluster mixing AL2023 and Bottlerocket NVIDIA groups: one operator release, per-node opt-outs."""

import pytest

from tests.conftest import edited_config
from trainstack.engine import run_program

OPT_OUT = "nvidia.com/gpu.deploy.device-plugin"


def add_bottlerocket_group(cluster: dict) -> None:
    extra = {**cluster["gpu_node_groups"][0], "name": "p5-br", "ami_family": "BOTTLEROCKET_x86_64_NVIDIA"}
    extra.update(min_size=0, desired_size=0, max_size=2, capacity={"type": "on_demand"})
    cluster["gpu_node_groups"].append(extra)


@pytest.mark.e2e
def test_bottlerocket_nodes_opt_out_of_the_operators_device_plugin() -> None:
    recording = run_program(edited_config("prod", add_bottlerocket_group), stack_name="prod")
    labels = {ng.name: ng.inputs["labels"] for ng in recording.by_type("aws:eks/nodeGroup:NodeGroup")}
    bottlerocket = next(v for k, v in labels.items() if "p5-br" in k)
    al2023 = next(v for k, v in labels.items() if "p5-train" in k)
    assert bottlerocket[OPT_OUT] == "false"
    assert OPT_OUT not in al2023
    [operator] = [r for r in recording.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "gpu-operator"]
    values = operator.inputs["values"]
    assert values["devicePlugin"]["enabled"] is True
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
