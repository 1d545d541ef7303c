"""The diagrams render with the real Mermaid library in a real headless browser: Debian's chromium, driven by
playwright-core, with mermaid from package-lock.json (`npm ci`). `.ci/run` installs both; locally the test skips,
saying why, only when chromium is not installed (CI sets TRAINSTACK_REQUIRE_BROWSER=1, so there it fails)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT
from tests.report.helpers import added_group_diff, report
from trainstack.report.mermaid import flowchart, node_count

SCRIPT = ROOT / "tests" / "report" / "render_mermaid.mjs"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def _render(sources: list[str]) -> list[dict]:
    missing = [
        what
        for what, ok in (
            ("chromium", os.path.exists(CHROMIUM)),
            ("node_modules (npm ci)", (ROOT / "node_modules" / "mermaid").is_dir()),
            ("node", shutil.which("node") is not None),
        )
        if not ok
    ]
    if missing:
        reason = f"needs {', '.join(missing)}: `bash .ci/run` installs them (apt-get install chromium; npm ci)"
        if os.environ.get("TRAINSTACK_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    result = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
        env={**os.environ, "CHROMIUM": CHROMIUM},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.e2e
def test_prod_and_diff_diagrams_render_in_chromium_without_error() -> None:
    after, diff, before = added_group_diff()
    sources = [
        flowchart(report("prod").recording),
        flowchart(after.recording, diff, before.recording),
        flowchart(before.recording, *_backwards(after, before)),
        'flowchart TB\n  a["x"] -->',  # a broken source must fail, or the check proves nothing
    ]
    results = _render(sources)
    for source, result in zip(sources[:3], results[:3], strict=True):
        assert result["ok"], f"{result['error']}\n{source}"
        assert result["nodes"] == node_count(source)  # every node we wrote was drawn
        assert 0 < result["width"] <= 880  # GitHub's comment column
    assert not results[3]["ok"] and results[3]["error"]


def _backwards(after, before):  # type: ignore[no-untyped-def]
    from trainstack.diff import diff_reports

    return diff_reports(after, before, "proposed.yaml"), after.recording
