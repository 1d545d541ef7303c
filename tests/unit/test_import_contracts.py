"""The import contracts: the allow-list contract type refuses what the pack's own virtualenv lacks, and the
contracts in pyproject.toml hold for the code as it is (`lint-imports` also runs in `make test`)."""

from pathlib import Path

from grimp import ImportGraph

from scripts.import_allowlist import AllowlistContract

ROOT = Path(__file__).resolve().parents[2]


def _graph(*imports: tuple[str, str]) -> ImportGraph:
    graph = ImportGraph()
    graph.add_module("pack")
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=3, line_contents=f"import {imported}")
    return graph


def _contract(allowed: list[str]) -> AllowlistContract:
    return AllowlistContract("pack", {}, {"source_package": "pack", "allowed": allowed})


def test_itself_the_standard_library_and_allowed_packages_pass() -> None:
    graph = _graph(("pack.rules", "pack.base"), ("pack.rules", "json"), ("pack", "pulumi_policy"))
    assert _contract(["pulumi_policy"]).check(graph, verbose=False).kept


def test_any_other_package_is_refused_with_importer_and_line() -> None:
    graph = _graph(("pack.rules", "pulumi_policy"), ("pack.facts", "stacks"), ("pack.facts", "yaml"))
    check = _contract(["pulumi_policy"]).check(graph, verbose=False)
    assert not check.kept
    assert check.metadata["refused"] == ["pack.facts -> stacks (l.3)", "pack.facts -> yaml (l.3)"]
