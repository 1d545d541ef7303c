"""Where an admitted pod lands: Kueue's flavor merged into the pod, then the nodes that select and tolerate it.

- Kueue v0.14.8 `pkg/podset/podset.go` (`FromAssignment`, `Merge`): the assigned ResourceFlavor's `nodeLabels` are
  copied into the pod's `nodeSelector` (a key the pod already selects with another value is a conflict: the job
  does not start) and its `tolerations` appended to the pod's, once each.
- Kubernetes `k8s.io/api` core/v1 `toleration.go` (`ToleratesTaint`): an empty effect matches every effect; an
  empty key with `Exists` matches every key; `Exists` matches any value, `Equal` (or no operator) the same value.
  The scheduler refuses a node with a NoSchedule or NoExecute taint no toleration matches (PreferNoSchedule only
  lowers its score).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# EKS API TaintEffect -> Kubernetes spelling (what the kubelet puts on the node).
EKS_TAINT_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
REPELLING = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration matches one taint (Kubernetes ToleratesTaint)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(tolerations: Sequence[Mapping[str, Any]], taints: Iterable[Mapping[str, Any]]) -> list[str]:
    """The repelling taints (`key=value:Effect`) none of the tolerations matches."""
    return [
        f"{t.get('key')}={t.get('value') or ''}:{t.get('effect')}"
        for t in taints
        if t.get("effect") in REPELLING and not any(tolerates(tol, t) for tol in tolerations)
    ]


def node_taints(eks_taints: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """A recorded EKS node group's taints as the node carries them."""
    return [
        {
            "key": t.get("key", ""),
            "value": t.get("value") or "",
            "effect": EKS_TAINT_EFFECT.get(t.get("effect", ""), ""),
        }
        for t in eks_taints
    ]


def admitted(pod: Mapping[str, Any], flavor: Mapping[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]], str]:
    """(nodeSelector, tolerations, conflict) of a pod after Kueue merges the flavor into it; conflict names the
    key the pod already selects with another value ("" when none)."""
    selector = dict(pod.get("nodeSelector") or {})
    for key, value in (flavor.get("nodeLabels") or {}).items():
        if key in selector and selector[key] != value:
            return selector, [], f"{key}: the pod selects {selector[key]!r}, the flavor {value!r}"
        selector[key] = value
    tolerations = list(pod.get("tolerations") or [])
    for toleration in flavor.get("tolerations") or []:
        if toleration not in tolerations:
            tolerations.append(toleration)
    return selector, tolerations, ""


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
