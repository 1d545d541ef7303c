"""The accelerator catalog: its rows agree with the checked reference and with themselves."""

import re
from pathlib import Path

import pytest

from stacks.catalog import CATALOG, PRICE_DATE, SOURCES, InstanceType, _busbw_floor, efa_capable, lookup
from stacks.schema import ami_families_for

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "gpu-instances.md"


def reference_rows() -> dict[str, dict[str, str]]:
    """instance -> {accelerators, efa} from ../shared/reference/gpu-instances.md."""
    rows = {}
    for line in REFERENCE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.match(r"^[a-z0-9-]+\.\d*x?large$", cells[0]):
            rows[cells[0]] = {"accelerators": cells[1], "efa": cells[3]}
    return rows


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is beside the checkout in CI and dev")
def test_every_reference_instance_is_in_the_catalog_with_the_same_efa_and_gpu_counts() -> None:
    rows = reference_rows()
    assert len(rows) >= 13
    for name, row in rows.items():
        entry = lookup(name)
        assert row["accelerators"].startswith(f"{entry.accelerator_count} x"), name
        assert int(re.match(r"\d+", row["efa"]).group()) == entry.max_efa_interfaces, name


def test_efa_cards_are_unique_and_within_the_network_cards() -> None:
    for row in CATALOG.values():
        cards = row.efa_cards
        assert len(cards) == row.max_efa_interfaces == len(set(cards))
        assert all(0 <= card < row.network_cards for card in cards), row.name


def test_new_types_take_the_efa_count_from_efa_info_not_network_cards() -> None:
    # p6-b300 and p6e-gb200 have more network cards than EFA interfaces (eksctl PR #8692).
    assert lookup("p6-b300.48xlarge").network_cards > lookup("p6-b300.48xlarge").max_efa_interfaces
    assert lookup("p6e-gb200.36xlarge").efa_cards == (1, 5, 9, 13)


@pytest.mark.parametrize(
    ("name", "efa"),
    [("p4d.24xlarge", 4), ("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8), ("trn1n.32xlarge", 16)],
)
def test_efa_counts_users_get_wrong(name: str, efa: int) -> None:
    assert lookup(name).max_efa_interfaces == efa


def test_every_row_is_sourced_and_priced() -> None:
    for row in CATALOG.values():
        assert row.sources and all(key in SOURCES for key in row.sources), row.name
        assert row.on_demand_usd_per_hour > 0
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", PRICE_DATE)


def test_unknown_type_lists_the_valid_choices() -> None:
    with pytest.raises(KeyError, match=r"p5\.48xlarge"):
        lookup("p5.96xlarge")


def test_efa_capable_excludes_types_without_efa() -> None:
    assert "g5.2xlarge" not in efa_capable()
    assert "p5.48xlarge" in efa_capable()


def test_device_resource_follows_the_accelerator() -> None:
    assert lookup("p5.48xlarge").device_resource == "nvidia.com/gpu"
    assert lookup("trn1.32xlarge").device_resource == "aws.amazon.com/neuron"


def test_only_the_grace_type_is_arm64() -> None:
    # p6e-gb200 pairs Blackwell GPUs with NVIDIA Grace (Arm Neoverse V2) CPUs; every other row has Intel or
    # AMD x86_64 hosts (P4/P5/P6-B200/B300 Intel Xeon, G5/G6e AMD EPYC, Trn1/Trn2 Intel Xeon).
    assert {name for name, row in CATALOG.items() if row.architecture == "arm64"} == {"p6e-gb200.36xlarge"}
    assert {row.architecture for row in CATALOG.values()} == {"x86_64", "arm64"}


def test_every_row_has_an_eks_ami_for_its_accelerator_and_cpu() -> None:
    for row in CATALOG.values():
        families = ami_families_for(row)
        assert families, row.name
        assert all(f.accelerator is row.accelerator and f.architecture == row.architecture for f in families)
        assert not families[0].bottlerocket  # AL2023 is the default


def test_a_price_nobody_read_is_marked_estimated() -> None:
    row = CATALOG["p6e-gb200.36xlarge"]
    assert "price" not in row.sources and row.price_estimated
    unread = row.model_dump() | {"price_estimated": False}
    with pytest.raises(ValueError, match="price_estimated"):
        type(row).model_validate(unread)


def _row_with(**changes: object) -> dict[str, object]:
    return CATALOG["p5.48xlarge"].model_dump() | changes


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"efa_card_indices": tuple(range(31))}, "one interface short of max_efa_interfaces"),
        ({"efa_card_indices": (0, 0, *range(2, 32))}, "the same card twice"),
        ({"efa_card_indices": (*range(31), 32)}, "a card index at network_cards"),
        ({"efa_card_indices": (-1, *range(1, 32))}, "a negative card index"),
    ],
)
def test_efa_cards_must_be_distinct_indices_below_network_cards(changes: dict[str, object], why: str) -> None:
    with pytest.raises(ValueError, match="must be 32 distinct indices below network_cards 32"):
        InstanceType.model_validate(_row_with(**changes))


def test_efa_cards_on_the_last_card_are_valid() -> None:
    row = InstanceType.model_validate(_row_with(efa_card_indices=tuple(range(32))))
    assert row.efa_cards[-1] == row.network_cards - 1


def test_total_accelerator_memory_is_count_times_memory() -> None:
    p5 = CATALOG["p5.48xlarge"]
    assert p5.total_accelerator_memory_gib == p5.accelerator_count * p5.accelerator_memory_gib == 640


def test_the_busbw_floor_is_80_percent_of_line_rate_in_gb_s() -> None:
    assert _busbw_floor(3200) == 320.0 and _busbw_floor(25) == 2.5  # 25 Gbit/s = 3.125 GB/s; 80 %


# ------------------------------------------------------------------- the EC2 API's own facts (issue 34)


def _describe_instance_types() -> dict[str, dict[str, object]]:
    """EC2 DescribeInstanceTypes as moto records it (SOURCES["ec2-api"]): the API trainstack's rows copy."""
    import gzip
    import importlib.resources
    import json

    data = importlib.resources.files("moto.ec2.resources").joinpath("instance_types.json.gz").read_bytes()
    return json.loads(gzip.decompress(data))


# Types the recorded API answer has no entry for, and why (their rows say what they rest on instead).
NOT_IN_THE_RECORDED_API = {"p6e-gb200.36xlarge": "sold only as UltraServer Capacity Blocks; not in moto 5.2.5's data"}


def _line_rate_gbps(performance: str) -> int:
    """'3200 Gigabit', '8x 100 Gigabit', 'Up to 10 Gigabit' -> Gbit/s."""
    match = re.fullmatch(r"(?:(\d+)x )?(?:Up to )?([\d.]+) Gigabit", performance)
    assert match, performance
    return int(float(match.group(2)) * int(match.group(1) or 1))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_row_agrees_with_the_ec2_api(name: str) -> None:
    row = CATALOG[name]
    if name in NOT_IN_THE_RECORDED_API:
        assert name not in _api() and row.verify, name
        return
    api = _api()[name]
    network = api["NetworkInfo"]
    assert row.vcpus == api["VCpuInfo"]["DefaultVCpus"]
    assert row.memory_gib == api["MemoryInfo"]["SizeInMiB"] // 1024
    assert row.instance_store_gib == api.get("InstanceStorageInfo", {}).get("TotalSizeInGB", 0)
    assert row.network_cards == network["MaximumNetworkCards"]
    assert row.max_efa_interfaces == network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)
    efa_cards = [c["NetworkCardIndex"] for c in network["NetworkCards"] if "efa-only" in c.get("InterfaceTypes", [])]
    if row.supports_efa:
        assert set(row.efa_cards) <= set(efa_cards), (row.efa_cards, efa_cards)
    assert row.network_gbps == _line_rate_gbps(network["NetworkPerformance"])
    devices = api["GpuInfo"]["Gpus"] if "GpuInfo" in api else api["NeuronInfo"]["NeuronDevices"]
    (device,) = devices
    assert row.accelerator_count == device["Count"]
    assert row.accelerator_model.removeprefix("Trainium2").lower() in device["Name"].lower()
    if row.accelerator.value == "nvidia":
        # AWS lists GPU memory in GB (A10G: 24 GB, 22,888 MiB in the API): within a tenth of the API's MiB.
        assert abs(row.accelerator_memory_gib * 1024 - device["MemoryInfo"]["SizeInMiB"]) <= 0.1 * (
            row.accelerator_memory_gib * 1024
        ), name
    assert row.architecture in api["ProcessorInfo"]["SupportedArchitectures"]


_API: dict[str, dict[str, dict[str, object]]] = {}


def _api() -> dict[str, dict[str, object]]:
    if not _API:
        _API["types"] = _describe_instance_types()  # type: ignore[assignment]
    return _API["types"]  # type: ignore[return-value]


def test_the_catalog_has_the_sizes_the_peers_start_people_on() -> None:
    # awsome-distributed-training's README calls g5.8xlarge/g5.12xlarge/g4dn.8xlarge/g6e "a good starting point".
    assert len(CATALOG) >= 30
    for name in ("g4dn.8xlarge", "g5.8xlarge", "g5.12xlarge", "g6.12xlarge", "g6e.12xlarge", "p5.4xlarge"):
        assert CATALOG[name].supports_efa, name
    assert {"p6-b200.48xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge"} <= set(CATALOG)


def test_every_row_is_dated() -> None:
    for row in CATALOG.values():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.checked_on), row.name
