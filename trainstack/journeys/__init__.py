"""The journeys tier: what a user meets when the objects the plan built work together.

A contract (`trainstack.contracts`) checks one object against the API it becomes. A journey follows a user
through several objects at once, in the order they meet them: a team submits a TrainJob, a LimitRange
defaults its pods, Kueue admits the workload only if its ClusterQueue covers every resource the pods request,
the namespace's pod security level and the registry policy admit the pods, the ranks get the CPU and memory
the node offers, NetworkPolicies let them meet, the team's role reads the datasets and writes its checkpoints.
Each step is one rule, taken from the upstream code at the pinned version (repository, tag, file) or from the
guide that states it, and says what it found. A journey holds when every step holds; a broken journey names
its first failing step, and the plan exits 6 (`trainstack.cli`), as it exits 4 for a contract refusal.

Each family lives in its own module and is a function from a `Trip` (the recording and the validated stack)
to the journeys it walks; `_families()` lists them and `walk` runs every one on every plan. Values a preview
does not know (`trainstack.engine.UNKNOWN`) never break a step: a step that needs one is skipped, never
guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stacks.schema import StackConfig
from trainstack.engine import Recording

# The kinds of journey, in the order the report lists them.
DEPLOY = "deploy"
TEAM_JOB = "team job"
ALERTS = "alerts"
DAY2 = "day 2"
DESTROY = "destroy"
WRITERS = "writers and keys"
KINDS = (DEPLOY, TEAM_JOB, ALERTS, DAY2, DESTROY, WRITERS)


@dataclass(frozen=True)
class Step:
    """One rule a user's path meets: whether it holds here, what was found, and where the rule comes from."""

    name: str  # what the step is, in the user's terms: "Kueue admits the workload"
    holds: bool
    detail: str  # what the plan found: "ClusterQueue p5 covers nvidia.com/gpu, cpu, ...; the pods request ..."
    source: str  # "kubernetes-sigs/kueue v0.14.8 pkg/scheduler/flavorassigner/flavorassigner.go", or a guide

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "holds": self.holds, "detail": self.detail, "source": self.source}


@dataclass(frozen=True)
class Journey:
    """One user's path through the objects of the plan: its kind, whom and what it is for, its steps in order."""

    kind: str  # one of KINDS
    subject: str  # "team ml-research: torch TrainJob on p5-train"
    steps: tuple[Step, ...]
    figures: Mapping[str, str] = field(default_factory=dict)  # what the user gets: {"CPU per rank": "23.9", ...}

    @property
    def holds(self) -> bool:
        return all(step.holds for step in self.steps)

    @property
    def broken_step(self) -> Step | None:
        """The first step that fails: where the user's path ends."""
        return next((step for step in self.steps if not step.holds), None)

    def to_dict(self) -> dict[str, Any]:
        broken = self.broken_step
        return {
            "kind": self.kind,
            "subject": self.subject,
            "holds": self.holds,
            "broken_step": broken.to_dict() if broken is not None else None,
            "steps": [step.to_dict() for step in self.steps],
            "figures": dict(self.figures),
        }


@dataclass(frozen=True)
class Trip:
    """What every family reads: the recording (what the program built) and the validated stack config (who the
    users are: teams, the environment, the deployer's roles)."""

    recording: Recording
    stack: StackConfig
    baseline: Recording | None = None  # with `plan --against`: what is deployed now (the baseline's recording)


Family = Callable[[Trip], Iterable[Journey]]


def _families() -> tuple[Family, ...]:
    """Every family of journeys the plan walks. Each module owns one; add a module's `walk` here."""
    from trainstack.journeys import access, alerts, day2, images, members, team_job  # each imports this module's types

    return (images.walk, team_job.walk, members.walk, alerts.walk, day2.walk, access.walk)


def walk(
    recording: Recording,
    stack: StackConfig,
    families: Iterable[Family] | None = None,
    baseline: Recording | None = None,
) -> tuple[Journey, ...]:
    """Every journey of every family over one plan, in the report's order (by kind, then as walked); with a
    `baseline` (`plan --against`), also over the change from it."""
    trip = Trip(recording=recording, stack=stack, baseline=baseline)
    found = [journey for family in (_families() if families is None else families) for journey in family(trip)]
    order = {kind: i for i, kind in enumerate(KINDS)}
    return tuple(sorted(found, key=lambda j: order[j.kind]))
