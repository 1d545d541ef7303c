"""An import-linter contract type: a package imports only itself, the standard library and named packages.

import-linter's own contracts forbid named modules; the policy pack needs the opposite, an allow-list: it runs
in its own virtualenv made from `policies/requirements.txt` (pulumi-policy and pulumi), so any other import,
of the program or of a package the program happens to install, works in the tests and fails under
`pulumi preview --policy-pack`. Registered in pyproject.toml (`[tool.importlinter] contract_types`) and run
by `lint-imports`; only the dev tooling imports this module.
"""

from __future__ import annotations

import sys

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AllowlistContract(Contract):
    """Every module under `source_package` imports only that package, the standard library, or `allowed`.

    Options: `source_package` (a root package), `allowed` (top-level external packages it may import).
    Needs `include_external_packages = true`, so that external imports are in the graph at all.
    """

    type_name = "allowlist"

    source_package = fields.StringField()
    # import-linter sets each field's parsed value on the instance, but types the attribute as the field itself
    # (a SetField, not a set of str): hence the two ignores where `self.allowed` is read.
    allowed = fields.SetField(subfield=fields.StringField(), required=False, default=set())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        package = str(self.source_package)
        allowed = {package, *sys.stdlib_module_names, *self.allowed}  # type: ignore[not-iterable]
        refused: list[str] = []
        for importer in sorted(graph.find_descendants(package) | {package}):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported.split(".")[0] in allowed:
                    continue
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                where = f" (l.{', '.join(map(str, lines))})" if lines else ""
                refused.append(f"{importer} -> {imported}{where}")
        return ContractCheck(kept=not refused, metadata={"refused": refused})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(
            f"{self.source_package} may import only itself, the standard library and: "
            f"{', '.join(sorted(self.allowed)) or 'nothing else'}",  # type: ignore[bad-argument-type]
            bold=True,
        )
        output.new_line()
        for line in check.metadata["refused"]:
            output.indent_cursor()
            output.print_error(f"- {line}")
        output.new_line()
