"""`--format markdown`: the plan as a pull-request comment, with a Mermaid diagram of the architecture."""

from __future__ import annotations

from dataclasses import dataclass

from trainstack.model import units, verdict
from trainstack.model.bringup import summarize_bringup
from trainstack.model.diff import PROVIDER_DIFF_NOTE, PlanDiff
from trainstack.model.names import kind
from trainstack.model.report import Report
from trainstack.model.time_to_ready import minutes
from trainstack.report import header
from trainstack.report.account import lines as account_lines
from trainstack.report.bringup import lines as bringup_lines
from trainstack.report.capacity import markdown_lines as capacity_markdown
from trainstack.report.changes import block, entries
from trainstack.report.findings import journey_kinds, rule_groups, where
from trainstack.report.fmt import MAX_ROWS, md_table
from trainstack.report.health import lines as health_lines
from trainstack.report.mermaid import flowchart
from trainstack.report.text import (
    COMPUTE_HEADERS,
    COST_HEADERS,
    compute_rows,
    cost_rows,
    hyperpod_lines,
    next_steps,
    system_lines,
    team_names,
)


def diff_note() -> str:
    return PROVIDER_DIFF_NOTE[0].upper() + PROVIDER_DIFF_NOTE[1:] + "."


SYMBOLS = {"create": "+", "delete": "-", "update": "!", "replace": "-/+", "tags": "!", "ignored": "="}
# GitHub colours a diff block's lines by their first character only (`+` green, `-` red, `!` orange, `@@` blue):
# an update is written `!` (Atlantis' convention for Terraform's `~`) and a replacement `-/+`, red like a deletion.
LEGEND = "@@ + add · - delete · ! update in place (Pulumi's ~) · -/+ replace (Pulumi's +-) · = kept by ignoreChanges @@"
DIFF_OPEN_LINES = 30  # a longer diff block is folded under <details>, its counts in the summary


def _diff(report: Report, diff: PlanDiff, before: Report | None, v: verdict.Verdict) -> list[str]:
    out = [f"### Changes against `{diff.against}`", ""]
    for change in diff.protected_replacements:
        out.append(
            f"> [!CAUTION]\n> **Replaces protected `{change.urn.rsplit('::', 1)[-1]}`** "
            f"({', '.join(change.replace_reasons)}): `pulumi up` refuses to delete a protected resource, and "
            "forcing it destroys the data."
        )
        out.append("")
    found = entries(
        diff,
        report.recording,
        before.recording if before is not None else None,
        report.summary.name,
        team_names(report, before.recording if before is not None else None),
    )
    lines = block(found, SYMBOLS)
    if lines:
        fenced = ["```diff", LEGEND, *lines, "```", ""]
        if len(lines) > DIFF_OPEN_LINES:
            summary = f"{change_counts(v)}: {len(lines)} lines, replacements first"
            fenced = [f"<details><summary>{summary}</summary>", "", *fenced, "</details>", ""]
        out += fenced
    for change in diff.changed:
        out += [f"> [!IMPORTANT]\n> **{change.urn.rsplit('::', 1)[-1]}**: {note}\n" for note in change.notes]
    out.append(f"_{diff_note()}_")
    out.append("")
    return out


def change_counts(v: verdict.Verdict) -> str:
    c = v.counts or {}
    return ", ".join(f"{c[op]} to {op}" for op in ("add", "change", "replace", "delete") if c.get(op)) or "no change"


ICONS = {verdict.OK: "✅", verdict.ATTENTION: "⚠️", verdict.REFUSED: "⛔"}


def _header(h: header.Header) -> list[str]:
    """The header's lines as one paragraph of hard-broken lines: the verdict bold, labels bold."""
    lines = h.lines()
    out = [f"**{ICONS[h.status]} {_inline(lines[0])}**"]
    for line in lines[1:]:
        label, sep, rest = line.partition(": ")
        if sep and label in ("Changes", "Unchanged", "Fix"):
            out.append(f"**{label}:** {_inline(rest)}")
        else:
            out.append(_inline(line))
    return ["<br>\n".join(out), ""]


def _inline(text: str) -> str:
    """Text safe inside a Markdown paragraph: no HTML tags, no table pipes."""
    return text.replace("<", "&lt;").replace("|", "\\|")


def _risks(v: verdict.Verdict) -> list[str]:
    out = ["### Risks", ""]
    if not v.risks:
        return [*out, "None found.", ""]
    out += [f"{i}. **{r.severity}**: {r.title}. {r.why}" for i, r in enumerate(v.risks[:MAX_ROWS], 1)]
    if len(v.risks) > MAX_ROWS:
        out.append(f"{MAX_ROWS + 1}. … {len(v.risks) - MAX_ROWS} more (`--format json` lists them all)")
    return [*out, ""]


def _time(v: verdict.Verdict) -> list[str]:
    """The critical path of a new stack, or of a diff's change (never the full build's for a diff); a path whose
    steps all take under a minute is a sentence, not an empty table."""
    out: list[str] = []
    timed = (("Time to apply the change", v.change),) if v.change is not None else (("Time to ready", v.time),)
    for title, estimate in timed:
        if estimate is None:
            continue
        out += [f"### {title}: about {minutes(estimate.low, estimate.high)}", ""]
        steps = [s for s in estimate.path if s.time.high >= 1]
        if not steps:
            out += ["Every step on the critical path is an API call of under a minute.", ""]
            continue
        pole = estimate.long_pole
        out.append(
            "Critical path of the recorded dependency graph"
            + (f"; the long pole is the {pole.what} (`{pole.name}`)." if pole else ".")
        )
        out.append("")
        out += md_table(
            ["step", "typical", "source"],
            [[f"{s.what} `{s.name}`", minutes(s.time.low, s.time.high), s.time.source] for s in steps],
        )
        out += [""] + [f"_{note}._" for note in estimate.notes] + ([""] if estimate.notes else [])
    return out


GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in an issue or pull-request comment body
MIN_LIMIT = 2_000  # the smallest cap `--max-chars` takes: the verdict and the risks' first lines fit
COLLAPSE_LINES = 15  # a table or diff longer than this is folded under <details>


@dataclass(frozen=True)
class Section:
    """One part of the comment. When the comment is over its limit, `body` lines are cut from the end (the head and
    the tail stay, so tables keep their header and fences close); an `atomic` section goes whole."""

    name: str  # what a cut notice calls it
    head: tuple[str, ...]
    body: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    atomic: bool = False  # a Mermaid diagram cut in half does not render
    gone: bool = False  # cut whole: only its name is left, in a notice

    @property
    def lines(self) -> tuple[str, ...]:
        return self.head + self.body + self.tail


# The order in which sections give way when the comment is too long: the resource list first, the verdict never.
GIVE_WAY = (
    "resource list",
    "account state",
    "architecture diagram",
    "hyperpod bring-up",
    "cost table",
    "health",
    "storage",
    "compute table",
    "journeys",  # a broken journey is also a risk, which stays
    "policy review",
    "time to ready",
    "diff",
    "contract violations",
    "risks",
    "next step",
    "header",
)


def size(text: str) -> int:
    """Length as GitHub may count it: UTF-8 bytes, never fewer than characters, so the cap holds either way."""
    return len(text.encode("utf-8"))


def cut_notice(what: str, limit: int) -> str:
    """The line that says what was cut and how to see all of it."""
    return (
        f"> ✂️ **Cut: {what}**, to fit the comment's {limit:,}-character limit. "
        "All of it: the plan with `--format markdown --max-chars 0`, or `--format json`."
    )


def _joined(sections: list[Section], limit: int) -> str:
    """The comment; sections cut whole in a row share one notice."""
    lines: list[str] = []
    gone: list[str] = []
    for section in [*sections, Section("", ())]:
        if section.gone:
            gone.append(f"the {section.name}")
            continue
        if gone:
            names = ", ".join(gone[:-1]) + " and " + gone[-1] if len(gone) > 1 else gone[0]
            lines += [cut_notice(names, limit), ""]
            gone = []
        lines += section.lines
    return "\n".join(lines)


def _closing(lines: tuple[str, ...]) -> tuple[str, ...]:
    """What closes a fence or a <details> left open by a cut."""
    fence = ("```",) if sum(line.startswith("```") for line in lines) % 2 else ()
    opened = sum(line.startswith("<details>") for line in lines) - sum(line == "</details>" for line in lines)
    return fence + ("", "</details>") * max(opened, 0)


def _shrink(section: Section, excess: int, limit: int) -> Section:
    """`section` at least `excess` bytes shorter (or gone), with a notice saying what was cut."""
    total = len(section.body)
    if not section.body and not section.atomic:
        return section  # a heading and a line: nothing worth cutting
    gone = Section(section.name, (), gone=True)
    if section.atomic:
        return gone
    keep, saved = total, 0
    notice_cost = size(cut_notice(f"{total} of {total} lines of the {section.name}", limit)) + 16
    while keep > 0 and saved < excess + notice_cost:
        keep -= 1
        saved += size(section.body[keep]) + 1
    if keep == 0:
        return gone
    kept = section.body[:keep]
    notice = ("", cut_notice(f"{total - keep} of {total} lines of the {section.name}", limit), "")
    closing = _closing(section.head + kept + section.tail)
    return Section(section.name, section.head, kept + closing, (*section.tail, *notice))


def fit(sections: list[Section], limit: int) -> str:
    """The sections joined, cut to `limit` bytes (0: no limit): sections give way in GIVE_WAY order, each cut
    only as far as needed and with a notice saying what was cut and how to see it all."""
    if limit <= 0:
        return _joined(sections, limit)
    for name in GIVE_WAY:
        excess = size(_joined(sections, limit)) - limit
        if excess <= 0:
            break
        sections = [_shrink(s, excess, limit) if s.name == name else s for s in sections]
    text = _joined(sections, limit)
    if size(text) > limit:  # only a limit below the verdict's own size gets here
        notice = cut_notice("the rest of the plan", limit)
        budget = limit - size(notice) - 2
        closing = "\n".join(_closing(tuple(text.splitlines())))  # at most a fence and a few </details>
        budget -= size(closing) + 2
        kept = text.encode("utf-8")[: max(budget, 0)].decode("utf-8", "ignore").rsplit("\n", 1)[0]
        text = kept + "\n" + "\n".join(_closing(tuple(kept.splitlines()))) + "\n\n" + notice
    return text


def _resources(report: Report) -> Section:
    s = report.summary
    # The kind and its provider, not the whole type token: a token such as
    # `kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition` in a cell would push the table past the column.
    table = md_table(
        ["name", "kind", "protect"],
        [
            [f"`{r.name}`", f"{r.type.split(':', 1)[0]} {kind(r.type)}", "yes" if r.protect else ""]
            for r in report.recording.resources
        ],
        limit=len(report.recording.resources),
    )
    head = (f"<details><summary>Resources ({s.resource_count})</summary>", "", *table[:2])
    return Section("resource list", head, tuple(table[2:]), ("", "</details>", ""))


def _journeys(report: Report) -> Section:
    """Broken journeys open, each with its first failing step and source; those that hold one row per kind (the
    count, the first as the example, what its user gets), every one of them folded under <details>."""
    journeys = report.journeys
    kinds = journey_kinds(journeys)
    holding = sum(len(k.holding) for k in kinds)
    head = ("### Journeys", "", f"{holding} of {len(journeys)} hold.", "")
    body: list[str] = []
    broken = [j for k in kinds for j in k.broken if j.broken_step is not None]
    if broken:
        body += md_table(
            ["", "journey", "subject", "first failing step", "source"],
            [
                ["**broken**", j.kind, j.subject, f"{step.name}: {step.detail}", step.source]
                for j in broken
                if (step := j.broken_step) is not None
            ],
        )
        body.append("")
    rows = [
        [
            k.kind,
            str(len(k.holding)),
            k.holding[0].subject,
            ", ".join(f"{n} {v}" for n, v in k.holding[0].figures.items()),
        ]
        for k in kinds
        if k.holding
    ]
    if rows:
        every = [
            ["holds", j.kind, j.subject, ", ".join(f"{n} {v}" for n, v in j.figures.items())]
            for k in kinds
            for j in k.holding
        ]
        body += [f"<details><summary>{holding} journey(s) hold</summary>", ""]
        body += md_table(["kind", "hold", "for example", "what the user gets"], rows)
        every_table = md_table(["", "journey", "subject", "what the user gets"], every, limit=len(every))
        body += ["", *every_table, "", "</details>", ""]
    return Section("journeys", head, tuple(body))


def _policy(report: Report) -> Section:
    """Mandatory violations open, one row each; advisories one row per rule (count, first message, where, how
    many other messages), folded; waivers after them."""
    p = report.policy
    assert p is not None
    cluster = report.summary.name
    title = (
        "### Policy review",
        "",
        f"{len(p.mandatory)} mandatory, {len(p.advisory)} advisory violation(s) from {p.policies_run} policies"
        + (f"; {len(p.waived)} waived." if p.waived else "."),
        "",
    )
    body: list[str] = []
    if p.mandatory:
        body += md_table(
            ["mandatory", "on", "message"],
            [[f"**{v.policy}**", f"`{where(v, cluster)}`", v.message] for v in p.mandatory],
        )
        body.append("")
    advisory = [g for g in rule_groups(p) if g.level != "mandatory"]
    if advisory:
        rows = [
            [
                g.policy,
                str(g.count),
                g.example.message,
                f"`{g.where(cluster)}`" + (f" and {g.count - 1} more" if g.count > 1 else ""),
                str(len(g.messages) - 1) if len(g.messages) > 1 else "",
            ]
            for g in advisory
        ]
        body += [f"<details><summary>{len(p.advisory)} advisory violation(s) in {len(advisory)} rule(s)</summary>", ""]
        body += md_table(["advisory rule", "count", "first message", "on", "other messages"], rows)
        body += ["", "</details>", ""]
    if p.waived:
        body += md_table(
            ["waived", "rule", "on", "message", "reason (owner, last day)"],
            [
                [
                    f"waived {'floor ' if w.floor else ''}({w.violation.level})",
                    w.violation.policy,
                    f"`{w.violation.name}`",
                    w.violation.message,
                    f"{w.reason} ({w.owner}, {w.expires.isoformat() if w.expires else 'no expiry'})",
                ]
                for w in p.waived
            ],
        )
        body.append("")
    return Section("policy review", title, tuple(body))


def _table(name: str, title: tuple[str, ...], table: list[str], what: str) -> Section:
    """A Markdown table (header and separator first) as a section, folded under <details> when it is long."""
    header, rows = tuple(table[:2]), (*table[2:], "")
    if len(rows) <= COLLAPSE_LINES:
        return Section(name, title + header, rows)
    fold = (f"<details><summary>{len(rows) - 1} {what}</summary>", "")
    return Section(name, title + fold + header, rows, ("</details>", ""))


def render(
    report: Report, diff: PlanDiff | None = None, before: Report | None = None, limit: int = GITHUB_COMMENT_LIMIT
) -> str:
    """The pull-request comment: verdict, risks and time to ready first, then the tables, at most `limit` bytes
    (0: no limit): what does not fit is cut, resource list first (`fit`), and a notice says so."""
    s = report.summary
    v = verdict.assess(report, diff, before)
    head = (
        f"## trainstack diff: `{s.stack}` against `{diff.against}` ({s.region})"
        if diff is not None
        else f"## trainstack plan: `{s.stack}` ({s.region}, {s.environment})"
    )
    risks = _risks(v)
    sections = [Section("header", (head, "", *_header(header.build(report, v, diff, before))))]
    if diff is not None:
        sections.append(Section("diff", (), tuple(_diff(report, diff, before, v))))
    sections += [
        Section("risks", tuple(risks[:2]), tuple(risks[2:])),
        Section("time to ready", (), tuple(_time(v))),
    ]

    sections.append(_compute_section(report))
    if bringup := summarize_bringup(report.recording):
        body = [f"- {line}" if not line.startswith("  ") else f"  - {line.strip()}" for line in bringup_lines(bringup)]
        sections.append(Section("hyperpod bring-up", ("### HyperPod node bring-up", ""), (*body, "")))
    if capacity := capacity_markdown(report):
        sections.append(Section("capacity", tuple(capacity[:2]), tuple(capacity[2:])))

    sections.append(_storage_section(report))

    if report.health is not None:
        sections.append(
            Section("health", ("### Health", ""), (*[f"- {line}" for line in health_lines(report.health)], ""))
        )

    sections.append(_cost_section(report))

    if report.contracts:
        refused = md_table(
            ["resource", "input", "value", "rule", "source"],
            [[f"`{c.name}`", f"`{c.path}`", f"`{c.value}`", c.rule, c.source] for c in report.contracts],
        )
        sections.append(_table("contract violations", ("### Contracts: refused", ""), refused, "refused input(s)"))

    if report.journeys:
        sections.append(_journeys(report))

    if report.policy is not None:
        sections.append(_policy(report))

    diagram = flowchart(report.recording, diff, before.recording if before else None)
    sections.append(
        Section("architecture diagram", ("### Architecture", ""), ("```mermaid", diagram, "```", ""), atomic=True)
    )
    if account := account_lines(report.recording):
        sections.append(
            Section("account state", ("### Account state", ""), tuple(f"- {item}" for item in account), ("",))
        )
    sections.append(_next_step(v, s.stack, s.environment))
    sections.append(_resources(report))
    return fit(sections, limit)


def _compute_section(report: Report) -> Section:
    """The GPU groups' table, the system, HyperPod and accelerator lines."""
    s = report.summary
    compute = ["### Compute", ""]
    if s.gpu_groups:
        compute += md_table(COMPUTE_HEADERS, compute_rows(report))
        compute.append("")
    compute += [f"- {line}" for line in system_lines(report) + hyperpod_lines(report)]
    compute.append(
        f"- accelerators **{s.accelerators_desired}** at desired, **{s.accelerators_max}** at max "
        f"(budget {s.gpu_budget})"
        + (f"; EFA fabric {units.gbps(s.fabric_gbps_desired)} at desired" if s.fabric_gbps_desired else "")
    )
    compute.append("")
    return Section("compute table", tuple(compute[:2]), tuple(compute[2:]))


def _storage_section(report: Report) -> Section:
    """Each file system's throughput against the accelerators' demand, and the buckets."""
    s = report.summary
    storage = ["### Storage", ""]
    for fs in s.file_systems:
        tier = f", {fs.throughput_mb_s_per_tib} MB/s/TiB" if fs.throughput_mb_s_per_tib else ""
        line = (
            f"- FSx for Lustre `{fs.name}`: {fs.deployment_type}, {fs.capacity_gib:,} GiB{tier}"
            f"{', EFA' if fs.efa_enabled else ''}: **{units.mb_s(fs.throughput_mb_s)}** aggregate"
        )
        if fs.coverage is not None:
            line += (
                f"; demand {s.accelerators_max} accelerators x {s.per_gpu_read_mb_s:g} MB/s"
                f" = {units.mb_s(fs.demand_mb_s)} "
                f"({units.percent(fs.coverage)} covered{'' if fs.coverage >= 1 else ', **under demand**'})"
            )
        storage.append(line)
    storage.append(f"- S3 buckets: {s.bucket_count}")
    storage.append("")
    return Section("storage", tuple(storage[:2]), tuple(storage[2:]))


def _cost_section(report: Report) -> Section:
    """The estimate's rows, its totals and its notes."""
    cost = report.cost
    money = ["### Cost (estimate)", ""]
    if cost.items:
        money += md_table(COST_HEADERS, cost_rows(report))
        money.append("")
        money.append(
            f"**Total {units.usd(cost.usd_per_hour_desired)}/h at desired, "
            f"{units.usd(cost.usd_per_hour_max)}/h at max; "
            f"{units.usd(cost.usd_per_month_desired)} / {units.usd(cost.usd_per_month_max)} per month** "
            f"({cost.hours_per_month:g} h). GPU share {units.percent(cost.gpu_share_desired)} at desired, "
            f"{units.percent(cost.gpu_share_max)} at max."
        )
    else:
        money.append("Nothing recorded that the cost model prices.")
    money.append("")
    money += [f"> {note}  " for note in cost.notes]
    money.append("")
    return Section("cost table", tuple(money[:2]), tuple(money[2:]))


def _next_step(v: verdict.Verdict, stack: str, environment: str) -> Section:
    """What to do next: fix what refuses the plan, else the commands that deploy it."""
    if v.status == verdict.REFUSED:  # the next step is the fix, never `pulumi up`
        fixes = tuple(f"- {_inline(fix)}" for fix in v.fixes)
        return Section("next step", ("### Next step: fix what refuses the plan", ""), (*fixes, ""))
    steps = [line.strip() for line in next_steps(stack, environment)[1:]]
    return Section("next step", ("### Next step", "", "```sh"), tuple(steps), ("```", ""))
