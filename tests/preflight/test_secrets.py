"""Preflight's secrets-provider check one case at a time: which KMS key the stack file names (or README's default),
in which region, and what KMS says of it (botocore's Stubber holds each request and answer to KMS's model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conftest import stack_config, write_stack
from tests.preflight import helpers as h
from trainstack.preflight import secrets
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context
from trainstack.preflight.model import Status

pytestmark = pytest.mark.usefixtures("aws_env")

KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def context(kms: Any = None, stack_file: Path | None = None) -> Context:
    stack = stack_config("dev")
    overrides = {} if kms is None else {(secrets.FAMILY, "kms"): kms}
    account = Account(stack.region, session=h.session(), overrides=overrides)
    caller = "arn:aws:sts::111122223333:assumed-role/ml-platform-admin/preflight"
    return Context(stack, "dev", account, "111122223333", caller, stack_file, h.NOW)


def stack_file(tmp_path: Path, provider: Any) -> Path:
    return write_stack(tmp_path, "dev", edit_document=lambda d: d.update(secretsprovider=provider))


def key(**metadata: Any) -> dict[str, Any]:
    """DescribeKey's answer (KMS API Reference, KeyMetadata) for a symmetric encryption key unless told otherwise."""
    found = {
        "KeyId": "1234abcd-12ab-34cd-56ef-1234567890ab",
        "Arn": KEY_ARN,
        "KeyState": "Enabled",
        "KeyUsage": "ENCRYPT_DECRYPT",
        "KeySpec": "SYMMETRIC_DEFAULT",
    }
    return {"KeyMetadata": {k: v for k, v in (found | metadata).items() if v is not None}}


def ask(answer: dict[str, Any], key_id: str = "alias/trainstack-dev", stack_file: Path | None = None) -> Any:
    kms, stub = h.stubbed("kms", "us-east-1")
    stub.add_response("describe_key", answer, {"KeyId": key_id})
    [found] = secrets.checks(context(kms, stack_file))
    stub.assert_no_pending_responses()
    return found


# ----------------------------------------------------------------------------------------- which key, where


def test_the_default_provider_is_the_alias_the_readme_creates() -> None:
    assert secrets.default_provider("prod", "eu-west-1") == "awskms://alias/trainstack-prod?region=eu-west-1"


@pytest.mark.parametrize(
    ("provider", "target"),
    [
        ("awskms://alias/pulumi-secrets?region=us-west-2", ("alias/pulumi-secrets", "us-west-2")),
        ("awskms://1234abcd-12ab-34cd-56ef-1234567890ab", ("1234abcd-12ab-34cd-56ef-1234567890ab", "us-east-1")),
        (
            f"awskms:///{KEY_ARN.replace('us-east-1', 'eu-west-1')}",
            (KEY_ARN.replace("us-east-1", "eu-west-1"), "eu-west-1"),
        ),
        (f"awskms:///{KEY_ARN}?region=us-west-2", (KEY_ARN, "us-west-2")),  # the URL's region wins
    ],
)
def test_an_awskms_provider_names_its_key_and_region(provider: str, target: tuple[str, str]) -> None:
    assert secrets.kms_key(provider, "us-east-1") == target


@pytest.mark.parametrize(
    "provider", ["passphrase", "default", "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k"]
)
def test_a_provider_that_is_not_awskms_names_no_key(provider: str) -> None:
    assert secrets.kms_key(provider, "us-east-1") is None


def test_the_stack_files_provider_is_read_when_it_is_a_string(tmp_path: Path) -> None:
    assert secrets.provider_of(None) is None
    assert secrets.provider_of(stack_file(tmp_path, "awskms://alias/x")) == "awskms://alias/x"
    assert secrets.provider_of(stack_file(tmp_path, 42)) is None
    assert secrets.provider_of(write_stack(tmp_path, "dev")) is None  # `pulumi stack init` has not run yet


def test_a_stack_file_preflight_cannot_read_names_no_provider(tmp_path: Path) -> None:
    assert secrets.provider_of(tmp_path / "Pulumi.absent.yaml") is None
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text("secretsprovider: [unclosed\n")
    assert secrets.provider_of(broken) is None
    listed = tmp_path / "Pulumi.list.yaml"
    listed.write_text("- secretsprovider: awskms://alias/x\n")
    assert secrets.provider_of(listed) is None


# ------------------------------------------------------------------------------------------ what KMS says


def test_without_a_stack_file_readmes_alias_is_asked_in_the_stacks_region() -> None:
    found = ask(key())
    assert (found.id, found.family, found.key) == ("secrets.provider-key", "secrets", "secretsprovider")
    assert (found.status, found.action) == (Status.PASSED, "")
    assert found.asked == "kms:DescribeKey alias/trainstack-dev (us-east-1)"
    assert (
        found.answer
        == f"alias/trainstack-dev (no secretsprovider yet: README's `pulumi stack init`) is {KEY_ARN}, Enabled"
    )


def test_the_stack_files_provider_is_asked_and_named_as_its_origin(tmp_path: Path) -> None:
    path = stack_file(tmp_path, f"awskms:///{KEY_ARN}")
    found = ask(key(), key_id=KEY_ARN, stack_file=path)
    assert found.status is Status.PASSED and found.asked == f"kms:DescribeKey {KEY_ARN} (us-east-1)"
    assert found.answer.startswith(f"{KEY_ARN} (the stack file's secretsprovider) is ")


def test_a_provider_that_is_not_kms_is_skipped_without_asking(tmp_path: Path) -> None:
    kms, _ = h.stubbed("kms", "us-east-1")  # no answers: any call fails the test
    [found] = secrets.checks(context(kms, stack_file(tmp_path, "passphrase")))
    assert (found.id, found.status, found.key, found.asked) == (
        "secrets.provider-key",
        Status.SKIPPED,
        "secretsprovider",
        "(not asked)",
    )
    assert found.answer == "secretsprovider passphrase:// is not AWS KMS"


def test_a_missing_alias_fails_with_the_command_that_creates_it() -> None:
    kms, stub = h.stubbed("kms", "us-east-1")
    stub.add_client_error("describe_key", "NotFoundException", "Alias is not found.", 400)
    [found] = secrets.checks(context(kms))
    assert found.status is Status.FAILED and found.key == "secretsprovider"
    assert found.answer.startswith("alias/trainstack-dev does not exist in us-east-1 (no secretsprovider yet")
    assert found.action == (
        "aws kms create-alias --alias-name alias/trainstack-dev --target-key-id <key id> --region us-east-1"
    )
    assert found.asked == "kms:DescribeKey alias/trainstack-dev (us-east-1)"


def test_a_missing_key_id_fails_asking_for_an_existing_key(tmp_path: Path) -> None:
    kms, stub = h.stubbed("kms", "us-east-1")
    stub.add_client_error("describe_key", "NotFoundException", http_status_code=400)
    [found] = secrets.checks(context(kms, stack_file(tmp_path, f"awskms:///{KEY_ARN}")))
    assert found.status is Status.FAILED and found.action == "point secretsprovider at an existing key"


def test_a_kms_error_other_than_not_found_is_not_read_as_a_missing_key() -> None:
    kms, stub = h.stubbed("kms", "us-east-1")
    stub.add_client_error("describe_key", "KMSInternalException", http_status_code=500)
    with pytest.raises(ClientError, match="KMSInternalException"):
        secrets.checks(context(kms))
    kms, stub = h.stubbed("kms", "us-east-1")
    stub.add_client_error("describe_key", "AccessDeniedException", http_status_code=400)
    [denied] = secrets.checks(context(kms))
    assert (denied.id, denied.status, denied.key) == ("secrets.provider-key", Status.ERROR, "secretsprovider")


@pytest.mark.parametrize("state", ["Disabled", "PendingDeletion", "PendingImport"])
def test_a_key_that_is_not_enabled_fails(state: str) -> None:
    found = ask(key(KeyState=state))
    assert found.status is Status.FAILED and found.answer.endswith(f"{state}: its state is {state}")
    assert found.action == "enable the key (aws kms enable-key) or use a symmetric encryption key"


@pytest.mark.parametrize(
    ("usage", "spec"),
    [
        ("ENCRYPT_DECRYPT", "RSA_2048"),
        ("GENERATE_VERIFY_MAC", "SYMMETRIC_DEFAULT"),
        ("GENERATE_VERIFY_MAC", "HMAC_256"),
    ],
)
def test_a_key_that_is_not_for_symmetric_encryption_fails(usage: str, spec: str) -> None:
    found = ask(key(KeyUsage=usage, KeySpec=spec))
    assert found.status is Status.FAILED
    assert found.answer.endswith(f"Enabled: it is {spec} for {usage}, not a symmetric encryption key")


def test_a_key_answer_without_usage_or_spec_is_kmss_default_key() -> None:
    assert ask(key(KeyUsage=None, KeySpec=None)).status is Status.PASSED
    both = ask(key(KeyState="Disabled", KeySpec="RSA_4096"))
    assert both.answer.endswith(
        "Disabled: its state is Disabled; it is RSA_4096 for ENCRYPT_DECRYPT, not a symmetric encryption key"
    )
