"""moto's server for the preflight tests: started once per session in this process (a thread, no new interpreter)
on a free localhost port, emptied before each test that asks for it, stopped at the end of the session. Every
client preflight creates reaches it through botocore's own endpoint setting, AWS_ENDPOINT_URL."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.preflight.helpers import Moto, start


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Moto]:
    # moto builds every EC2 backend (one per account and region, again after each reset) with its few thousand
    # public AMIs unless told not to: about a CPU-second each, and preflight reads no AMI from EC2.
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    server = start()
    try:
        yield server
    finally:
        server.server.stop()


@pytest.fixture
def moto(moto_server: Moto, monkeypatch: pytest.MonkeyPatch) -> Moto:
    moto_server.reset()
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.url)
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return moto_server
