"""The policy pack's type tokens are the project's vocabulary (trainstack/tokens.py), generated into
policies/facts_generated.py under the same names: the pack cannot import trainstack/, so it reads a copy, and the
copy agrees with its home and is the only place in the pack a vocabulary token is spelt out."""

from __future__ import annotations

import ast
from pathlib import Path

from policies import facts_generated
from scripts import pack_facts
from trainstack import tokens

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY = {value: name for name, value in vars(tokens).items() if name.isupper() and isinstance(value, str)}


def test_the_generated_tokens_are_the_vocabularys_resource_tokens_by_the_same_names() -> None:
    generated = pack_facts.resource_tokens()
    assert generated and all(getattr(facts_generated, name) == value for name, value in generated.items())
    assert facts_generated.NODE_GROUP == tokens.NODE_GROUP == "aws:eks/nodeGroup:NodeGroup"
    assert facts_generated.S3_BUCKETS == tokens.S3_BUCKETS  # a group of tokens too
    # A policy sees resources only: the functions (invokes) and the engine's provider tokens stay out.
    assert "EC2_GET_SUBNET" not in generated and "AWS_PROVIDER" not in generated
    assert not hasattr(facts_generated, "EC2_GET_SUBNET")


def test_no_module_of_the_pack_spells_out_a_vocabulary_token() -> None:
    """A rule names `NODE_GROUP`, never the string: a token renamed at home reaches every rule by `make pack-facts`."""
    spelt = []
    for path in sorted((ROOT / "policies").rglob("*.py")):
        if ".venv" in path.parts or path.name == "facts_generated.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VOCABULARY:
                spelt.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value} (use {VOCABULARY[node.value]})")
    assert not spelt, spelt
