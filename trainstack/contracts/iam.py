"""Every IAM policy document the program writes: the policy grammar, size quotas, and parliament's linter.

Documents checked: role trust policies (`aws:iam/role:Role` assumeRolePolicy), inline and managed permission
policies, KMS key policies and S3 bucket policies. Three layers:

- The grammar of the IAM JSON policy language (IAM User Guide, "IAM JSON policy element reference"): top-level
  and statement elements, Effect, exactly one of Action/NotAction, what each kind of policy must and must not
  carry (a trust policy has a Principal and no Resource; a permission policy a Resource and no Principal; a
  resource policy both), Sid characters and uniqueness.
- Size quotas the services enforce (sources next to `MAX_CHARACTERS`).
- parliament (duo-labs, pinned in pyproject), which knows every service's actions, resource ARN formats and
  condition keys: unknown actions and prefixes, malformed ARNs, resources that do not fit the action, condition
  keys the service does not send for the action, unknown operators.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
import importlib.util
import json
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from trainstack.contracts import ContractViolation, render_value
from trainstack.engine import UNKNOWN, Recording
from trainstack.tokens import BUCKET_POLICY, IAM_POLICY, IAM_ROLE, IAM_ROLE_POLICY, KMS_KEY


class PolicyKind(StrEnum):
    TRUST = "trust"  # who may assume a role
    IDENTITY = "identity"  # what a role may do
    RESOURCE = "resource"  # who may use a resource (KMS key, S3 bucket)


# Resource type -> (input holding the document, kind, quota key).
DOCUMENTS: dict[str, tuple[str, PolicyKind, str]] = {
    IAM_ROLE: ("assumeRolePolicy", PolicyKind.TRUST, "trust"),
    IAM_ROLE_POLICY: ("policy", PolicyKind.IDENTITY, "inline"),
    IAM_POLICY: ("policy", PolicyKind.IDENTITY, "managed"),
    KMS_KEY: ("policy", PolicyKind.RESOURCE, "kms"),
    BUCKET_POLICY: ("policy", PolicyKind.RESOURCE, "s3"),
}

# Largest document each service takes. IAM counts characters without whitespace; KMS and S3 count bytes.
MAX_CHARACTERS: dict[str, tuple[int, bool, str]] = {
    # IAM User Guide, "IAM and AWS STS quotas": role trust policy 2,048 characters (the default quota; it can
    # be raised to 4,096), inline policies of one role 10,240 characters in aggregate, managed policy 6,144.
    "trust": (2048, True, "IAM User Guide, IAM and AWS STS quotas: role trust policy length (default quota)"),
    "inline": (10240, True, "IAM User Guide, IAM and AWS STS quotas: role inline policy size (aggregate)"),
    "managed": (6144, True, "IAM User Guide, IAM and AWS STS quotas: managed policy size"),
    # KMS Developer Guide, "Resource quotas": key policy document size 32 KB.
    "kms": (32768, False, "AWS KMS Developer Guide, Resource quotas: key policy document size 32 KB"),
    # S3 User Guide, "Bucket policies": a bucket policy is limited to 20 KB.
    "s3": (20480, False, "Amazon S3 User Guide, bucket policies: size limit 20 KB"),
}

GRAMMAR = "IAM User Guide, IAM JSON policy element reference"
# parliament's IAM definitions of SERVICES, the action prefixes of the shipped stacks' policies (dev, staging,
# prod, stacks/examples/), as parliament has them (recorded by `python -m trainstack.contracts.record_iam_definitions`;
# tests keep the file equal to the installed parliament's and SERVICES covering every shipped stack).
DEFINITIONS = Path(__file__).resolve().parent / "facts" / "iam_definitions.json"
SERVICES = (
    "aps",
    "autoscaling",
    "cloudwatch",
    "ec2",
    "ecr",
    "eks",
    "eks-auth",
    "fsx",
    "kms",
    "logs",
    "s3",
    "sts",
    "tag",
)
VERSIONS = ("2012-10-17", "2008-10-17")
TOP_LEVEL = {"Version", "Id", "Statement"}
STATEMENT = {
    *("Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition")
}
# IAM identity and trust policies take ASCII letters and digits only in a Sid (element reference, "Sid");
# KMS and S3 resource policies also take spaces and more.
IAM_SID = re.compile(r"^[A-Za-z0-9]*$")

# parliament findings that mean AWS refuses the document or the statement can never apply. Left out on
# purpose: RESOURCE_STAR and RESOURCE_EFFECTIVELY_STAR (least privilege is the policy pack's job, and some
# actions only take "*"), MISMATCHED_TYPE_BUT_USABLE (works as written), and parliament's community auditors.
REFUSED = {
    "MALFORMED_JSON",
    "MALFORMED",
    "UNKNOWN_ACTION",
    "UNKNOWN_PREFIX",
    "UNKNOWN_CONDITION_FOR_ACTION",
    "UNKNOWN_OPERATOR",
    "UNKNOWN_PRINCIPAL",
    "UNKNOWN_FEDERATION_SOURCE",
    "INVALID_ARN",
    "INVALID_VERSION",
    "INVALID_SID",
    "DUPLICATE_SID",
    "RESOURCE_MISMATCH",
    "MISMATCHED_TYPE",
    "MISMATCHED_TYPE_OPERATION_TO_NULL",
    "BAD_PATTERN_FOR_MFA",
    "NO_VERSION",
}
# A trust policy has no Resource by design (element reference, "Resource": "do not include it in a role trust
# policy"); parliament, written for permission policies, reports that as MALFORMED.
_NO_RESOURCE = "neither Resource nor NotResource"


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def grammar_problems(document: Any, kind: PolicyKind) -> Iterator[tuple[str, str]]:
    """(path inside the document, problem) for each break of the policy grammar."""
    if not isinstance(document, Mapping):
        yield "", "a policy document is a JSON object"
        return
    for key in sorted(set(document) - TOP_LEVEL):
        yield key, f"unknown top-level element {key!r}; valid: {', '.join(sorted(TOP_LEVEL))}"
    if document.get("Version") not in VERSIONS:
        yield "Version", f"Version must be one of {', '.join(VERSIONS)}"
    statements = document.get("Statement")
    # (a tuple, not `list | Mapping`: the checker reads the union as generics missing their parameters)
    if not statements or not isinstance(statements, (list, Mapping)):
        yield "Statement", "Statement must be an object or a non-empty list of objects"
        return
    sids: list[str] = []
    for index, statement in enumerate(_listed(statements)):
        where = f"Statement[{index}]"
        if not isinstance(statement, Mapping):
            yield where, "each statement is a JSON object"
            continue
        for key in sorted(set(statement) - STATEMENT):
            yield f"{where}.{key}", f"unknown statement element {key!r}"
        if statement.get("Effect") not in ("Allow", "Deny"):
            yield f"{where}.Effect", "Effect must be Allow or Deny"
        if ("Action" in statement) == ("NotAction" in statement):
            yield where, "a statement has exactly one of Action or NotAction"
        has_principal = "Principal" in statement or "NotPrincipal" in statement
        has_resource = "Resource" in statement or "NotResource" in statement
        if "Resource" in statement and "NotResource" in statement:
            yield where, "a statement has at most one of Resource or NotResource"
        if kind is PolicyKind.TRUST:
            if not has_principal:
                yield where, "a role trust policy statement names a Principal"
            if has_resource:
                yield where, "a role trust policy takes no Resource or NotResource"
        elif kind is PolicyKind.IDENTITY:
            if has_principal:
                yield where, "a permission policy attached to a role takes no Principal"
            if not has_resource:
                yield where, "a permission policy statement needs Resource or NotResource"
        else:
            if not has_principal:
                yield where, "a resource policy statement names a Principal"
            if not has_resource:
                yield where, "a resource policy statement needs Resource or NotResource"
        sid = statement.get("Sid")
        if sid is not None:
            if not isinstance(sid, str) or (kind is not PolicyKind.RESOURCE and not IAM_SID.match(sid)):
                yield f"{where}.Sid", "an IAM policy Sid takes ASCII letters and digits only"
            sids.append(str(sid))
    for sid in sorted({s for s in sids if sids.count(s) > 1}):
        yield "Statement", f"Sid {sid!r} appears more than once; Sids are unique within a policy"


def size_problem(text: str, quota_key: str) -> tuple[str, str] | None:
    limit, ignores_whitespace, source = MAX_CHARACTERS[quota_key]
    size = len(re.sub(r"\s", "", text)) if ignores_whitespace else len(text.encode())
    if size > limit:
        unit = "characters without whitespace" if ignores_whitespace else "bytes"
        return f"{size} {unit}, over the limit of {limit}", source
    return None


@functools.cache
def _parliament() -> Any:
    """parliament, knowing the services of the recorded IAM definitions (DEFINITIONS): parliament 1.6.4 reads its
    definitions, every service's (10 MB of JSON, 0.06 CPU-s), through `pkg_resources.resource_filename` (0.03 CPU-s
    more to import) when it is imported; here that one call names the recorded file instead."""
    saved = sys.modules.get("pkg_resources")
    sys.modules["pkg_resources"] = _package_data()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # parliament leaves its config file open (a ResourceWarning)
            import parliament
    finally:
        if saved is None:
            del sys.modules["pkg_resources"]
        else:
            sys.modules["pkg_resources"] = saved
    return parliament


def _package_data() -> ModuleType:
    """What parliament's import asks of pkg_resources: its data files' paths, the IAM definitions recorded here."""

    def resource_filename(package: str, name: str) -> str:
        if (package, name) == ("parliament", "iam_definition.json"):
            return str(DEFINITIONS)
        return str(importlib.resources.files(package) / name)

    module = ModuleType("pkg_resources")
    module.resource_filename = resource_filename  # pyrefly: ignore[missing-attribute]
    return module


def _covered(text: str) -> bool:
    """Whether every action of the document names a recorded service (SERVICES): parliament looks a
    service up by its prefix only (`expand_action`, `statement.get_privilege_info`), so for such a document the
    recorded ones answer exactly as all of them would. "*" and other unprefixed actions expand over every service."""
    try:
        statements = json.loads(text).get("Statement")
    except (json.JSONDecodeError, AttributeError):
        return False
    actions: list[Any] = []
    for statement in _listed(statements):
        if not isinstance(statement, Mapping):
            return False
        actions += [a for key in ("Action", "NotAction") if key in statement for a in _listed(statement[key])]
    return all(isinstance(a, str) and ":" in a and a.partition(":")[0].lower() in SERVICES for a in actions)


@functools.cache
def _widened() -> Any:
    """parliament with every service's definitions: they replace the recorded ones in place, once a document
    names a service not recorded (parliament's modules share that one list)."""
    linter = _parliament()
    linter.iam_definition[:] = json.loads(every_service().read_bytes())
    return linter


def every_service() -> Path:
    """parliament's own definitions file, found without importing parliament (its import loads that file)."""
    spec = importlib.util.find_spec("parliament")
    assert spec is not None and spec.origin is not None, "parliament is a dependency (pyproject.toml)"
    return Path(spec.origin).parent / "iam_definition.json"


def linter_for(text: str) -> Any:
    """parliament knowing every service `text` names."""
    return _parliament() if _covered(text) else _widened()


@functools.cache
def parliament_source() -> str:
    return f"parliament {importlib.metadata.version('parliament')} (IAM definitions of every service)"


def linter_problems(text: str, kind: PolicyKind) -> Iterator[tuple[str, str]]:
    """(location, problem) for each parliament finding AWS would refuse."""
    policy = linter_for(text).analyze_policy_string(text, ignore_private_auditors=True)
    for finding in policy.findings:
        if finding.issue not in REFUSED:
            continue
        detail = finding.detail if isinstance(finding.detail, str) else json.dumps(finding.detail, default=str)
        if kind is PolicyKind.TRUST and finding.issue == "MALFORMED" and _NO_RESOURCE in detail:
            continue
        location = finding.location.get("string", "") if isinstance(finding.location, Mapping) else ""
        yield str(location), f"{finding.issue}: {detail}"


def check_document(urn: str, path: str, text: Any, kind: PolicyKind, quota_key: str) -> Iterator[ContractViolation]:
    if not isinstance(text, str) or UNKNOWN in text:
        return  # unknown in preview: judged once known
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        yield ContractViolation(urn, path, render_value(text), f"not JSON: {error}", GRAMMAR)
        return
    for where, problem in grammar_problems(document, kind):
        yield ContractViolation(urn, f"{path}:{where}" if where else path, render_value(text), problem, GRAMMAR)
    if (oversize := size_problem(text, quota_key)) is not None:
        yield ContractViolation(urn, path, render_value(text), oversize[0], oversize[1])
    for where, problem in linter_problems(text, kind):
        value = where or text
        yield ContractViolation(urn, path, render_value(value), problem, parliament_source())


def check(recording: Recording) -> Iterable[ContractViolation]:
    for resource in recording.resources:
        if resource.type in DOCUMENTS:
            key, kind, quota_key = DOCUMENTS[resource.type]
            if key in resource.inputs:
                yield from check_document(resource.urn, key, resource.inputs[key], kind, quota_key)
