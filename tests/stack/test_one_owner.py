"""Every object a real deployment creates has one owner in the program: two components writing the same
Kubernetes object, or two Pod Identity associations for one service account, plan fine under mocks and fail
in `pulumi up` (AlreadyExists; EKS ResourceInUseException). Properties of every shipped stack."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import STACKS, recording


@pytest.mark.parametrize("stack", STACKS)
def test_no_kubernetes_object_is_written_twice(stack: str) -> None:
    seen = Counter()
    for r in recording(stack).resources:
        if r.custom and r.type.startswith("kubernetes:") and r.type != "kubernetes:helm.sh/v3:Release":
            metadata = r.inputs.get("metadata", {})
            seen[(r.type, metadata.get("namespace", ""), metadata.get("name", r.name))] += 1
    assert [key for key, count in seen.items() if count > 1] == []


@pytest.mark.parametrize("stack", STACKS)
def test_one_pod_identity_association_and_access_entry_per_principal(stack: str) -> None:
    associations = Counter(
        (r.inputs.get("namespace"), r.inputs.get("serviceAccount"))
        for r in recording(stack).by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    )
    entries = Counter(r.inputs.get("principalArn") for r in recording(stack).by_type("aws:eks/accessEntry:AccessEntry"))
    assert [key for key, count in associations.items() if count > 1] == []
    assert [key for key, count in entries.items() if count > 1] == []
