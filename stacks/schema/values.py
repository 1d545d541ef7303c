"""Constrained value types: what AWS and Kubernetes accept, checked when the stack file is read.

Each type carries its provider's rule and says it plainly, with an example of a valid value, so a value that
would fail `pulumi up` (or be silently mangled) fails the plan instead, with its key path. The upper bounds
(`Limits`) are trainstack's own: far above any real cluster, they only keep an absurd value (a node group of
10^30, a thousand teams) from reaching the program; docs/cli.md lists them.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from typing import Annotated, Final

from pydantic import AfterValidator, Field

from stacks.regions import AVAILABILITY_ZONES

# ------------------------------------------------------------------------------------------------ limits


class Limits:
    """Upper bounds of sizes and lists. Where AWS has a fixed limit it is the bound (and cited); elsewhere a
    bound far above real use, so a typo or a generated file cannot ask the plan for hours and gigabytes."""

    GPU_NODE_GROUPS: Final = 100  # EKS quota: 30 managed node groups per cluster by default, adjustable
    NODES_PER_GROUP: Final = 5000  # EKS quota: 450 nodes per managed node group by default, adjustable
    HYPERPOD_GROUPS: Final = 100
    HYPERPOD_INSTANCES_PER_GROUP: Final = 5000
    TEAMS: Final = 200  # each team is a namespace, two queues and a quota (1,000 took a minute to plan)
    ACCELERATORS: Final = 1_000_000  # a GPU budget or quota in accelerators
    ADMIN_ROLES: Final = 100
    # EKS service quotas: "Public endpoint access CIDR ranges per cluster: 40", not adjustable.
    PUBLIC_ACCESS_CIDRS: Final = 40
    # AWS allows 50 user tags per resource (Tagging AWS resources, "Tag naming limits and requirements");
    # trainstack sets up to 6 itself (project, env, cost-center, owner, Name, trainstack.io/node-group) and EKS
    # adds its own to nodes, so 40 leaves room.
    EXTRA_TAGS: Final = 40
    NODE_LABELS: Final = 50
    DAYS: Final = 36_500  # any retention or expiry in days: a hundred years
    READ_MB_S_PER_GPU: Final = 100_000.0  # 100 GB/s per accelerator; today's fastest read a few GB/s
    TIMEOUT_S: Final = 86_400  # a day


# ------------------------------------------------------------------------------------------------ names


def _matches(pattern: str, example: str, rule: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not valid: {rule}; for example {example!r}")
        return value

    return AfterValidator(check)


# trainstack's base name: a DNS label of at most 32 characters, so every physical name built from it (EKS
# cluster, IAM roles, KMS aliases, node groups) stays within its AWS limit; components/naming.py keeps names
# distinct when a long group name must be cut.
NAME_RULE = "lower-case letters, digits and '-', starting with a letter, ending with a letter or digit, at most 32"
DNS_LABEL_32 = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
ResourceName = Annotated[
    str, _matches(DNS_LABEL_32, "trainstack-prod", NAME_RULE), Field(examples=["trainstack-prod"], max_length=32)
]
GroupName = Annotated[str, _matches(DNS_LABEL_32, "p5-train", NAME_RULE), Field(examples=["p5-train"], max_length=32)]

# ------------------------------------------------------------------------------------------------ AWS tags

# Tagging AWS resources (docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html), "Tag naming limits and
# requirements": keys 1-128 and values 0-256 Unicode characters of letters, digits, spaces and _ . : / = + - @;
# the `aws:` prefix is reserved for AWS. The services' own grammar (botocore, iam 2010-05-08 tagKeyType and
# tagValueType): `[\p{L}\p{Z}\p{N}_.:/=+\-@]`. `\s` is not that: it lets in tabs and line breaks, which no AWS
# tag takes. Of \p{Z} only the space separators (Zs) are kept: the line and paragraph separators (Zl, Zp) break a
# line wherever the tag is shown. (EC2 instance-metadata tags forbid more, but trainstack keeps them off:
# components/gpu/gpu_nodes.py sets instance_metadata_tags "disabled".)
_TAG_PUNCTUATION = frozenset("_.:/=+-@")


def _tag_text(value: str) -> bool:
    """Every character is a letter (\\p{L}), a number (\\p{N}), a space separator (Zs) or one of _ . : / = + - @."""
    return all(c.isalnum() or c in _TAG_PUNCTUATION or unicodedata.category(c) == "Zs" for c in value)


def _tag_key(value: str) -> str:
    if not 1 <= len(value) <= 128:
        raise ValueError(f"a tag key has 1 to 128 characters, got {len(value)}; for example 'team'")
    if value.lower().startswith("aws:"):
        raise ValueError(f"tag key {value!r}: the aws: prefix is reserved for AWS; for example 'team'")
    if not _tag_text(value):
        raise ValueError(
            f"tag key {value!r}: AWS allows letters, digits, spaces and _ . : / = + - @ (no tabs or line breaks); "
            "for example 'cost-center'"
        )
    return value


def _tag_value(value: str) -> str:
    if len(value) > 256:
        raise ValueError(f"a tag value has at most 256 characters, got {len(value)}")
    if not _tag_text(value):
        raise ValueError(
            f"tag value {value!r}: AWS allows letters, digits, spaces and _ . : / = + - @ (no tabs or line breaks); "
            "for example 'ml-platform@example.com'"
        )
    return value


TagKey = Annotated[str, AfterValidator(_tag_key)]
TagValue = Annotated[str, AfterValidator(_tag_value)]

# ------------------------------------------------------------------------------------------------ Kubernetes

# Kubernetes "Labels and Selectors", Syntax and character set (apimachinery IsQualifiedName / IsValidLabelValue):
# a key is an optional DNS-subdomain prefix (at most 253) and `/`, then a name of at most 63 characters,
# alphanumeric at both ends with - _ . inside; a value is empty or such a name.
# Matched whole (`fullmatch`): with `re.match`, `$` also matches before a final newline, and "team\n" passed.
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


def _label_key(value: str) -> str:
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(
            f"label key {value!r}: the prefix before '/' must be a DNS subdomain of at most 253 characters; "
            "for example 'example.com/team'"
        )
    if not _LABEL_NAME.fullmatch(name):
        raise ValueError(
            f"label key {value!r}: the name must be 1-63 characters, letters and digits at both ends and - _ . "
            "inside; for example 'example.com/team'"
        )
    return value


def _label_value(value: str) -> str:
    if value and not _LABEL_NAME.fullmatch(value):
        raise ValueError(
            f"label value {value!r}: empty, or 1-63 characters, letters and digits at both ends and - _ . "
            "inside; for example 'research'"
        )
    return value


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]

# Namespaces trainstack itself installs into or creates (components/: efa_device_plugin, neuron_device_plugin,
# lustre_volume and eks use kube-system; gpu_operator, scheduling, observability, validation_jobs their own),
# plus the ones Kubernetes creates. tests/hostile/test_value_rules.py proves this list matches what the program
# records.
PLATFORM_NAMESPACES: Final = (
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "gpu-operator",
    "kueue-system",
    "kubeflow-system",
    "mpi-operator",
    "trainstack-monitoring",
    "trainstack-validation",
)


def _team_namespace(value: str) -> str:
    if value in PLATFORM_NAMESPACES:
        raise ValueError(
            f"namespace {value!r} is the platform's own ({', '.join(PLATFORM_NAMESPACES)}): a team needs its own; "
            "for example 'research'"
        )
    if value.startswith("kube-"):
        raise ValueError(f"namespace {value!r}: the kube- prefix is reserved for Kubernetes; for example 'research'")
    return value


TeamNamespace = Annotated[
    str,
    _matches(DNS_LABEL_32, "research", NAME_RULE),
    AfterValidator(_team_namespace),
    Field(examples=["research"], max_length=32),
]

# ------------------------------------------------------------------------------------------------ network

# RFC 1918 and the shared address space AWS also accepts for VPCs (VPC User Guide, "VPC CIDR blocks").
PRIVATE_RANGES: Final = tuple(
    ipaddress.IPv4Network(net) for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)


def _ipv4_cidr(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as error:
        raise ValueError(f"{error}; write an IPv4 network in CIDR form, for example '10.10.0.0/16'") from None
    return str(network)


def _private_cidr(value: str) -> str:
    network = ipaddress.IPv4Network(value)
    if not any(network.subnet_of(private) for private in PRIVATE_RANGES):
        raise ValueError(
            f"{value} is not a private range: a VPC uses 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or "
            "100.64.0.0/10; for example '10.10.0.0/16'"
        )
    return value


Cidr = Annotated[str, AfterValidator(_ipv4_cidr), Field(examples=["203.0.113.0/24"])]
PrivateCidr = Annotated[
    str, AfterValidator(_ipv4_cidr), AfterValidator(_private_cidr), Field(examples=["10.10.0.0/16"])
]

# ------------------------------------------------------------------------------------------------ places


def _region(value: str) -> str:
    if value not in AVAILABILITY_ZONES:
        raise ValueError(
            f"{value!r} is not an AWS region trainstack knows (stacks/regions.py); for example 'us-east-1'; "
            f"known: {', '.join(sorted(AVAILABILITY_ZONES))}"
        )
    return value


def _availability_zone(value: str) -> str:
    region, letter = value[:-1], value[-1:]
    letters = AVAILABILITY_ZONES.get(region)
    if letters is None or letter not in letters or not letter.isalpha():
        valid = ", ".join(region + x for x in letters) if letters else "a region's name and a letter"
        raise ValueError(f"{value!r} is not an availability zone; for example 'us-east-1a'; valid here: {valid}")
    return value


Region = Annotated[str, AfterValidator(_region), Field(examples=["us-east-1"])]
AvailabilityZone = Annotated[str, AfterValidator(_availability_zone), Field(examples=["us-east-1a"])]

# ------------------------------------------------------------------------------------------------ images

# The distribution reference grammar (github.com/distribution/reference, reference.go): an optional registry
# host[:port], lower-case path components separated by '/', then a tag of at most 128 characters and/or a
# digest. trainstack also wants it pinned: by digest, or by a tag that is not `latest`.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)"
# Matched whole (`fullmatch`), and ASCII: Go's `\w` (the grammar's) is [0-9A-Za-z_], Python's takes any letter.
IMAGE_REFERENCE = re.compile(
    rf"(?:{_HOST}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::(?P<tag>[\w][\w.-]{{0,127}}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?",
    re.ASCII,
)
IMAGE_EXAMPLE = "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"


def _pinned_image(value: str) -> str:
    """A container image reference that parses and is pinned by digest or by a tag other than `latest`."""
    match = IMAGE_REFERENCE.fullmatch(value) if len(value) <= 255 else None
    if match is None:
        raise ValueError(
            f"image {value!r} is not a valid image reference (registry/path:tag or @sha256:<64 hex>); for "
            f"example {IMAGE_EXAMPLE!r}"
        )
    tag, digest = match.group("tag"), match.group("digest")
    if digest is None and tag is None:
        raise ValueError(f"image {value!r} has no tag: pin it by tag or digest; for example {IMAGE_EXAMPLE!r}")
    if digest is None and (tag == "latest" or tag.startswith("latest-")):
        raise ValueError(f"image {value!r} uses a moving `latest` tag: pin a versioned tag or a digest")
    return value


PinnedImage = Annotated[str, AfterValidator(_pinned_image), Field(examples=[IMAGE_EXAMPLE])]
