"""IAM decisions for the access journeys, made by a real policy evaluator: principalmapper's local simulation.

principalmapper (nccgroup/PMapper, PyPI 1.1.5) evaluates one request the way AWS's evaluation logic does
(IAM User Guide, "Policy evaluation logic"): an explicit deny in any policy wins; a resource policy that names
the principal (or `*`) allows on its own within the account; for IAM and KMS a same-account resource policy must
name the principal or its account's root, or no identity policy counts (the key policy's root delegation: KMS
Developer Guide, "Default key policy"); otherwise an identity policy must allow. Its condition operators cover
String*, Arn*, Bool, Null, IpAddress, Numeric*, Date*, `...IfExists` and the ForAnyValue/ForAllValues set
operators. It is unmaintained (last release 2022) and needs a compatibility alias to import on Python 3.10+.

What this module adds around it, each with its reason:
- VPC endpoint policies: principalmapper has none. A request through a gateway endpoint needs an Allow there
  too and no Deny (VPC User Guide, "Control access to VPC endpoints using endpoint policies": the endpoint
  policy does not grant, it limits), so the endpoint policy is evaluated as a resource policy that must allow.
- Normalised documents: a JSON boolean or number in a condition is the same to AWS as its string (IAM User
  Guide, condition operators: Bool takes "true"/"false"), and `"Principal": {"AWS": "*"}` is `"Principal": "*"`
  (IAM User Guide, Principal element, "All principals"); principalmapper compares only strings and only the
  bare `*`, so both are rewritten before evaluation.
- Refusal of what principalmapper gets wrong: `StringNotLike` on a key missing from the request (AWS: true;
  principalmapper: false), `IpAddressIfExists` and set operators on IP addresses (principalmapper evaluates them
  as NotIpAddress). A document using one raises `UnsupportedPolicy` instead of returning a wrong answer.
- Explanations: which statement (by Sid) of which policy denied or allowed, for the journey step's detail.
- Lazy import and one evaluation per question: `decide` is cached on its (hashable) request.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

# Condition operators whose evaluation principalmapper gets right (tests/unit/test_journeys_iam.py holds each to
# AWS's documented behaviour); `...IfExists` variants and ForAnyValue/ForAllValues prefixes are listed explicitly.
_BASE_OPERATORS = (
    "StringEquals",
    "StringNotEquals",
    "StringEqualsIgnoreCase",
    "StringNotEqualsIgnoreCase",
    "StringLike",
    "ArnEquals",
    "ArnLike",
    "ArnNotEquals",
    "ArnNotLike",
    "Bool",
    "NumericEquals",
    "NumericNotEquals",
    "NumericLessThan",
    "NumericLessThanEquals",
    "NumericGreaterThan",
    "NumericGreaterThanEquals",
)
SUPPORTED_OPERATORS: frozenset[str] = frozenset(
    [op for base in _BASE_OPERATORS for op in (base, f"{base}IfExists")]
    + [f"{prefix}:{base}" for prefix in ("ForAnyValue", "ForAllValues") for base in _BASE_OPERATORS[:9]]
    + ["Null", "IpAddress", "NotIpAddress"]
)
# A journey's question may carry these context keys; principalmapper adds aws:CurrentTime, aws:EpochTime and
# aws:userid itself. The journeys always set aws:PrincipalArn, aws:PrincipalAccount and aws:SecureTransport, so
# that the endpoint policy (evaluated here, not by principalmapper) sees them too.


class UnsupportedPolicy(ValueError):
    """A policy uses a condition operator principalmapper does not evaluate as AWS does."""


@dataclass(frozen=True)
class Policy:
    """A policy document and what it is, for explanations: "identity policy trainstack-training-job"."""

    label: str
    document: str  # JSON, normalised (`normalised`): hashable, so questions can be cached
    unsupported: str = ""  # why principalmapper cannot judge it; a question that needs it raises UnsupportedPolicy

    @classmethod
    def of(cls, label: str, document: Mapping[str, Any] | str) -> Policy:
        raw = json.loads(document) if isinstance(document, str) else document
        try:
            return cls(label, json.dumps(normalised(raw, label), sort_keys=True))
        except UnsupportedPolicy as error:
            return cls(label, json.dumps(raw, sort_keys=True), str(error))

    @property
    def statements(self) -> list[dict[str, Any]]:
        return _statements(json.loads(self.document))


@dataclass(frozen=True)
class Request:
    """One question: may `principal` (with its identity policies) call `action` on `resource`?

    `resource_policy` is the bucket or key policy (None for none), owned by `resource_account`; `endpoint_policy`
    is the VPC endpoint policy the request passes through (None when it does not go through one).
    """

    principal: str
    identity: tuple[Policy, ...]
    action: str
    resource: str
    resource_account: str
    context: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    resource_policy: Policy | None = None
    endpoint_policy: Policy | None = None


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # which statement of which policy decided: "bucket policy denies (DenyDataAccessOutsideVpc)"


def request(
    principal: str,
    identity: Iterable[Policy],
    action: str,
    resource: str,
    *,
    resource_account: str,
    context: Mapping[str, str | bool | Iterable[str]] | None = None,
    resource_policy: Policy | None = None,
    endpoint_policy: Policy | None = None,
) -> Request:
    """A `Request` with the context keys every authenticated HTTPS request carries (IAM User Guide, "AWS global
    condition context keys": aws:PrincipalArn, aws:PrincipalAccount, aws:SecureTransport), then `context`."""
    keys: dict[str, str | tuple[str, ...]] = {
        "aws:PrincipalArn": principal,
        "aws:PrincipalAccount": principal.split(":")[4],
        "aws:SecureTransport": "true",
    }
    for key, value in (context or {}).items():
        keys[key] = _context_value(value)
    return Request(
        principal=principal,
        identity=tuple(identity),
        action=action,
        resource=resource,
        resource_account=resource_account,
        context=tuple(sorted(keys.items())),
        resource_policy=resource_policy,
        endpoint_policy=endpoint_policy,
    )


def _context_value(value: str | bool | Iterable[str]) -> str | tuple[str, ...]:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return tuple(value)


def _statements(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = document.get("Statement", [])
    return [dict(s) for s in (found if isinstance(found, list) else [found])]


def _as_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return [_as_string(v) for v in value]
    return value


def normalised(document: Mapping[str, Any], label: str) -> dict[str, Any]:
    """`document` as principalmapper must see it to decide as AWS does (module docstring), or UnsupportedPolicy."""
    statements: list[dict[str, Any]] = []
    for statement in _statements(document):
        if statement.get("Principal") == {"AWS": "*"}:
            statement["Principal"] = "*"
        condition = statement.get("Condition")
        if isinstance(condition, Mapping):
            for operator in condition:
                if operator not in SUPPORTED_OPERATORS:
                    raise UnsupportedPolicy(
                        f"{label}: condition operator {operator} is not evaluated as AWS does by principalmapper "
                        f"(statement {statement.get('Sid', '(no Sid)')}; supported operators: docs/journeys.md)"
                    )
            statement["Condition"] = {
                op: {key: _as_string(v) for key, v in block.items()} for op, block in condition.items()
            }
        statements.append(statement)
    return {**document, "Statement": statements}


@functools.cache
def _pmapper() -> tuple[ModuleType, ModuleType, type]:
    """principalmapper's query interface, its statement matching and its Node class, imported once, when the first
    question is asked. Its `case_insensitive_dict` imports `Mapping` from `collections`, which Python 3.10 removed:
    the alias is put back before the import (and left, as other modules may import it later)."""
    import collections
    import collections.abc

    for name in ("Mapping", "MutableMapping"):
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    from principalmapper.common import Node
    from principalmapper.querying import local_policy_simulation, query_interface

    return query_interface, local_policy_simulation, Node


@functools.cache
def _node(principal: str, identity: tuple[Policy, ...]) -> Any:
    """principalmapper's model of an IAM role or user with its identity policies (no groups, boundary or tags)."""
    from principalmapper.common import Policy as PmPolicy

    _, _, node_class = _pmapper()
    policies = [PmPolicy(principal, p.label, json.loads(p.document)) for p in identity]
    no_statements: list[dict[str, Any]] = []
    trust = {"Version": "2012-10-17", "Statement": no_statements} if ":role/" in principal else None  # not judged
    return node_class(principal, f"ID-{principal}", policies, None, trust, None, 0, False, False, None, False, None)


def _context(req: Request) -> Any:
    from principalmapper.util.case_insensitive_dict import CaseInsensitiveDict

    return CaseInsensitiveDict({key: list(value) if isinstance(value, tuple) else value for key, value in req.context})


def _sids(statements: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(str(s.get("Sid", "(no Sid)")) for s in statements)


def _matching(req: Request, policy: Policy, effect: str, *, resource_policy: bool) -> list[dict[str, Any]]:
    """The statements of `policy` with `effect` that match the request, by principalmapper's matching."""
    _, lps, _ = _pmapper()
    node, context = _node(req.principal, req.identity), _context(req)
    document = json.loads(policy.document)
    if resource_policy:
        found = lps.resource_policy_matching_statements(node, document, req.action, req.resource, context)
        return [s for s in found if s["Effect"] == effect]
    return [
        s
        for s in _statements(document)
        if lps.policy_has_matching_statement({"Statement": [s]}, effect, req.action, req.resource, context)
    ]


@functools.cache
def decide(req: Request) -> Decision:
    """principalmapper's decision on `req` (identity and resource policies), and the endpoint policy's, explained.
    Raises UnsupportedPolicy when one of them uses an operator principalmapper would judge wrongly."""
    for p in (*req.identity, req.resource_policy, req.endpoint_policy):
        if p is not None and p.unsupported:
            raise UnsupportedPolicy(p.unsupported)
    qi, _, _ = _pmapper()
    policies: list[tuple[Policy, bool]] = [(p, False) for p in req.identity]
    if req.resource_policy is not None:
        policies.append((req.resource_policy, True))
    if req.endpoint_policy is not None:
        policies.append((req.endpoint_policy, True))
    for policy, is_resource in policies:
        if denied := _matching(req, policy, "Deny", resource_policy=is_resource):
            return Decision(False, f"{policy.label} denies ({_sids(denied)})")
    if req.endpoint_policy is not None and not _matching(req, req.endpoint_policy, "Allow", resource_policy=True):
        return Decision(False, f"{req.endpoint_policy.label} allows no statement for it")
    allowed = qi.local_check_authorization_full(
        _node(req.principal, req.identity),
        req.action,
        req.resource,
        _context(req),
        # No resource policy is an empty one, not none at all: principalmapper skips the resource side for None,
        # which would let a request from another account through on its identity policy alone.
        json.loads(req.resource_policy.document) if req.resource_policy is not None else {"Statement": []},
        req.resource_account,
    )
    resource_allows = (
        _matching(req, req.resource_policy, "Allow", resource_policy=True) if req.resource_policy is not None else []
    )
    identity_allows = [(p, s) for p in req.identity for s in _matching(req, p, "Allow", resource_policy=False)]
    if allowed:
        named = [s for s in resource_allows if _names(s, req.principal)]
        if named and req.resource_policy is not None:
            return Decision(True, f"{req.resource_policy.label} names it ({_sids(named)})")
        if identity_allows:
            policy, _ = identity_allows[0]
            return Decision(True, f"{policy.label} allows ({_sids(s for p, s in identity_allows if p == policy)})")
        return Decision(True, f"{req.resource_policy.label if req.resource_policy else 'a policy'} allows")
    if not identity_allows and not resource_allows:
        return Decision(False, "no identity or resource policy statement allows it")
    if not identity_allows:
        return Decision(False, "no identity policy statement allows it (the resource policy only lets IAM grant it)")
    # An identity allow that does not count: the resource side refuses it.
    label = req.resource_policy.label if req.resource_policy is not None else "no resource policy"
    if req.principal.split(":")[4] != req.resource_account:
        return Decision(False, f"{label}: nothing lets a principal of another account in")
    return Decision(False, f"{label} neither names the principal nor lets its account's IAM policies grant it")


def _names(statement: Mapping[str, Any], principal: str) -> bool:
    """Whether a resource policy statement names `principal` itself (or everyone), not only its account."""
    who = statement.get("Principal")
    if who == "*":
        return True
    values = who.get("AWS", []) if isinstance(who, Mapping) else []
    return principal in (values if isinstance(values, list) else [values])


def anyone_statements(
    policy: Policy, effect: str, action: str, resource: str, context: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The statements of a resource or endpoint policy that apply to anyone (`"Principal": "*"`) and match the
    request by principalmapper's matching (actions, resources, conditions against `context`): for a request that
    carries no credentials and so names no principal, such as the kubelet's read of a public registry's layer
    through the S3 gateway endpoint (the deploy journey, images.py). Raises UnsupportedPolicy as `decide` does."""
    if policy.unsupported:
        raise UnsupportedPolicy(policy.unsupported)
    _, lps, _ = _pmapper()  # first: it makes principalmapper importable
    from principalmapper.util.case_insensitive_dict import CaseInsensitiveDict

    keys = CaseInsensitiveDict(dict(context))
    return [
        s
        for s in policy.statements
        if s.get("Principal") == "*"
        and lps.policy_has_matching_statement({"Statement": [s]}, effect, action, resource, keys)
    ]
