"""The contract tier: what AWS, CloudFormation and Kubernetes would refuse, checked on the recording.

The mock runtime accepts any input value, so a green plan means nothing until every input the program writes
is held against the contract of the API it becomes. Each contract is a function from the recording to the
violations it finds; `_contracts()` lists them all, and `check` runs every one on every plan. A violation names
the resource (URN), the input path (engine camelCase names, e.g. `launchTemplateData.networkInterfaces[0]`),
the value, the rule that refuses it and where the rule comes from (a botocore shape, a CloudFormation schema,
a chart's values at its pinned tag, a CRD, or the guide that states it).

Values unknown in preview (`trainstack.engine.UNKNOWN`) are never judged: a contract checks what is known.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trainstack.engine import Recording

VALUE_WIDTH = 80  # a violation shows at most this many characters of the offending value


@dataclass(frozen=True, order=True)
class ContractViolation:
    """One input a real deployment would refuse (or accept and then not work), and why."""

    urn: str
    path: str  # input path in engine (camelCase) names; "" for the resource as a whole
    value: str  # the offending value, rendered and cut to VALUE_WIDTH
    rule: str  # what is wrong and what would be valid
    source: str  # where the rule comes from: model shape, schema, chart or CRD at its tag, guide section

    @property
    def name(self) -> str:
        """The resource's logical name (the URN's last part), for compact listings."""
        return self.urn.rsplit("::", 1)[-1]

    def to_dict(self) -> dict[str, str]:
        return {"urn": self.urn, "path": self.path, "value": self.value, "rule": self.rule, "source": self.source}


def render_value(value: Any) -> str:
    """A value as JSON, cut to VALUE_WIDTH characters (a huge value never reaches a report whole)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


Contract = Callable[[Recording], Iterable[ContractViolation]]


def _contracts() -> tuple[Contract, ...]:
    """Every contract the plan runs. Each module owns one family of rules; add a module's checker here."""
    from trainstack.contracts import (  # here: each imports this module's types
        aws_models,
        aws_rules,
        cloudformation,
        compatibility,
        crds,
        helm_values,
        iam,
    )

    return (
        aws_models.check,
        cloudformation.check,
        iam.check,
        aws_rules.check,
        helm_values.check,
        crds.check,
        compatibility.check,
    )


def check(recording: Recording, contracts: Iterable[Contract] | None = None) -> tuple[ContractViolation, ...]:
    """Run every contract over `recording`: the violations, sorted and without duplicates."""
    found: set[ContractViolation] = set()
    for contract in _contracts() if contracts is None else contracts:
        found.update(contract(recording))
    return tuple(sorted(found))
