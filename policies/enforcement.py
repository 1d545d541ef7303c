"""What the pack enforces whatever `--policy-pack-config` says: the floors of policies/rules/floors.py, at their
levels (`floor_level`) and with the committed thresholds of the stack's environment (`floor_settings`).

The pack knows its stack: the Python language host starts it with `PULUMI_STACK` set (pulumi/pulumi v3.259.0,
sdk/python/cmd/pulumi-language-python/main.go RunPlugin), and the stack's name decides its environment
(`environment_of_stack`). Without a stack name (a pack served outside a deployment) prod's floors apply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .rules.floors import FLOORS, environment_of_stack, floor_level

CONFIG_DIR = Path(__file__).resolve().parent / "config"

__all__ = ["FLOORS", "environment", "floor_level", "floor_settings"]


def environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """The environment of the stack the pack serves (`PULUMI_STACK`), or None outside a deployment."""
    return environment_of_stack(environ.get("PULUMI_STACK", ""))


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
