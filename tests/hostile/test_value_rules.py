"""Values AWS or Kubernetes constrain are checked by the schema with the provider's rule and an example."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.naming import physical_name
from stacks.load import FULL_KEY, ConfigError
from stacks.schema.values import PLATFORM_NAMESPACES, Limits
from tests.conftest import edited_config, recording

Edit = Callable[[dict[str, Any]], None]


def refused(edit: Edit, base: str = "prod") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        edited_config(base, edit)
    return [str(p) for p in caught.value.problems]


def setting(path: str, value: Any) -> Edit:
    def edit(cluster: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = cluster
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("tags.extra", {"aws:owner": "x"}, "aws: prefix is reserved"),
        ("tags.extra", {"k" * 129: "x"}, "1 to 128 characters"),
        ("tags.extra", {"team": "v" * 257}, "at most 256 characters"),
        ("tags.extra", {"team": "a;b"}, "AWS allows letters"),
        ("tags.extra", {f"k{i}": "v" for i in range(Limits.EXTRA_TAGS + 1)}, f"at most {Limits.EXTRA_TAGS}"),
        ("tags.owner", "ops#1", "AWS allows letters"),
        ("gpu_node_groups.0.labels", {"Team Name": "x"}, "label key 'Team Name'"),
        ("gpu_node_groups.0.labels", {"example.com/team": "-bad-"}, "label value '-bad-'"),
        ("gpu_node_groups.0.labels", {"Example.COM/team": "x"}, "DNS subdomain"),
        ("gpu_node_groups.0.labels", {"team": "x" * 64}, "1-63 characters"),
        ("kubernetes.teams.0.name", "kube-system", "the platform's own"),
        ("kubernetes.teams.0.name", "gpu-operator", "the platform's own"),
        ("kubernetes.teams.0.name", "kube-team", "kube- prefix is reserved"),
        ("network.vpc_cidr", "8.8.0.0/16", "not a private range"),
        ("network.vpc_cidr", "10.0.0.1/16", "has host bits set"),
        ("network.private_subnet_prefix_length", 24, "use a larger private subnet"),
        ("region", "us-east-9", "not an AWS region trainstack knows"),
        ("network.availability_zones", ["us-east-1a", "us-east-1z"], "'us-east-1z' is not an availability zone"),
        ("kubernetes.validation.nccl_tests_image", "NVCR.io/Bad Image:1", "not a valid image reference"),
        ("kubernetes.validation.nccl_tests_image", "nvcr.io/x/y@sha256:1234", "not a valid image reference"),
        ("kubernetes.validation.nccl_tests_image", "nvcr.io/x/y:latest", "moving `latest` tag"),
        ("gpu_node_groups.0.max_size", 10**30, f"less than or equal to {Limits.NODES_PER_GROUP}"),
        ("cost.max_gpus", 10**30, f"less than or equal to {Limits.ACCELERATORS}"),
        ("eks.public_access_cidrs", [f"198.51.100.{i}/32" for i in range(41)], "at most 40"),
        ("name", "Trainstack", "for example 'trainstack-prod'"),
    ],
)
def test_provider_rules_are_checked(path: str, value: Any, says: str) -> None:
    found = refused(setting(path, value))
    assert any(says in p for p in found), found
    assert all(p.startswith(FULL_KEY) for p in found)


def test_a_thousand_teams_are_refused_at_once() -> None:
    """main accepted them and spent a minute and 1.6 GB planning."""
    teams = [{"name": f"team-{i}", "gpu_quota": 1} for i in range(1000)]
    started = time.monotonic()
    found = refused(setting("kubernetes.teams", teams))
    assert any(f"at most {Limits.TEAMS} items" in p for p in found)
    assert time.monotonic() - started < 60  # refused before any model is built (main: a minute of planning)


def test_valid_values_pass() -> None:
    edited_config("prod", setting("tags.extra", {"team": "LLM research", "a:b/c": "x=y+z@w"}))
    edited_config("prod", setting("network.vpc_cidr", "100.64.0.0/16"))


def test_every_pattern_in_the_schema_has_an_example() -> None:
    """A pattern error shows an example, never a regex alone: the field's own example, or the rule in words
    with an example (stacks/load.py PATTERNS)."""
    from stacks.load import PATTERNS
    from stacks.schema import json_schema

    missing: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "pattern" in node and "examples" not in node:
                missing.append(where)
            for key, item in node.items():
                walk(item, f"{where}.{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}.{i}")

    schema = json_schema()
    for name, definition in schema.get("$defs", {}).items():
        for field, spec in definition.get("properties", {}).items():
            for holder in (spec, spec.get("items", {}), *spec.get("anyOf", [])):
                if (
                    isinstance(holder, dict)
                    and "pattern" in holder
                    and "examples" not in holder | spec
                    and holder["pattern"] not in PATTERNS
                ):
                    missing.append(f"{name}.{field}")
    assert missing == []


@given(
    base=st.from_regex(r"[a-z]([a-z0-9-]{0,30}[a-z0-9])?", fullmatch=True),
    groups=st.lists(
        st.from_regex(r"[a-z]([a-z0-9-]{0,30}[a-z0-9])?", fullmatch=True), min_size=2, max_size=6, unique=True
    ),
    suffix=st.sampled_from(["", "lt", "pg"]),
)
def test_physical_names_never_collide_after_prefixes_and_truncation(base: str, groups: list[str], suffix: str) -> None:
    """Node groups are named physical_name(cluster, group) and their launch templates and placement groups add
    -lt and -pg: cut to 63 characters (or with repeated dashes folded), two groups used to get one name."""
    names = [physical_name(physical_name(base, g), suffix) if suffix else physical_name(base, g) for g in groups]
    assert len(set(names)) == len(names)
    assert all(len(n) <= 63 and n == n.strip("-") for n in names)


def test_the_cut_that_collided_on_main_now_differs() -> None:
    base = "a" * 32
    one, two = physical_name(base, "x" * 30 + "aa"), physical_name(base, "x" * 30 + "ab")
    assert one != two and len(one) == len(two) == 63
    assert physical_name(base, "a--b") != physical_name(base, "a-b")
    assert physical_name("trainstack-prod", "p5-train", "lt") == "trainstack-prod-p5-train-lt"  # names that fit stay


@pytest.mark.slow
def test_platform_namespaces_cover_every_namespace_the_program_uses() -> None:
    """The schema's list of the platform's namespaces is the one source; the program may use no other (apart
    from the teams' own)."""
    for stack in ("dev", "staging", "prod"):
        teams = {t.name for t in edited_config(stack, lambda c: None).kubernetes.teams}
        used: set[str] = set()
        for resource in recording(stack).resources:
            inputs = resource.inputs
            metadata = inputs.get("metadata") or {}
            if resource.type == "kubernetes:core/v1:Namespace":
                used.add(metadata.get("name"))
            for namespace in (metadata.get("namespace"), inputs.get("namespace")):
                if isinstance(namespace, str):
                    used.add(namespace)
        assert used - teams <= set(PLATFORM_NAMESPACES), used - teams - set(PLATFORM_NAMESPACES)
