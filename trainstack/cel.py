"""CEL programs for the tiers that evaluate Kubernetes' CEL offline: a CRD's validation rules (trainstack/contracts/
crds.py) and an admission policy's expressions (trainstack/journeys/team_job.py), both by cel-python.

cel-python builds one Lark LALR parser per process from its grammar (`celpy.celparser.CELParser`, a documented
singleton: `CEL_PARSER`), which takes about 0.09 CPU-s of every plan. Lark can keep that analysis in a cache file
that it checks against the grammar, the options, Lark's version and Python's (lark 1.3.1, `Lark.__init__`, the
`cache` option), so this module builds the same parser with that option, in the user's cache directory: the first
plan writes it, later ones load it (0.006 CPU-s). A cache that cannot be read or written is rebuilt or skipped by
Lark itself, so the plan never depends on it.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

CACHE_NAME = "cel-parser.lark"


def cache_dir() -> Path | None:
    """Where trainstack keeps what it can rebuild: $XDG_CACHE_HOME/trainstack, else ~/.cache/trainstack. By the XDG
    Base Directory Specification a relative $XDG_CACHE_HOME is ignored; None when no home can be found either."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".cache"
    return base / "trainstack" if base.is_absolute() else None  # expanduser leaves "~" when it finds no home


def parser_options() -> dict[str, Any]:
    """The options cel-python 0.5.0 builds its parser with (`CELParser.__init__`), for an interpreted runner."""
    import lark
    from celpy.celparser import CELParser

    return {
        "parser": "lalr",
        "start": "expr",
        "debug": True,
        "g_regex_flags": re.M,
        "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
        "propagate_positions": True,
        "maybe_placeholders": False,
        "priority": "invert",
        "tree_class": lark.Tree,
    }


def _install_parser() -> None:
    """cel-python's parser, built with a Lark cache file, unless cel-python has built one already."""
    import celpy
    import lark
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:
        return
    folder = cache_dir()
    cache: str | bool = False  # no home, or a read-only one: build the parser each time, as cel-python does
    if folder is not None:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the XDG spec's mode: it holds a pickle
            cache = str(folder / CACHE_NAME)
        except OSError:
            pass
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    # cel-python's singleton is a class attribute by its docs (CELParser), though typed as an instance's.
    CELParser.CEL_PARSER = lark.Lark(grammar, cache=cache, **parser_options())  # pyrefly: ignore[instance-var-assign]


@functools.cache
def program(expression: str) -> Any:
    """The compiled program of a CEL expression (compiled once per process); raises cel-python's error when it
    cannot compile it."""
    import celpy

    _install_parser()
    env = celpy.Environment()
    return env.program(env.compile(expression))
