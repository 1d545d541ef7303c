"""Preflight as text (a terminal), Markdown (a pull-request or issue comment) and JSON (tools; every field in
docs/preflight-json.md, pinned by preflight.schema.json). The plan's formatting helpers (trainstack/report/fmt.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainstack.preflight.model import SEVERITY, Check, Preflight, Status
from trainstack.report import fmt
from trainstack.report.fmt import Style, md_table

FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("preflight.schema.json")
_MARK = {
    Status.PASSED: "ok",
    Status.FAILED: "FAIL",
    Status.WARNING: "warn",
    Status.SKIPPED: "skip",
    Status.ERROR: "ERROR",
}


def summary(result: Preflight) -> str:
    """`failed: 2 failed, 1 error, 14 passed, 3 skipped`: the verdict and the counts that are not zero."""
    counts = result.counts
    return f"{result.verdict.value}: " + ", ".join(f"{counts[s.value]} {s.value}" for s in SEVERITY if counts[s.value])


def _ordered(result: Preflight) -> list[Check]:
    rank = {s: i for i, s in enumerate(SEVERITY)}
    return sorted(result.checks, key=lambda c: rank[c.status])  # stable: run order within a status


def _paint(style: Style, status: Status, text: str) -> str:
    if status is Status.FAILED or status is Status.ERROR:
        return style.bad(text)
    if status is Status.WARNING:
        return style.warn(text)
    return style.ok(text) if status is Status.PASSED else style.dim(text)


def text(result: Preflight, style: Style | None = None, width: int = 100) -> str:
    style = style or Style(color=False)
    lines = [
        style.bold(f"trainstack preflight: stack {result.stack}  ·  {result.region}  ·  account {result.account}"),
        f"caller {result.caller}",
        f"Verdict: {_paint(style, result.verdict, summary(result))}",
        "",
    ]
    for check in _ordered(result):
        mark = _paint(style, check.status, f"{_MARK[check.status]:<5}")
        lines += fmt.fit(f"{mark} {check.title}", width, "      ")
        detail = [check.answer]
        if check.action:
            detail.append(f"do: {check.action}")
        if check.settles is not None:
            detail.append(f"plan risk {check.settles.outcome}: {check.settles.risk}")
        if check.status is not Status.PASSED:
            detail.append(f"asked: {check.asked}")
        for item in detail:
            lines += fmt.fit(f"      {item}", width, "        ")
    lines += [f"note: {note}" for note in result.notes]
    lines += ["", "Read-only: preflight made no call that changes the account."]
    return "\n".join(lines) + "\n"


def markdown(result: Preflight) -> str:
    rows = [
        [
            _MARK[c.status],
            c.title,
            c.answer + (f" **Do:** {c.action}" if c.action else ""),
            f"`{c.key}`" if c.key else "",
        ]
        for c in _ordered(result)
    ]
    settled = [c for c in result.checks if c.settles is not None]
    lines = [
        f"### trainstack preflight: `{result.stack}` ({result.region}, account {result.account})",
        "",
        f"**Verdict: {summary(result)}**",
        "",
        *md_table(["", "Check", "Answer", "Key"], rows, limit=len(rows)),
    ]
    if settled:
        lines += ["", "Plan risks settled:", ""]
        lines += [f"- {c.settles.outcome}: {c.settles.risk}" for c in settled if c.settles is not None]
    lines += [f"\n_{note}_" for note in result.notes]
    lines += ["", "_Read-only: preflight made no call that changes the account._"]
    return "\n".join(lines) + "\n"


def document(result: Preflight) -> dict[str, Any]:
    return {
        "formatVersion": FORMAT_VERSION,
        "stack": result.stack,
        "region": result.region,
        "account": result.account,
        "caller": result.caller,
        "verdict": result.verdict.value,
        "counts": result.counts,
        "checks": [c.to_dict() for c in result.checks],
        "notes": list(result.notes),
    }


def as_json(result: Preflight) -> str:
    return json.dumps(document(result), indent=2) + "\n"
