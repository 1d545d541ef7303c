"""No function over 80 lines in the program's own code (issue 36): a long function hides its steps, so it is
split into named ones. Measured with `ast` from the `def` line to the last line of the body, docstring included."""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
CHECKED = ("stacks", "trainstack", "components")


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every function in `tree`, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _long_functions(top: str) -> dict[str, str]:
    """`area:qualified name` -> `path:lines` of each function over LIMIT lines under `top`."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / top).rglob("*.py")):
        if ".venv" in path.parts:
            continue
        relative = path.relative_to(ROOT)
        for name, lines in _functions(ast.parse(path.read_text(), filename=str(relative))):
            if lines > LIMIT:
                found[f"{top}:{name}"] = f"{relative}: {lines} lines"
    return found


def test_the_measure_counts_from_def_to_last_line_and_names_methods_and_nested_functions() -> None:
    statements = "".join(f"        x{i} = {i}\n" for i in range(LIMIT - 1))
    source = f"class C:\n    def fits(self):\n{statements}\n    def over(self):\n{statements}        y = 0\n"
    source += "def outer():\n    def inner():\n        pass\n"
    measured = dict(_functions(ast.parse(source)))
    assert measured == {"C.fits": LIMIT, "C.over": LIMIT + 1, "outer": 3, "outer.inner": 2}


def test_no_function_is_over_the_limit_in_components_stacks_and_trainstack() -> None:
    found = {name: where for top in CHECKED for name, where in _long_functions(top).items()}
    assert not found, f"split into named steps (at most {LIMIT} lines each): {found}"
