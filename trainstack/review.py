"""The offline policy review: the CrossGuard pack's own rule objects, run over what the offline engine recorded.

`review(recording, environment)` evaluates `policies.rules.POLICIES` through pulumi-policy's public API, as
`pulumi preview --policy-pack policies --policy-pack-config policies/config/<env>.json` would:

- each resource's recorded inputs become `unknown_checking_proxy(deserialize_properties(...))`, so values
  unknown in a preview raise, and a rule that reads one becomes an advisory "can't run during preview";
- resource rules get `ResourceValidationArgs` (with the resource's provider, whose inputs carry the default
  tags), stack rules get `StackValidationArgs` with `PolicyResource`s linked by parent, dependencies and
  property dependencies;
- enforcement levels resolve like the CLI: the policy's own level or the pack's (advisory), then the config
  file's `all`, then the policy's entry (an entry object without `enforcementLevel` means advisory); config
  properties get the schema defaults and are validated against each policy's `config_schema`.

`mandatory(violations)` picks what blocks a deployment; the plan command exits 1 when it is not empty.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from inspect import isawaitable
from pathlib import Path
from typing import Any

import jsonschema
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy
from typing_extensions import override

from policies import waivers as pack_waivers
from policies.enforcement import FLOORS, applying, floor_level, floor_settings
from policies.rules import BY_NAME, POLICIES
from stacks.load import FULL_KEY, ConfigError, Problem
from stacks.schema.waivers import WaiverSpec
from trainstack.engine import RecordedResource, Recording

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "policies" / "config"
PACK_LEVEL = EnforcementLevel.ADVISORY  # policies/__main__.py builds the pack with this default
LEVELS = tuple(level.value for level in EnforcementLevel)


class PolicyConfigError(ValueError):
    """A policy config file that the CLI would refuse (or that would silently do something else)."""


class PolicyRunError(RuntimeError):
    """A rule raised: the real `pulumi preview` fails in the same place."""


@dataclass(frozen=True)
class Violation:
    """One reported violation, with the level it was enforced at in this environment."""

    policy: str
    level: str  # "mandatory" or "advisory" (remediate is reported as mandatory, like the CLI)
    severity: str  # "low" | "medium" | "high" | "critical"
    urn: str  # empty for a stack-wide violation
    type: str
    name: str
    message: str


@dataclass(frozen=True)
class Waived:
    """A violation a stack waived, with the waiver's written reason; it does not block the plan."""

    violation: Violation
    reason: str
    owner: str = ""
    expires: date | None = None
    floor: bool = False  # the waived rule is a floor (dev and staging may waive one; prod never does)


@dataclass(frozen=True)
class Review:
    """The result of running the pack over one recording."""

    stack: str
    environment: str
    preview: bool
    policies_run: int
    violations: tuple[Violation, ...]
    not_applicable: tuple[tuple[str, str, str], ...] = field(default=())  # (policy, urn, reason)
    waived: tuple[Waived, ...] = field(default=())  # violations the stack's waivers exempt, with the reasons

    @property
    def mandatory(self) -> tuple[Violation, ...]:
        return mandatory(self.violations)

    @property
    def advisory(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.level == EnforcementLevel.ADVISORY.value)

    @property
    def counts(self) -> dict[str, int]:
        """Violations per level, both keys always present."""
        found = Counter(v.level for v in self.violations)
        return {"mandatory": found["mandatory"], "advisory": found["advisory"]}

    @property
    def passed(self) -> bool:
        """True when nothing mandatory is violated (the plan exits 0)."""
        return not self.mandatory

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "environment": self.environment,
            "preview": self.preview,
            "policies_run": self.policies_run,
            "counts": self.counts,
            "passed": self.passed,
            "violations": [asdict(v) for v in self.violations],
            "not_applicable": len(self.not_applicable),
            "waived": [{**asdict(w.violation), "reason": w.reason} for w in self.waived],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def mandatory(violations: Iterable[Violation]) -> tuple[Violation, ...]:
    """The violations that block a deployment."""
    return tuple(v for v in violations if v.level == EnforcementLevel.MANDATORY.value)


# -------------------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class PackConfig:
    """Resolved enforcement level and config properties per policy for one environment."""

    levels: Mapping[str, EnforcementLevel]
    properties: Mapping[str, Mapping[str, Any]]


def config_path(environment: str) -> Path:
    return CONFIG_DIR / f"{environment}.json"


def _defaults(policy: Policy) -> dict[str, Any]:
    schema = policy.config_schema
    if schema is None:
        return {}
    return {k: v["default"] for k, v in schema.properties.items() if "default" in v}


def _schema(policy: Policy) -> dict[str, Any]:
    schema = policy.config_schema
    return {
        "type": "object",
        "properties": dict(schema.properties) if schema else {},
        "required": list(schema.required or []) if schema else [],
        "additionalProperties": False,  # stricter than the CLI: a misspelt threshold must not pass silently
    }


def resolve_config(document: Mapping[str, Any], policies: Iterable[Policy] = POLICIES, source: str = "") -> PackConfig:
    """Levels and properties per policy from a `--policy-pack-config` document; every problem at once."""
    policies = list(policies)
    by_name = {p.name: p for p in policies}
    problems: list[str] = []
    for key in document:
        if key != "all" and key not in by_name:
            problems.append(f"{key!r} is not a policy of the pack")
    all_level = document.get("all")
    if all_level is not None and all_level not in LEVELS:
        problems.append(f"'all' is {all_level!r}; valid: {', '.join(LEVELS)}")
    levels: dict[str, EnforcementLevel] = {}
    properties: dict[str, dict[str, Any]] = {}
    for policy in policies:
        level = policy.enforcement_level or PACK_LEVEL
        if all_level in LEVELS:
            level = EnforcementLevel(all_level)
        props = _defaults(policy)
        entry = document.get(policy.name)
        if isinstance(entry, str):
            if entry not in LEVELS:
                problems.append(f"{policy.name}: level {entry!r}; valid: {', '.join(LEVELS)}")
            else:
                level = EnforcementLevel(entry)
        elif isinstance(entry, Mapping):
            given = entry.get("enforcementLevel", EnforcementLevel.ADVISORY.value)
            if given not in LEVELS:
                problems.append(f"{policy.name}.enforcementLevel {given!r}; valid: {', '.join(LEVELS)}")
            else:
                level = EnforcementLevel(given)
            props.update({k: v for k, v in entry.items() if k != "enforcementLevel"})
        elif entry is not None:
            problems.append(f"{policy.name}: expected a level or an object, got {entry!r}")
        validator = jsonschema.Draft7Validator(_schema(policy))
        problems += [
            f"{policy.name}.{'.'.join(map(str, e.path)) or '(config)'}: {e.message}"
            for e in validator.iter_errors(props)
        ]
        levels[policy.name] = level
        properties[policy.name] = props
    if problems:
        raise PolicyConfigError(f"policy config {source}: " + "; ".join(problems))
    return PackConfig(levels=levels, properties=properties)


def load_config(environment: str, path: Path | None = None) -> PackConfig:
    """The resolved config of an environment (`policies/config/<env>.json` unless `path` is given)."""
    path = path or config_path(environment)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PolicyConfigError(f"no policy config for {environment!r}: {path} does not exist") from None
    except json.JSONDecodeError as error:
        raise PolicyConfigError(f"policy config {path}: {error}") from None
    except (OSError, UnicodeDecodeError) as error:  # a directory, no permission, not UTF-8
        raise PolicyConfigError(f"policy config {path}: cannot read: {error}") from None
    if not isinstance(document, dict):
        raise PolicyConfigError(f"policy config {path}: expected a JSON object")
    return hold_floors(resolve_config(document, source=str(path)), environment)


def hold_floors(config: PackConfig, environment: str) -> PackConfig:
    """`config` with the floors held in code, as the served pack holds them (policies/enforcement.py): each floor
    at least mandatory where it is one, with the committed config's thresholds of `environment`."""
    levels = {
        name: EnforcementLevel(floor_level(name, environment, level.value)) for name, level in config.levels.items()
    }
    properties = dict(config.properties)
    for name in properties:
        held = floor_settings(name, environment, CONFIG_DIR)
        if held is not None:
            properties[name] = {**properties[name], **held}
    return PackConfig(levels=levels, properties=properties)


# --------------------------------------------------------------------------------------------- running


class _NotApplicable(Exception):
    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason or ""


class _ResourceArgs(ResourceValidationArgs):
    @override
    def not_applicable(self, reason: str | None = None) -> None:
        raise _NotApplicable(reason)


class _StackArgs(StackValidationArgs):
    @override
    def not_applicable(self, reason: str | None = None) -> None:
        raise _NotApplicable(reason)


def _props(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    return unknown_checking_proxy(deserialize_properties(dict(inputs)))


def _options(resource: RecordedResource) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=resource.protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=resource.parent or None,
    )


@dataclass
class _Prepared:
    resources: list[RecordedResource]
    props: dict[str, Mapping[str, Any]]
    providers: dict[str, PolicyProviderResource]
    stack: list[PolicyResource]


def _prepare(recording: Recording) -> _Prepared:
    resources = list(recording.resources)
    props = {r.urn: _props(r.inputs) for r in resources}
    providers = {
        r.urn: PolicyProviderResource(r.type, props[r.urn], r.urn, r.name)
        for r in resources
        if r.type.startswith("pulumi:providers:")
    }
    stack = {
        r.urn: PolicyResource(
            r.type, props[r.urn], r.urn, r.name, _options(r), providers.get(r.provider_urn), None, [], {}
        )
        for r in resources
    }
    for r in resources:
        node = stack[r.urn]
        node.parent = stack.get(r.parent)
        node.dependencies = [stack[d] for d in r.dependencies if d in stack]
        node.property_dependencies = {
            k: [stack[d] for d in v if d in stack] for k, v in r.property_dependencies.items()
        }
    return _Prepared(resources, props, providers, list(stack.values()))


def _severity(policy: Policy) -> str:
    return policy.severity.value if policy.severity is not None else "unspecified"


def _reported_level(level: EnforcementLevel) -> str:
    return EnforcementLevel.MANDATORY.value if level is EnforcementLevel.REMEDIATE else level.value


def _await(result: Any) -> None:
    """Run an async rule to completion, as the analyzer does."""
    if isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


class _Run:
    """One pass of the pack over one recording: collects violations and not-applicable entries."""

    def __init__(self, recording: Recording) -> None:
        self.prepared = _prepare(recording)
        self.by_urn = {r.urn: r for r in self.prepared.resources}
        self.violations: list[Violation] = []
        self.skipped: list[tuple[str, str, str]] = []

    def add(self, policy: Policy, level: str, urn: str, message: str) -> None:
        found = self.by_urn.get(urn)
        self.violations.append(
            Violation(
                policy=policy.name,
                level=level,
                severity=_severity(policy),
                urn=urn,
                type=found.type if found else "",
                name=found.name if found else "",
                message=message,
            )
        )

    def resource_policy(self, policy: ResourceValidationPolicy, level: str, settings: dict[str, Any]) -> None:
        prepared = self.prepared
        for resource in prepared.resources:
            args = _ResourceArgs(
                resource.type,
                prepared.props[resource.urn],
                resource.urn,
                resource.name,
                _options(resource),
                prepared.providers.get(resource.provider_urn),
                settings,
            )

            # The engine ignores the urn a resource rule passes: the violation is the resource's own.
            def report(message: str, _urn: str | None = None, urn: str = resource.urn) -> None:
                self.add(policy, level, urn, message)

            self.evaluate(policy, args, report, resource.urn)

    def stack_policy(self, policy: StackValidationPolicy, level: str, settings: dict[str, Any]) -> None:
        def report(message: str, urn: str | None = None) -> None:
            self.add(policy, level, urn or "", message)

        self.evaluate(policy, _StackArgs(self.prepared.stack, settings), report, "")

    def evaluate(
        self,
        policy: ResourceValidationPolicy | StackValidationPolicy,
        args: Any,  # the policy's own Args class
        report: ReportViolation,
        urn: str,
    ) -> None:
        try:
            _await(policy.validate(args, report))
        except UnknownValueError as error:
            # What the CLI does: a rule that cannot decide during preview degrades to an advisory.
            message = f"can't run policy '{policy.name}' during preview: {error.message}"
            self.add(policy, EnforcementLevel.ADVISORY.value, urn, message)
        except _NotApplicable as error:
            self.skipped.append((policy.name, urn, error.reason))
        except Exception as error:
            raise PolicyRunError(f"policy {policy.name} failed on {urn or 'the stack'}: {error!r}") from error


def run_policies(
    recording: Recording, config: PackConfig, policies: Iterable[Policy] = POLICIES
) -> tuple[list[Violation], list[tuple[str, str, str]], int]:
    """Run `policies` over `recording`: (violations, not-applicable entries, policies run)."""
    run = _Run(recording)
    ran = 0
    for policy in policies:
        level = config.levels.get(policy.name, policy.enforcement_level or PACK_LEVEL)
        if level is EnforcementLevel.DISABLED:
            continue
        ran += 1
        settings = dict(config.properties.get(policy.name, {}))
        if isinstance(policy, ResourceValidationPolicy):
            run.resource_policy(policy, _reported_level(level), settings)
        elif isinstance(policy, StackValidationPolicy):
            run.stack_policy(policy, _reported_level(level), settings)
    return run.violations, run.skipped, ran


def review(
    recording: Recording,
    environment: str,
    config_file: Path | None = None,
    waivers: Sequence[WaiverSpec] = (),
    policies: Iterable[Policy] = POLICIES,
    on: date | None = None,
) -> Review:
    """Run the policy pack over a recording with the enforcement levels and thresholds of `environment`, then set
    aside what the stack's `waivers` exempt (ConfigError, exit 2, for a waiver that cannot stand).

    `policies` narrows the run to some of the pack's rules (a test of one rule need not pay for seventy); the
    config is still resolved and validated for the whole pack. Waivers are judged on day `on` (today, UTC)."""
    config = load_config(environment, config_file)
    # The stack's waivers in force as in the served pack: the rules' report callbacks drop what they exempt
    # (policies/waivers.py), and a waiver that cannot stand is refused with its key (exit 2).
    with applying([_pack_waiver(w) for w in waivers], environment, on) as ledger:
        violations, skipped, ran = run_policies(recording, config, policies)
    by_urn = recording.by_urn()
    waived = [
        Waived(
            Violation(
                w.rule,
                _reported_level(config.levels[w.rule]),
                _severity(BY_NAME[w.rule]),
                w.urn,
                by_urn[w.urn].type if w.urn in by_urn else "",
                w.resource,
                w.message,
            ),
            w.reason,
            w.owner,
            w.expires,
            w.rule in FLOORS,
        )
        for w in ledger.waived
    ]
    _refuse(ledger.problems(_severities()), f"stack {recording.stack}")
    kept = sorted(violations, key=lambda v: (v.level != "mandatory", v.policy, v.urn))  # mandatory first
    return Review(
        stack=recording.stack,
        environment=environment,
        preview=recording.preview,
        policies_run=ran,
        violations=tuple(kept),
        not_applicable=tuple(skipped),
        waived=tuple(sorted(waived, key=lambda w: (w.violation.policy, w.violation.name))),
    )


# ------------------------------------------------------------------------------------------------ waivers

WAIVERS_RULE = "stack-waivers"  # the pack's rule that judges waivers; offline its problems are exit 2


def _pack_waiver(waiver: WaiverSpec) -> pack_waivers.Waiver:
    return pack_waivers.Waiver(
        waiver.rule,
        waiver.resource,
        " ".join(waiver.reason.split()),
        waiver.owner,
        waiver.expires,
        waiver.environment.value,
    )


def _severities() -> dict[str, str]:
    from policies.rules import BY_NAME

    return {name: _severity(policy) for name, policy in BY_NAME.items()}


def _refuse(problems: Sequence[pack_waivers.Problem], source: str) -> None:
    """ConfigError (exit 2) naming each waiver that cannot stand, as the pack's `stack-waivers` rule reports it."""
    if problems:
        raise ConfigError(
            source, [Problem(f"{FULL_KEY}.waivers.{p.index}.{p.key}", p.value, p.message) for p in problems]
        )


# ---------------------------------------------------------------------------------------- rules table

ENVIRONMENTS = ("dev", "staging", "prod")
_SHORT = {"advisory": "advisory", "mandatory": "**mandatory**", "remediate": "remediate", "disabled": "off"}


def rules_table(policies: Iterable[Policy] = POLICIES) -> str:
    """The rules table of docs/policies.md, generated from the rules and the three config files."""
    from policies.rules import DOMAINS

    configs = {env: load_config(env) for env in ENVIRONMENTS}
    lines = [
        "| Rule | Domain | dev | staging | prod | Severity | Why |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy in policies:
        levels = " | ".join(_SHORT[configs[env].levels[policy.name].value] for env in ENVIRONMENTS)
        why = policy.description.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{policy.name}` | {DOMAINS[policy.name]} | {levels} | {_severity(policy)} | {why} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def floors_table() -> str:
    """The floors: every threshold of the floor rules per environment, with why and the source."""
    from policies.rules.base import floor_of

    configs = {env: load_config(env) for env in ENVIRONMENTS}
    lines = [
        "| Floor | dev | staging | prod | Why (source) |",
        "|---|---|---|---|---|",
    ]
    for policy in POLICIES:
        if floor_of(policy) is None or policy.config_schema is None:
            continue
        for key, schema in policy.config_schema.properties.items():
            cells: list[str] = []
            for env in ENVIRONMENTS:
                level = configs[env].levels[policy.name].value
                value = configs[env].properties[policy.name].get(key)
                shown = json.dumps(value) if value is not None else "-"
                cells.append("off" if level == "disabled" else f"{shown} ({_SHORT[level]})")
            why = _cell(str(schema.get("description", "")))
            lines.append(f"| `{policy.name}` `{key}` | {' | '.join(cells)} | {why} |")
    return "\n".join(lines)


def waivers_table(stacks_dir: Path | None = None) -> str:
    """Every waiver the committed stack files carry: stack, rule, resource, the written reason, owner and expiry."""
    from stacks.load import STACKS_DIR, load_file

    rows: list[str] = []
    for path in sorted((stacks_dir or STACKS_DIR).glob("Pulumi.*.yaml")):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for waiver in load_file(path).waivers:
            reason = _cell(" ".join(waiver.reason.split()))
            rows.append(
                f"| `{stack}` | `{waiver.rule}` | `{waiver.resource}` | {reason} | {waiver.owner} | "
                f"{waiver.expires.isoformat()} |"
            )
    if not rows:
        return "No committed stack waives a rule."
    return "\n".join(["| Stack | Rule | Resource | Reason | Owner | Expires |", "|---|---|---|---|---|---|", *rows])


def stack_mapping() -> str:
    """The environment/stack tie in one sentence, from stacks/load.py's rule."""
    from stacks.schema import Environment

    pairs = ", ".join(f"`{e.value}` and `{e.value}-<suffix>` are {e.value} stacks" for e in Environment)
    return (
        f"Stack names decide environments: {pairs}; any other name is refused (exit 2), and a stack file's "
        "`environment` must be the one its name maps to. The plan, `__main__.py` under the real CLI and the "
        "`stack-environment` rule (with the environment named in `policies/config/<env>.json`) all check it."
    )


def policy_tables() -> str:
    """The generated part of docs/policies.md (`make docs`): the tie, the rules, the floors, the waivers."""
    return "\n\n".join(
        [
            stack_mapping(),
            rules_table(),
            "**Floors** (thresholds of the floor rules per environment; `policies/config/<env>.json`):",
            floors_table(),
            "**Waivers** in the committed stacks (`waivers:` in the stack file; every plan lists them):",
            waivers_table(),
        ]
    )


if __name__ == "__main__":
    print(policy_tables())
