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


def placeholder_refusal(stack: StackConfig, stack_name: str) -> str | None:
    """What `pulumi up` stops with while example values remain in the stack (docs/deploy.md shows it), or None."""
    found = find(stack)
    if not found:
        return None
    lines = "\n".join(f"  - {p.render()}" for p in found)
    return (
        f"stack {stack_name}: {len(found)} example value(s) must be replaced before a real deployment "
        f"(stacks/Pulumi.{stack_name}.yaml):\n{lines}"
    )


def refuse_placeholders(stack: StackConfig, stack_name: str) -> None:
    """Raise a RunError that lists every example value left in the stack, unless under the mock engine."""
    message = placeholder_refusal(stack, stack_name)
    if message is not None and not under_mock_engine():
        raise pulumi.RunError(message)
