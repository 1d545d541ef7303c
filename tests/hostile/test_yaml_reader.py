"""The stack-file reader cannot be made to hang, explode or guess: every trick ends in a problem with a line."""

from __future__ import annotations

import datetime
import json
import os
import resource
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML, YAMLError

from stacks import reader
from stacks.load import FULL_KEY, ConfigError, Problem, load_file, short
from tests.conftest import ROOT

DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail instead of hanging: a read that blocks (a FIFO) is interrupted after 10 s."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def problems(tmp_path: Path, text: str, option: str = "--config") -> list[Problem]:
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_file(path, option)
    return caught.value.problems


def dev_with(old: str, new: str) -> str:
    assert old in DEV
    return DEV.replace(old, new, 1)


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9)
)


@pytest.mark.e2e
def test_an_alias_bomb_is_refused_at_the_first_alias_within_a_memory_cap(tmp_path: Path) -> None:
    """Nine levels of nine aliases ask for 9^10 values; the loader stops at the first `*a`, in a process whose
    address space is capped at 1 GiB (main took gigabytes and ended in MemoryError, exit 3)."""
    config = tmp_path / "Pulumi.bomb.yaml"
    config.write_text(
        dev_with(
            "    region: us-east-1\n",
            "    region: us-east-1\n"
            + "".join("    " + line + "\n" for line in ("bomb:", *("  " + x for x in ALIAS_BOMB.splitlines()))),
        )
    )
    cap = 1024 * 1024 * 1024
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "trainstack", "plan", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)),
    )
    assert done.returncode == 2, done.stderr
    assert "alias *a: stack files do not use anchors and aliases" in done.stderr
    assert "[line 11, column 14]" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 110  # the bound that matters is the memory cap above


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    """A second `environment:` no longer silently turns prod into dev."""
    found = problems(tmp_path, dev_with("    environment: dev\n", "    environment: prod\n    environment: dev\n"))
    duplicate = next(p for p in found if "duplicate key" in p.message)
    assert duplicate.key == f"{FULL_KEY}.environment"
    assert "lines 7 and 8" in duplicate.message and duplicate.origin.line == 8


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "1e999"])
def test_non_finite_numbers_are_refused(tmp_path: Path, value: str) -> None:
    found = problems(tmp_path, dev_with("per_gpu_read_mb_s: 100", f"per_gpu_read_mb_s: {value}"))
    [problem] = found
    assert problem.key == f"{FULL_KEY}.storage.fsx.per_gpu_read_mb_s"
    assert "not a finite number" in problem.message and problem.origin is not None


def test_non_finite_numbers_written_as_strings_are_refused_by_the_schema(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, dev_with("per_gpu_read_mb_s: 100", 'per_gpu_read_mb_s: "inf"'))
    assert problem.key == f"{FULL_KEY}.storage.fsx.per_gpu_read_mb_s" and "finite" in problem.message


@pytest.mark.parametrize(
    ("key", "read_as"), [("2024-01-01", "a date"), ("1", "a number"), ("true", "a boolean"), ("null", "null")]
)
def test_non_string_keys_are_named_with_their_line(tmp_path: Path, key: str, read_as: str) -> None:
    [problem] = problems(
        tmp_path, dev_with("      cost_center: ml-research\n", f"      cost_center: ml-research\n      {key}: x\n")
    )
    assert problem.key == f"{FULL_KEY}.tags"
    assert f"key {key} is read as {read_as}" in problem.message and f'"{key}"' in problem.message
    assert problem.origin.line == 12


@pytest.mark.parametrize(
    ("snippet", "says"),
    [
        ("merged: {<<: {a: 1}}", "merge key"),
        ("tagged: !!binary aGVsbG8=", "tag !!binary"),
        ("tagged: !custom x", "tag !custom"),
        ("tagged: !!set {a, b}", "tag !!set"),
        ("tagged: !!python/object:os.system x", "tag !!python/object:os.system"),
        ("nested: " + "[" * 40 + "]" * 40, "nested deeper than"),
        ("huge: " + "9" * 5000, "cannot read this value"),
    ],
)
def test_yaml_tricks_end_in_one_problem_with_a_line(tmp_path: Path, snippet: str, says: str) -> None:
    found = problems(tmp_path, dev_with("    region: us-east-1\n", f"    region: us-east-1\n    {snippet}\n"))
    assert any(says in p.message for p in found), found
    assert all(p.origin is not None or "line 9" in p.message for p in found if says in p.message)


def test_long_lists_are_refused_while_reading(tmp_path: Path) -> None:
    items = ", ".join(["{name: t, gpu_quota: 1}"] * (reader.MAX_ENTRIES + 1))
    [problem] = problems(tmp_path, dev_with("        - {name: research, gpu_quota: 2}", f"        - [{items}]"))
    assert f"more than {reader.MAX_ENTRIES} entries" in problem.message


def test_files_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, DEV + "#" * reader.MAX_FILE_BYTES)
    assert problem.key == "--config" and "larger than 1024 KiB" in problem.message


@pytest.mark.parametrize("option", ["--config", "--against"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, option: str, deadline: None) -> None:
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as caught:
        load_file(fifo, option)
    [problem] = caught.value.problems
    assert problem.key == option and "not a regular file (a FIFO)" in problem.message


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/", "a directory")])
def test_devices_and_directories_are_refused(path: str, kind: str, deadline: None) -> None:
    with pytest.raises(ConfigError, match=f"not a regular file \\({kind}\\)"):
        load_file(Path(path))


def test_a_secret_says_the_offline_plan_cannot_read_it_and_how_to_plan(tmp_path: Path) -> None:
    [problem] = problems(
        tmp_path, dev_with("owner: ml-platform@example.com", "owner:\n        secure: AAABAMzDKfakeciphertext")
    )
    assert problem.key == f"{FULL_KEY}.tags.owner"
    assert "encrypted Pulumi secret" in problem.message and "placeholder plain value" in problem.message


def test_an_unquoted_version_says_to_quote_it(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, dev_with('version: "1.36"', "version: 1.30"))
    assert problem.key == f"{FULL_KEY}.eks.version"
    assert 'YAML reads the unquoted 1.30 as the number 1.3: quote it, "1.30"' in problem.message


def test_an_unquoted_time_is_text_as_pulumi_reads_it(tmp_path: Path) -> None:
    """YAML 1.1 (PyYAML, main before issue 35) read 7:03:00 as the number 25380 and refused it; Pulumi's yaml.v3
    reads YAML 1.2, where it is the text "7:03:00", and so does the plan."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(
        dev_with(
            "        per_gpu_read_mb_s", "        weekly_maintenance_start_time: 7:03:00\n        per_gpu_read_mb_s"
        )
    )
    assert load_file(path).storage.fsx.weekly_maintenance_start_time == "7:03:00"


def test_a_pattern_error_gives_an_example(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, dev_with("vpc_cni: v1.22.4-eksbuild.3", "vpc_cni: 1.22.4"))
    assert "for example 'v1.22.4-eksbuild.3'" in problem.message


def test_against_given_a_report_says_so(tmp_path: Path) -> None:
    report = '{"steps": [], "changeSummary": {}, "trainstack": {"formatVersion": 1}}'
    [problem] = problems(tmp_path, report, "--against")
    assert problem.key == "--against" and "plan report, not a stack file" in problem.message


def test_problems_in_the_baseline_say_they_are_in_the_baseline(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.base.yaml"
    path.write_text(dev_with("region: us-east-1", "region: us-east-9"))
    with pytest.raises(ConfigError) as caught:
        load_file(path, "--against")
    first = caught.value.render().splitlines()[0]
    assert first.startswith("invalid baseline (--against) stack config") and "in the baseline" in first


def test_a_huge_value_is_shown_without_rendering_it() -> None:
    """The error path cut a value to 80 characters only after rendering all of it."""
    value: list = ["x" * 1000]
    for _ in range(200):
        value = [value, value]  # 2^200 leaves if rendered
    tracemalloc.start()
    text = short(value)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(text) <= 80 and text.endswith("...") and peak < 1_000_000
    assert short(10**5000).startswith("<integer of about 5000 digits")
    assert short({"a": [1.5, None]}) == "{'a': [1.5, null]}"


# ------------------------------------------------------------------------------------------------ YAML 1.2

YAML_V3 = json.loads((ROOT / "tests" / "hostile" / "fixtures" / "yaml_v3_scalars.json").read_text())


@pytest.mark.parametrize("case", YAML_V3, ids=[c["yaml"] or "<empty>" for c in YAML_V3])
def test_the_reader_reads_every_plain_scalar_as_pulumi_does_or_refuses_it(case: dict[str, str]) -> None:
    """Each scalar as Go's yaml.v3 reads it for Pulumi (scripts/yaml_v3/main.go made the fixture with yaml.v3
    3.0.1): the reader gives the same value, or refuses it with its line; never another value. A date is read
    and left to the schema, which refuses it with a hint to quote it (Pulumi would pass on a Go time string)."""
    parsed = reader.parse(f"v: {case['yaml']}\n")
    if parsed.refusals:
        assert all(r.origin is not None and r.message for r in parsed.refusals)
        return
    assert "error" not in case, (case, parsed.document)
    value = parsed.document["v"]
    if isinstance(value, datetime.date):
        assert case["json"].startswith('"') and case["json"][1:11] == value.isoformat()[:10]
        return
    expected = json.loads(case["json"])
    assert (value == expected and type(value) is not bool) or value is expected, (case, value)
    assert isinstance(value, str) == isinstance(expected, str), (case, value)


def test_the_reader_refuses_exactly_the_plain_scalars_pulumi_reads_otherwise() -> None:
    """Not one refusal more than needed: a scalar is refused when yaml.v3 hands Pulumi another value than YAML 1.2
    reads, or one it cannot pass on, or YAML 1.2 reads it as no plain value (`=`), and only then; a YAML 1.2 date
    is read and left to the schema."""
    plain = YAML(typ="safe", pure=True)
    wrong: list[tuple[str, bool]] = []
    for case in YAML_V3:
        text = f"v: {case['yaml']}\n"
        try:
            value = plain.load(text)["v"]
        except YAMLError:
            differs = True
        else:
            differs = "error" in case or (not isinstance(value, datetime.date) and not _same(value, case["json"]))
        if bool(reader.parse(text).refusals) != differs:
            wrong.append((case["yaml"], differs))
    assert not wrong, f"refused wrongly (scalar, whether yaml.v3 reads it otherwise): {wrong}"


def _same(value: object, pulumi_json: str) -> bool:
    expected = json.loads(pulumi_json)
    kinds = (isinstance(value, bool), isinstance(value, str)) == (isinstance(expected, bool), isinstance(expected, str))
    return kinds and value == expected


def test_yaml_1_1_readings_are_gone() -> None:
    """PyYAML (YAML 1.1) read `7:03:00` as 25380 and `on` as true, and the plan refused a time Pulumi accepts."""
    parsed = reader.parse("time: 7:03:00\nflag: on\nanswer: yes\n")
    assert parsed.document == {"time": "7:03:00", "flag": "on", "answer": "yes"} and not parsed.refusals


def test_the_committed_stacks_read_the_same_as_under_pulumi() -> None:
    """Every plain scalar of every committed stack file is in the yaml.v3 fixture, so each is read as Pulumi
    reads it (the parametrized test above)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    cases = {c["yaml"] for c in YAML_V3}
    missing: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, ScalarNode) and node.style is None and node.value not in cases:
            missing.add(node.value)
        elif isinstance(node, MappingNode):
            for key, item in node.value:
                walk(key)
                walk(item)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                walk(item)

    for path in sorted((ROOT / "stacks").rglob("*.yaml")):
        walk(YAML(typ="safe", pure=True).compose(path.read_text()))
    assert not missing, f"regenerate the fixture with these scalars (scripts/yaml_v3/main.go): {sorted(missing)}"
