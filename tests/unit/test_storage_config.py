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


def test_backups_of_the_s3_linked_file_system_are_refused_at_the_key() -> None:
    """trainstack links every file system to the datasets bucket, and FSx backs up no linked file system."""
    [problem] = problems("prod", fsx_edit(automatic_backup_retention_days=7))
    assert problem.key == f"{FSX}.automatic_backup_retention_days" and problem.value == 7
    assert "linked to an S3 data repository" in problem.message and "set it to 0" in problem.message
    edited_config("prod", fsx_edit(automatic_backup_retention_days=0))  # 0 (the default) is what it takes


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ("4294967295:65534", "UID 4294967295 is above 4294967294"),
        ("65534:4294967295", "GID 4294967295 is above 4294967294"),
        ("0:65534", "both be non-zero"),
        ("65534:0", "both be non-zero"),
        ("0:0", "set root_squash to null"),
    ],
)
def test_root_squash_outside_what_fsx_takes_is_refused_at_the_key(value: str, phrase: str) -> None:
    [problem] = problems("prod", fsx_edit(root_squash=value))
    assert problem.key == f"{FSX}.root_squash" and problem.value == value and phrase in problem.message


@pytest.mark.parametrize("value", ["1:1", "4294967294:4294967294", "65534:65534"])
def test_root_squash_at_the_bounds_is_taken(value: str) -> None:
    edited_config("prod", fsx_edit(root_squash=value))


@pytest.mark.parametrize(
    ("nid", "phrase"),
    [
        ("10.0.1.256@tcp", "part 256 is not an address byte"),
        ("10.0.[2-300].1@tcp", "part 300 is not an address byte"),
        ("10.0.[10-2].1@tcp", "range [10-2] runs backwards"),
    ],
)
def test_a_nid_that_is_no_address_is_refused_at_the_key(nid: str, phrase: str) -> None:
    [problem] = problems("prod", fsx_edit(no_squash_nids=["10.0.1.6@tcp", nid]))
    assert problem.key == f"{FSX}.no_squash_nids" and nid in problem.message and phrase in problem.message


def test_nids_take_every_address_and_range_fsx_documents() -> None:
    edited_config("prod", fsx_edit(no_squash_nids=["10.0.1.6@tcp", "10.0.[2-10].[1-255]@tcp", "0.0.0.0@tcp"]))


def test_nids_exempt_from_a_squash_that_is_off_are_refused() -> None:
    def squash_off(cluster: dict[str, Any]) -> None:
        cluster["storage"]["fsx"].update(root_squash=None, no_squash_nids=["10.0.1.6@tcp"])

    [problem] = problems("dev", squash_off)
    assert problem.key == f"{FSX}.no_squash_nids" and "root squash that is off" in problem.message


def test_more_nids_than_fsx_takes_are_refused() -> None:
    [problem] = problems("prod", fsx_edit(no_squash_nids=[f"10.0.0.{i}@tcp" for i in range(65)]))
    assert problem.key == f"{FSX}.no_squash_nids" and "64" in problem.message


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


def test_root_squash_on_by_default_and_off_when_null() -> None:
    """Left out, root is squashed to nobody and a team's processes reach Lustre as nobody; null turns it off
    (dev only) and they still run as nobody; a squash to another UID:GID is the identity they run as."""
    default = edited_config("dev", fsx_edit()).storage.fsx
    assert default.squashes_root and default.squash_identity == (65534, 65534)
    off = edited_config("dev", lambda cluster: cluster["storage"]["fsx"].update(root_squash=None)).storage.fsx
    assert not off.squashes_root and off.squash_identity == (65534, 65534)
    other = edited_config("dev", fsx_edit(root_squash="1000:2000")).storage.fsx
    assert other.squashes_root and other.squash_identity == (1000, 2000)


def test_persistent_is_the_deployment_type() -> None:
    assert edited_config("prod", fsx_edit()).storage.fsx.persistent
    assert not edited_config("dev", fsx_edit()).storage.fsx.persistent


def test_scratch_takes_no_throughput_tier_and_needs_none() -> None:
    """SCRATCH_2's baseline is fixed: left out, it is taken (and EFA and metadata IOPS left off are taken too)."""
    fsx = edited_config("dev", fsx_edit(throughput_mb_s_per_tib=None, efa_enabled=False)).storage.fsx
    assert fsx.throughput_mb_s_per_tib is None and not fsx.efa_enabled and fsx.metadata_iops is None


def test_an_invalid_deployment_type_is_reported_alone() -> None:
    """The rules that depend on the deployment type (EFA, the capacity step) wait for a valid one: one problem."""
    [problem] = problems("staging", fsx_edit(deployment_type="SCRATCH_1", efa_enabled=True, storage_capacity_gib=1000))
    assert problem.key == f"{FSX}.deployment_type" and problem.value == "SCRATCH_1"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param({"throughput_mb_s_per_tib": 300}, id="invalid-tier"),
        pytest.param({"efa_enabled": "sometimes"}, id="invalid-efa"),
    ],
)
def test_the_capacity_step_waits_for_the_fields_it_depends_on(edit: dict[str, Any]) -> None:
    """The step depends on the tier and on EFA: when either is invalid, only it is reported, not the capacity."""
    [key] = edit
    [problem] = problems("prod", fsx_edit(storage_capacity_gib=1000, **edit))
    assert problem.key == f"{FSX}.{key}"


def test_a_capacity_off_the_step_is_refused_on_scratch_too() -> None:
    [problem] = problems("dev", fsx_edit(storage_capacity_gib=1800))
    assert problem.key == f"{FSX}.storage_capacity_gib" and "1200 or 2400" in problem.message


def test_a_nid_that_is_no_address_is_reported_once_in_the_rule_s_words() -> None:
    """A bad NID is named with its own problem, not also judged for how many addresses it would cover."""
    from stacks import fsx_squash

    nid = "10.0.[0-300].[0-255]@tcp"
    [problem] = problems("prod", fsx_edit(no_squash_nids=[nid]))
    assert problem.message.endswith(f"{nid}: {fsx_squash.nid_problem(nid)}") and "covers" not in problem.message


def test_a_nid_range_may_cover_a_whole_vpc_and_no_more() -> None:
    """The largest VPC is a /16: a range of 65,536 addresses is taken, one wider (66,048) is refused."""
    widest = "10.0.[0-255].[0-255]@tcp"
    assert edited_config("prod", fsx_edit(no_squash_nids=[widest])).storage.fsx.no_squash_nids == [widest]
    wider = "10.[0-1].[0-255].[0-128]@tcp"
    [problem] = problems("prod", fsx_edit(no_squash_nids=["10.0.1.7@tcp", wider]))
    assert problem.key == f"{FSX}.no_squash_nids"
    assert problem.message.startswith(f"{wider} covers 66,048 addresses, more than the 65,536")
    assert "10.0.1.7@tcp" not in problem.message  # the single host beside it is fine


def test_nids_beside_an_invalid_root_squash_leave_the_squash_to_report() -> None:
    [problem] = problems("prod", fsx_edit(root_squash="nobody", no_squash_nids=["10.0.1.6@tcp"]))
    assert problem.key == f"{FSX}.root_squash"


@pytest.mark.parametrize(
    ("datasets", "teams"),
    [
        ("/datasets", "/datasets"),
        ("/datasets", "/datasets/teams"),
        ("/shared/datasets", "/shared"),
        ("/", "/teams"),
        ("/datasets/", "/datasets/teams"),
    ],
)
def test_the_team_directory_and_the_datasets_must_be_apart(datasets: str, teams: str) -> None:
    """Either inside the other, a team would see the others' checkpoints or write the shared data."""
    [problem] = problems("prod", fsx_edit(file_system_path=datasets, team_directory=teams))
    assert problem.key == f"{FSX}.team_directory" and problem.value == teams
    assert f"file_system_path {datasets} overlap" in problem.message


@pytest.mark.parametrize(("datasets", "teams"), [("/datasets", "/datasets-teams"), ("/data/sets", "/data/teams")])
def test_sibling_directories_with_a_common_prefix_are_apart(datasets: str, teams: str) -> None:
    fsx = edited_config("prod", fsx_edit(file_system_path=datasets, team_directory=teams)).storage.fsx
    assert (fsx.file_system_path, fsx.team_directory) == (datasets, teams)


def test_an_invalid_datasets_path_is_reported_alone() -> None:
    [problem] = problems("prod", fsx_edit(file_system_path="datasets"))
    assert problem.key == f"{FSX}.file_system_path"


def test_one_day_of_backups_is_already_refused() -> None:
    [problem] = problems("prod", fsx_edit(automatic_backup_retention_days=1))
    assert problem.key == f"{FSX}.automatic_backup_retention_days" and "linked to an S3" in problem.message
    [problem] = problems("dev", fsx_edit(automatic_backup_retention_days=1))
    assert "SCRATCH_2 has no automatic backups" in problem.message


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_metadata_iops_written_as_null_is_automatic_mode_on_either_deployment(stack: str) -> None:
    """`metadata_iops: null` is the same as leaving it out (AUTOMATIC), on SCRATCH_2 too."""

    def null(cluster: dict[str, Any]) -> None:
        cluster["storage"]["fsx"]["metadata_iops"] = None

    assert edited_config(stack, null).storage.fsx.metadata_iops is None


def test_no_backups_written_out_reads_as_zero() -> None:
    fsx = edited_config("prod", fsx_edit(automatic_backup_retention_days=0)).storage.fsx
    assert fsx.automatic_backup_retention_days == 0
