"""The CRD contract's parts (trainstack/contracts/crds.py) on hand-written flattened schemas: each structural
check one keyword at a time and at its bound, pruning, what the API server treats apart (metadata, type meta),
CEL rules that cannot be evaluated offline, and which installs bring which CRDs. The facts' own format is
trainstack/contracts/facts.py's (paths with `[]` and `*`); the recorded CRDs are tested in
tests/stack/test_k8s_contracts.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from trainstack import tokens
from trainstack.contracts import crds
from trainstack.engine import UNKNOWN, RecordedResource, Recording


def _problems(fields: dict[str, dict[str, Any]], value: Any) -> list[tuple[str, Any, str]]:
    return [(p.path, p.value, p.rule) for p in crds.schema_problems(fields, value)]


def _one(fact: dict[str, Any], value: Any) -> list[str]:
    """The rules a single field `x` with `fact` refuses `value` by."""
    return [rule for _, _, rule in _problems({"": {"type": "object"}, "x": fact}, {"x": value})]


# ----------------------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("expected", "good", "bad"),
    [
        ("int-or-string", [3, "50%"], [1.5, True, [1]]),
        ("number", [3, 2.5], ["3", False]),
        ("integer", [3, 4.0], [2.5, "3", True]),
        ("boolean", [True, False], [0, "true"]),
        ("string", ["", "a"], [1, False]),
        ("array", [[], [1]], [{}, "a"]),
        ("object", [{}], [[], "a"]),
    ],
)
def test_a_value_of_another_type_is_refused(expected: str, good: list[Any], bad: list[Any]) -> None:
    for value in good:
        assert _one({"type": expected}, value) == [], value
    for value in bad:
        assert _one({"type": expected}, value) == [f"must be {expected}, not {crds.json_type(value)}"], value


def test_a_wrong_type_stops_the_checks_of_that_value() -> None:
    fact = {"type": "string", "enum": ["a"], "min_length": 5}
    assert _one(fact, 3) == ["must be string, not integer"]


def test_unknown_and_null_values_are_not_judged() -> None:
    fact = {"type": "string", "enum": ["a"]}
    assert _one(fact, UNKNOWN) == [] and _one(fact, None) == []


# ----------------------------------------------------------------------------------------- keywords at their bounds


def test_enum() -> None:
    assert _one({"enum": ["a", "b"]}, "b") == []
    assert _one({"enum": ["a", "b"]}, "c") == ["must be one of ['a', 'b']"]


def test_pattern_is_searched_with_go_flags_anywhere() -> None:
    assert _one({"pattern": "^[a-z]+$"}, "abc") == []
    assert _one({"pattern": "^[a-z]+$"}, "aBc") == ["must match ^[a-z]+$"]
    assert _one({"pattern": "^x(?i)[a-z]+$"}, "xABC") == []  # a flag group mid-pattern, as RE2 takes it
    assert crds.python_pattern("(?i)^a$") == "(?i)^a$"  # a leading flag group stays as it is
    assert crds.python_pattern("^a(?i)b$") == "^a(?i:b$)"
    assert crds.python_pattern("^ab$") == "^ab$"


def test_string_lengths_at_their_bounds() -> None:
    assert _one({"max_length": 3}, "abc") == []
    assert _one({"max_length": 3}, "abcd") == ["must be at most 3 characters"]
    assert _one({"min_length": 2}, "ab") == []
    assert _one({"min_length": 2}, "a") == ["must be at least 2 characters"]
    assert _one({"max_length": 1, "min_length": 1}, 12) == []  # lengths are of strings only


def test_number_bounds_at_their_limits() -> None:
    assert _one({"minimum": 1}, 1) == [] and _one({"minimum": 1}, 1.5) == []
    assert _one({"minimum": 1}, 0) == ["must be >= 1"]
    assert _one({"maximum": 10}, 10) == []
    assert _one({"maximum": 10}, 11) == ["must be <= 10"]
    assert _one({"minimum": 1, "maximum": 0}, True) == []  # a boolean is not a number here
    assert _one({"minimum": 5}, "1") == []


def test_a_list_without_an_item_schema_is_not_walked_into() -> None:
    assert _one({"type": "array"}, [1, "a", {"b": 2}]) == []


def test_item_counts_at_their_bounds() -> None:
    assert _one({"max_items": 2}, [1, 2]) == []
    assert _one({"max_items": 2}, [1, 2, 3]) == ["must have at most 2 items"]
    assert _one({"min_items": 1}, [1]) == []
    assert _one({"min_items": 1}, []) == ["must have at least 1 items"]
    assert _one({"min_items": 1}, {}) == []  # an object has no items


def test_cel_rules_on_known_values_only() -> None:
    fact = {"rules": [{"rule": "self.size() <= 2", "message": "at most two"}]}
    assert _one(fact, ["a", "b"]) == []
    assert _one(fact, ["a", "b", "c"]) == ["CEL rule `self.size() <= 2` fails: at most two"]
    assert _one(fact, ["a", "b", UNKNOWN]) == []  # judged once known
    no_message = {"rules": [{"rule": "self.size() <= 2", "message": ""}]}
    assert _one(no_message, ["a", "b", "c"]) == ["CEL rule `self.size() <= 2` fails"]


# ----------------------------------------------------------------------------------------- objects and lists

FIELDS: dict[str, dict[str, Any]] = {
    "": {"type": "object", "required": ["spec"]},
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "spec": {"type": "object", "required": ["name", "size"]},
    "spec.name": {"type": "string"},
    "spec.size": {"type": "integer", "minimum": 1},
    "spec.labels": {"type": "object"},
    "spec.labels.*": {"type": "string"},
    "spec.items": {"type": "array"},
    "spec.items[]": {"type": "integer", "maximum": 3},
    "spec.extra": {"type": "object", "preserve_unknown": True},
    "spec.template": {"type": "object", "embedded_resource": True},
}


def test_a_valid_object_passes() -> None:
    value = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"name": "a", "size": 1}}
    assert _problems(FIELDS, value) == []


def test_each_missing_required_field_is_named() -> None:
    assert _problems(FIELDS, {}) == [("spec", None, "is required")]
    assert _problems(FIELDS, {"spec": {"name": "a"}}) == [("spec.size", None, "is required")]


def test_a_field_the_schema_lacks_is_pruned_unless_the_schema_keeps_unknown_fields() -> None:
    spec = {"name": "a", "size": 1, "colour": "red", "extra": {"anything": [1]}}
    assert _problems(FIELDS, {"spec": spec}) == [
        ("spec.colour", "red", "is not a field of the CRD schema: the API server prunes it")
    ]


def test_metadata_and_type_meta_belong_to_the_root_and_embedded_objects_only() -> None:
    spec = {"name": "a", "size": 1, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {}}}}
    assert _problems(FIELDS, {"spec": spec}) == []
    nested = {"name": "a", "size": 1, "metadata": {}, "kind": "X"}
    assert sorted(path for path, _, _ in _problems(FIELDS, {"spec": nested})) == ["spec.kind", "spec.metadata"]


def test_free_keys_and_list_items_are_checked_by_their_schema() -> None:
    spec = {"name": "a", "size": 0, "labels": {"team": "a", "tier": 2}, "items": [1, 4]}
    assert _problems(FIELDS, {"spec": spec}) == [
        ("spec.size", 0, "must be >= 1"),
        ("spec.labels.tier", 2, "must be string, not integer"),
        ("spec.items[1]", 4, "must be <= 3"),
    ]


def test_the_root_is_named_when_it_fails() -> None:
    assert _problems(FIELDS, []) == [("(object)", [], "must be object, not array")]


# ----------------------------------------------------------------------------------------- CEL offline


def test_a_rule_cel_python_cannot_evaluate_is_skipped_not_guessed() -> None:
    assert crds.cel_holds("self >", 1) is None  # does not compile
    assert crds.cel_holds("self.missing == 1", {"a": 1}) is None  # fails to evaluate
    assert crds.cel_holds("self + 1", 1) is None  # not a boolean
    assert crds.cel_holds("self == oldSelf", 1, 1) is True
    assert crds.cel_holds("self == oldSelf", 2, 1) is False


# ----------------------------------------------------------------------------------------- what installs CRDs


def _resource(type_: str, inputs: dict[str, Any], name: str = "r") -> RecordedResource:
    return RecordedResource(
        type_, name, f"urn:pulumi:s::p::{type_}::{name}", "", True, inputs, (), {}, False, False, ""
    )


def test_installed_operators_from_charts_add_ons_and_the_mpi_manifest() -> None:
    manifest = "https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml"
    resources = (
        _resource(tokens.HELM_RELEASE, {"chart": "oci://ghcr.io/kueue/charts/kueue/", "version": "v0.14.8"}, "a"),
        _resource(tokens.HELM_RELEASE, {"chart": "gpu-operator", "version": "25.3.4"}, "b"),
        _resource(tokens.HELM_RELEASE, {"chart": "pending", "version": 1}, "c"),  # not yet a version string
        _resource(tokens.EKS_ADDON, {"addonName": "vpc-cni", "addonVersion": "v1.22.4-eksbuild.3"}, "d"),
        _resource(tokens.EKS_ADDON, {"addonName": "coredns"}, "e"),
        _resource(tokens.CONFIG_FILE, {"file": manifest}, "f"),
        _resource(tokens.CONFIG_FILE, {"file": "https://example.com/other/v1.0.0/x.yaml"}, "g"),
    )
    assert crds.installed_operators(Recording("s", False, resources, {})) == {
        "kueue": "0.14.8",
        "gpu-operator": "25.3.4",
        "vpc-cni": "1.22.4",
        "mpi-operator": "0.8.0",
    }


@pytest.mark.parametrize(
    ("type_", "custom", "kind"),
    [
        ("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue", True, ("kueue.x-k8s.io/v1beta1", "ClusterQueue")),
        ("kubernetes:core/v1:ConfigMap", True, None),
        ("kubernetes:v1:Namespace", True, None),  # no group: the core API
        ("kubernetes:apps/v1:Deployment", True, None),
        ("kubernetes:scheduling.k8s.io/v1:PriorityClass", True, None),
        ("kubernetes:helm.sh/v3:Release", True, None),
        ("aws:eks/addon:Addon", True, None),
        ("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue", False, None),  # a component, not a resource
    ],
)
def test_custom_resource_kind(type_: str, custom: bool, kind: tuple[str, str] | None) -> None:
    resource = RecordedResource(type_, "r", "urn", "", custom, {}, (), {}, False, False, "")
    assert crds.custom_resource_kind(resource) == kind


# ----------------------------------------------------------------------------------------- guards


@pytest.mark.parametrize("rule", ["self >= oldSelf", "self <= oldSelf"])
def test_a_rule_that_refuses_one_direction_of_change_guards_the_number(rule: str) -> None:
    fields = {"": {"type": "object"}, "spec": {"type": "object"}, "spec.size": {"transition_rules": [{"rule": rule}]}}
    (guard,) = crds.guards(fields, {"spec": {"size": 4.0}})
    assert (guard.parts, guard.path, guard.rules) == (("spec", "size"), "spec.size", (rule,))


@pytest.mark.parametrize("rule", ["self >= oldSelf - 1", "self <= oldSelf + 1"])
def test_a_rule_that_allows_one_step_either_way_guards_nothing(rule: str) -> None:
    """The edits tried are one step: a rule letting a number move by one refuses none of them."""
    fields = {"": {"type": "object"}, "size": {"transition_rules": [{"rule": rule}]}}
    assert crds.guards(fields, {"size": 4}) == []


@pytest.mark.parametrize("rule", ["self.size() >= oldSelf.size() - 1", "self.size() <= oldSelf.size() + 1"])
def test_a_rule_that_allows_one_item_more_or_fewer_guards_nothing(rule: str) -> None:
    fields = {"": {"type": "object"}, "items": {"transition_rules": [{"rule": rule}]}, "items[]": {}}
    assert crds.guards(fields, {"items": ["a", "b", "c"]}) == []
    frozen = {**fields, "items": {"transition_rules": FROZEN}}
    assert [g.path for g in crds.guards(frozen, {"items": ["a"]})] == ["items"]


FROZEN = [{"rule": "self == oldSelf", "message": "immutable"}]
LIST_MAP = {
    "": {"type": "object"},
    "jobs": {"type": "array", "list_type": "map", "list_map_keys": ["name"]},
    "jobs[]": {"type": "object"},
    "jobs[].name": {"type": "string"},
    "jobs[].image": {"type": "string", "transition_rules": FROZEN},
    "limits": {"type": "object"},
    "limits.*": {"type": "integer", "transition_rules": FROZEN},
}


def test_list_map_items_are_compared_with_the_stored_item_of_the_same_key() -> None:
    old = {"jobs": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    swapped = {"jobs": [{"name": "b", "image": "y"}, {"name": "a", "image": "x"}]}
    assert crds.transition_problems(LIST_MAP, old, swapped) == []
    assert [t.path for t in crds.transitions(LIST_MAP, old, swapped)] == ["jobs[0].image", "jobs[1].image"]
    changed = {"jobs": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]}
    assert [t.path for t in crds.transition_problems(LIST_MAP, old, changed)] == ["jobs[1].image"]


def test_a_transition_rule_under_free_keys_runs_for_each_key() -> None:
    (problem,) = crds.transition_problems(LIST_MAP, {"limits": {"gpu": 8, "cpu": 4}}, {"limits": {"gpu": 4, "cpu": 4}})
    assert (problem.path, problem.schema_path) == ("limits.gpu", "limits.*")


def test_a_rule_freezing_one_field_of_an_object_guards_the_object() -> None:
    rule = "self.enabled == oldSelf.enabled"
    fields = {"": {"type": "object", "transition_rules": [{"rule": rule}]}, "enabled": {}, "name": {}}
    (guard,) = crds.guards(fields, {"enabled": True, "name": "a"})
    assert (guard.path, guard.rules) == ("", (rule,))


def test_free_keys_are_guarded_by_their_schema() -> None:
    (guard,) = crds.guards(LIST_MAP, {"limits": {"gpu": 8}})
    assert (guard.path, guard.schema_path, guard.parts) == ("limits.gpu", "limits.*", ("limits", "gpu"))


def test_a_rule_that_may_see_no_old_value_is_left_to_the_api_server() -> None:
    optional = [{"rule": "self == oldSelf", "message": "m", "optional_old_self": True}]
    fields = {"": {"type": "object"}, "x": {"transition_rules": [*optional, *FROZEN]}}
    assert [t.rule for t in crds.transitions(fields, {"x": 1}, {"x": 2})] == ["self == oldSelf"]
    assert crds.transitions({"": {"type": "object"}, "x": {"transition_rules": optional}}, {"x": 1}, {"x": 2}) == []


def test_a_value_whose_shape_changed_is_judged_by_its_own_rules_only() -> None:
    fields = {"": {"type": "object"}, "x": {"transition_rules": FROZEN}, "x.a": {"transition_rules": FROZEN}}
    for old, new in [({"a": 1}, "s"), ({"a": 1}, [1]), ([1], {"a": 1})]:
        assert [t.path for t in crds.transitions(fields, {"x": old}, {"x": new})] == ["x"]


def test_a_null_on_either_side_is_no_value_to_compare() -> None:
    fields = {"": {"type": "object"}, "x": {"transition_rules": FROZEN}}
    assert crds.transitions(fields, {"x": None}, {"x": 1}) == []
    assert crds.transitions(fields, {"x": 1}, {"x": None}) == []
    assert crds.transitions(fields, {"y": 1}, {"y": 2}) == []  # a place the schema does not name


# ----------------------------------------------------------------------------------------- the contract

FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor"
KUEUE = _resource(tokens.HELM_RELEASE, {"chart": "kueue", "version": "0.14.8"}, "kueue")
TAINTS = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]


def _flavor(spec: dict[str, Any]) -> RecordedResource:
    return _resource(FLAVOR, {"metadata": {"name": "gpu"}, "spec": spec}, "flavor")


def _check(*resources: RecordedResource) -> list[tuple[str, str, str, str]]:
    return [(v.path, v.value, v.rule, v.source) for v in crds.check(Recording("s", False, resources, {}))]


def test_a_custom_resource_is_checked_against_the_crd_its_release_installs() -> None:
    assert _check(KUEUE, _flavor({"nodeTaints": TAINTS, "nodeLabels": {"pool": "gpu"}})) == []
    bad = _flavor({"nodeTaints": [{"key": "k", "effect": "Sometimes"}, *TAINTS * 8], "nodeLabels": {"pool": 1.0}})
    found = _check(KUEUE, bad)
    assert {path for path, *_ in found} == {"spec.nodeTaints", "spec.nodeLabels.pool"}
    source = "CRD ResourceFlavor.kueue.x-k8s.io v1beta1, kubernetes-sigs/kueue@v0.14.8:"
    assert all(s.startswith(source) for *_, s in found)
    assert ("spec.nodeLabels.pool", "1", "ResourceFlavor spec.nodeLabels.pool: must be string, not integer") in [
        f[:3] for f in found
    ]  # a whole double is sent as the integer it is
    assert "ResourceFlavor spec.nodeTaints: must have at most 8 items" in [f[2] for f in found]


def test_a_kind_without_a_recorded_crd_is_refused() -> None:
    ((path, value, rule, source),) = _check(KUEUE, _resource("kubernetes:example.com/v1:Widget", {}, "w"))
    assert (path, value, source) == ("", "example.com/v1 Widget", "trainstack/contracts/facts/crds")
    assert "no recorded CRD serves this apiVersion and kind" in rule


def test_a_crd_of_another_operator_version_or_no_operator_is_refused() -> None:
    other = _resource(tokens.HELM_RELEASE, {"chart": "kueue", "version": "0.13.0"}, "kueue")
    ((_, value, rule, _),) = _check(other, _flavor({}))
    assert value == "kueue@0.13.0"
    assert rule.startswith("no recorded ResourceFlavor CRD for the installed kueue version (facts exist for kueue@")
    ((_, value, _, _),) = _check(_flavor({}))
    assert value == "kueue@not installed"


def test_built_in_objects_are_not_this_contracts() -> None:
    assert _check(_resource("kubernetes:core/v1:ConfigMap", {"data": {"a": 1}}, "cm")) == []


def test_facts_of_and_body_of_a_custom_resource() -> None:
    installed = crds.installed_operators(Recording("s", False, (KUEUE,), {}))
    flavor = _flavor({"nodeTaints": [{"key": "k", "effect": "NoSchedule", "n": [2.0, 2.5]}]})
    facts = crds.facts_of(flavor, installed)
    assert facts is not None and (facts.kind, facts.operator) == ("ResourceFlavor", ("kueue", "0.14.8"))
    assert crds.facts_of(flavor, {"kueue": "0.13.0"}) is None
    config_map = _resource("kubernetes:core/v1:ConfigMap", {"data": {}}, "cm")
    assert crds.facts_of(config_map, installed) is None
    body = crds.body_of(flavor)
    assert (body["apiVersion"], body["kind"]) == ("kueue.x-k8s.io/v1beta1", "ResourceFlavor")
    assert body["spec"]["nodeTaints"][0]["n"] == [2, 2.5] and isinstance(body["spec"]["nodeTaints"][0]["n"][0], int)
    assert crds.body_of(_resource(FLAVOR, {"apiVersion": "kept", "kind": "Kept"}))["kind"] == "Kept"
    assert crds.body_of(config_map) == {"data": {}}  # no type meta added to a built-in object


def test_the_object_checked_carries_its_type_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider sends apiVersion and kind from the resource type: a schema that requires or pins them passes."""
    (real,) = crds.crd_facts("kueue.x-k8s.io/v1beta1", "ResourceFlavor")
    fields = {
        "": {"type": "object", "required": ["apiVersion", "kind"]},
        "apiVersion": {"enum": ["kueue.x-k8s.io/v1beta1"]},
        "kind": {"enum": ["ResourceFlavor"]},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "preserve_unknown": True},
    }
    monkeypatch.setattr(crds, "crd_facts", lambda api_version, kind: [replace(real, fields=fields)])
    assert _check(KUEUE, _flavor({})) == []
    assert [rule for _, _, rule, _ in _check(KUEUE, _resource(FLAVOR, {"kind": "Other"}))] == [
        "ResourceFlavor kind: must be one of ['ResourceFlavor']"
    ]
