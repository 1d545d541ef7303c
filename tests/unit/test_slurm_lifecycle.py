"""The steps the plan says each HyperPod Slurm group runs (components/sagemaker/slurm_lifecycle.py) are
on_create.sh's."""

from __future__ import annotations

import re

import pytest

from components.sagemaker.hyperpod import LIFECYCLE_ROOT, provisioning_parameters
from components.sagemaker.slurm_lifecycle import node_needs, node_steps, role_of
from stacks.schema import HyperPodSpec

ON_CREATE = (LIFECYCLE_ROOT / "slurm" / "on_create.sh").read_text()


def spec(**slurm: object) -> HyperPodSpec:
    return HyperPodSpec.model_validate(
        {
            "enabled": True,
            "orchestrator": "slurm",
            "instance_groups": [
                {"name": "ctl", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
                {"name": "login", "instance_type": "ml.m5.xlarge", "instance_count": 1, "role": "login"},
                {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
                {"name": "trn", "instance_type": "ml.trn1.32xlarge", "instance_count": 2},
            ],
            "slurm": slurm,
        }
    )


def names(params: dict[str, object], group: str) -> list[str]:
    return [s.name for s in node_steps(params, group)]


def test_a_controller_with_everything_on_runs_every_step_of_on_create_in_its_order() -> None:
    script = re.findall(r"^\s*step ([a-z-]+) ", ON_CREATE, flags=re.MULTILINE)
    params = provisioning_parameters(spec(), "fs-1.fsx", "mnt", "65534:65534")
    assert names(params, "ctl") == script


@pytest.mark.parametrize(("group", "role"), [("ctl", "controller"), ("login", "login"), ("p5", "compute")])
def test_only_the_controller_runs_slurm_conf_and_accounting(group: str, role: str) -> None:
    params = provisioning_parameters(spec(), "fs-1.fsx", "mnt", "65534:65534")
    assert role_of(params, group) == role
    controller_only = {"slurm-conf", "accounting", "accounting-users", "accounting-backup"}
    assert (controller_only <= set(names(params, group))) is (role == "controller")
    assert not (controller_only & set(names(params, group))) or role == "controller"


def test_settings_turn_their_steps_off() -> None:
    params = provisioning_parameters(spec(containers=False, nccl_validation=False, hold_lustre_client=False))
    steps = names(params, "p5")
    assert steps == ["node-config", "users", "start-slurm", "validation-jobs"]  # no FSx, no containers, no holds
    with_fsx = names(provisioning_parameters(spec(accounting=False), "fs-1.fsx", "mnt"), "ctl")
    assert "accounting" not in with_fsx and "fsx-layout" in with_fsx and "containers" in with_fsx


def test_needs_name_the_exempt_hosts_and_the_nvidia_repository_only_where_they_apply() -> None:
    squashed = provisioning_parameters(spec(), "fs-1.fsx", "mnt", "65534:65534")
    p5 = node_needs(squashed, "p5", ("10.0.1.6@tcp",))
    assert any("set once as root from 10.0.1.6@tcp (root squash 65534:65534)" in n for n in p5)
    assert any("nvidia.github.io" in n for n in p5)
    assert not any("nvidia.github.io" in n for n in node_needs(squashed, "trn"))  # Trainium: no NVIDIA toolkit
    open_fsx = node_needs(provisioning_parameters(spec(), "fs-1.fsx", "mnt"), "p5")
    assert not any("root squash" in n for n in open_fsx)
    fsx_step = next(s for s in node_steps(squashed, "p5") if s.name == "fsx-layout")
    assert "65534:65534" in fsx_step.detail
