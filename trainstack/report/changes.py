"""A diff as a reviewer reads it: one entry per resource or group of resources, each with its operation.

Replacements come first (protected ones flagged), then deletions, additions and in-place updates; what is added
for a team is grouped under the team, the rest under its component; resources whose changes are the same (eleven
`clusterName` replacements after a rename) are one entry with a count; updates that touch only tags are folded
into one count; list indices in paths are named by their element (`resources[nvidia.com/gpu].nominalQuota`), and
long values are cut around the part that differs, so before and after never look the same.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import InputChange, PlanDiff, ResourceChange, path_parts
from trainstack.model.names import grouped, kind, owner, short, urn_name
from trainstack.report import fmt
from trainstack.tokens import NAMESPACE

CREATE, DELETE, UPDATE, REPLACE, TAGS, IGNORED = "create", "delete", "update", "replace", "tags", "ignored"
ORDER = (REPLACE, DELETE, CREATE, UPDATE, TAGS, IGNORED)
ARROW = "→"
VALUE_WIDTH = 36  # characters of one value in a detail line
SAME_CHANGE_GROUP = 3  # resources with identical changes become one counted entry from this many
TEAM_LABEL = "trainstack.io/team"


@dataclass(frozen=True)
class Entry:
    """One line of the diff block and the detail lines under it."""

    op: str  # one of ORDER
    label: str  # `node group gpu-p5-train-ng`, `team inference-eval`, `9 resources`
    members: tuple[str, ...] = ()  # what a grouped entry holds: `namespace`, `6 x network policy`
    details: tuple[str, ...] = ()  # `scalingConfig.maxSize: 16 → 24`, `note: ...`
    protected: bool = False

    @property
    def line(self) -> str:
        """The entry's line without its symbol: label, `PROTECTED`, members, and a single detail inline."""
        text = self.label + (" [PROTECTED]" if self.protected else "")
        if self.members:
            text += ": " + ", ".join(self.members)
        elif len(self.details) == 1 and not self.details[0].startswith("note:"):
            text += ": " + self.details[0]
        return text

    @property
    def body(self) -> tuple[str, ...]:
        """The detail lines shown under the entry (none when the one detail is inline)."""
        if not self.members and len(self.details) == 1 and not self.details[0].startswith("note:"):
            return ()
        return self.details


# ------------------------------------------------------------------------------------------ values and paths


def _text(value: Any) -> str:
    """A value on one line: a multi-line string (an Alertmanager config, a script) with its breaks written `\\n`."""
    return fmt.short(value, 1 << 30).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def cut_pair(old: Any, new: Any, width: int = VALUE_WIDTH) -> tuple[str, str]:
    """Two values as text, each at most about `width` characters, cut around where they differ: the shared start
    and end become `…` so the part that changed is what shows (`…:cluster/trainstack-prod` → `…-prod-b`)."""
    a, b = _text(old), _text(new)
    if len(a) <= width and len(b) <= width:
        return a, b
    head = fmt.shared_start(a, b)
    tail = fmt.shared_end(a[head:], b[head:])
    context = 8

    def window(text: str) -> str:
        start = max(head - context, 0)
        # Start at a word (after `/`, `:`, a space, a quote) when one is near, so the cut shows whole names.
        boundary = max(text.rfind(sep, max(start - 12, 0), head) for sep in '/: "=')
        if boundary >= 0:
            start = min(start, boundary + 1)
        stop = len(text) - max(tail - context, 0)
        middle = text[start:stop]
        if len(middle) > width:
            middle, stop = middle[: width - 1], start + width - 1
        return ("…" if start else "") + middle + ("…" if stop < len(text) else "")

    return window(a), window(b)


def readable_path(path: str, inputs: dict[str, Any]) -> str:
    """A property path with list indices named by their element's `name` (or `key`), from the last named index
    on: `spec.resourceGroups[0].flavors[0].resources[0].nominalQuota` -> `resources[nvidia.com/gpu].nominalQuota`."""
    parts = path_parts(path)
    node: Any = inputs
    shown: list[str] = []
    start = 0
    for part in parts:
        if isinstance(part, int):
            element = node[part] if isinstance(node, list) and part < len(node) else None
            name = element.get("name") or element.get("key") if isinstance(element, dict) else None
            if isinstance(name, str) and name:
                shown.append(f"[{name}]")
                start = len(shown) - 2  # keep the list's own key before the named index
            else:
                shown.append(f"[{part}]")
            node = element
        else:
            word = re.fullmatch(r"[A-Za-z0-9_]+", part) is not None
            shown.append(("." if shown else "") + part if word else f'["{part}"]')
            node = node.get(part) if isinstance(node, dict) else None
    kept = shown[max(start, 0) :]
    return "".join(kept).lstrip(".")


def detail(change: InputChange, inputs: dict[str, Any]) -> str:
    old, new = cut_pair(change.old, change.new)
    return f"{readable_path(change.path, inputs)}: {old} {ARROW} {new}"


# ------------------------------------------------------------------------------------------------- teams


def team_of(resource: RecordedResource, resources: dict[str, RecordedResource], teams: Iterable[str]) -> str | None:
    """The team a resource is for: its namespace, its team label, or a team's name ending its (component's) name."""
    wanted = set(teams)
    metadata = resource.inputs.get("metadata")
    if isinstance(metadata, dict):
        labels = metadata.get("labels") if isinstance(metadata.get("labels"), dict) else {}
        for candidate in (metadata.get("namespace"), (labels or {}).get(TEAM_LABEL)):
            if candidate in wanted:
                return str(candidate)
        if resource.type == NAMESPACE and metadata.get("name") in wanted:
            return str(metadata["name"])
    top = owner(resource, resources)
    for name in (resource.name, top.name if top is not None else ""):
        for team in wanted:
            if name.endswith(f"-{team}") or f"-{team}-" in name:
                return team
    return None


# ------------------------------------------------------------------------------------------------ entries


def tags_only(change: ResourceChange) -> bool:
    """Every changed input is an AWS tag (`tags`, `tagsAll`, a launch template's `tagSpecifications[i].tags`)."""
    return bool(change.changes) and all(_is_tag(c) for c in change.changes)


def _members(resources: list[RecordedResource], cluster: str) -> tuple[str, ...]:
    by_kind: dict[str, list[RecordedResource]] = defaultdict(list)
    for r in resources:
        by_kind[kind(r.type)].append(r)
    out: list[str] = []
    for label, same in by_kind.items():
        if len(same) == 1:
            out.append(label)
        else:
            out.append(f"{len(same)} x {label}")
    return tuple(out)


def _added_or_removed(
    op: str, urns: list[str], resources: dict[str, RecordedResource], cluster: str, teams: Iterable[str]
) -> list[Entry]:
    """Per team what is for a team, per component the rest."""
    by_team: dict[str, list[RecordedResource]] = defaultdict(list)
    rest: list[str] = []
    for urn in urns:
        resource = resources.get(urn)
        team = team_of(resource, resources, teams) if resource is not None else None
        if team is not None and resource is not None:
            if resource.custom:
                by_team[team].append(resource)
        else:
            rest.append(urn)
    out = [Entry(op, f"team {team}", _members(items, cluster)) for team, items in by_team.items()]
    out += [Entry(op, label, tuple(members)) for label, members in grouped(rest, resources, cluster) if members]
    out += [Entry(op, label) for label, members in grouped(rest, resources, cluster) if not members and label]
    return out


def _is_tag(c: InputChange) -> bool:
    return any(part in ("tags", "tagsAll") for part in path_parts(c.path)[:3])


def _lines(change: ResourceChange, inputs: dict[str, Any]) -> tuple[str, ...]:
    """One line per changed input; its tag changes as one line (`tags: Name (4 changes)`)."""
    tags = [c for c in change.changes if _is_tag(c)]
    lines = [detail(c, inputs) for c in change.changes if not _is_tag(c)]
    if tags:
        keys = ", ".join(sorted({str(path_parts(c.path)[-1]) for c in tags}))
        lines.append(f"tags: {keys}" + (f" ({len(tags)} changes)" if len(tags) > 1 else ""))
    return tuple(lines) + tuple(f"note: {n}" for n in change.notes)


def entries(
    diff: PlanDiff, after: Recording, before: Recording | None, cluster: str, teams: Iterable[str] = ()
) -> list[Entry]:
    """The diff block's entries, replacements first (protected first of all), then deletions, additions,
    in-place updates, the tag-only updates as one count, and what `ignoreChanges` keeps."""
    now = after.by_urn()
    was = before.by_urn() if before is not None else {}
    teams = tuple(teams)
    out: list[Entry] = []
    out += _added_or_removed(CREATE, [u for u, _ in diff.added], now, cluster, teams)
    out += _added_or_removed(DELETE, [u for u, _ in diff.removed], was, cluster, teams)

    tags = [c for c in diff.changed if c.op == "update" and tags_only(c)]
    rest = [c for c in diff.changed if c not in tags]
    # Resources whose changes read the same (the same paths, the same values as shown) are one entry.
    same: dict[tuple[Any, ...], list[ResourceChange]] = defaultdict(list)
    for change in rest:
        same[(change.op, _lines(change, now[change.urn].inputs if change.urn in now else {}))].append(change)
    for (_op, lines), changes in same.items():
        first = changes[0]
        protected = any(c.protected for c in changes) and first.op == "replace"
        if len(changes) >= SAME_CHANGE_GROUP:
            members = _members([now[c.urn] for c in changes if c.urn in now], cluster)
            out.append(Entry(first.op, f"{len(changes)} resources", members, lines, protected))
            continue
        for change in changes:
            label = f"{kind(change.type)} {short(urn_name(change.urn), cluster)}"
            out.append(Entry(change.op, label, (), lines, change.protected and change.op == "replace"))
    if tags:
        keys = sorted({str(path_parts(c.path)[-1]) for change in tags for c in change.changes})
        out.append(Entry(TAGS, f"{len(tags)} resource(s): tags only ({', '.join(keys)})"))
    for change in diff.ignored:
        inputs = now[change.urn].inputs if change.urn in now else {}
        kept = tuple(
            f"{readable_path(c.path, inputs)}: stays {old} (config says {new})"
            for c in change.changes
            for old, new in (cut_pair(c.old, c.new),)
        )
        out.append(
            Entry(IGNORED, f"{kind(change.type)} {short(urn_name(change.urn), cluster)} (ignoreChanges)", (), kept)
        )
    rank = {op: i for i, op in enumerate(ORDER)}
    return sorted(out, key=lambda e: (rank[e.op], not e.protected))


def block(found: list[Entry], symbols: dict[str, str]) -> list[str]:
    """The entries as lines, each starting with its operation's symbol (the detail lines too, so a renderer that
    colours by the first character colours the whole entry)."""
    lines: list[str] = []
    for entry in found:
        symbol = symbols[entry.op]
        lines.append(f"{symbol} {entry.line}")
        lines += [f"{symbol[0]}{' ' * (len(symbol) + 3)}{d}" for d in entry.body]
    return lines
