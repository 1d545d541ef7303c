"""Invalid storage settings fail validation with the key, the value and what is valid."""

from collections.abc import Callable
from typing import Any

import pytest

from stacks.load import FULL_KEY, ConfigError
from tests.conftest import edited_config

FSX = f"{FULL_KEY}.storage.fsx"


def problems(stack: str, edit: Callable[[dict[str, Any]], None]) -> list:
    with pytest.raises(ConfigError) as caught:
        edited_config(stack, edit)
    return caught.value.problems


def fsx_edit(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(cluster: dict[str, Any]) -> None:
        fsx = cluster["storage"]["fsx"]
        for key, value in values.items():
            if value is None:
                fsx.pop(key, None)
            else:
                fsx[key] = value

    return edit


def test_bad_capacity_step_names_key_value_and_neighbours() -> None:
    [problem] = problems("prod", fsx_edit(storage_capacity_gib=122880))
    assert problem.key == f"{FSX}.storage_capacity_gib"
    assert problem.value == 122880
    assert "122400 or 124800" in problem.message


def test_metadata_iops_below_automatic_for_the_capacity_is_refused_at_its_key() -> None:
    # Issue 11: prod once set 12000 on 124800 GiB; FSx refuses fewer IOPS than AUTOMATIC (62400) would provision.
    [problem] = problems("prod", fsx_edit(metadata_iops=12000))
    assert problem.key == f"{FSX}.metadata_iops" and problem.value == 12000
    assert "62400" in problem.message and "at least 72000" in problem.message
    edited_config("prod", fsx_edit(metadata_iops=72000))  # the smallest value that fits is accepted


def test_persistent_needs_a_throughput_tier() -> None:
    [problem] = problems("prod", fsx_edit(throughput_mb_s_per_tib=None))
    assert problem.key == f"{FSX}.throughput_mb_s_per_tib"
    assert "125, 250, 500, 1000" in problem.message


def test_unknown_throughput_tier_is_refused() -> None:
    [problem] = problems("prod", fsx_edit(throughput_mb_s_per_tib=200))
    assert problem.key == f"{FSX}.throughput_mb_s_per_tib" and problem.value == 200
    assert "not a PERSISTENT_2 tier" in problem.message


def test_scratch_refuses_a_throughput_tier() -> None:
    [problem] = problems("dev", fsx_edit(throughput_mb_s_per_tib=250))
    assert problem.key == f"{FSX}.throughput_mb_s_per_tib" and "SCRATCH_2" in problem.message


def test_efa_without_persistent_2_is_refused() -> None:
    [problem] = problems("dev", fsx_edit(efa_enabled=True))
    assert problem.key == f"{FSX}.efa_enabled"
    assert "PERSISTENT_2" in problem.message and "SCRATCH_2" in problem.message


def test_efa_capacity_follows_the_tier_step() -> None:
    [problem] = problems("staging", fsx_edit(efa_enabled=True, storage_capacity_gib=7200))
    assert problem.key == f"{FSX}.storage_capacity_gib" and "multiple of 4800" in problem.message
    config = edited_config("staging", fsx_edit(efa_enabled=True, storage_capacity_gib=9600))
    assert config.storage.fsx.efa_enabled


@pytest.mark.parametrize("iops", [1000, 18000, 204000])
def test_bad_metadata_iops(iops: int) -> None:
    [problem] = problems("prod", fsx_edit(metadata_iops=iops))
    assert problem.key == f"{FSX}.metadata_iops" and problem.value == iops
    assert "multiple of 12000" in problem.message


def test_scratch_refuses_metadata_iops_and_backups() -> None:
    found = problems("dev", fsx_edit(metadata_iops=3000, automatic_backup_retention_days=7))
    assert {p.key for p in found} == {f"{FSX}.metadata_iops", f"{FSX}.automatic_backup_retention_days"}


def test_import_prefix_must_end_with_a_slash() -> None:
    [problem] = problems("prod", fsx_edit(import_path_prefix="datasets"))
    assert problem.key == f"{FSX}.import_path_prefix"


def test_log_retention_must_be_a_cloudwatch_value() -> None:
    [problem] = problems("prod", fsx_edit(log_retention_days=45))
    assert problem.key == f"{FSX}.log_retention_days" and "365" in problem.message


def test_several_problems_are_reported_at_once() -> None:
    found = problems("prod", fsx_edit(throughput_mb_s_per_tib=300, metadata_iops=7))
    assert {p.key for p in found} == {f"{FSX}.throughput_mb_s_per_tib", f"{FSX}.metadata_iops"}


def test_scratch_outside_dev_is_refused() -> None:
    found = problems(
        "prod",
        fsx_edit(
            deployment_type="SCRATCH_2",
            throughput_mb_s_per_tib=None,
            metadata_iops=None,
            automatic_backup_retention_days=0,
        ),
    )
    assert any("dev only" in p.message for p in found)


def test_every_valid_metadata_iops_value_at_or_above_automatic_is_accepted_in_the_schema() -> None:
    """The accept side at the schema: prod's capacity (AUTOMATIC 62400) takes each valid value from 72000 up,
    and refuses each valid value below it as below AUTOMATIC, not as invalid."""
    valid = (1500, 3000, 6000, *range(12000, 192001, 12000))
    for iops in valid:
        if iops >= 62400:
            assert edited_config("prod", fsx_edit(metadata_iops=iops)).storage.fsx.metadata_iops == iops
        else:
            [problem] = problems("prod", fsx_edit(metadata_iops=iops))
            assert "below the 62400 IOPS" in problem.message, (iops, problem.message)


def test_persistent_2_without_a_throughput_tier_is_refused_at_its_key() -> None:
    # Left out (None) it would reach the plan's sizing, which cannot size a PERSISTENT_2 file system without a tier.
    [problem] = problems("prod", fsx_edit(throughput_mb_s_per_tib=None))
    assert problem.key == f"{FSX}.throughput_mb_s_per_tib"
    assert "PERSISTENT_2 needs throughput_mb_s_per_tib: one of 125, 250, 500, 1000" in problem.message
