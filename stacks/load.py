"""Loading a stack file (or the Pulumi config object) into a validated `ClusterConfig`.

Every way a file can be wrong ends in one `ConfigError` that lists each problem with its key path, the value
given and what would be valid, so the plan command and `__main__.py` can print it and stop cleanly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from stacks.schema import CONFIG_KEY, CONFIG_NAMESPACE, ClusterConfig, Environment

STACKS_DIR = Path(__file__).resolve().parent
FULL_KEY = f"{CONFIG_NAMESPACE}:{CONFIG_KEY}"
# Other keys a stack file may carry beside ours: Pulumi's own and provider settings.
ALLOWED_OTHER_NAMESPACES = ("pulumi:", "aws:", "aws-native:", "kubernetes:")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stack file."""

    key: str  # dotted key path, for example trainstack:cluster.gpu_node_groups.0.max_size
    value: Any  # what the file gave (or None when the key is missing)
    message: str  # what is wrong and what would be valid

    def __str__(self) -> str:
        shown = "" if self.value is _MISSING else f" (got {_short(self.value)})"
        return f"{self.key}{shown}: {self.message}"


_MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ConfigError(Exception):
    """A stack file that cannot be used; `problems` lists every reason at once."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid stack config {self.source}: {len(self.problems)} problem(s)"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


# ------------------------------------------------------------------------------ the environment/stack tie
#
# Everything that protects data (deletion protection, the policy levels and floors of policies/config/<env>.json)
# keys off `environment`, so a stack file may not choose it freely: the stack's name decides it. A stack is
# named after its environment (`prod`), or is one more stack of that environment named `<environment>-<suffix>`
# (`prod-eu-west-1`, `staging-bench`). Nothing else maps: a stack called `qa` or `prod2` names no environment and
# is refused until it follows the rule.


def environment_of_stack(stack: str) -> Environment | None:
    """The environment a stack name maps to: `prod` and `prod-<suffix>` to prod, and so on; None otherwise."""
    for environment in Environment:
        if stack == environment.value or stack.startswith(f"{environment.value}-"):
            return environment
    return None


def stack_problem(stack: str, cluster: ClusterConfig) -> Problem | None:
    """Why `cluster` cannot run as `stack` (its environment is not the one the stack name maps to), or None."""
    key = f"{FULL_KEY}.environment"
    expected = environment_of_stack(stack)
    valid = ", ".join(f"`{e.value}` or `{e.value}-<suffix>`" for e in Environment)
    if expected is None:
        return Problem(
            key,
            cluster.environment.value,
            f"stack {stack!r} maps to no environment: name a stack {valid} (for example prod-eu-west-1), so the "
            "environment that decides data protection and policy floors follows from the stack",
        )
    if cluster.environment is not expected:
        return Problem(
            key,
            cluster.environment.value,
            f"stack {stack!r} is a {expected.value} stack: its environment must be {expected.value!r}. The "
            "environment decides deletion protection and every policy floor, so it follows from the stack name "
            f"(stacks named {valid}), not from a value inside the file",
        )
    return None


def check_stack(stack: str, cluster: ClusterConfig, source: str) -> ClusterConfig:
    """`cluster` when its environment is the one `stack` maps to; ConfigError (exit 2) otherwise."""
    problem = stack_problem(stack, cluster)
    if problem is not None:
        raise ConfigError(source, [problem])
    return cluster


def stack_file(stack: str, stacks_dir: Path = STACKS_DIR) -> Path:
    """The file of a named stack; ConfigError lists the stacks that exist when it does not."""
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in stacks_dir.glob("Pulumi.*.yaml"))
        raise ConfigError(str(path), [Problem("--stack", stack, f"no such stack; valid: {', '.join(known)}")])
    return path


def load_file(path: Path, option: str = "--config") -> ClusterConfig:
    """Read and validate a `Pulumi.<env>.yaml` stack file; `option` names the flag it came from in problems."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [Problem(option, source, "file not found")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(source, [Problem(option, source, f"cannot read: {error}")]) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        reason = getattr(error, "problem", None) or str(error)
        raise ConfigError(source, [Problem("<yaml>", _MISSING, f"YAML syntax error at {where}: {reason}")]) from None
    return validate_document(document, source)


def validate_document(document: Any, source: str) -> ClusterConfig:
    """Validate a parsed stack file: a mapping with a `config` mapping holding `trainstack:cluster`."""
    if not isinstance(document, Mapping) or not isinstance(document.get("config"), Mapping):
        raise ConfigError(source, [Problem("config", _MISSING, "a stack file is a mapping with a `config:` mapping")])
    config = document["config"]
    problems = [
        Problem(str(key), _MISSING, f"unknown config key; trainstack reads `{FULL_KEY}` (plus pulumi:/aws: settings)")
        for key in config
        if key != FULL_KEY and not str(key).startswith(ALLOWED_OTHER_NAMESPACES)
    ]
    if FULL_KEY not in config:
        problems.append(Problem(FULL_KEY, _MISSING, "missing: the stack's settings live under this one key"))
        raise ConfigError(source, problems)
    try:
        cluster = validate_object(config[FULL_KEY], source)
    except ConfigError as error:
        raise ConfigError(source, problems + error.problems) from None
    if problems:
        raise ConfigError(source, problems)
    return cluster


def validate_object(value: Any, source: str) -> ClusterConfig:
    """Validate the `trainstack:cluster` object itself (as YAML, or as the JSON string Pulumi gives)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(source, [Problem(FULL_KEY, value, f"not a JSON object: {error}")]) from None
    try:
        return ClusterConfig.model_validate(value)
    except ValidationError as error:
        raise ConfigError(source, _problems(error)) from None


def _problems(error: ValidationError) -> list[Problem]:
    problems: list[Problem] = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        key = ".".join([FULL_KEY, *map(str, loc)])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "default_factory_not_called":
            continue  # a default that depends on a field that failed: that field's problem is reported
        if item["type"] == "extra_forbidden":
            valid = _valid_keys(loc[:-1])
            message = f"unknown key; valid keys here: {', '.join(valid)}" if valid else "unknown key"
        elif item["type"] == "string_pattern_mismatch":
            pattern = str((item.get("ctx") or {}).get("pattern", ""))
            message = f"expected {PATTERNS[pattern]}" if pattern in PATTERNS else f"does not match {pattern}"
        elif item["type"] == "missing":
            problems.append(Problem(key, _MISSING, "required key is missing"))
            continue
        # A cross-field validator reports several problems, one per line.
        problems += [Problem(key, _value_at(item), line) for line in message.splitlines() if line]
    return problems


# What each pattern of the schema accepts, in words and with an example: a person reads "an IAM role ARN such as
# arn:aws:iam::123456789012:role/NAME", not a regular expression. tests/unit/test_config_errors.py checks that
# every pattern the schema uses is listed here.
PATTERNS: dict[str, str] = {
    r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$": "a DNS label of 1-32 characters: lower-case letters, digits and hyphens, "
    "starting with a letter and not ending with a hyphen, such as trainstack-prod or p5-train",
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$": "a name of 1-63 lower-case letters, digits and hyphens that starts and "
    "ends with a letter or digit, such as workers",
    r"^[a-z]{2}(-gov)?-[a-z]+-\d$": "an AWS region such as us-east-1",
    r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$": "an availability zone name such as us-east-1a",
    r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$": "an IAM role ARN such as arn:aws:iam::123456789012:role/NAME",
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9-]+$": "a SageMaker training plan ARN "
    "such as arn:aws:sagemaker:us-east-1:123456789012:training-plan/NAME",
    r"^cr-[0-9a-f]{8,17}$": "a capacity reservation id such as cr-0a1b2c3d4e5f67890",
    r"^ml\.[a-z0-9-]+\.[a-z0-9]+$": "a SageMaker instance type such as ml.p5.48xlarge",
    r"^[a-z0-9-]+\.[a-z0-9]+$": "an EC2 instance type such as m7i.xlarge",
    r"^v?\d+\.\d+\.\d+$": "an exact chart version such as v25.3.4 or 0.14.3 (no ranges, no `latest`)",
    r"^v\d+\.\d+\.\d+-eksbuild\.\d+$": "an exact EKS add-on build such as v1.22.4-eksbuild.3 (`aws eks "
    "describe-addon-versions` lists them)",
    r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$": "a weekly time d:HH:MM in UTC, 1 being Monday, such as 7:03:00",
    r"^\d+[KMG]?$": "a size in bytes with an optional K, M or G suffix, such as 16G",
    r"^([A-Za-z0-9._-]+/)*$": "a bucket prefix that is empty or ends in /, such as datasets/",
    r"^/[A-Za-z0-9._/-]*$": "an absolute Lustre path such as /datasets",
    r"^\d+\.\d+\.\d+-(\d{8}|[0-9a-f]{8})$": "an EKS AMI release version such as 1.36.0-20260915 (AL2023) or "
    "1.44.0-0f2a6ffa (Bottlerocket)",
    r"^[a-z0-9]+(-[a-z0-9]+)+$": "a policy rule id in kebab case such as nat-per-az",
    r"^[a-z][-a-z0-9_]{0,31}$": "a POSIX user name of up to 32 characters such as ubuntu",
    r"^\d+\.\d+\.\d+$": "an exact version such as 1.2.3",
}


def _value_at(item: Mapping[str, Any]) -> Any:
    value = item.get("input", _MISSING)
    # For a model-level rule the input is the whole sub-object; do not echo it back.
    return _MISSING if isinstance(value, Mapping) else value


def _valid_keys(loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model at `loc` (list indices skipped), for 'unknown key' messages."""
    model: type[BaseModel] | None = ClusterConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field else None
    return sorted(model.model_fields) if model else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found:
            return found
    return None
