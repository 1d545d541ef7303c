"""Startup cost: a plan imports only what its stack uses.

The aws-native SDK (about 250 MB on disk, a second or more to import) serves only SageMaker HyperPod, so the
program imports `components.sagemaker.hyperpod` inside the HyperPod branch. Checked in a fresh interpreter, the only
place where the imports say what one run needed: `python -X importtime -m trainstack plan` names every module
it imports, and the same process serves the byte-for-byte test in test_plan_cli.py (tests/conftest.py
`fresh_plan`).
"""

import pytest

from tests.conftest import STACKS, fresh_plan, stack_config


@pytest.mark.e2e
def test_a_stack_without_hyperpod_never_imports_the_aws_native_sdk() -> None:
    without = [name for name in STACKS if not stack_config(name).sagemaker.hyperpod.enabled]
    assert without, "no committed stack runs without HyperPod: nothing to check"
    stack = "prod" if "prod" in without else without[0]  # prod's process is run anyway (test_plan_cli.py)
    done = fresh_plan(stack)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trainstack.engine" in done.imported  # the importtime list is read, and it is whole
    assert not {name for name in done.imported if name.split(".")[0] == "pulumi_aws_native"}, (
        f"{stack} imported the aws-native SDK"
    )
