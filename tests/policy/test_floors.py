"""Floors at their edges that the rule cases (tests/policy/test_rules.py) do not reach: a pack run without its
environment's config, and how the fleet-health floor reads Kueue's controller configuration (the YAML block
`waitForPodsReady` and its Go duration), one reading at a time."""

from __future__ import annotations

import pytest

from policies.rules.floors import _seconds, _yaml_block
from tests.policy.helpers import messages, shipped


def test_a_pack_run_without_its_environments_config_says_so_once() -> None:
    """Without policies/config/<env>.json nothing says which environment the stack must be: one finding names the
    missing config, and no stack is judged against an environment of None."""
    assert messages("stack-environment", shipped("dev")) == [
        "no environment is configured for this policy config (policies/config/<env>.json)."
    ]


KUEUE_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  timeout: 600s
  requeuingStrategy:
    backoffLimitCount: 5
integrations:
  frameworks:
  - batch/job
"""


def test_the_waitforpodsready_block_is_read_with_its_scalars_only() -> None:
    assert _yaml_block(KUEUE_CONFIG, "waitForPodsReady") == {"enable": "true", "timeout": "600s"}


def test_a_configuration_without_the_block_reads_as_none_of_it() -> None:
    assert _yaml_block("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n", "waitForPodsReady") == {}
    assert _yaml_block("", "waitForPodsReady") == {}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("600s", 600), ("10m", 600), ("1h", 3600), ("0s", 0), (None, None), ("", None), ("s", None), ("10d", None),
     ("1.5h", None), ("10", None)],
)  # fmt: skip
def test_a_timeout_is_whole_seconds_minutes_or_hours(text: str | None, seconds: float | None) -> None:
    assert _seconds(text) == seconds
