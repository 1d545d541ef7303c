"""The trainstack policy rules, one function per rule, one module per area: the areas of the components' type
tokens (`trainstack:<area>:<Type>`: network, eks, gpu, storage, k8s, health, sagemaker, security), and `stack` for
the rules of the stack as a whole.

`POLICIES` is what both the CrossGuard pack (`policies/__main__.py`) and the offline evaluator
(`trainstack/review.py`) run, in this order: `stack` last, so `stack-waivers`, its last rule, judges what every
other rule reported. Each policy carries its id (`name`), why (`description`), `severity` and, for a floor, the
first environment that holds it (`floor`); enforcement levels and thresholds per environment live in
`policies/config/<env>.json`.
"""

from __future__ import annotations

from types import ModuleType

from pulumi_policy import Policy

from . import eks, gpu, health, k8s, network, sagemaker, security, stack, storage

MODULES: tuple[ModuleType, ...] = (network, eks, gpu, storage, k8s, health, sagemaker, security, stack)


def _collect(module: ModuleType) -> list[Policy]:
    return [value for value in vars(module).values() if isinstance(value, Policy)]


POLICIES: list[Policy] = [policy for module in MODULES for policy in _collect(module)]
BY_NAME: dict[str, Policy] = {policy.name: policy for policy in POLICIES}
# Each rule's area (its module): the docs/policies.md table's Domain column.
DOMAINS: dict[str, str] = {
    policy.name: module.__name__.rsplit(".", 1)[-1] for module in MODULES for policy in _collect(module)
}

__all__ = ["BY_NAME", "DOMAINS", "MODULES", "POLICIES"]
