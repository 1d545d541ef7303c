"""Kubernetes RBAC rule matching, as the API server's RBAC authorizer decides one request against one rule.

Shared by the policy pack (which judges the team Role the plan builds) and the journeys tier (which asks what a
team member can do). Matching follows kubernetes v1.36 `pkg/apis/rbac/v1/evaluation_helpers.go` (VerbMatches,
APIGroupMatches, ResourceMatches, ResourceNameMatches) and `plugin/pkg/auth/authorizer/rbac/rbac.go`
(RuleAllows: a request for a subresource is matched as `<resource>/<subresource>`): `*` matches every verb,
group or resource (subresources included), `*/<sub>` matches that subresource of any resource, `<res>/*` only a
subresource literally named `*`, and an empty `resourceNames` matches every name. RBAC only adds: no rule denies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

ALL = "*"
# Verbs that change an object (the rest, get/list/watch, only read it).
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
# Verbs that grant more than the object: escalate and bind (RBAC objects), impersonate (users, groups, accounts).
PRIVILEGE_VERBS = ("escalate", "bind", "impersonate")


class Request(NamedTuple):
    """One resource request as the authorizer sees it: verb, API group ("" for core), resource, subresource."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    name: str = ""

    def __str__(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{self.verb} {what}" + (f" ({self.group})" if self.group else "")


def _strings(rule: Mapping[str, Any], key: str) -> list[str]:
    value = rule.get(key) or []
    # Sequence, not list: the policy SDK hands rules over as read-only list proxies.
    return [str(v) for v in value] if isinstance(value, Sequence) and not isinstance(value, str) else []


def rule_allows(rule: Mapping[str, Any], request: Request) -> bool:
    """Whether one PolicyRule (camelCase keys, as the API object spells them) allows the request."""
    verbs, groups = _strings(rule, "verbs"), _strings(rule, "apiGroups")
    if not (ALL in verbs or request.verb in verbs) or not (ALL in groups or request.group in groups):
        return False
    combined = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    resources = _strings(rule, "resources")
    resource_matches = ALL in resources or combined in resources
    if not resource_matches and request.subresource:
        resource_matches = f"*/{request.subresource}" in resources
    names = _strings(rule, "resourceNames")
    return resource_matches and (not names or request.name in names)


def allows(rules: Iterable[Mapping[str, Any]], request: Request) -> bool:
    """Whether any of the rules allows the request (RBAC is a union of grants)."""
    return any(rule_allows(rule, request) for rule in rules)
