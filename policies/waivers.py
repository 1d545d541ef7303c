"""A stack's waivers, read and applied in one way by the CLI pack and by the offline review.

A waiver (`trainstack:cluster.waivers` in the stack file; stacks/schema/waivers.py) exempts one rule on one
resource, named by its logical name (the URN's last part). Under `pulumi preview|up --policy-pack`, the Python
language host starts the pack with the stack's config in `PULUMI_CONFIG` (pulumi/pulumi v3.259.0,
sdk/python/cmd/pulumi-language-python/main.go RunPlugin: it waits for the engine's ConfigureStack call, then
sets `PULUMI_CONFIG` to the JSON of the decrypted config map, every value a string, `trainstack:cluster` the JSON
of the object), and the stack name in `PULUMI_STACK`. The offline review hands the validated waivers over
itself (policies/enforcement.py builds either ledger, with the rules prod never waives; this module knows no
rule). Either way the rules' report callbacks go through `screen` (policies/rules/base.py), so a waived
violation never reaches the engine, and the `stack-waivers` rule, run last, refuses a waiver that cannot
stand: of a rule the pack does not have, of a critical rule, of a floor in prod, of another environment, with an
expiry more than a year ahead, or that waives nothing.

Each waiver has an owner (who answers for it), an expiry and the environment it was granted for. It applies only
in that environment (a staging file's waiver does not follow the file into prod) and only until the end of its
expiry day (UTC): an expired waiver exempts nothing, so the violation stands at its rule's level, and the advisory
`waiver-expired` rule says which waiver lapsed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

STACK_CONFIG_KEY = "trainstack:cluster"
# Critical rules guard what no reason excuses (a world-open endpoint, public buckets, a stack reviewed as another
# environment): they cannot be waived.
UNWAIVABLE_SEVERITY = "critical"
# A waiver is renewed by its owner, not granted for good: its expiry lies at most this far ahead.
MAX_WAIVER_DAYS = 365
# Prod waives no floor (policies/enforcement.py MANDATORY_FLOORS["prod"]: the least prod runs with) and no rule of
# high severity (a high finding in prod is fixed, not accepted); it may waive a medium or low one, with an owner.
# A stack whose environment is unknown is held to prod's rules (failing closed, as the floors' levels are).
NO_FLOOR_WAIVERS_IN = "prod"
UNWAIVABLE_IN_PROD_SEVERITY = "high"


def today() -> date:
    """The day waivers are judged on (UTC, the date a CI runner and a laptop agree on)."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class Waiver:
    """One rule waived for one resource, with the written reason."""

    rule: str
    resource: str
    reason: str
    owner: str
    expires: date
    environment: str

    def expired(self, on: date) -> bool:
        """True once the expiry day is over: a waiver holds through the day it names."""
        return on > self.expires


@dataclass(frozen=True)
class Problem:
    """Why waiver `index` cannot stand: the key under `waivers.<index>`, the value given, the message."""

    index: int
    key: str  # "rule", "resource", "environment" or "expires"
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
    owner: str
    expires: date


def _date(value: object) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _waiver(entry: Mapping[str, object]) -> Waiver | None:
    """One entry of the config's `waivers`, or None when it lacks a field (then it exempts nothing: fail closed)."""
    texts = {k: entry.get(k) for k in ("rule", "resource", "reason", "owner", "environment")}
    expires = _date(entry.get("expires"))
    if expires is None or not all(isinstance(v, str) for v in texts.values()):
        return None
    return Waiver(
        str(texts["rule"]),
        str(texts["resource"]),
        " ".join(str(texts["reason"]).split()),
        str(texts["owner"]),
        expires,
        str(texts["environment"]),
    )


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
    found = (_waiver(e) for e in entries if isinstance(e, Mapping))
    return tuple(w for w in found if w is not None)


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


def resource_of(urn: str | None) -> str:
    """The logical name a stack rule's violation names: the last part of the URN it reports, or ""."""
    return urn.rsplit("::", 1)[-1] if urn else ""


def _in_words(environment: str | None) -> str:
    return environment or "of no known environment (held to prod's rules)"


@dataclass
class Ledger:
    """The waivers in force for one run of the pack, what they exempted, and what they are judged by: the stack's
    environment (None when unknown: held to prod's rules), the day, the floors and the high-severity rules prod
    never waives."""

    waivers: tuple[Waiver, ...] = ()
    environment: str | None = None
    on: date = field(default_factory=today)
    floors: frozenset[str] = frozenset()
    severe: frozenset[str] = frozenset()  # rules of UNWAIVABLE_IN_PROD_SEVERITY
    used: set[int] = field(default_factory=set[int])
    waived: list[WaivedViolation] = field(default_factory=list[WaivedViolation])

    def _holds_prod_rules(self) -> bool:
        return self.environment in (None, NO_FLOOR_WAIVERS_IN)

    def prod_never_waives(self, rule: str) -> str | None:
        """Why prod never waives `rule` (in words), or None when it may."""
        if rule in self.floors:
            return "a floor"
        if rule in self.severe:
            return f"a rule of {UNWAIVABLE_IN_PROD_SEVERITY} severity"
        return None

    def applies(self, index: int) -> bool:
        """Whether waiver `index` may exempt anything here: its environment, unexpired, and not a floor in prod."""
        waiver = self.waivers[index]
        return (
            (index, waiver) in self.own()
            and not waiver.expired(self.on)
            and not (self._holds_prod_rules() and self.prod_never_waives(waiver.rule))
        )

    def own(self) -> list[tuple[int, Waiver]]:
        """The waivers granted for this stack's environment, with their indexes."""
        return [
            (i, w) for i, w in enumerate(self.waivers) if w.environment == (self.environment or NO_FLOOR_WAIVERS_IN)
        ]

    def expired(self) -> list[tuple[int, Waiver]]:
        """The waivers of this environment whose expiry day is over: they exempt nothing any more."""
        return [(i, w) for i, w in self.own() if w.expired(self.on)]

    def screen(self, rule: str, urn: str, message: str) -> bool:
        """True when a waiver exempts this violation of `rule` on the resource at `urn` (recorded, not
        reported); False to report it."""
        resource = resource_of(urn)
        index = match(self.waivers, rule, resource)
        if index is None or not self.applies(index):
            return False
        self.used.add(index)
        waiver = self.waivers[index]
        self.waived.append(WaivedViolation(rule, resource, urn, message, waiver.reason, waiver.owner, waiver.expires))
        return True

    def problems(self, severity: Mapping[str, str]) -> list[Problem]:
        """Every waiver that cannot stand, given the rules' severities (an expired one is not a problem: it
        stops applying, and `waiver-expired` says so)."""
        found: list[Problem] = []
        horizon = self.on + timedelta(days=MAX_WAIVER_DAYS)
        for i, waiver in enumerate(self.waivers):
            if waiver.rule not in severity:
                found.append(Problem(i, "rule", waiver.rule, "no such policy rule; docs/policies.md lists them"))
            elif severity[waiver.rule] == UNWAIVABLE_SEVERITY:
                found.append(
                    Problem(i, "rule", waiver.rule, "a critical rule cannot be waived: fix the resource instead")
                )
            elif self._holds_prod_rules() and (kind := self.prod_never_waives(waiver.rule)):
                found.append(
                    Problem(
                        i,
                        "rule",
                        waiver.rule,
                        f"{waiver.rule} is {kind}, which prod never waives (docs/defence-in-depth.md, Waivers): fix "
                        "the resource instead",
                    )
                )
            elif waiver.environment != (self.environment or NO_FLOOR_WAIVERS_IN):
                found.append(
                    Problem(
                        i,
                        "environment",
                        waiver.environment,
                        f"this waiver was granted for {waiver.environment}, and this stack is "
                        f"{_in_words(self.environment)}: a waiver applies only in its own environment, so it "
                        "exempts nothing here; grant it again for this environment or remove it",
                    )
                )
            elif waiver.expires > horizon:
                found.append(
                    Problem(
                        i,
                        "expires",
                        waiver.expires.isoformat(),
                        f"more than {MAX_WAIVER_DAYS} days ahead (after {horizon.isoformat()}): a waiver is renewed "
                        "by its owner, not granted for good",
                    )
                )
            elif i not in self.used and not waiver.expired(self.on):
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


# The ledger in force: the offline review pushes its own for each review (`in_force`); the pack process installs
# the one of the stack it serves at start (`serve`, policies/__main__.py). Without either no waiver is in force.
# This module knows no rule: which rules prod never waives comes from the catalogue's side (policies/enforcement.py).
_ACTIVE: list[Ledger] = []
_SERVED: list[Ledger] = [Ledger((), None)]


def serve(ledger: Ledger) -> None:
    """`ledger` in force for the pack process: the stack it serves."""
    _SERVED[0] = ledger


def active() -> Ledger:
    return _ACTIVE[-1] if _ACTIVE else _SERVED[0]


@contextmanager
def in_force(ledger: Ledger) -> Generator[Ledger]:
    """`ledger` in force for the duration: the offline review of one recording."""
    _ACTIVE.append(ledger)
    try:
        yield ledger
    finally:
        _ACTIVE.remove(ledger)
