"""The S3 and FSx rules one check at a time: each case breaks exactly one thing and asserts the message of the
check that must see it, so switching any one check off fails a test. Cases start from the shared staging
recordings (the shipped stack, and the scenario with an EFA-enabled file system)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import recording
from tests.policy.helpers import messages, mutated, scenario, without
from trainstack.engine import RecordedResource, Recording

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
DATASETS = "data-datasets"


def _named(name: str) -> Callable[[RecordedResource], bool]:
    return lambda r: r.name == name


def _with_dependencies(
    source: Recording, match: str, prop: str, edit: Callable[[tuple[str, ...]], tuple[str, ...]]
) -> Recording:
    return mutated(source, match, dependencies=lambda deps: deps.update({prop: edit(deps.get(prop, ()))}))


def _workload_group(source: Recording) -> str:
    return next(r.urn for r in source.resources if r.name.endswith("workload-sg"))


def test_a_bucket_without_a_public_access_block_is_reported() -> None:
    source = without(recording("staging"), _named(f"{DATASETS}-public-access-block"))
    assert any("has no BucketPublicAccessBlock" in m for m in messages("s3-public-access-block", source))


def test_sse_kms_without_a_bucket_key_is_reported_on_its_own() -> None:
    def no_bucket_key(inputs: dict) -> None:
        for rule in inputs["rules"]:
            rule["bucketKeyEnabled"] = False

    source = mutated(recording("staging"), f"{DATASETS}-encryption", no_bucket_key)
    found = messages("s3-sse-kms", source)
    assert len(found) == 1 and "uses SSE-KMS without bucketKeyEnabled" in found[0], found


def test_a_bucket_without_any_versioning_resource_is_reported() -> None:
    source = without(recording("staging"), _named(f"{DATASETS}-versioning"))
    assert any("has no BucketVersioning with status Enabled" in m for m in messages("s3-versioning", source))


@pytest.mark.e2e
def test_an_efa_file_system_that_is_not_persistent_2_is_reported() -> None:
    source = mutated(scenario("staging-fsx-efa"), FSX, lambda i: i.update(deploymentType="PERSISTENT_1"))
    assert messages("fsx-efa-prereqs", source) == [
        f"{next(r.name for r in source.resources if r.type == FSX)}: efaEnabled needs deploymentType PERSISTENT_2."
    ]


@pytest.mark.e2e
def test_one_self_allowing_group_among_the_file_systems_groups_is_enough() -> None:
    source = scenario("staging-fsx-efa")
    extra = _with_dependencies(source, FSX, "securityGroupIds", lambda groups: (*groups, _workload_group(source)))
    assert messages("fsx-efa-prereqs", extra) == []


def test_a_file_system_with_no_security_group_of_the_stack_is_reported() -> None:
    source = _with_dependencies(recording("staging"), FSX, "securityGroupIds", lambda _: ())
    found = messages("fsx-lustre-ports", source)
    assert len(found) == 1 and "no security group of the stack is attached" in found[0], found


def _in_an_existing_vpc(gpu_subnet: str | None = None) -> Recording:
    """Staging as if its subnets were an existing VPC's: the file system names a subnet id that is not a resource
    of the stack (so its AZ is unknown here); the GPU group uses the same subnet id, or `gpu_subnet`."""
    source = _with_dependencies(recording("staging"), FSX, "subnetIds", lambda _: ())
    fs_subnet = next(r.inputs["subnetIds"] for r in source.resources if r.type == FSX)
    subnet = gpu_subnet or (fs_subnet if isinstance(fs_subnet, str) else fs_subnet[0])
    return mutated(source, "-gpu-p5-ng", lambda i: i.update(subnetIds=[subnet]))


def test_gpu_groups_in_the_file_systems_own_subnet_of_an_existing_vpc_pass() -> None:
    assert messages("fsx-same-az-as-gpu", _in_an_existing_vpc()) == []


def test_gpu_groups_in_another_subnet_of_an_existing_vpc_are_reported() -> None:
    found = messages("fsx-same-az-as-gpu", _in_an_existing_vpc("subnet-0fedcba9876543210"))
    assert len(found) == 1 and "cannot check that they share its AZ" in found[0], found
