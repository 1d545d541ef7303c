"""URNs are what Pulumi keeps state by: they must not move unless someone decides they should.

- Each committed stack's URN set equals its golden file (`scripts/golden_urns.py` regenerates it).
- Logical names do not carry the stack's base name: a stack with another `name` has the same URNs.
- A stack deployed while logical names carried the base name (`<name>-network`, `<name>-network-vpc`, ...) moves
  to the fixed names without a replace: every such URN is an alias of the resource that now has its state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.golden_urns import GOLDEN_DIR, golden_text
from tests.conftest import edited_config, program_recording, recording, stack_config

REGENERATE = ".venv/bin/python scripts/golden_urns.py"


def test_stack_urns_match_the_golden_file(stack_name: str) -> None:
    path: Path = GOLDEN_DIR / f"{stack_name}.txt"
    want = set(path.read_text().split())
    have = {r.urn for r in recording(stack_name).resources}
    gone, new = sorted(want - have), sorted(have - want)
    assert not gone and not new, (
        f"{stack_name}: URNs changed (Pulumi deletes and recreates a resource whose URN moves, unless an alias on "
        f"the new resource names the old URN).\n  gone: {gone}\n  new:  {new}\n"
        f"If the change is intended (and aliased where state must move), regenerate with `{REGENERATE} {stack_name}`"
    )
    assert path.read_text() == golden_text(recording(stack_name)), f"not sorted or stale: run `{REGENERATE}`"


@pytest.mark.parametrize("stack", ["staging", "prod"])  # between them every component and both explicit AWS providers
@pytest.mark.e2e
def test_another_name_keeps_every_urn(stack: str) -> None:
    renamed = edited_config(stack, lambda c: c.update(name=f"{c['name']}-b"))
    before = recording(stack)
    after = program_recording(renamed, stack)
    assert [r.urn for r in after.resources] == [r.urn for r in before.resources]
    # ... while physical names follow `name` (the EKS cluster's name is the base name).
    assert after.one("aws:eks/cluster:Cluster").inputs["name"] == f"{stack_config(stack).name}-b"


def legacy_urn(urn: str, base: str) -> str:
    """The URN a resource had while every logical name started with the stack's base name: each component got
    `<base>-<component>` and each child its parent's name plus its own part, so only the last segment differs."""
    head, name = urn.rsplit("::", 1)
    return f"{head}::{base}-{name}"


def test_every_legacy_urn_is_an_alias_of_its_new_resource(stack_name: str) -> None:
    rec = recording(stack_name)
    base = stack_config(stack_name).name
    current = {r.urn for r in rec.resources}
    uncovered = [r.urn for r in rec.resources if legacy_urn(r.urn, base) not in r.aliases]
    assert not uncovered, f"{len(uncovered)} resources would be replaced on a deployed stack, e.g. {uncovered[:3]}"
    claimed = [a for r in rec.resources for a in r.aliases]
    # One old state per resource, and no alias names a resource that still exists (the engine refuses both).
    assert len(claimed) == len(set(claimed))
    assert not current & set(claimed)
