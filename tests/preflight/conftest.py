"""The preflight tests' AWS: moto's server (a real AWS API emulator over HTTP) and an environment with no AWS.

- `aws_env`: no credentials, profile, config file or instance metadata reach a test (fast tier: no emulator).
- `moto`: moto's server, started once per session in this process (a thread, no new interpreter) on a free
  localhost port, emptied before each test that asks for it, stopped at the end of the session. Every client
  preflight creates reaches it through botocore's own endpoint setting, AWS_ENDPOINT_URL. Its imports and the
  backends each test builds cost 0.2 to 1 CPU-s a test, so a test that uses it is e2e (docs/testing.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.preflight.helpers import Moto, start
from tests.tiers import require

MOTO_COST = "runs moto's server (an AWS API emulator: 0.2 to 1 CPU-s of backends a test)"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Moto]:
    require("e2e", MOTO_COST)
    # moto builds every EC2 backend (one per account and region, again after each reset) with its few thousand
    # public AMIs unless told not to: about a CPU-second each, and preflight reads no AMI from EC2.
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    server = start()
    try:
        yield server
    finally:
        server.server.stop()


@pytest.fixture
def moto(moto_server: Moto, aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Moto:
    require("e2e", MOTO_COST)
    moto_server.reset()
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.url)
    return moto_server
