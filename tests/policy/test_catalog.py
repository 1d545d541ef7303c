"""The rules as a catalogue: ids, descriptions, severities, schemas, levels per environment, docs/policies.md."""

from __future__ import annotations

import re

import jsonschema
from pulumi_policy import ResourceValidationPolicy, Severity, StackValidationPolicy

from policies.rules import DOMAINS, POLICIES
from policies.rules.base import RESOURCE_TYPES
from scripts.docs import block
from tests.conftest import ROOT
from trainstack.review import ENVIRONMENTS, load_config, policy_tables

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")


def test_at_least_thirty_rules_with_unique_ids() -> None:
    names = [p.name for p in POLICIES]
    assert len(names) >= 30
    assert len(set(names)) == len(names)


def test_every_rule_says_what_and_why() -> None:
    for policy in POLICIES:
        assert _KEBAB.match(policy.name), policy.name
        assert isinstance(policy.severity, Severity), policy.name
        assert len(policy.description) >= 80 and policy.description.endswith("."), policy.name  # what, and why
        assert DOMAINS[policy.name] in {
            "network",
            "eks",
            "gpu",
            "storage",
            "k8s",
            "health",
            "sagemaker",
            "security",
            "stack",
        }
        if isinstance(policy, ResourceValidationPolicy):
            assert RESOURCE_TYPES[policy.name], policy.name
        else:
            assert isinstance(policy, StackValidationPolicy)


def test_config_schemas_are_valid_json_schema_with_valid_defaults() -> None:
    for policy in POLICIES:
        if policy.config_schema is None:
            continue
        for key, schema in policy.config_schema.properties.items():
            jsonschema.Draft7Validator.check_schema(schema)
            if "default" in schema:
                jsonschema.validate(schema["default"], schema)
            assert schema.get("description"), f"{policy.name}.{key} has no description"


def test_critical_rules_block_prod() -> None:
    prod = load_config("prod")
    for policy in POLICIES:
        if policy.severity is Severity.CRITICAL:
            assert prod.levels[policy.name].value == "mandatory", policy.name


def test_prod_is_at_least_as_strict_as_dev() -> None:
    rank = {"disabled": 0, "advisory": 1, "remediate": 2, "mandatory": 2}
    dev, prod = load_config("dev"), load_config("prod")
    for policy in POLICIES:
        if policy.name == "dev-scale-to-zero":  # a dev-only cost rule
            continue
        assert rank[prod.levels[policy.name].value] >= rank[dev.levels[policy.name].value], policy.name


def test_docs_tables_match_the_code() -> None:
    page = (ROOT / "docs" / "policies.md").read_text()
    assert block(page, "policies") == policy_tables(), "regenerate: make docs"
    assert len(ENVIRONMENTS) == 3
