"""Custom resources against the openAPI schema of their CRD, at the version the recorded release installs.

The API server prunes a field its CRD does not define (the object is stored without it, no error), refuses a
wrong type, a value outside an enum or bounds, a missing required field, and a failed CEL rule
(`x-kubernetes-validations`). All of that is checked here from the recorded facts (`facts/crds/`), for the
CRD that the recorded operator release installs: a Kueue ClusterQueue against Kueue's CRD at the Kueue chart's
version, a TrainJob against Trainer's at the Trainer chart's. CEL rules are evaluated with cel-python; a rule it
cannot evaluate offline is skipped, never guessed. Transition rules (`oldSelf`) only run on update: they are
recorded apart (`transition_rules`), evaluated here on an old and a new value (`transition_problems`), and
checked by the day-2 journey (trainstack/journeys/day2.py), not by this contract on a single plan.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainstack import cel
from trainstack.contracts import ContractViolation, render_value
from trainstack.contracts.facts import ANY_KEY, ITEM, CrdFacts, child, crd_facts, join, json_type
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import CONFIG_FILE, EKS_ADDON, HELM_RELEASE

# API groups served by Kubernetes itself (validated as core objects) or pseudo-types of the provider.
_BUILT_IN_GROUPS = {"core", "apps", "batch", "policy", "autoscaling", "helm.sh", "yaml", "kustomize"}
# The MPI Operator publishes a release manifest, not a chart (components/k8s/scheduling.MPI_OPERATOR_MANIFEST).
_MPI_OPERATOR_MANIFEST = re.compile(r"/mpi-operator/v(\d+\.\d+\.\d+)/")


@dataclass(frozen=True)
class Problem:
    """One place where a value breaks a schema: its path (with list indexes), the value, the rule."""

    path: str
    value: Any
    rule: str


_INLINE_FLAGS = re.compile(r"\(\?([aimsx]+)\)")


def python_pattern(pattern: str) -> str:
    """A CRD pattern as Python's `re` takes it. Go's RE2 (the API server's) lets a flag group such as `(?i)` stand
    anywhere and apply to the rest of the pattern (Kueue v0.14.8's AdmissionCheck name: `^(?i)[a-z]...$`);
    Python wants global flags first, so a later one becomes a scoped group over the rest."""
    found = _INLINE_FLAGS.search(pattern)
    if found is None or found.start() == 0:
        return pattern
    return f"{pattern[: found.start()]}(?{found.group(1)}:{pattern[found.end() :]})"


def custom_resource_kind(resource: RecordedResource) -> tuple[str, str] | None:
    """(apiVersion, kind) of a recorded custom resource, or None for a built-in object or provider pseudo-type."""
    if not resource.custom or not resource.type.startswith("kubernetes:"):
        return None
    _, api_version, kind = resource.type.split(":", 2)
    group = api_version.split("/")[0] if "/" in api_version else "core"
    if group in _BUILT_IN_GROUPS or group.endswith(".k8s.io"):
        return None
    return api_version, kind


def installed_operators(recording: Recording) -> dict[str, str]:
    """What installs CRDs in this recording: chart (or manifest) name -> version, without a leading v."""
    found: dict[str, str] = {}
    for release in recording.by_type(HELM_RELEASE):
        chart, version = release.inputs.get("chart"), release.inputs.get("version")
        if isinstance(chart, str) and isinstance(version, str):
            found[chart.rstrip("/").rsplit("/", 1)[-1]] = version.removeprefix("v")
    # An EKS add-on installs the CRDs of the upstream release it packages: vpc-cni v1.22.4-eksbuild.3 is
    # amazon-vpc-cni-k8s v1.22.4 (its ENIConfig CRD).
    for addon in recording.by_type(EKS_ADDON):
        name, version = addon.inputs.get("addonName"), addon.inputs.get("addonVersion")
        if isinstance(name, str) and isinstance(version, str):
            found[name] = version.removeprefix("v").split("-eksbuild.", 1)[0]
    for config in recording.by_type(CONFIG_FILE):
        match = _MPI_OPERATOR_MANIFEST.search(str(config.inputs.get("file", "")))
        if match:
            found["mpi-operator"] = match.group(1)
    return found


# ------------------------------------------------------------------------------------------ the walker


def _ints(value: Any) -> Any:
    """The engine's protobuf Struct carries every number as a double; the provider sends integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _type_ok(expected: str, value: Any) -> bool:
    actual = json_type(value)
    if expected == "int-or-string":
        return actual in ("integer", "string")
    if expected == "number":
        return actual in ("integer", "number")
    return actual == expected


@functools.cache
def _cel_program(rule: str) -> Any:
    """The compiled CEL program of `rule`, or None when cel-python cannot compile it."""
    try:
        return cel.program(rule)
    except Exception:  # a dialect feature cel-python lacks: the rule is not evaluated offline
        return None


_NO_OLD = object()  # no `oldSelf`: a validation rule, or a transition rule on create


def cel_holds(rule: str, value: Any, old: Any = _NO_OLD) -> bool | None:
    """Whether `rule` holds for `self = value` (and `oldSelf = old`, for a transition rule); None when it cannot
    be evaluated offline."""
    import celpy

    program = _cel_program(rule)
    if program is None:
        return None
    activation = {"self": celpy.json_to_cel(value)}
    if old is not _NO_OLD:
        activation["oldSelf"] = celpy.json_to_cel(old)
    try:
        result = program.evaluate(activation)
    except Exception:
        return None
    if isinstance(result, celpy.CELEvalError) or not isinstance(result, bool | celpy.celtypes.BoolType):
        return None
    return bool(result)


def _contains_unknown(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_unknown(v) for v in value)
    return False


def schema_problems(fields: dict[str, dict[str, Any]], value: Any) -> list[Problem]:
    """Everything in `value` that the flattened structural schema `fields` refuses or would prune."""
    problems: list[Problem] = []
    _walk(fields, value, "", "", problems)
    return problems


def _walk(fields: dict[str, dict[str, Any]], value: Any, spath: str, rpath: str, out: list[Problem]) -> None:
    if value == UNKNOWN or value is None:
        return
    fact = fields[spath]
    where = rpath or "(object)"
    expected = fact.get("type")
    if expected and not _type_ok(expected, value):
        out.append(Problem(where, value, f"must be {expected}, not {json_type(value)}"))
        return
    if "enum" in fact and value not in fact["enum"]:
        out.append(Problem(where, value, f"must be one of {fact['enum']}"))
    if isinstance(value, str):
        if "pattern" in fact and not re.search(python_pattern(fact["pattern"]), value):
            out.append(Problem(where, value, f"must match {fact['pattern']}"))
        if "max_length" in fact and len(value) > fact["max_length"]:
            out.append(Problem(where, value, f"must be at most {fact['max_length']} characters"))
        if "min_length" in fact and len(value) < fact["min_length"]:
            out.append(Problem(where, value, f"must be at least {fact['min_length']} characters"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in fact and value < fact["minimum"]:
            out.append(Problem(where, value, f"must be >= {fact['minimum']}"))
        if "maximum" in fact and value > fact["maximum"]:
            out.append(Problem(where, value, f"must be <= {fact['maximum']}"))
    if isinstance(value, list):
        if "max_items" in fact and len(value) > fact["max_items"]:
            out.append(Problem(where, value, f"must have at most {fact['max_items']} items"))
        if "min_items" in fact and len(value) < fact["min_items"]:
            out.append(Problem(where, value, f"must have at least {fact['min_items']} items"))
    for rule in fact.get("rules", []):
        if not _contains_unknown(value) and cel_holds(rule["rule"], value) is False:
            out.append(Problem(where, value, f"CEL rule `{rule['rule']}` fails: {rule['message']}".rstrip(": ")))
    if isinstance(value, dict):
        for key in fact.get("required", []):
            if key not in value:
                out.append(Problem(child(rpath, key), None, "is required"))
        for key, sub in value.items():
            if key == "metadata" and (not spath or fact.get("embedded_resource")):
                continue  # ObjectMeta: the API server validates it as metadata, whatever the schema says
            schema_key = child(spath, key)
            if schema_key not in fields and join(spath, ANY_KEY) in fields:
                schema_key = join(spath, ANY_KEY)
            type_meta = key in ("apiVersion", "kind") and (not spath or fact.get("embedded_resource"))
            if schema_key in fields:
                _walk(fields, sub, schema_key, child(rpath, key), out)
            elif not (fact.get("preserve_unknown") or type_meta):
                out.append(
                    Problem(child(rpath, key), sub, "is not a field of the CRD schema: the API server prunes it")
                )
    elif isinstance(value, list) and join(spath, ITEM) in fields:
        for i, item in enumerate(value):
            _walk(fields, item, join(spath, ITEM), f"{rpath}[{i}]", out)


# ------------------------------------------------------------------------------------------ transition rules


@dataclass(frozen=True)
class Transition:
    """One transition rule at one place of an object, and whether it holds from the old value to the new one."""

    path: str  # where, with list indexes: `spec.template.spec.replicatedJobs[1].dependsOn`
    schema_path: str  # the facts' path: `spec.template.spec.replicatedJobs[].dependsOn`
    rule: str
    message: str
    holds: bool | None  # None: cel-python cannot evaluate the rule


def transition_paths(fields: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every schema path that carries transition rules, with its rules."""
    return {path: fact["transition_rules"] for path, fact in fields.items() if fact.get("transition_rules")}


def transitions(fields: dict[str, dict[str, Any]], old: Any, new: Any) -> list[Transition]:
    """Every transition rule the API server runs when `old` (the stored object) is updated to `new`.

    As the apiextensions validator does (kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/
    schema/cel/validation.go): a rule runs where the new object has a value and the old object has one at the
    same place (`optionalOldSelf` rules are not evaluated offline); objects correlate by key, lists only when
    `x-kubernetes-list-type: map`, item by item on the list-map keys. A value unknown in preview is skipped.
    """
    found: list[Transition] = []
    _correlate(fields, _ints(old), _ints(new), "", "", found)
    return found


def transition_problems(fields: dict[str, dict[str, Any]], old: Any, new: Any) -> list[Transition]:
    """The transition rules the update from `old` to `new` fails: the API server refuses it."""
    return [t for t in transitions(fields, old, new) if t.holds is False]


def _correlate(
    fields: dict[str, dict[str, Any]], old: Any, new: Any, spath: str, rpath: str, out: list[Transition]
) -> None:
    if new is None or old is None or spath not in fields:
        return
    if _contains_unknown(new) or _contains_unknown(old):
        return
    fact = fields[spath]
    for rule in fact.get("transition_rules", []):
        if rule.get("optional_old_self"):
            continue
        holds = cel_holds(rule["rule"], new, old)
        out.append(Transition(rpath or "(object)", spath, rule["rule"], rule["message"], holds))
    if isinstance(new, dict) and isinstance(old, dict):
        for key, sub in new.items():
            schema_key = child(spath, key)
            if schema_key not in fields and join(spath, ANY_KEY) in fields:
                schema_key = join(spath, ANY_KEY)
            if key in old:
                _correlate(fields, old[key], sub, schema_key, child(rpath, key), out)
    elif isinstance(new, list) and isinstance(old, list) and fact.get("list_type") == "map":
        keys = fact.get("list_map_keys", [])

        def identity(item: Any) -> tuple[Any, ...] | None:
            return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

        stored = {identity(item): item for item in old}
        for i, item in enumerate(new):
            if (was := stored.get(identity(item))) is not None:
                _correlate(fields, was, item, join(spath, ITEM), f"{rpath}[{i}]", out)


@dataclass(frozen=True)
class Guard:
    """A place in an object whose change a transition rule refuses."""

    parts: tuple[str | int, ...]  # the place as path parts: ('spec', 'template', 'spec', 'replicatedJobs', 1, ...)
    path: str  # as the facts write it, with list indexes: `spec.template.spec.replicatedJobs[1].dependsOn`
    schema_path: str  # the facts' path: `spec.template.spec.replicatedJobs[].dependsOn`
    rules: tuple[str, ...]  # the rules that refuse a change there


def guards(fields: dict[str, dict[str, Any]], value: Any) -> list[Guard]:
    """The places in `value` whose change a transition rule refuses.

    A rule guards a place when, with the current value as `oldSelf`, it fails for some changed value: `self ==
    oldSelf` always; a conditional rule (Kueue's ResourceFlavor spec, frozen only once `topologyName` is set)
    only while its condition holds. The changed values tried are small edits of the current one
    (`_changed_values`): a rule that refuses none of them is not counted as guarding.
    """
    found: list[Guard] = []
    rules = transition_paths(fields)
    for schema_path, parts, where, current in _places(fields, _ints(value), "", (), ""):
        if schema_path not in rules or _contains_unknown(current):
            continue
        refusing = tuple(
            rule["rule"]
            for rule in rules[schema_path]
            if any(cel_holds(rule["rule"], changed, current) is False for changed in _changed_values(current))
        )
        if refusing:
            found.append(Guard(parts, where, schema_path, refusing))
    return found


def _places(
    fields: dict[str, dict[str, Any]], value: Any, spath: str, parts: tuple[str | int, ...], rpath: str
) -> Iterator[tuple[str, tuple[str | int, ...], str, Any]]:
    """(schema path, path parts, concrete path, value) of every place in `value` the schema names."""
    if value is None or spath not in fields:
        return
    yield spath, parts, rpath, value
    if isinstance(value, dict):
        for key, sub in value.items():
            schema_key = child(spath, key)
            if schema_key not in fields and join(spath, ANY_KEY) in fields:
                schema_key = join(spath, ANY_KEY)
            yield from _places(fields, sub, schema_key, (*parts, key), child(rpath, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _places(fields, item, join(spath, ITEM), (*parts, i), f"{rpath}[{i}]")


_PROBE = "trainstackProbe"  # a key no schema has: what "one more field" looks like in a changed object


def _changed_values(value: Any) -> list[Any]:
    """A few values that differ from `value` in a small way, of its own type: the edits a day-2 change makes (one
    step up or down, one more or one fewer item, one more field or one field changed)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1, value - 1]
    if isinstance(value, str):
        return [value + "x", ""] if value else ["x"]
    if isinstance(value, list):
        return [[*value, value[-1]], value[:-1]] if value else [[{}]]
    if isinstance(value, dict):
        edits = ((key, _changed_values(sub)) for key, sub in value.items())
        return [{**value, _PROBE: True}, *({**value, key: alts[0]} for key, alts in edits if alts)]
    return []


# ------------------------------------------------------------------------------------------ the contract


def facts_of(resource: RecordedResource, installed: dict[str, str]) -> CrdFacts | None:
    """The recorded CRD of a custom resource at the version its operator release installs (`installed_operators`),
    or None for a built-in object or a CRD without facts (which `check` reports)."""
    kind = custom_resource_kind(resource)
    if kind is None:
        return None
    return next((f for f in crd_facts(*kind) if installed.get(f.operator[0]) == f.operator[1]), None)


def body_of(resource: RecordedResource) -> dict[str, Any]:
    """The object the provider sends for a custom resource: its inputs, integers as integers, type meta set."""
    kind = custom_resource_kind(resource)
    body = _ints(dict(resource.inputs))
    if kind is not None:
        body.setdefault("apiVersion", kind[0])
        body.setdefault("kind", kind[1])
    return body


def check(recording: Recording) -> Iterator[ContractViolation]:
    """Every custom resource against the CRD its recorded operator release installs."""
    installed = installed_operators(recording)
    for resource in recording.resources:
        kind = custom_resource_kind(resource)
        if kind is None:
            continue
        api_version, kind_name = kind
        candidates = crd_facts(api_version, kind_name)
        if not candidates:
            yield ContractViolation(
                urn=resource.urn,
                path="",
                value=f"{api_version} {kind_name}",
                rule="no recorded CRD serves this apiVersion and kind: add the CRD's row to "
                "scripts/extract_contract_facts.py (CRDS) and extract its facts",
                source="trainstack/contracts/facts/crds",
            )
            continue
        matching = [f for f in candidates if installed.get(f.operator[0]) == f.operator[1]]
        if not matching:
            charts = sorted({f.installed_by for f in candidates})
            operator = candidates[0].operator[0]
            yield ContractViolation(
                urn=resource.urn,
                path="",
                value=f"{operator}@{installed.get(operator, 'not installed')}",
                rule=f"no recorded {kind_name} CRD for the installed {operator} version (facts exist for "
                f"{', '.join(charts)}): extract the CRD at the pinned tag",
                source="trainstack/contracts/facts/crds",
            )
            continue
        facts = matching[0]
        body = _ints({k: v for k, v in resource.inputs.items()})
        body.setdefault("apiVersion", api_version)
        body.setdefault("kind", kind_name)
        for problem in schema_problems(facts.fields, body):
            yield ContractViolation(
                urn=resource.urn,
                path=problem.path,
                value=render_value(problem.value),
                rule=f"{kind_name} {problem.path}: {problem.rule}",
                source=f"CRD {facts.kind}.{facts.group} {facts.version}, {facts.source}",
            )
