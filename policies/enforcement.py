"""What the pack enforces whatever `--policy-pack-config` says: the floors, the rules marked `floor=<environment>`
(policies/rules/base.py), at least mandatory from that environment on (`floor_level`), with the committed thresholds
of the stack's environment (`floor_settings`).

Without `--policy-pack-config` every rule of the pack runs at the pack's own level (advisory), and a config file
can set any rule to advisory or disabled. A floor is held in code instead: in each environment from its own on
(dev, then staging, then prod) the pack enforces it at least at `mandatory`, whatever the config says or without
one (policies/__main__.py applies this to the levels the CLI hands the pack; trainstack/review.py to the offline
review), and in every environment its thresholds are the committed policies/config/<environment>.json's, never
another file's.

The pack knows its stack: the Python language host starts it with `PULUMI_STACK` set (pulumi/pulumi v3.259.0,
sdk/python/cmd/pulumi-language-python/main.go RunPlugin), and the stack's name decides its environment
(`environment_of_stack`). Without a stack name (a pack served outside a deployment) prod's floors apply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from . import waivers
from .facts import ENVIRONMENTS
from .rules import BY_NAME
from .rules.base import environment_of_stack, floor_of

CONFIG_DIR = Path(__file__).resolve().parent / "config"
# A stack whose environment is unknown gets the floors of the last (strictest) environment: failing closed.
STRICTEST = ENVIRONMENTS[-1]

FLOORS: frozenset[str] = frozenset(name for name, policy in BY_NAME.items() if floor_of(policy) is not None)

__all__ = [
    "FLOORS",
    "MANDATORY_FLOORS",
    "applying",
    "environment",
    "floor_level",
    "floor_settings",
    "mandatory_floors",
    "prod_never_waived",
    "served",
]


def environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """The environment of the stack the pack serves (`PULUMI_STACK`), or None outside a deployment."""
    return environment_of_stack(environ.get("PULUMI_STACK", ""))


def _held_in(environment: str) -> frozenset[str]:
    rank = ENVIRONMENTS.index(environment)
    return frozenset(
        name
        for name, policy in BY_NAME.items()
        if (floor := floor_of(policy)) is not None and ENVIRONMENTS.index(floor) <= rank
    )


# The floors held mandatory per environment: each floor in its own environment and every later one.
MANDATORY_FLOORS: dict[str, frozenset[str]] = {environment: _held_in(environment) for environment in ENVIRONMENTS}


def mandatory_floors(environment: str | None) -> frozenset[str]:
    """The rules held at least mandatory in `environment` (prod's for an unknown environment)."""
    return MANDATORY_FLOORS.get(environment or "", MANDATORY_FLOORS[STRICTEST])


def floor_level(rule: str, environment: str | None, level: str) -> str:
    """The level `rule` runs at in `environment` given the configured `level`: raised to mandatory where the rule
    is a floor there. A stack whose environment is unknown gets prod's floors (failing closed)."""
    if rule in mandatory_floors(environment) and level not in ("mandatory", "remediate"):
        return "mandatory"
    return level


def floor_settings(rule: str, environment: str | None, config_dir: Path = CONFIG_DIR) -> dict[str, Any] | None:
    """A floor's thresholds from the committed config of `environment` (prod's when it is unknown); None for a
    rule that is not a floor, or a config that does not set it."""
    if rule not in FLOORS:
        return None
    path = config_dir / f"{environment or 'prod'}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8")).get(rule)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, dict):
        return None
    return {key: value for key, value in entry.items() if key != "enforcementLevel"}


# ------------------------------------------------------------------------------------- what waivers may not touch


def prod_never_waived() -> tuple[frozenset[str], frozenset[str]]:
    """The rules prod never waives: its floors, and the rules of high severity."""
    severe = frozenset(
        name
        for name, policy in BY_NAME.items()
        if policy.severity is not None and policy.severity.value == waivers.UNWAIVABLE_IN_PROD_SEVERITY
    )
    return mandatory_floors(waivers.NO_FLOOR_WAIVERS_IN), severe


def served(environ: Mapping[str, str] = os.environ) -> waivers.Ledger:
    """The ledger of the pack process: it serves one stack, whose waivers and environment came with it
    (`PULUMI_CONFIG`, `PULUMI_STACK`)."""
    floors, severe = prod_never_waived()
    return waivers.Ledger(waivers.from_environment(environ), environment(environ), floors=floors, severe=severe)


@contextmanager
def applying(
    given: Sequence[waivers.Waiver], environment: str | None, on: date | None = None
) -> Generator[waivers.Ledger]:
    """`given` in force (and a fresh ledger) for the duration, judged in `environment` on day `on` (today):
    the offline review of one recording."""
    floors, severe = prod_never_waived()
    with waivers.in_force(waivers.Ledger(tuple(given), environment, on or waivers.today(), floors, severe)) as ledger:
        yield ledger
