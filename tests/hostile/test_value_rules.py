"""Values AWS or Kubernetes constrain are checked by the schema with the provider's rule and an example."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from components.naming import physical_name
from stacks.load import FULL_KEY, ConfigError
from stacks.schema.values import (
    NAME_RULE,
    PLATFORM_NAMESPACES,
    AvailabilityZone,
    Cidr,
    LabelKey,
    LabelValue,
    Limits,
    PinnedImage,
    PrivateCidr,
    Region,
    ResourceName,
    TagKey,
    TagValue,
    TeamNamespace,
)
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


def _accepts(kind: Any, value: str) -> str:
    return TypeAdapter(kind).validate_python(value)


def _refuses(kind: Any, value: str, says: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(says)):
        TypeAdapter(kind).validate_python(value)


def test_a_name_is_a_dns_label_and_its_refusal_says_the_rule_with_an_example() -> None:
    assert _accepts(ResourceName, "trainstack-prod") == "trainstack-prod"
    _refuses(ResourceName, "trainstack-", f"'trainstack-' is not valid: {NAME_RULE}; for example 'trainstack-prod'")


@pytest.mark.parametrize("key", ["k", "k" * 128, "LLM research", "équipe", "a_b.c:d/e=f+g-h@i", "no\u00a0break"])
def test_a_tag_key_of_1_to_128_letters_digits_spaces_and_the_listed_marks_is_taken(key: str) -> None:
    assert _accepts(TagKey, key) == key


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("", "a tag key has 1 to 128 characters, got 0"),
        ("k" * 129, "a tag key has 1 to 128 characters, got 129"),
        ("AWS:owner", "the aws: prefix is reserved"),
        ("team#1", "AWS allows letters"),
        ("team\tname", "AWS allows letters"),
        ("team\u2028name", "AWS allows letters"),  # a line separator: \p{Z} but not a space separator
    ],
)
def test_a_tag_key_outside_what_aws_takes_is_refused(key: str, says: str) -> None:
    _refuses(TagKey, key, says)


def test_a_tag_key_may_start_with_aws_without_the_colon() -> None:
    assert _accepts(TagKey, "aws-account") == "aws-account"


@pytest.mark.parametrize("value", ["", "v" * 256, "ml-platform@example.com", "LLM research"])
def test_a_tag_value_of_at_most_256_allowed_characters_is_taken(value: str) -> None:
    assert _accepts(TagValue, value) == value


@pytest.mark.parametrize(
    ("value", "says"),
    [("v" * 257, "a tag value has at most 256 characters, got 257"), ("a;b", "AWS allows letters")],
)
def test_a_tag_value_outside_what_aws_takes_is_refused(value: str, says: str) -> None:
    _refuses(TagValue, value, says)


@pytest.mark.parametrize("key", ["team", "example.com/team", "a" * 253 + "/team", "t" * 63, "a.b_c-d"])
def test_a_label_key_with_or_without_a_dns_prefix_of_at_most_253_is_taken(key: str) -> None:
    assert _accepts(LabelKey, key) == key


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("/team", "the prefix before '/' must be a DNS subdomain"),
        ("a" * 254 + "/team", "the prefix before '/' must be a DNS subdomain"),
        ("Example.com/team", "the prefix before '/' must be a DNS subdomain"),
        ("example.com/", "the name must be 1-63 characters"),
        ("t" * 64, "the name must be 1-63 characters"),
        ("-team", "the name must be 1-63 characters"),
    ],
)
def test_a_label_key_outside_kubernetes_syntax_is_refused(key: str, says: str) -> None:
    _refuses(LabelKey, key, says)


def test_a_label_value_is_empty_or_a_label_name() -> None:
    for value in ("", "research", "v" * 63):
        assert _accepts(LabelValue, value) == value
    for value in ("-bad-", "v" * 64, "a b"):
        _refuses(LabelValue, value, f"label value {value!r}: empty, or 1-63 characters")


def test_a_team_namespace_is_no_platform_namespace_and_not_kube_prefixed() -> None:
    for name in ("research", "team-kube", "kubeflow"):
        assert _accepts(TeamNamespace, name) == name
    for name in PLATFORM_NAMESPACES:
        _refuses(TeamNamespace, name, "is the platform's own")
    _refuses(TeamNamespace, "kube-team", "the kube- prefix is reserved")


def test_a_cidr_is_written_back_in_prefix_form() -> None:
    assert _accepts(Cidr, "203.0.113.0/255.255.255.0") == "203.0.113.0/24"
    _refuses(Cidr, "203.0.113.1/24", "has host bits set; write an IPv4 network in CIDR form")


@pytest.mark.parametrize("cidr", ["10.10.0.0/16", "172.16.0.0/12", "172.31.0.0/16", "192.168.0.0/24", "100.64.0.0/10"])
def test_a_vpc_range_inside_any_private_range_is_taken(cidr: str) -> None:
    assert _accepts(PrivateCidr, cidr) == cidr


@pytest.mark.parametrize("cidr", ["172.32.0.0/16", "8.0.0.0/7", "100.128.0.0/16", "192.169.0.0/16"])
def test_a_vpc_range_outside_the_private_ranges_is_refused(cidr: str) -> None:
    _refuses(PrivateCidr, cidr, f"{cidr} is not a private range")


def test_a_region_is_one_trainstack_knows() -> None:
    assert _accepts(Region, "us-east-1") == "us-east-1"
    _refuses(Region, "us-east-9", "'us-east-9' is not an AWS region trainstack knows")


def test_an_availability_zone_is_its_region_and_one_of_its_letters() -> None:
    assert _accepts(AvailabilityZone, "us-east-1f") == "us-east-1f"
    _refuses(AvailabilityZone, "us-west-2e", "valid here: us-west-2a, us-west-2b, us-west-2c, us-west-2d")
    _refuses(AvailabilityZone, "mars-north-1a", "valid here: a region's name and a letter")
    _refuses(AvailabilityZone, "us-east-1", "'us-east-1' is not an availability zone")


DIGEST = "@sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
        "public.ecr.aws/hpc-cloud/nccl-tests" + DIGEST,
        "nvcr.io/x/y:latest" + DIGEST,  # a digest pins whatever the tag says
        "registry:5000/a/latestish:latest2",
        "a" * 251 + ":1.0",  # 255 characters, the longest reference
    ],
)
def test_an_image_pinned_by_tag_or_digest_is_taken(image: str) -> None:
    assert _accepts(PinnedImage, image) == image


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ("a" * 252 + ":1.0", "is not a valid image reference"),  # 256 characters
        ("nvcr.io/x/y", "has no tag: pin it by tag or digest"),
        ("nvcr.io/x/y:latest", "uses a moving `latest` tag"),
        ("nvcr.io/x/y:latest-cuda12", "uses a moving `latest` tag"),
    ],
)
def test_an_image_that_is_unpinned_or_too_long_is_refused(image: str, says: str) -> None:
    _refuses(PinnedImage, image, says)
