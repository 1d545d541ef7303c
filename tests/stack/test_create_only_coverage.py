"""Every cloud resource type the shipped stacks create has its create-only inputs accounted for: a CloudFormation
equivalent, or an explicit Terraform ForceNew list (trainstack/create_only.py); a new type cannot slip past."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS, recording
from trainstack.create_only import AWS_NATIVE_TYPES, CFN_EQUIVALENT, NO_CFN_TYPE, REPLACE_ON_CHANGE

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


@pytest.mark.slow
def test_every_created_cloud_type_is_mapped() -> None:
    created = {r.type for name in STACKS for r in recording(name).resources if r.custom}
    aws = {t for t in created if t.startswith("aws:")}
    assert aws - set(CFN_EQUIVALENT) - set(NO_CFN_TYPE) == set()
    assert {t for t in created if t.startswith("aws-native:")} <= set(AWS_NATIVE_TYPES)
    # No dead entries either: the map names only what trainstack creates.
    assert set(CFN_EQUIVALENT) | set(NO_CFN_TYPE) <= aws
    assert {t for t in REPLACE_ON_CHANGE if t.startswith("kubernetes:")} <= created
