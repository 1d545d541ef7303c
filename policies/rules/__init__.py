"""The trainstack policy rules, one function per rule, grouped by domain.

`POLICIES` is what both the CrossGuard pack (`policies/__main__.py`) and the offline evaluator
(`trainstack/review.py`) run. Each policy carries its id (`name`), why (`description`) and `severity`;
enforcement levels and thresholds per environment live in `policies/config/<env>.json`.
"""

from __future__ import annotations

from types import ModuleType

from pulumi_policy import Policy

from . import cost, defence, eks, floors, gpu, iam, kubernetes, network, nodes, sagemaker, security, storage

MODULES: tuple[ModuleType, ...] = (
    eks,
    nodes,
    iam,
    network,
    storage,
    gpu,
    kubernetes,
    sagemaker,
    security,
    cost,
    defence,
    floors,
)


def _collect(module: ModuleType) -> list[Policy]:
    return [value for value in vars(module).values() if isinstance(value, Policy)]


POLICIES: list[Policy] = [policy for module in MODULES for policy in _collect(module)]
BY_NAME: dict[str, Policy] = {policy.name: policy for policy in POLICIES}
# Stable ids: the docs/policies.md table, the config files and the review name rules by these.
DOMAINS: dict[str, str] = {
    policy.name: module.__name__.rsplit(".", 1)[-1] for module in MODULES for policy in _collect(module)
}

__all__ = ["BY_NAME", "DOMAINS", "MODULES", "POLICIES"]
