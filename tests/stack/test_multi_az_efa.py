"""EFA groups in several AZs (issue 34): each group in one AZ with its own Kueue flavor, so a job stays inside one
group; FSx stays in the first EFA group's AZ, the plan prices the other group's cross-AZ reads, and the policy
that says so is advisory."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import edited_config, program_recording
from trainstack.journeys import team_job
from trainstack.model.cost import estimate
from trainstack.model.summary import summarize
from trainstack.review import review


def second_efa_group(raw: dict[str, Any]) -> None:
    # A second reservation, made where capacity was: us-east-1b.
    raw["gpu_node_groups"].append(
        {
            **raw["gpu_node_groups"][0],
            "name": "p5-b",
            "availability_zone": "us-east-1b",
            "capacity": {
                "type": "reservation",
                "reservation_id": "cr-0fedcba9876543210",
                "reservation_availability_zone": "us-east-1b",
            },
            "min_size": 0,
            "desired_size": 2,
            "max_size": 8,  # prod's max_unavailable 2 is the 25% its update budget allows
        }
    )
    raw["cost"]["max_gpus"] = raw["cost"]["max_gpus"] + 64
    raw["storage"]["fsx"]["storage_capacity_gib"] = 175_200  # 64 more GPUs to feed: 90% of 38,400 MB/s


@pytest.mark.e2e
def test_prod_with_efa_groups_in_two_azs_plans_one_flavor_per_group_and_prices_the_cross_az_reads() -> None:
    cluster = edited_config("prod", second_efa_group)
    rec = program_recording(cluster, "prod")
    groups = {
        r.inputs["labels"]["trainstack.io/node-group"]: r
        for r in rec.by_type("aws:eks/nodeGroup:NodeGroup")
        if "trainstack.io/node-group" in (r.inputs.get("labels") or {})
    }
    assert set(groups) == {"p5-train", "p5-b"}
    subnets = {s.id: s.inputs["availabilityZone"] for s in rec.by_type("aws:ec2/subnet:Subnet")}
    assert {name: [subnets[s] for s in g.inputs["subnetIds"]] for name, g in groups.items()} == {
        "p5-train": ["us-east-1a"],
        "p5-b": ["us-east-1b"],
    }
    flavors = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.resources if r.type.endswith(":ResourceFlavor")
    }
    assert flavors["p5-b"]["nodeLabels"] == {"trainstack.io/node-group": "p5-b"}
    # Every team's job on either group reaches only that group (the placement step) and holds.
    found = list(team_job.walk(team_job.Trip(recording=rec, stack=cluster)))
    assert {j.subject.rsplit(" on ", 1)[1] for j in found} == {"p5-train", "p5-b"}
    assert all(j.holds for j in found), [(j.subject, j.broken_step) for j in found if not j.holds]
    # FSx stays in us-east-1a: p5-b's reads cross AZs, priced at $0.02/GB and the configured read rate.
    costs = estimate(summarize(rec, cluster), 730)
    (cross,) = [i for i in costs.items if i.category == "data-transfer"]
    assert "p5-b (us-east-1b)" in cross.name and "(us-east-1a)" in cross.name
    per_node = 8 * cluster.storage.fsx.per_gpu_read_mb_s * 3.6
    assert cross.quantity_max == pytest.approx(per_node * 8) and cross.quantity_desired == pytest.approx(per_node * 2)
    assert cross.usd_per_hour_max == pytest.approx(per_node * 8 * 0.02)
    result = review(rec, "prod")
    assert [v.policy for v in result.advisory if v.policy == "fsx-same-az-as-gpu"] == ["fsx-same-az-as-gpu"]
    assert not result.mandatory, [(v.policy, v.message) for v in result.mandatory]  # the plan exits 0
