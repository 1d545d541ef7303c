"""Every way a stack file can be wrong ends in one ConfigError listing each problem with key, value and fix."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.load import (
    FULL_KEY,
    ConfigError,
    Problem,
    check_stack,
    environment_of_stack,
    load_file,
    stack_file,
    stack_problem,
)
from stacks.schema import Environment
from tests.conftest import stack_config, stack_document


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return path


def problems_of(path: Path) -> list:
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    return caught.value.problems


def edited(edit) -> dict:
    document = stack_document("prod")
    edit(document["config"][FULL_KEY])
    return document


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    [problem] = problems_of(write(tmp_path, "config:\n  trainstack:cluster: {environment: dev\n  bad: ]\n"))
    assert "YAML syntax error at line 3, column 6" in problem.message


def test_unknown_key_lists_the_valid_keys(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["max_nodes"] = 3

    [problem] = problems_of(write(tmp_path, edited(edit)))
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.max_nodes"
    assert "valid keys here" in problem.message and "max_size" in problem.message


def test_wrong_type_names_key_and_value(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["min_size"] = "sixteen"

    [problem] = problems_of(write(tmp_path, edited(edit)))
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.min_size"
    assert problem.value == "sixteen"
    assert "integer" in problem.message


def test_min_above_max_is_refused(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0].update(min_size=20, desired_size=20, max_size=16)

    problems = problems_of(write(tmp_path, edited(edit)))
    assert any(
        p.key == f"{FULL_KEY}.gpu_node_groups.0" and "min_size <= desired_size <= max_size" in p.message
        for p in problems
    )


def test_unknown_instance_type_lists_valid_choices(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["instance_type"] = "p5.96xlarge"

    [problem] = problems_of(write(tmp_path, edited(edit)))
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.instance_type"
    assert problem.value == "p5.96xlarge"
    assert "p5.48xlarge" in problem.message and "p4d.24xlarge" in problem.message


def test_efa_on_a_type_without_it_lists_efa_capable_types(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["instance_type"] = "g5.2xlarge"

    problems = problems_of(write(tmp_path, edited(edit)))
    assert any("has no EFA" in p.message and "p5.48xlarge" in p.message for p in problems)


def test_wrong_namespace_is_named(tmp_path: Path) -> None:
    document = stack_document("dev")
    document["config"]["trainstak:cluster"] = document["config"].pop(FULL_KEY)
    problems = problems_of(write(tmp_path, document))
    keys = {p.key for p in problems}
    assert "trainstak:cluster" in keys and FULL_KEY in keys


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["region"] = "moon-1"
        cluster["environment"] = "qa"
        cluster["gpu_node_groups"][0]["instance_type"] = "x1.fake"

    problems = problems_of(write(tmp_path, edited(edit)))
    keys = {p.key for p in problems}
    assert {f"{FULL_KEY}.region", f"{FULL_KEY}.environment", f"{FULL_KEY}.gpu_node_groups.0.instance_type"} <= keys
    env = next(p for p in problems if p.key == f"{FULL_KEY}.environment")
    assert "'dev', 'staging' or 'prod'" in env.message


def test_reservation_az_mismatch_is_refused(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["availability_zone"] = "us-east-1b"

    problems = problems_of(write(tmp_path, edited(edit)))
    assert any("a reservation fixes the AZ" in p.message for p in problems)


def test_gpu_budget_is_enforced(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["cost"]["max_gpus"] = 64

    problems = problems_of(write(tmp_path, edited(edit)))
    assert any(p.key == FULL_KEY and "over cost.max_gpus 64" in p.message for p in problems)


def test_missing_file_and_missing_stack(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path / "nope.yaml")
    assert problem.message == "file not found"
    with pytest.raises(ConfigError, match="no such stack; valid: dev, prod, staging"):
        stack_file("qa")


def test_render_is_one_line_per_problem(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["region"] = "moon-1"
        cluster["name"] = "Not A Label"

    with pytest.raises(ConfigError) as caught:
        load_file(write(tmp_path, edited(edit)))
    lines = caught.value.render().splitlines()
    assert lines[0].endswith("2 problem(s)")
    assert all(line.startswith("  - trainstack:cluster.") for line in lines[1:])


@pytest.mark.parametrize(
    ("stack", "environment"),
    [
        ("dev", Environment.DEV),
        ("staging-bench", Environment.STAGING),
        ("prod-eu-west-1", Environment.PROD),
        ("prod", Environment.PROD),
        ("prod2", None),
        ("development", None),
        ("qa", None),
    ],
)
def test_a_stack_name_maps_to_its_environment_or_to_none(stack: str, environment: Environment | None) -> None:
    assert environment_of_stack(stack) is environment


@pytest.mark.parametrize("stack", ["dev", "dev-bench"])
def test_a_stack_of_the_files_environment_has_no_problem(stack: str) -> None:
    assert stack_problem(stack, stack_config("dev")) is None
    assert check_stack(stack, stack_config("dev"), "test") is stack_config("dev")


@pytest.mark.parametrize(
    ("stack", "says"),
    [
        ("prod-eu-west-1", "stack 'prod-eu-west-1' is a prod stack: its environment must be 'prod'"),
        ("qa", "stack 'qa' maps to no environment"),
    ],
)
def test_a_stack_whose_name_does_not_give_the_files_environment_is_refused(stack: str, says: str) -> None:
    problem = stack_problem(stack, stack_config("dev"))
    assert problem is not None
    assert (problem.key, problem.value) == (f"{FULL_KEY}.environment", "dev") and problem.message.startswith(says)
    with pytest.raises(ConfigError) as refused:
        check_stack(stack, stack_config("dev"), "test")
    assert refused.value.problems == [problem]


def test_a_named_stack_is_its_file_and_every_other_name_lists_the_stacks(tmp_path: Path) -> None:
    for name in ("a", "b.c"):
        (tmp_path / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    (tmp_path / "Pulumi.d.yaml").mkdir()  # a directory is no stack file
    assert stack_file("b.c", tmp_path) == tmp_path / "Pulumi.b.c.yaml"
    for missing in ("e", "d"):
        with pytest.raises(ConfigError) as refused:
            stack_file(missing, tmp_path)
        assert refused.value.problems == [Problem("--stack", missing, "no such stack; valid: a, b.c, d")]
    for bad in ("../a", "a\n", "x" * 101, ""):
        with pytest.raises(ConfigError) as refused:
            stack_file(bad, tmp_path)
        (problem,) = refused.value.problems
        assert (refused.value.source, problem.value) == ("--stack", bad)
        assert problem.message.startswith("not a Pulumi stack name") and problem.message.endswith(
            "stacks here: a, b.c, d"
        )
