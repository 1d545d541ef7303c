"""Fixtures for the lifecycle tests in boxes: skipped where boxes cannot run (not root, or Slurm's Debian packages
missing: `make slurm-tools`), except under TRAINSTACK_REQUIRE_SLURM=1 (CI, .ci/run), where that is a failure.

TRAINSTACK_LIFECYCLE_BUNDLE=<directory> runs the tests against another copy of components/sagemaker/lifecycle/slurm (an
older commit's scripts, to show which test a change fixed)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.lifecycle.box import missing_tools
from tests.lifecycle.cluster import Artifacts, Node, artifacts, make_node
from tests.tiers import require

BOX_COST = "starts a node in a box (namespaces, the lifecycle's processes, Slurm's daemons)"


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "boxes need root (namespaces, chroot, other users' files)"
    missing = missing_tools()
    return f"missing {', '.join(missing)} (make slurm-tools)" if missing else None


@pytest.fixture(scope="session")
def box_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("TRAINSTACK_REQUIRE_SLURM") == "1":
            pytest.fail(f"TRAINSTACK_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    return artifacts(tmp_path_factory.mktemp("box-artifacts"))


@pytest.fixture
def nodes(tmp_path: Path, box_artifacts: Artifacts) -> Iterator[Callable[..., Node]]:
    """make_node for this test; every node's box is closed (all its processes ended) at the end of the test."""
    made: list[Node] = []

    def make(group: str, spec: object, lustre: Path, **options: object) -> Node:
        require("e2e", BOX_COST)
        if bundle := os.environ.get("TRAINSTACK_LIFECYCLE_BUNDLE"):
            options.setdefault("bundle", Path(bundle))
        node = make_node(tmp_path, group, spec, lustre, box_artifacts, **options)  # type: ignore[arg-type]
        made.append(node)
        return node

    yield make
    for node in reversed(made):
        node.box.close()
