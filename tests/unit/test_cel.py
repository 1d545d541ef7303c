"""cel-python's parser as trainstack builds it (trainstack/cel.py): the options cel-python itself uses, Lark's
cache file in the user's cache directory, and a plan that never depends on that file (missing, corrupt or
unwritable)."""

from __future__ import annotations

import pwd
from collections.abc import Iterator
from pathlib import Path

import celpy
import pytest
from celpy.celparser import CELParser

from trainstack import cel


@pytest.fixture
def no_parser(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No parser built yet in this process, and a cache directory of the test's own (its path is returned)."""
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    yield tmp_path / "trainstack" / cel.CACHE_NAME


def _evaluates() -> bool:
    """The installed parser parses and the program holds, by the interpreted runner."""
    env = celpy.Environment()
    program = env.program(env.compile("self.x > 1 && size(self.y) == 2 && self.y.all(v, v in ['a', 'b'])"))
    return bool(program.evaluate({"self": celpy.json_to_cel({"x": 2, "y": ["a", "b"]})}))


def test_the_parser_is_built_with_cel_pythons_own_options(no_parser: Path) -> None:
    CELParser()  # cel-python's own build
    own = CELParser.CEL_PARSER
    assert own is not None
    CELParser.CEL_PARSER = None
    cel._install_parser()
    ours = CELParser.CEL_PARSER
    assert ours is not None and ours is not own
    for name in cel.parser_options():
        assert getattr(ours.options, name) == getattr(own.options, name), name
    assert own.options.cache is False and ours.options.cache == str(no_parser)


def test_the_first_build_writes_the_cache_and_the_next_loads_it(no_parser: Path) -> None:
    cel._install_parser()
    assert no_parser.read_bytes().split(b"\n", 1)[0].isalnum()  # Lark's digest line, then the parser
    assert no_parser.parent.stat().st_mode & 0o777 == 0o700  # only its user may plant what Lark unpickles
    written = no_parser.stat().st_mtime_ns
    assert _evaluates()
    CELParser.CEL_PARSER = None
    cel._install_parser()
    assert no_parser.stat().st_mtime_ns == written  # loaded, not rebuilt
    assert _evaluates()


def test_a_parser_cel_python_built_already_is_kept(no_parser: Path) -> None:
    CELParser()
    built = CELParser.CEL_PARSER
    cel._install_parser()
    assert CELParser.CEL_PARSER is built and not no_parser.exists()


def test_a_corrupt_cache_is_rebuilt(no_parser: Path) -> None:
    no_parser.parent.mkdir(parents=True)
    no_parser.write_bytes(b"not a digest\nnot a pickle")
    cel._install_parser()
    assert _evaluates()
    assert no_parser.read_bytes().split(b"\n", 1)[0].isalnum()  # Lark wrote a good one in its place


def test_an_unwritable_cache_directory_only_costs_the_build(no_parser: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = no_parser.parent.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its "trainstack" folder cannot be made
    cel._install_parser()
    assert CELParser.CEL_PARSER is not None and CELParser.CEL_PARSER.options.cache is False
    assert _evaluates()


def test_the_cache_directory_follows_xdg_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cel.cache_dir() == tmp_path / "xdg" / "trainstack"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for ignored in ("", "relative/cache"):  # empty, or relative: the spec's default instead
        monkeypatch.setenv("XDG_CACHE_HOME", ignored)
        assert cel.cache_dir() == tmp_path / "home" / ".cache" / "trainstack"


def test_without_a_home_there_is_no_cache_and_nothing_is_written_here(
    no_parser: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))  # an unnamed uid
    monkeypatch.chdir(tmp_path)
    assert cel.cache_dir() is None
    cel._install_parser()
    assert CELParser.CEL_PARSER is not None and CELParser.CEL_PARSER.options.cache is False
    assert _evaluates()
    assert list(tmp_path.iterdir()) == []  # no "~/.cache" made under the working directory


def test_a_program_is_compiled_once_and_a_bad_expression_raises() -> None:
    assert cel.program("self == 1") is cel.program("self == 1")
    assert bool(cel.program("self == 1").evaluate({"self": celpy.json_to_cel(1)}))
    with pytest.raises(celpy.CELParseError):
        cel.program("self >")


def test_missing_parent_directories_of_the_cache_are_made(no_parser: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nested = no_parser.parent.parent / "not" / "yet"
    monkeypatch.setenv("XDG_CACHE_HOME", str(nested))
    cel._install_parser()
    assert (nested / "trainstack" / cel.CACHE_NAME).is_file()


def test_compiling_a_program_installs_the_cached_parser(no_parser: Path) -> None:
    program = cel.program("self == 'compiled with the cached parser'")
    assert CELParser.CEL_PARSER is not None and CELParser.CEL_PARSER.options.cache == str(no_parser)
    assert no_parser.is_file()
    assert bool(program.evaluate({"self": celpy.json_to_cel("compiled with the cached parser")}))
