"""A `secure:` value inside trainstack:cluster is refused under the real CLI too, not only offline.

Pulumi marks a config object that contains a secure value as secret as a whole (sdk/go/common/resource/config
object.go: "Secure returns true if the receiver is a secure string or a composite value that contains a secure
string") and the Python language host passes the program its key in PULUMI_CONFIG_SECRET_KEYS (pulumi-language-
python constructConfigSecretKeys). The offline reader refuses the `secure:` value itself (tests/hostile/
test_yaml_reader.py); this is the program's own refusal, for `pulumi up`.
"""

from __future__ import annotations

import json

import pytest

from stacks.load import FULL_KEY
from tests.conftest import stack_config
from trainstack.engine import run_program


@pytest.mark.e2e
def test_the_program_refuses_a_secret_cluster_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps([FULL_KEY, "aws:secretKey"]))
    with pytest.raises(Exception, match=r"encrypted Pulumi secret \(`secure:`\).*plain text") as raised:
        run_program(stack_config("dev"), stack_name="dev")
    assert FULL_KEY in str(raised.value)


@pytest.mark.e2e
def test_other_secret_keys_are_not_ours_to_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["aws:secretKey"]))
    assert run_program(stack_config("dev"), stack_name="dev").resources
