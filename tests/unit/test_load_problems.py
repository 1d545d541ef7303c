"""Problems of a stack config said once each: an encrypted Pulumi secret (`secure:`) in the config the Pulumi CLI
hands the program (a JSON string) named by its key, inside lists too, without the schema's complaints about the same
values; a missing key; a null where text belongs, without a quoting hint."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from stacks.load import (
    _MISSING,
    FULL_KEY,
    ConfigError,
    Problem,
    _pattern_message,
    load_file,
    secret_refusal,
    validate_document,
    validate_object,
)
from stacks.reader import Origin, Parsed, Refusal, parse
from stacks.schema import StackConfig
from tests.conftest import ROOT, stack_document

SECRET = "an encrypted Pulumi secret (`secure:`)"


def test_each_secret_is_named_once_and_nothing_else_is_said_of_it() -> None:
    raw = stack_document("dev")["config"][FULL_KEY]
    raw["eks"]["version"] = {"secure": "AAAB"}  # a literal the schema would refuse, were it read
    raw["kubernetes"]["teams"][0]["name"] = {"secure": "AAAC"}  # inside a list
    with pytest.raises(ConfigError) as refused:
        validate_object(json.dumps(raw), "Pulumi config")
    assert [(p.key, p.message.startswith(SECRET)) for p in refused.value.problems] == [
        (f"{FULL_KEY}.eks.version", True),
        (f"{FULL_KEY}.kubernetes.teams.0.name", True),
    ]


def _problems_of(tmp_path: Path, old: str, new: str) -> list[tuple[str, str]]:
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert old in text
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as refused:
        load_file(path, "--config")
    return [(p.key, p.message) for p in refused.value.problems]


def test_a_missing_key_is_one_problem(tmp_path: Path) -> None:
    assert _problems_of(tmp_path, "    region: us-east-1\n", "") == [(f"{FULL_KEY}.region", "required key is missing")]


def test_a_null_where_text_belongs_gets_no_quoting_hint(tmp_path: Path) -> None:
    """Quoting `~` would make it the text "~", not what was meant: only a number, a boolean or a date read where
    text belongs is told to quote it."""
    assert _problems_of(tmp_path, "    region: us-east-1\n", "    region: ~\n") == [
        (f"{FULL_KEY}.region", "Input should be a valid string")
    ]


# ------------------------------------------------------------------ one problem, and the error that lists them


def test_a_problem_reads_as_key_value_message_and_place() -> None:
    assert str(Problem("a.b", 5, "too big", Origin(3, 7))) == "a.b (got 5): too big [line 3, column 7]"
    assert str(Problem("a.b", _MISSING, "required key is missing")) == "a.b: required key is missing"
    assert "value=<missing>" in repr(Problem("a.b", _MISSING, "m"))


@pytest.mark.parametrize(
    ("baseline", "first"),
    [
        (False, "invalid stack config f.yaml: 1 problem(s)"),
        (
            True,
            "invalid baseline (--against) stack config f.yaml: 1 problem(s); they are in the baseline you compare "
            "against, not in the config being planned",
        ),
    ],
)
def test_the_error_says_whether_the_problems_are_in_the_baseline(baseline: bool, first: str) -> None:
    error = ConfigError("f.yaml", [Problem("k", 1, "bad")], baseline=baseline)
    assert str(error) == error.render() == f"{first}\n  - k (got 1): bad"


# ------------------------------------------------------------------------------------------ load_file


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(text)
    return path


def _refusal(path: Path, option: str = "--config") -> ConfigError:
    with pytest.raises(ConfigError) as refused:
        load_file(path, option)
    return refused.value


def test_a_committed_stack_file_loads() -> None:
    assert load_file(ROOT / "stacks" / "Pulumi.dev.yaml").environment.value == "dev"


@pytest.mark.parametrize("option", ["--config", "--against"])
def test_an_unreadable_file_is_named_by_its_option_and_only_against_marks_the_baseline(
    tmp_path: Path, option: str
) -> None:
    error = _refusal(tmp_path / "absent.yaml", option)
    assert [(p.key, p.value, p.message) for p in error.problems] == [
        (option, str(tmp_path / "absent.yaml"), "file not found")
    ]
    assert error.baseline is (option == "--against")


def test_yaml_the_reader_stops_at_is_one_problem_with_its_place(tmp_path: Path) -> None:
    error = _refusal(_write(tmp_path, "config:\n  a: b\x00\n"), "--against")
    (problem,) = error.problems
    assert (problem.key, problem.origin) == ("<yaml>", Origin(2, 7))
    assert problem.message.startswith("control character") and "(got" not in str(problem)
    assert error.baseline


def test_a_schema_problem_in_the_baseline_keeps_its_problems_and_marks_the_baseline(tmp_path: Path) -> None:
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text().replace("region: us-east-1", "region: moon-1", 1)
    error = _refusal(_write(tmp_path, text), "--against")
    assert [p.key for p in error.problems] == [f"{FULL_KEY}.region"] and error.baseline


REPORT = "this is a trainstack plan report, not a stack file"


@pytest.mark.parametrize(
    "text",
    [
        '{"steps": [], "changeSummary": {}}',
        '{"steps": [], "trainstack": {"formatVersion": 1}}',
        "## trainstack plan: prod\n\nEverything is fine.\n",  # Markdown: a comment, then text
        "\n  trainstack plan: prod\n  - steps: [\n",  # the text report: not even YAML
    ],
    ids=["json-change-summary", "json-trainstack", "markdown", "text"],
)
def test_a_plan_report_given_as_a_stack_file_is_named_as_one(tmp_path: Path, text: str) -> None:
    (problem,) = _refusal(_write(tmp_path, text), "--against").problems
    assert problem.key == "--against" and problem.message.startswith(REPORT)


@pytest.mark.parametrize(
    "text", ['{"steps": [1]}', '{"trainstack": {}, "changeSummary": {}}', "# trainstack plan notes\nsteps: 1\n"]
)
def test_a_document_that_is_only_partly_like_a_report_is_judged_as_a_stack_file(tmp_path: Path, text: str) -> None:
    (problem,) = _refusal(_write(tmp_path, text)).problems
    assert problem.key == "config" and problem.message == "a stack file is a mapping with a `config:` mapping"


def test_a_stack_file_with_report_like_keys_beside_config_is_still_a_stack_file(tmp_path: Path) -> None:
    text = "steps: []\ntrainstack: {}\n" + (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert load_file(_write(tmp_path, text)).name == "trainstack-dev"


# --------------------------------------------------------------------------------- validate_document


def _document_problems(text: str) -> list[tuple[str, str]]:
    parsed = parse(text)
    with pytest.raises(ConfigError) as refused:
        validate_document(parsed.document, "test", parsed)
    return [(p.key, p.message) for p in refused.value.problems]


CONFIG_SHAPE = ("config", "a stack file is a mapping with a `config:` mapping")
MISSING = (FULL_KEY, "missing: the stack's settings live under this one key")


@pytest.mark.parametrize("text", ["- config\n", "config: 3\n", "config: [a]\n", "other: {}\n"])
def test_a_document_without_a_config_mapping_is_one_problem(text: str) -> None:
    assert _document_problems(text) == [CONFIG_SHAPE]


def test_refusals_outside_the_cluster_are_named_by_their_key_before_the_shape_problem() -> None:
    duplicate = "duplicate key 'salt' on lines 1 and 2: YAML would silently keep the last; keep one"
    assert _document_problems("salt: 1\nsalt: 2\nconfig: 3\n") == [("salt", duplicate), CONFIG_SHAPE]


def test_an_unknown_config_key_is_named_with_its_line_and_the_missing_cluster_too() -> None:
    parsed = parse("config:\n  aws:region: us-east-1\n  trainstak:cluster: {}\n")
    with pytest.raises(ConfigError) as refused:
        validate_document(parsed.document, "test", parsed)
    unknown, missing = refused.value.problems
    assert (unknown.key, unknown.origin) == ("trainstak:cluster", Origin(3, 22))
    assert unknown.message.startswith("unknown config key; trainstack reads `trainstack:cluster`")
    assert (missing.key, missing.message) == MISSING


def _dev_with(before: str, after: str) -> str:
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert before in text
    return text.replace(before, after, 1)


CLUSTER = "  trainstack:cluster:\n"


def test_provider_and_pulumi_settings_beside_the_cluster_are_accepted() -> None:
    settings = "  aws:region: us-east-1\n  aws-native:region: us-east-1\n  kubernetes:context: x\n"
    parsed = parse(_dev_with(CLUSTER, settings + CLUSTER))
    assert validate_document(parsed.document, "test", parsed).name == "trainstack-dev"


def test_an_unknown_config_key_beside_a_valid_cluster_is_still_refused() -> None:
    assert [key for key, _ in _document_problems(_dev_with(CLUSTER, "  colour: red\n" + CLUSTER))] == ["colour"]


def test_an_unknown_config_key_comes_first_then_the_clusters_problems() -> None:
    text = _dev_with(CLUSTER, "  colour: red\n" + CLUSTER).replace("region: us-east-1", "region: moon-1", 1)
    assert [key for key, _ in _document_problems(text)] == ["colour", f"{FULL_KEY}.region"]


def test_each_refusal_is_named_by_its_path_from_the_config() -> None:
    document = stack_document("dev")
    paths: list[tuple[str | int, ...]] = [(), ("config",), ("config", "aws:region"), ("salt", 0)]
    parsed = Parsed(document=document, refusals=[Refusal(path, None, "refused") for path in paths])
    with pytest.raises(ConfigError) as refused:
        validate_document(document, "test", parsed)
    assert [p.key for p in refused.value.problems] == ["<document>", "config", "aws:region", "salt.0"]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("    region: .inf\n", ".inf is not a finite number"),
        ("    region: us-east-1\n    region: us-east-1\n", "duplicate key 'region' on lines 8 and 9"),
    ],
    ids=["refused-value", "duplicate-of-a-valid-value"],
)
def test_a_refused_value_in_the_cluster_is_one_problem_even_when_what_is_kept_is_valid(line: str, says: str) -> None:
    [(key, message)] = _document_problems(_dev_with("    region: us-east-1\n", line))
    assert key == f"{FULL_KEY}.region" and message.startswith(says)


# ----------------------------------------------------------------------------------------- secrets


def test_a_secret_in_the_file_is_named_at_its_line_once_even_where_the_schema_would_take_it() -> None:
    """`tags.extra` takes any string mapping, so `{secure: ...}` would pass as a tag named `secure`."""
    parsed = parse(
        _dev_with(
            "      cost_center: ml-research\n", "      cost_center: ml-research\n      extra:\n        secure: AAAB\n"
        )
    )
    with pytest.raises(ConfigError) as refused:
        validate_document(parsed.document, "test", parsed)
    (problem,) = refused.value.problems
    assert (problem.key, problem.origin) == (f"{FULL_KEY}.tags.extra", Origin(13, 9))
    assert problem.message.startswith(SECRET)


def test_a_secret_in_the_file_where_the_schema_wants_text_is_one_problem() -> None:
    parsed = parse(_dev_with("    region: us-east-1\n", "    region: {secure: AAAB}\n"))
    with pytest.raises(ConfigError) as refused:
        validate_document(parsed.document, "test", parsed)
    assert [(p.key, p.message.startswith(SECRET)) for p in refused.value.problems] == [(f"{FULL_KEY}.region", True)]


def test_a_cluster_that_is_one_secret_is_one_problem_in_the_file_and_in_pulumis_json() -> None:
    parsed = parse(f"config:\n  {FULL_KEY}:\n    secure: AAAB\n")
    with pytest.raises(ConfigError) as from_file:
        validate_document(parsed.document, "test", parsed)
    with pytest.raises(ConfigError) as from_json:
        validate_object('{"secure": "AAAB"}', "test")
    for refused in (from_file, from_json):
        assert [(p.key, p.message.startswith(SECRET)) for p in refused.value.problems] == [(FULL_KEY, True)]


def test_a_secret_is_one_problem_whatever_it_holds_and_is_refused_where_the_schema_would_take_it() -> None:
    raw = stack_document("dev")["config"][FULL_KEY]
    raw["tags"]["extra"] = {"secure": {"secure": "AAAB"}}
    with pytest.raises(ConfigError) as refused:
        validate_object(json.dumps(raw), "Pulumi config")
    assert [p.key for p in refused.value.problems] == [f"{FULL_KEY}.tags.extra"]


def test_the_programs_refusal_of_a_secret_names_the_source_and_the_key() -> None:
    lines = secret_refusal("Pulumi config").splitlines()
    assert lines[0] == "invalid stack config Pulumi config: 1 problem(s)"
    assert lines[1].startswith(f"  - {FULL_KEY}: holds an encrypted Pulumi secret (`secure:`)")


# ------------------------------------------------------------------------------ the config Pulumi hands over


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "not a JSON object: Expecting property name"),
        ('{"region": NaN}', "not a JSON object: NaN is not a finite number"),
        ('{"region": "a", "region": "b"}', "not a JSON object: duplicate key 'region'"),
        ("[" * 100_000 + "]" * 100_000, "not a JSON object: maximum recursion depth"),
    ],
    ids=["syntax", "nan", "duplicate", "deep"],
)
def test_config_json_that_cannot_be_read_is_one_problem(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        validate_object(text, "Pulumi config")
    (problem,) = refused.value.problems
    assert problem.key == FULL_KEY and problem.message.startswith(says)


def test_config_json_that_is_valid_loads() -> None:
    raw = stack_document("dev")["config"][FULL_KEY]
    assert validate_object(json.dumps(raw), "Pulumi config").name == "trainstack-dev"


# ------------------------------------------------------------------------------ how each schema problem reads


def _object_problems(edit: Any, stack: str = "dev") -> list[Problem]:
    raw = stack_document(stack)["config"][FULL_KEY]
    edit(raw)
    with pytest.raises(ConfigError) as refused:
        validate_object(raw, "test")
    return refused.value.problems


@pytest.mark.parametrize("given", ["inf", "abc"])
def test_text_where_a_number_belongs_is_told_to_be_a_plain_number(given: str) -> None:
    (problem,) = _object_problems(lambda raw: raw["cost"].update(hours_per_month=given))
    assert (problem.value, problem.message) == (given, "not a finite number: give a plain number")


def test_a_non_finite_number_given_as_a_number_keeps_the_schemas_words() -> None:
    (problem,) = _object_problems(lambda raw: raw["cost"].update(hours_per_month=math.inf))
    assert problem.message == "Input should be a finite number"


def test_an_unknown_key_at_the_top_lists_every_setting() -> None:
    (problem,) = _object_problems(lambda raw: raw.update(colour="red"))
    assert problem.message == "unknown key; valid keys here: " + ", ".join(sorted(StackConfig.model_fields))


def test_an_unknown_key_in_an_optional_setting_lists_that_settings_keys() -> None:
    subnets = {"us-east-1a": "subnet-0a1b2c3d4e5f67890", "us-east-1b": "subnet-0b1c2d3e4f5a67890"}
    vpc = {"vpc_id": "vpc-0a1b2c3d4e5f67890", "colour": 1, "private_subnet_ids": subnets}
    (problem,) = _object_problems(lambda raw: raw["network"].update(existing_vpc=vpc))
    assert (problem.key, problem.message) == (
        f"{FULL_KEY}.network.existing_vpc.colour",
        "unknown key; valid keys here: private_subnet_ids, s3_endpoint_id, vpc_id",
    )


def test_an_unknown_key_in_a_list_entry_lists_that_entrys_keys() -> None:
    (problem,) = _object_problems(lambda raw: raw["gpu_node_groups"][0]["capacity"].update(colour="red"))
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.capacity.colour"
    assert problem.message.startswith("unknown key; valid keys here: reservation_availability_zone, reservation_id")


@pytest.mark.parametrize(
    ("edit", "key", "message"),
    [
        (
            lambda raw: raw.setdefault("health", {}).update(grafana_chart="latest"),
            "health.grafana_chart",
            "expected an exact chart version such as v25.3.4 or 0.14.3 (no ranges, no `latest`)",
        ),
        (
            lambda raw: raw["eks"].update(admin_role_arns=["arn:aws:iam::1111:role/x"]),
            "eks.admin_role_arns.0",
            "expected an IAM role ARN such as arn:aws:iam::123456789012:role/NAME (an optional /path/, then a name of "
            "1-64 letters, digits and _+=,.@-); for example ['arn:aws:iam::111122223333:role/ml-platform-admin']",
        ),
        (
            lambda raw: raw["network"].update(
                existing_vpc={
                    "vpc_id": "vpc-0a1b2c3d4e5f67890",
                    "private_subnet_ids": {"us-east-1a": "subnet-x", "us-east-1b": "subnet-0b1c2d3e4f5a67890"},
                }
            ),
            "network.existing_vpc.private_subnet_ids.us-east-1a",
            "expected a subnet id such as subnet-0a1b2c3d4e5f67890; for example {'us-east-1a': "
            "'subnet-0a1b2c3d4e5f67890', 'us-east-1b': 'subnet-0b1c2d3e4f5a67890'}",
        ),
        (
            lambda raw: raw["gpu_node_groups"][0]["capacity"].update(reservation_id="cr-XYZ"),
            "gpu_node_groups.0.capacity.reservation_id",
            "expected a capacity reservation id such as cr-0a1b2c3d4e5f67890; for example 'cr-0123456789abcdef0'",
        ),
    ],
    ids=["no-example", "in-a-list", "in-a-mapping", "in-a-list-entry"],
)
def test_a_pattern_mismatch_says_the_rule_in_words_with_the_fields_example(edit: Any, key: str, message: str) -> None:
    (problem,) = _object_problems(edit, "prod")
    assert (problem.key, problem.message) == (f"{FULL_KEY}.{key}", message)


def test_a_pattern_without_words_is_shown_with_an_example_or_where_to_look() -> None:
    item = {"ctx": {"pattern": "^zz$"}}
    assert (
        _pattern_message(("health", "grafana_chart"), item)
        == "does not match the expected pattern: see docs/config.md (the pattern: ^zz$)"
    )
    assert _pattern_message(("eks", "admin_role_arns", 0), item).startswith(
        "does not match the expected pattern: for example ['arn:aws:iam::111122223333:role/ml-platform-admin']"
    )


def test_a_rule_over_a_whole_entry_is_one_problem_per_line_without_echoing_the_entry() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["efa_enabled"] = True  # no EFA on g5.2xlarge, spot, hugepages over the cap

    problems = _object_problems(edit)
    assert [p.key for p in problems] == [f"{FULL_KEY}.gpu_node_groups.0"] * 3
    assert all(p.value is _MISSING and "(got" not in str(p) for p in problems)
    assert [p.message.split(" ")[0] for p in problems] == ["efa_enabled", "spot", "hugepages_2mi"]


def _parsed_problems(text: str) -> tuple[Parsed, list[Problem]]:
    parsed = parse(text)
    with pytest.raises(ConfigError) as refused:
        validate_document(parsed.document, "test", parsed)
    return parsed, refused.value.problems


@pytest.mark.parametrize(
    ("line", "mapping"), [("    region: us-east-1\n", ()), ('      version: "1.36"\n', ("eks",))], ids=["top", "nested"]
)
def test_a_missing_key_is_placed_at_the_mapping_that_lacks_it(line: str, mapping: tuple[str, ...]) -> None:
    parsed, (problem,) = _parsed_problems(_dev_with(line, ""))
    assert problem.message == "required key is missing"
    assert problem.origin == parsed.origins[("config", FULL_KEY, *mapping)]


@pytest.mark.parametrize(
    ("before", "after", "hint"),
    [
        ('version: "1.36"', "version: 1.30", 'YAML reads the unquoted 1.30 as the number 1.3: quote it, "1.30"'),
        ("name: trainstack-dev", "name: 123", 'YAML reads the unquoted 123 as the number 123: quote it, "123"'),
        ("region: us-east-1", "region: true", 'YAML reads the unquoted true as the boolean true: quote it, "true"'),
        (
            "region: us-east-1",
            "region: 2024-01-02",
            'YAML reads the unquoted 2024-01-02 as the date 2024-01-02: quote it, "2024-01-02"',
        ),
        ("environment: dev", "environment: 1", 'YAML reads the unquoted 1 as the number 1: quote it, "1"'),
        ("vpc_cni: v1.22.4-eksbuild.3", "vpc_cni: 1.22", "YAML reads the unquoted 1.22 as the number 1.22: quote it"),
    ],
    ids=["float", "int", "bool", "date", "enum", "pattern"],
)
def test_a_plain_scalar_read_as_another_type_where_text_belongs_is_told_to_quote(
    before: str, after: str, hint: str
) -> None:
    _, (problem,) = _parsed_problems(_dev_with(before, after))
    assert hint in problem.message
    assert problem.message.count("YAML reads") == 1


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("        max_size: 3\n", "        max_size: 1.5\n"),  # a number where a number belongs: no quoting helps
        ("    environment: dev\n", "    environment: [dev]\n"),  # a list: quoting it is not the fix
        ('      version: "1.36"\n', '      version: "1.30"\n'),  # already text
    ],
    ids=["number-field", "list", "quoted"],
)
def test_no_quoting_hint_where_quoting_is_not_the_fix(before: str, after: str) -> None:
    _, (problem,) = _parsed_problems(_dev_with(before, after))
    assert "YAML reads" not in problem.message and problem.message


def test_no_quoting_hint_for_a_value_that_came_from_json() -> None:
    (problem,) = _object_problems(lambda raw: raw.update(name=123))
    assert problem.message == "Input should be a valid string"


def test_a_secret_does_not_hide_the_other_problems_of_the_config() -> None:
    raw = stack_document("dev")["config"][FULL_KEY]
    raw["eks"]["version"] = {"secure": "AAAB"}
    raw["region"] = "moon-1"
    with pytest.raises(ConfigError) as refused:
        validate_object(json.dumps(raw), "Pulumi config")
    assert [p.key for p in refused.value.problems] == [f"{FULL_KEY}.eks.version", f"{FULL_KEY}.region"]
