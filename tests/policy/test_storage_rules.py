"""Storage rules (policies/rules/storage.py) run alone through the direct harness (test_direct.py): one branch at
a time."""

from __future__ import annotations

from typing import Any

from policies.facts import DATASETS_CLAIM, FSX_CSI_DRIVER, READ_ONLY_MOUNT_OPTION
from policies.facts_generated import BUCKET_LIFECYCLE_CONFIGURATION, FSX_LUSTRE, PERSISTENT_VOLUME, S3_BUCKETS
from policies.rules.storage import fsx_datasets_read_only, fsx_no_squash_breadth, s3_abort_incomplete_uploads
from tests.policy.test_direct import judge_resource, judge_stack, resource


def _volume(claim: str, *, read_only: bool, options: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "pv-x"},
        "spec": {
            "csi": {"driver": FSX_CSI_DRIVER, "readOnly": read_only},
            "accessModes": ["ReadOnlyMany" if read_only else "ReadWriteMany"],
            "claimRef": {"name": claim, "namespace": "research"},
            "mountOptions": options,
        },
    }


def test_a_writable_datasets_volume_is_reported_even_with_the_read_only_mount_option() -> None:
    volume = _volume(DATASETS_CLAIM, read_only=False, options=[READ_ONLY_MOUNT_OPTION])
    assert judge_resource(fsx_datasets_read_only, PERSISTENT_VOLUME, volume).messages == [
        "the datasets volume of research is writable."
    ]


def test_a_read_only_datasets_volume_with_the_mount_option_passes_and_another_writable_one_is_skipped() -> None:
    volume = _volume(DATASETS_CLAIM, read_only=True, options=[READ_ONLY_MOUNT_OPTION])
    assert judge_resource(fsx_datasets_read_only, PERSISTENT_VOLUME, volume).reports == []
    other = _volume("fsx-research", read_only=False, options=[])
    assert judge_resource(fsx_datasets_read_only, PERSISTENT_VOLUME, other).skipped


def _bucket_with_rule(days: int) -> list[Any]:
    bucket = resource(S3_BUCKETS[0], "data", {"bucket": "data"})
    rule = {"id": "abort", "status": "Enabled", "abortIncompleteMultipartUpload": {"daysAfterInitiation": days}}
    lifecycle = resource(BUCKET_LIFECYCLE_CONFIGURATION, "data-lc", {"rules": [rule]}, {"bucket": [bucket]})
    return [bucket, lifecycle]


def test_a_lifecycle_rule_aborts_stale_uploads_after_a_day_or_more_not_after_none() -> None:
    """DaysAfterInitiation counts whole days from 1 (S3 API Reference, AbortIncompleteMultipartUpload)."""
    assert judge_stack(s3_abort_incomplete_uploads, _bucket_with_rule(1)).reports == []
    assert len(judge_stack(s3_abort_incomplete_uploads, _bucket_with_rule(0)).reports) == 1


def test_the_widest_exemption_named_is_a_readable_one_even_after_an_unreadable_one() -> None:
    props = {"rootSquashConfiguration": {"noSquashNids": ["10.0.1.x@tcp", "10.0.1.6@tcp"]}}
    [message] = judge_resource(fsx_no_squash_breadth, FSX_LUSTRE, props).messages
    assert "exempts 1 client addresses (storage.fsx.no_squash_nids, widest 10.0.1.6@tcp)" in message
    assert "unreadable NIDs ['10.0.1.x@tcp']" in message
