"""The stack outputs other stacks read (docs/stack-references.md): exported by every stack that has the
resource, and the document lists exactly the names a stack can export."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, STACKS, recording

DOC = ROOT / "docs" / "stack-references.md"
FOR_OTHER_STACKS = {
    "vpc_id",
    "private_subnet_ids",
    "cluster_name",
    "cluster_endpoint",
    "cluster_security_group_id",
    "oidc_issuer_url",
    "oidc_provider_arn",
    "efa_security_group_id",
    "workload_security_group_id",
    "datasets_bucket",
    "datasets_bucket_arn",
    "checkpoints_bucket",
    "checkpoints_bucket_arn",
    "data_kms_key_arn",
    "secrets_kms_key_arn",
    "kubeconfig",
}
LUSTRE = {"fsx_file_system_id", "fsx_dns_name", "fsx_mount_name", "fsx_security_group_id"}


def documented() -> set[str]:
    table = DOC.read_text().split("```")[0]
    return set(re.findall(r"`([a-z0-9_]+)`", table)) - {"None"}


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_exports_what_other_stacks_need(stack: str) -> None:
    outputs = recording(stack).outputs
    missing = FOR_OTHER_STACKS - set(outputs)
    assert not missing, missing
    if recording(stack).by_type("aws:fsx/lustreFileSystem:LustreFileSystem"):
        assert set(outputs) >= LUSTRE
    assert outputs["cluster_security_group_id"] and outputs["oidc_issuer_url"]


def test_the_document_lists_exactly_these_outputs() -> None:
    assert documented() == FOR_OTHER_STACKS | LUSTRE
