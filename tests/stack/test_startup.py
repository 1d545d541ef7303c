"""Startup cost: a plan imports only what its stack uses.

The aws-native SDK (about 250 MB on disk, a second or more to import) serves only SageMaker HyperPod, so the
program imports `components.hyperpod` inside the HyperPod branch. Checked in a fresh interpreter, the only
place where `sys.modules` says what one run imported.
"""

import subprocess
import sys

import pytest

from tests.conftest import ROOT, STACKS, stack_config

_RUN = """
import sys
from pathlib import Path
from stacks.load import load_file
from trainstack.engine import run_program
stack = sys.argv[1]
run_program(load_file(Path("stacks") / f"Pulumi.{stack}.yaml"), stack=stack)
print(sorted({name.split(".")[0] for name in sys.modules if name.startswith("pulumi_aws_native")}))
"""


@pytest.mark.slow
def test_a_stack_without_hyperpod_never_imports_the_aws_native_sdk() -> None:
    without = [name for name in STACKS if not stack_config(name).sagemaker.hyperpod.enabled]
    assert without, "no committed stack runs without HyperPod: nothing to check"
    stack = min(without, key=lambda name: len(stack_config(name).gpu_node_groups))  # the cheapest to run
    done = subprocess.run([sys.executable, "-c", _RUN, stack], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", f"{stack} imported the aws-native SDK"
