"""A stack's waivers, read and applied in one way by the CLI pack and by the offline review.

A waiver (`trainstack:cluster.waivers` in the stack file; stacks/schema/waivers.py) exempts one rule on one
resource, named by its logical name (the URN's last part). Under `pulumi preview|up --policy-pack`, the Python
language host starts the pack with the stack's config in `PULUMI_CONFIG` (pulumi/pulumi v3.259.0,
sdk/python/cmd/pulumi-language-python/main.go RunPlugin: it waits for the engine's ConfigureStack call, then
sets `PULUMI_CONFIG` to the JSON of the decrypted config map, every value a string, `trainstack:cluster` the JSON
of the object), and the stack name in `PULUMI_STACK`. The offline review hands the validated waivers over
itself. Either way the rules' report callbacks go through `screen` (policies/rules/base.py), so a waived
violation never reaches the engine, and the `stack-waivers` rule, run last, refuses a waiver that cannot
stand: of a rule the pack does not have, of a critical rule, or that waives nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

STACK_CONFIG_KEY = "trainstack:cluster"
# Critical rules guard what no reason excuses (a world-open endpoint, public buckets, a stack reviewed as another
# environment): they cannot be waived.
UNWAIVABLE_SEVERITY = "critical"


@dataclass(frozen=True)
class Waiver:
    """One rule waived for one resource, with the written reason."""

    rule: str
    resource: str
    reason: str


@dataclass(frozen=True)
class Problem:
    """Why waiver `index` cannot stand: the key under `waivers.<index>`, the value given, the message."""

    index: int
    key: str  # "rule" or "resource"
    value: str
    message: str

    def __str__(self) -> str:
        return f"{STACK_CONFIG_KEY}.waivers.{self.index}.{self.key} ({self.value!r}): {self.message}"


@dataclass(frozen=True)
class WaivedViolation:
    """A violation a waiver exempted."""

    rule: str
    resource: str
    urn: str
    message: str
    reason: str


def from_stack_config(config: Mapping[str, object]) -> tuple[Waiver, ...]:
    """The waivers of a stack's config map as Pulumi hands it over (`trainstack:cluster` holds the object's JSON).
    A stack whose config is not a valid trainstack config never gets this far (the program refuses it before any
    resource), so entries that are not waivers are skipped here, not judged."""
    raw = config.get(STACK_CONFIG_KEY)
    try:
        cluster = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return ()
    entries = cluster.get("waivers") if isinstance(cluster, Mapping) else None
    if not isinstance(entries, list):
        return ()
    return tuple(
        Waiver(e["rule"], e["resource"], " ".join(e["reason"].split()))
        for e in entries
        if isinstance(e, Mapping) and all(isinstance(e.get(k), str) for k in ("rule", "resource", "reason"))
    )


def from_environment(environ: Mapping[str, str] = os.environ) -> tuple[Waiver, ...]:
    """The waivers in `PULUMI_CONFIG`, which the Python language host sets for a policy pack; none without it."""
    try:
        config = json.loads(environ.get("PULUMI_CONFIG", "{}"))
    except ValueError:
        return ()
    return from_stack_config(config) if isinstance(config, Mapping) else ()


def match(waivers: Sequence[Waiver], rule: str, resource: str) -> int | None:
    """The index of the first waiver of `rule` on `resource`; None for a stack-wide violation (no resource)."""
    if not resource:
        return None
    return next((i for i, w in enumerate(waivers) if w.rule == rule and w.resource == resource), None)


def problems(waivers: Sequence[Waiver], used: set[int], severity: Mapping[str, str]) -> list[Problem]:
    """Every waiver that cannot stand, given the rules' severities and which waivers exempted something."""
    found: list[Problem] = []
    for i, waiver in enumerate(waivers):
        if waiver.rule not in severity:
            found.append(Problem(i, "rule", waiver.rule, "no such policy rule; docs/policies.md lists them"))
        elif severity[waiver.rule] == UNWAIVABLE_SEVERITY:
            found.append(Problem(i, "rule", waiver.rule, "a critical rule cannot be waived: fix the resource instead"))
        elif i not in used:
            found.append(
                Problem(
                    i,
                    "resource",
                    waiver.resource,
                    f"waives nothing: {waiver.rule} reports no violation on a resource of this name; remove the "
                    "waiver (or name the resource as the plan's policy review shows it)",
                )
            )
    return found


def resource_of(urn: str | None) -> str:
    """The logical name a stack rule's violation names: the last part of the URN it reports, or ""."""
    return urn.rsplit("::", 1)[-1] if urn else ""


@dataclass
class Ledger:
    """The waivers in force for one run of the pack, and what they exempted."""

    waivers: tuple[Waiver, ...] = ()
    used: set[int] = field(default_factory=set[int])
    waived: list[WaivedViolation] = field(default_factory=list[WaivedViolation])

    def screen(self, rule: str, urn: str, message: str) -> bool:
        """True when a waiver exempts this violation of `rule` on the resource at `urn` (recorded, not
        reported); False to report it."""
        resource = resource_of(urn)
        index = match(self.waivers, rule, resource)
        if index is None:
            return False
        self.used.add(index)
        self.waived.append(WaivedViolation(rule, resource, urn, message, self.waivers[index].reason))
        return True


# The pack process serves one stack: its waivers come from the environment it was started with. The offline
# review swaps in its own ledger for each review (`applying`).
_ACTIVE: list[Ledger] = [Ledger(from_environment())]


def active() -> Ledger:
    return _ACTIVE[-1]


@contextmanager
def applying(waivers: Sequence[Waiver]) -> Generator[Ledger]:
    """`waivers` in force (and a fresh ledger) for the duration: the offline review of one recording."""
    ledger = Ledger(tuple(waivers))
    _ACTIVE.append(ledger)
    try:
        yield ledger
    finally:
        _ACTIVE.remove(ledger)
