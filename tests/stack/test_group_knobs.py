"""Issue 34's per-group knobs planned whole: a custom AMI and Spot diversification over two instance types on a
group without EFA, and what the node group, the launch template and the team's jobs make of them."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import edited_config, program_recording
from trainstack.journeys import team_job

AMI = "ami-0123456789abcdef0"


@pytest.mark.e2e
def test_a_custom_ami_group_of_two_types_plans_and_runs_every_team_job() -> None:
    def edit(raw: dict[str, Any]) -> None:
        group = raw["gpu_node_groups"][0]
        group |= {"instance_type": "g5.12xlarge", "extra_instance_types": ["g6.12xlarge"], "ami_id": AMI}
        group["taints"] = [{"key": "example.com/dedicated", "value": "dev"}]
        for team in raw["kubernetes"]["teams"]:
            team["gpu_quota"] = max(team["gpu_quota"], 4)  # one whole 4-GPU node (dev's quota holds one g5.2xlarge)

    cluster = edited_config("dev", edit)
    rec = program_recording(cluster, "dev")
    (node_group,) = [r for r in rec.by_type("aws:eks/nodeGroup:NodeGroup") if r.name.startswith("gpu-")]
    assert node_group.inputs["instanceTypes"] == ["g5.12xlarge", "g6.12xlarge"]
    # EKS CreateNodegroup: with a custom AMI in the launch template, no amiType, version or releaseVersion.
    assert not {"amiType", "version", "releaseVersion"} & set(node_group.inputs)
    (template,) = [r for r in rec.by_type("aws:ec2/launchTemplate:LaunchTemplate") if r.name.startswith("gpu-")]
    assert template.inputs["imageId"] == AMI
    document = base64.b64decode(template.inputs["userData"]).decode()
    assert "apiServerEndpoint: https://" in document and "cidr: 172.20.0.0/16" in document
    assert "--register-with-taints=nvidia.com/gpu=true:NoSchedule,example.com/dedicated=dev:NoSchedule" in document
    found = list(team_job.walk(team_job.Trip(recording=rec, stack=cluster)))
    assert found and all(j.holds for j in found), [(j.subject, j.broken_step) for j in found if not j.holds]
