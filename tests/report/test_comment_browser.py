"""The pull-request comment as a reviewer sees it (issue 37): the Markdown rendered by cmark-gfm (GitHub's own
renderer, the cmarkgfm package), laid out with github-markdown-css in an 880 px column in Debian's chromium, every
Mermaid block drawn by the real mermaid package (package-lock.json), and measured there: the header on the first
screen, every diagram label at 12 px or more once Mermaid has shrunk the chart to the column, no edge through a
node, no table wider than the column. `.ci/run` installs chromium and `make test-e2e` runs `npm ci`; locally the
test skips, saying why, only when they are missing (CI sets TRAINSTACK_REQUIRE_BROWSER=1, so there it fails)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from typing import Any

import cmarkgfm
import pytest

from tests.conftest import ROOT
from tests.report.helpers import SCENARIOS, added_group_diff, report, scenario, with_cloned_gpu_groups
from trainstack.report import markdown
from trainstack.report.mermaid import flowchart, node_count

SCRIPT = ROOT / "tests" / "report" / "render_comment.mjs"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
MIN_LABEL_PX = 12  # the smallest text a reviewer reads without zooming
FIRST_SCREEN_PX = 900  # a laptop's first screen of a comment, below the pull request's own header


def github_html(comment: str) -> str:
    """The comment as GitHub turns it into HTML: cmark-gfm with its extensions (tables, autolinks, strikethrough,
    tag filter), raw HTML kept (<details>), fenced blocks tagged with their language (`<pre lang="mermaid">`)."""
    options = cmarkgfm.Options.CMARK_OPT_UNSAFE | cmarkgfm.Options.CMARK_OPT_GITHUB_PRE_LANG
    return cmarkgfm.github_flavored_markdown_to_html(comment, options=options)


def diagram_html(source: str) -> str:
    return f'<h2>diagram</h2><pre lang="mermaid"><code>{html.escape(source)}</code></pre>'


def render(documents: list[str]) -> list[dict[str, Any]]:
    missing = [
        what
        for what, ok in (
            ("chromium", os.path.exists(CHROMIUM)),
            ("node_modules (npm ci)", (ROOT / "node_modules" / "github-markdown-css").is_dir()),
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
        input=json.dumps(documents),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=ROOT,
        env={**os.environ, "CHROMIUM": CHROMIUM},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def readable(diagram: dict[str, Any], what: str) -> None:
    assert diagram["ok"], f"{what}: {diagram['error']}"
    assert diagram["minLabelPx"] >= MIN_LABEL_PX, (
        f"{what}: labels at {diagram['minLabelPx']:.1f} px: {diagram['smallLabels']}"
    )
    assert diagram["throughNodes"] == [], f"{what}: edges through nodes: {diagram['throughNodes']}"


@pytest.mark.e2e
def test_every_scenario_reads_on_githubs_column() -> None:
    comments = {name: markdown.render(*scenario(name)) for name in SCENARIOS}
    results = dict(zip(comments, render([github_html(c) for c in comments.values()]), strict=True))
    for name, result in results.items():
        _, diff, _ = scenario(name)
        (diagram,) = result["diagrams"]
        readable(diagram, name)
        (source,) = re.findall(r"^```mermaid\n(.*?)^```$", comments[name], re.M | re.S)
        assert diagram["nodes"] == node_count(source), name  # every node written was drawn
        # The header (verdict, what changed, the figures, the fix) is read before anything else.
        assert result["headerText"].startswith(("⛔ Verdict: ", "⚠️ Verdict: ", "✅ Verdict: ")), name
        assert 0 < result["headerBottom"] <= FIRST_SCREEN_PX, f"{name}: header ends at {result['headerBottom']} px"
        if diff is not None:
            assert "Changes:" in result["headerText"], name
            assert result["diffTop"] <= FIRST_SCREEN_PX, f"{name}: the diff block starts at {result['diffTop']} px"
        clipped = [t for t in result["tables"] if t["scrollWidth"] > t["clientWidth"] + 1]
        assert not clipped, f"{name}: tables wider than the column: {clipped}"
        assert result["tables"], name  # the check saw the tables (folded ones opened)


@pytest.mark.e2e
def test_diagrams_stay_readable_as_groups_grow_and_a_broken_one_fails() -> None:
    after, diff, before = added_group_diff()
    sources = {
        "prod plus a group (diff)": flowchart(after.recording, diff, before.recording),
        "three GPU groups in one AZ": flowchart(with_cloned_gpu_groups(report("prod").recording, 2)),
        "forty GPU groups": flowchart(with_cloned_gpu_groups(report("prod").recording, 40)),
        "staging (HyperPod)": flowchart(report("staging").recording),
    }
    results = render([diagram_html(s) for s in sources.values()] + [diagram_html('flowchart TB\n  a["x"] -->')])
    for (what, source), result in zip(sources.items(), results, strict=False):
        (diagram,) = result["diagrams"]
        readable(diagram, what)
        assert diagram["nodes"] == node_count(source), what
    (broken,) = results[-1]["diagrams"]
    assert not broken["ok"] and broken["error"]  # a broken source fails, or the check proves nothing
