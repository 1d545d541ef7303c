"""What the program refuses to deploy although the offline plan may show it: the shipped example values.

The offline plan (the SDK's mock engine) runs the example stacks anywhere and lists their example values as
advisories; a real `pulumi preview` or `pulumi up` stops before registering anything while one remains.
"""

from __future__ import annotations

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from stacks.placeholders import find
from stacks.schema import StackConfig


def under_mock_engine() -> bool:
    """True when the program runs under `pulumi.runtime.set_mocks` (the offline plan and the tests)."""
    return isinstance(settings.get_monitor(), MockMonitor)


def refuse_placeholders(stack: StackConfig, stack_name: str) -> None:
    """Raise a RunError that lists every example value left in the stack, unless under the mock engine."""
    found = find(stack)
    if found and not under_mock_engine():
        lines = "\n".join(f"  - {p.render()}" for p in found)
        raise pulumi.RunError(
            f"stack {stack_name}: {len(found)} example value(s) must be replaced before a real deployment "
            f"(stacks/Pulumi.{stack_name}.yaml):\n{lines}"
        )
