"""The type-token vocabulary (trainstack/tokens.py): every token is one the installed providers really register,
and no other module of trainstack/ spells a token out."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from functools import cache
from pathlib import Path

import pytest

from trainstack import tokens

ROOT = Path(__file__).resolve().parents[2]
TOKEN = re.compile(r"(?:aws|aws-native|kubernetes|pulumi):[A-Za-z0-9./_-]+:[A-Za-z0-9]+")
CRD_FACTS = ROOT / "trainstack" / "contracts" / "facts" / "crds"
SDKS = {"aws": "pulumi_aws", "aws-native": "pulumi_aws_native", "kubernetes": "pulumi_kubernetes"}
VOCABULARY = {name: value for name, value in vars(tokens).items() if name.isupper() and isinstance(value, str)}


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    return Path(spec.origin).parent if spec is not None and spec.origin is not None else None


@cache
def registered(package: str) -> frozenset[str]:
    """The resource and provider tokens a Pulumi provider SDK registers (its __init__.py's `_utilities.register`
    lists), read from the source so the test needs no import of the whole SDK."""
    directory = _package_dir(package)
    if directory is None:  # a package not installed registers nothing
        return frozenset()
    text = (directory / "__init__.py").read_text()
    found: set[str] = set()
    for block in re.findall(r'resource_modules="""(.*?)"""', text, re.S):
        for module in json.loads(block):
            found.update(module["classes"])
    for block in re.findall(r'resource_packages="""(.*?)"""', text, re.S):
        found.update(p["token"] for p in json.loads(block))
    return frozenset(found)


def _invoked(token: str) -> bool:
    """A function token is invoked, spelt exactly so, by its function's module in pulumi-aws."""
    _, module, function = token.split(":")
    directory = module.split("/")[0]
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", function).lower()
    package = _package_dir("pulumi_aws")
    assert package is not None, "pulumi-aws is not installed"
    path = package / ("" if directory == "index" else directory) / f"{snake}.py"
    return path.exists() and f"'{token}'" in path.read_text()


def _crd_recorded(token: str) -> bool:
    """A custom resource's token (`kubernetes:<group>/<version>:<Kind>`) names a CRD recorded from upstream."""
    group_version, kind = token.removeprefix("kubernetes:").split(":")
    group, version = group_version.rsplit("/", 1)
    return any(CRD_FACTS.glob(f"{group}_{kind}_{version}@*.json"))


def known(token: str) -> bool:
    provider, module, name = token.split(":")
    if token == "pulumi:pulumi:Stack":  # the engine's root stack, as the SDK's runtime names it
        sdk = _package_dir("pulumi")
        return sdk is not None and f'"{token}"' in (sdk / "runtime" / "resource.py").read_text()
    if provider == "pulumi":  # pulumi:providers:<package>, the provider resource of a package
        return module == "providers" and token in registered(f"pulumi_{name}".replace("-", "_"))
    if provider == "aws" and name.startswith("get"):
        return _invoked(token)
    if provider == "kubernetes" and token not in registered("pulumi_kubernetes"):
        return _crd_recorded(token)
    return token in registered(
        {"aws": "pulumi_aws", "aws-native": "pulumi_aws_native"}.get(provider, "pulumi_kubernetes")
    )


@pytest.mark.parametrize(("name", "token"), sorted(VOCABULARY.items()))
def test_every_token_is_one_its_provider_knows(name: str, token: str) -> None:
    assert TOKEN.fullmatch(token), f"{name} = {token!r} is not a type token"
    assert known(token), f"{name} = {token!r}: no installed provider registers this type (misspelt or renamed?)"


def test_a_misspelt_or_foreign_token_is_not_known() -> None:
    for token in (
        "aws:eks/nodegroup:NodeGroup",  # the module's case
        "aws:eks/getNodeGroupz:getNodeGroupz",  # no such function
        "kubernetes:trainer.kubeflow.org/v1:ClusterTrainingRuntime",  # a version never recorded
        "aws-native:sagemaker:HyperPod",
        "pulumi:providers:awsx",  # a package not installed
        "pulumi:pulumi:StackReferences",
    ):
        assert not known(token), token


def test_each_token_is_spelt_once() -> None:
    assert len(set(VOCABULARY.values())) == len(VOCABULARY)
    assert set(tokens.S3_BUCKETS) <= set(VOCABULARY.values())


def _literals(path: Path) -> list[tuple[int, str]]:
    """The type tokens a module spells as string literals, docstrings aside."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and TOKEN.fullmatch(node.value)
    ]


def test_no_other_module_of_trainstack_spells_a_token() -> None:
    modules = [p for p in sorted((ROOT / "trainstack").rglob("*.py")) if p != ROOT / "trainstack" / "tokens.py"]
    found = [f"{p.relative_to(ROOT)}:{line}: {value}" for p in modules for line, value in _literals(p)]
    assert found == [], "use the name from trainstack/tokens.py:\n" + "\n".join(found)


def test_the_literal_finder_sees_a_token_but_not_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""aws:eks/nodeGroup:NodeGroup"""\nX = "aws:eks/nodeGroup:NodeGroup"\nY = "aws:eks"\n')
    assert _literals(module) == [(2, "aws:eks/nodeGroup:NodeGroup")]
