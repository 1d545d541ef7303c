"""No function over 80 lines in the program's own code (issue 36): a long function hides its steps, so it is
split into named ones. Measured with `ast` from the `def` line to the last line of the body, docstring included.

components/ is being regrouped by area; its known offenders are listed by qualified name (which survives a
move between files) and the list only shrinks: a listed function that is now short, or gone, fails until it is
taken off the list."""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
CHECKED = ("stacks", "trainstack", "components")
# components/: the known long functions, each to be split into named steps, then taken off this list.
KNOWN_LONG = frozenset(
    {
        "components:gpu_dashboard",
        "components:hyperpod_execution_policy",
    }
)


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


def test_no_function_is_over_the_limit_in_stacks_and_trainstack() -> None:
    found = {**_long_functions("stacks"), **_long_functions("trainstack")}
    assert not found, f"split into named steps (at most {LIMIT} lines each): {found}"


def test_components_long_functions_are_only_the_known_ones_and_the_list_only_shrinks() -> None:
    found = _long_functions("components")
    new = {name: where for name, where in found.items() if name not in KNOWN_LONG}
    assert not new, f"a new function over {LIMIT} lines; split it into named steps: {new}"
    shrunk = sorted(KNOWN_LONG - found.keys())
    assert not shrunk, f"now at most {LIMIT} lines (or gone): take these off KNOWN_LONG: {shrunk}"
