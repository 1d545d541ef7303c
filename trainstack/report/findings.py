"""Findings folded for reading: the policy review grouped by rule and message, the journeys by kind.

Fourteen advisories that say "no digest" about four images are two rules to fix, not fourteen lines; forty team
journeys that hold are one line per kind. What refuses the plan is never folded: every mandatory violation and
every broken journey stays on its own. Pure functions over the model; the renderers decide how much to show.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from trainstack.journeys import KINDS, Journey
from trainstack.model.names import short, urn_name
from trainstack.review import Review, Violation


@dataclass(frozen=True)
class RuleGroup:
    """One rule's violations at one level: how many, their distinct messages (most frequent first, each with
    its count) and where the first one is."""

    level: str  # mandatory or advisory
    policy: str
    violations: tuple[Violation, ...]
    messages: tuple[tuple[str, int], ...]

    @property
    def count(self) -> int:
        return len(self.violations)

    @property
    def example(self) -> Violation:
        return self.violations[0]

    def where(self, cluster: str) -> str:
        """The first violation's resource, short (`training-runtimes-p5-train-mpi`), or `stack` for a stack rule."""
        return where(self.example, cluster)


def where(v: Violation, cluster: str) -> str:
    return short(urn_name(v.urn), cluster) if v.urn else "stack"


def rule_groups(review: Review) -> tuple[RuleGroup, ...]:
    """The violations by (level, rule), mandatory first, then by count; messages by count within a rule."""
    by_rule: dict[tuple[str, str], list[Violation]] = {}
    for v in review.violations:
        by_rule.setdefault((v.level, v.policy), []).append(v)
    groups = [
        RuleGroup(level, policy, tuple(found), tuple(Counter(v.message for v in found).most_common()))
        for (level, policy), found in by_rule.items()
    ]
    return tuple(sorted(groups, key=lambda g: (g.level != "mandatory", -g.count, g.policy)))


@dataclass(frozen=True)
class JourneyKind:
    """The journeys of one kind: those that hold (counted, the first as the example) and those that break."""

    kind: str
    holding: tuple[Journey, ...]
    broken: tuple[Journey, ...]

    @property
    def total(self) -> int:
        return len(self.holding) + len(self.broken)


def journey_kinds(journeys: tuple[Journey, ...]) -> tuple[JourneyKind, ...]:
    """Per kind, in the report's order of kinds."""
    order = {kind: i for i, kind in enumerate(KINDS)}
    kinds = sorted({j.kind for j in journeys}, key=lambda k: (order.get(k, len(order)), k))
    return tuple(
        JourneyKind(
            kind,
            tuple(j for j in journeys if j.kind == kind and j.holds),
            tuple(j for j in journeys if j.kind == kind and not j.holds),
        )
        for kind in kinds
    )
