"""The `kubernetes` section's own checks, each at its boundary and alone: repeated exit codes, a restart wait's
first and longest value, team names, and the longest restart wait against Kueue's waitForPodsReady timeout (a
job that restarts before all its pods were first ready is evicted by Kueue; docs/health.md, "Resume")."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.schema import KubernetesSpec, TrainerRuntimesSpec
from tests.conftest import stack_config


@pytest.mark.parametrize("codes", [[], [78], [2, 78, 126, 127]])
def test_distinct_exit_codes_are_accepted(codes: list[int]) -> None:
    assert TrainerRuntimesSpec(fatal_exit_codes=codes).fatal_exit_codes == codes


def test_only_the_repeated_exit_codes_are_named() -> None:
    with pytest.raises(ValidationError, match=re.escape("exit codes must be unique, [78] repeated")):
        TrainerRuntimesSpec(fatal_exit_codes=[2, 78, 78, 126])


@pytest.mark.parametrize(("first", "longest"), [(30, 30), (0, 0), (29, 30)])
def test_the_longest_restart_wait_may_equal_the_first(first: int, longest: int) -> None:
    spec = TrainerRuntimesSpec(restart_backoff_s=first, restart_backoff_max_s=longest)
    assert (spec.restart_backoff_s, spec.restart_backoff_max_s) == (first, longest)


def test_a_longest_restart_wait_one_below_the_first_is_refused() -> None:
    with pytest.raises(ValidationError, match="restart_backoff_max_s 29 is below restart_backoff_s 30"):
        TrainerRuntimesSpec(restart_backoff_s=30, restart_backoff_max_s=29)


def _kubernetes(**changes: Any) -> dict[str, Any]:
    raw = stack_config("dev").kubernetes.model_dump(mode="json")
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = raw
        for key in parents:
            node = node[key]
        node[leaf] = value
    return raw


def test_two_teams_of_one_name_are_refused_and_two_names_accepted() -> None:
    team = {"name": "research", "gpu_quota": 8}
    with pytest.raises(ValidationError, match=re.escape("team names must be unique, got ['research', 'research']")):
        KubernetesSpec.model_validate(_kubernetes(teams=[team, team]))
    spec = KubernetesSpec.model_validate(_kubernetes(teams=[team, {**team, "name": "vision"}]))
    assert [t.name for t in spec.teams] == ["research", "vision"]


def _restart_wait(longest: int, timeout: int, kind: str = "kubeflow_trainer") -> dict[str, Any]:
    raw = _kubernetes(kueue__wait_for_pods_ready_timeout_s=timeout, training_operator__kind=kind)
    raw["training_operator"]["runtimes"].update(restart_backoff_s=0, restart_backoff_max_s=longest)
    return raw


def test_the_longest_restart_wait_must_stay_below_kueues_timeout() -> None:
    accepted = KubernetesSpec.model_validate(_restart_wait(599, 600))
    assert accepted.training_operator.runtimes.restart_backoff_max_s == 599
    for longest in (600, 601):
        with pytest.raises(ValidationError, match=f"restart_backoff_max_s {longest} must be below kueue"):
            KubernetesSpec.model_validate(_restart_wait(longest, 600))


def test_the_mpi_operator_has_no_restart_wait_to_bound() -> None:
    """The runtimes (and their restart wait) are Kubeflow Trainer's; with the MPI Operator they are not built."""
    spec = KubernetesSpec.model_validate(_restart_wait(900, 600, kind="mpi_operator"))
    assert spec.training_operator.kind == "mpi_operator"
