"""The facts recorders' shared command line (trainstack/contracts/recorder.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainstack.contracts import recorder

DOC = "Record the facts of a package.\n\nMore text."


def _run(argv: list[str], path: Path, text: str = "facts\n") -> int:
    return recorder.main(argv, DOC, path, lambda: text, "trainstack.contracts.record_x", "x 1.2.3")


def test_check_names_the_stale_file_and_the_command_that_rewrites_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "facts" / "x.json"
    assert _run(["--check"], path) == 1  # missing is stale
    assert capsys.readouterr().err == f"{path} is stale: run python -m trainstack.contracts.record_x\n"
    path.parent.mkdir()
    path.write_text("older facts\n", encoding="utf-8")
    assert _run(["--check"], path) == 1
    assert path.read_text(encoding="utf-8") == "older facts\n"  # a check never writes


def test_recording_writes_the_file_its_folders_included_and_says_from_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new" / "folder" / "x.json"
    assert _run([], path) == 0
    assert path.read_text(encoding="utf-8") == "facts\n"
    assert capsys.readouterr().out == f"wrote {path} (6 bytes, x 1.2.3)\n"
    assert _run(["--check"], path) == 0
    assert capsys.readouterr().err == ""


def test_the_help_is_the_docstrings_first_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        _run(["--help"], tmp_path / "x.json")
    assert "Record the facts of a package." in capsys.readouterr().out
