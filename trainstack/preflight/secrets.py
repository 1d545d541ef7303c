"""The stack's secrets-provider KMS key (KMS): `pulumi stack init --secrets-provider awskms://...` and every later
`pulumi up` need it to exist, be enabled and encrypt.

The key comes from the stack file's `secretsprovider` (written by `pulumi stack init`); a stack file without one
is checked for the alias the README's deploy steps create, `alias/trainstack-<stack>` in the stack's region.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from botocore.exceptions import ClientError

from stacks.reader import UnreadableFile, YamlRefused, parse, read_text
from trainstack.preflight.aws import error_code
from trainstack.preflight.context import Context, attempt
from trainstack.preflight.model import Check, Status

FAMILY = "secrets"
KEY = "secretsprovider"


def default_provider(stack: str, region: str) -> str:
    """The secrets provider README.md's deploy steps create the stack with."""
    return f"awskms://alias/trainstack-{stack}?region={region}"


def provider_of(stack_file: Path | None) -> str | None:
    """The stack file's top-level `secretsprovider`, or None."""
    if stack_file is None:
        return None
    try:
        document = parse(read_text(stack_file)).document
    except (UnreadableFile, YamlRefused):
        return None
    value = document.get(KEY) if isinstance(document, dict) else None
    return value if isinstance(value, str) else None


def kms_key(provider: str, default_region: str) -> tuple[str, str] | None:
    """(key id, region) of an `awskms://` provider: `awskms://alias/name?region=r`, `awskms://<key id>`,
    `awskms:///arn:aws:kms:...` (the Go CDK URL forms Pulumi takes); None for another provider."""
    url = urlsplit(provider)
    if url.scheme != "awskms":
        return None
    key = (url.netloc + url.path).lstrip("/")
    region = parse_qs(url.query).get("region", [""])[0]
    if not region and key.startswith("arn:"):
        region = key.split(":")[3]
    return key, region or default_region


def checks(ctx: Context) -> list[Check]:
    declared = provider_of(ctx.stack_file)
    provider = declared or default_provider(ctx.stack_name, ctx.stack.region)
    origin = "the stack file's secretsprovider" if declared else "no secretsprovider yet: README's `pulumi stack init`"
    title = "the secrets provider's KMS key exists and is enabled"
    target = kms_key(provider, ctx.stack.region)
    if target is None:
        return [
            Check(
                id="secrets.provider-key",
                family=FAMILY,
                title=title,
                status=Status.SKIPPED,
                asked="(not asked)",
                answer=f"{KEY} {provider.split('://', 1)[0]}:// is not AWS KMS",
                key=KEY,
            )
        ]
    key_id, region = target
    asked = f"kms:DescribeKey {key_id} ({region})"

    def judge() -> Check:
        try:
            meta = ctx.account.ask(FAMILY, "kms", "DescribeKey", region=region, KeyId=key_id)["KeyMetadata"]
        except ClientError as error:
            if error_code(error) != "NotFoundException":
                raise
            return Check(
                id="secrets.provider-key",
                family=FAMILY,
                title=title,
                status=Status.FAILED,
                asked=asked,
                answer=f"{key_id} does not exist in {region} ({origin}): `pulumi stack init` and every `pulumi up` "
                "need it",
                action=f"aws kms create-alias --alias-name {key_id} --target-key-id <key id> --region {region}"
                if key_id.startswith("alias/")
                else "point secretsprovider at an existing key",
                key=KEY,
            )
        problems: list[str] = []
        if meta.get("KeyState") != "Enabled":
            problems.append(f"its state is {meta.get('KeyState')}")
        # KMS CreateKey's defaults where the answer leaves them out.
        usage, spec = meta.get("KeyUsage") or "ENCRYPT_DECRYPT", meta.get("KeySpec") or "SYMMETRIC_DEFAULT"
        if usage != "ENCRYPT_DECRYPT" or spec != "SYMMETRIC_DEFAULT":
            problems.append(f"it is {spec} for {usage}, not a symmetric encryption key")
        return Check(
            id="secrets.provider-key",
            family=FAMILY,
            title=title,
            status=Status.FAILED if problems else Status.PASSED,
            asked=asked,
            answer=f"{key_id} ({origin}) is {meta.get('Arn')}, {meta.get('KeyState')}"
            + (": " + "; ".join(problems) if problems else ""),
            action="enable the key (aws kms enable-key) or use a symmetric encryption key" if problems else "",
            key=KEY,
        )

    return [attempt(FAMILY, "secrets.provider-key", title, KEY, asked, judge)]
