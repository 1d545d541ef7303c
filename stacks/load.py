"""Loading a stack file (or the Pulumi config object) into a validated `StackConfig`.

Every way a file can be wrong ends in one `ConfigError` that lists each problem with its key path, the value
given, what would be valid and, where the YAML gives one, the line and column, so the plan command and
`__main__.py` can print it and stop cleanly. The YAML itself is read strictly by `stacks.reader`.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from stacks.printable import printable
from stacks.reader import Origin, Parsed, Path_, UnreadableFile, YamlRefused, parse, read_text
from stacks.schema import CONFIG_KEY, CONFIG_NAMESPACE, Environment, StackConfig
from stacks.untyped import is_list, is_mapping, is_sequence

STACKS_DIR = Path(__file__).resolve().parent
FULL_KEY = f"{CONFIG_NAMESPACE}:{CONFIG_KEY}"
# Other keys a stack file may carry beside ours: Pulumi's own and provider settings.
ALLOWED_OTHER_NAMESPACES = ("pulumi:", "aws:", "aws-native:", "kubernetes:")
# Pulumi's own rule for stack names (pulumi/pulumi pkg/backend: stackNameAndProjectRegexp, at most 100
# characters): also keeps a --stack value from naming a path outside stacks/ or needing shell quoting.
STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # always fullmatch: `$` also matches before a final newline
SHOWN_CHARS = 80  # a value echoed back in a problem is cut to this many characters


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stack file."""

    key: str  # dotted key path, for example trainstack:cluster.gpu_node_groups.0.max_size
    value: Any  # what the file gave (or _MISSING when the key is missing or the value is not worth echoing)
    message: str  # what is wrong and what would be valid
    origin: Origin | None = None  # where in the file, when it came from YAML

    def __str__(self) -> str:
        shown = "" if self.value is _MISSING else f" (got {short(self.value)})"
        where = f" [{self.origin}]" if self.origin is not None else ""
        # One line, whatever the key or the message holds: a key from the file cannot forge lines or send
        # terminal escapes (stacks/printable.py).
        return printable(f"{self.key}{shown}: {self.message}{where}")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def short(value: Any, limit: int = SHOWN_CHARS) -> str:
    """`value` as JSON-like text of at most `limit` characters, without ever rendering more than that: a
    huge or deeply nested value costs no more to show than a small one."""
    out: list[str] = []
    size = 0
    for piece in _pieces(value, depth=0):
        out.append(piece)
        size += len(piece)
        if size > limit:
            break
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pieces(value: Any, depth: int) -> Iterator[str]:
    """The text of `value` in pieces, each small: nothing here renders a whole value at once."""
    if isinstance(value, str):
        yield repr(value[: SHOWN_CHARS + 1])
    elif isinstance(value, bool) or value is None:
        yield json.dumps(value)
    elif isinstance(value, int):
        yield (
            str(value) if value.bit_length() < 200 else f"<integer of about {int(value.bit_length() * 0.30103)} digits>"
        )
    elif isinstance(value, float):
        yield repr(value)
    elif isinstance(value, datetime.date):
        yield value.isoformat()
    elif is_mapping(value):
        if depth >= 8:
            yield "{...}"
            return
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + repr(str(key)[: SHOWN_CHARS + 1]) + ": "
            yield from _pieces(item, depth + 1)
        yield "}"
    elif is_sequence(value):
        if depth >= 8:
            yield "[...]"
            return
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _pieces(item, depth + 1)
        yield "]"
    else:
        yield f"<{type(value).__name__}>"


class ConfigError(Exception):
    """A stack file that cannot be used; `problems` lists every reason at once. `baseline` marks the file
    given to --against, so the message says the problems are in the baseline, not in the planned config."""

    def __init__(self, source: str, problems: list[Problem], *, baseline: bool = False) -> None:
        self.source = source
        self.problems = problems
        self.baseline = baseline
        super().__init__(self.render())

    def render(self) -> str:
        what = "baseline (--against) stack config" if self.baseline else "stack config"
        lines = [f"invalid {what} {printable(self.source)}: {len(self.problems)} problem(s)"]
        if self.baseline:
            lines[0] += "; they are in the baseline you compare against, not in the config being planned"
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


def stack_problem(stack_name: str, stack: StackConfig) -> Problem | None:
    """Why `stack` cannot run as `stack_name` (its environment is not the one the stack name maps to), or None."""
    key = f"{FULL_KEY}.environment"
    expected = environment_of_stack(stack_name)
    valid = ", ".join(f"`{e.value}` or `{e.value}-<suffix>`" for e in Environment)
    if expected is None:
        return Problem(
            key,
            stack.environment.value,
            f"stack {stack_name!r} maps to no environment: name a stack {valid} (for example prod-eu-west-1), so the "
            "environment that decides data protection and policy floors follows from the stack",
        )
    if stack.environment is not expected:
        return Problem(
            key,
            stack.environment.value,
            f"stack {stack_name!r} is a {expected.value} stack: its environment must be {expected.value!r}. The "
            "environment decides deletion protection and every policy floor, so it follows from the stack name "
            f"(stacks named {valid}), not from a value inside the file",
        )
    return None


def check_stack(stack_name: str, stack: StackConfig, source: str) -> StackConfig:
    """`stack` when its environment is the one `stack_name` maps to; ConfigError (exit 2) otherwise."""
    problem = stack_problem(stack_name, stack)
    if problem is not None:
        raise ConfigError(source, [problem])
    return stack


def stack_file(stack: str, stacks_dir: Path = STACKS_DIR) -> Path:
    """The file of a named stack; ConfigError lists the stacks that exist when it does not."""
    known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in stacks_dir.glob("Pulumi.*.yaml"))
    if not STACK_NAME.fullmatch(stack):
        raise ConfigError(
            "--stack",
            [
                Problem(
                    "--stack",
                    stack,
                    "not a Pulumi stack name (letters, digits, `-`, `_` and `.`, 1 to 100 characters); "
                    f"stacks here: {', '.join(known)}",
                )
            ],
        )
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise ConfigError(str(path), [Problem("--stack", stack, f"no such stack; valid: {', '.join(known)}")])
    return path


def load_file(path: Path, option: str = "--config") -> StackConfig:
    """Read and validate a `Pulumi.<env>.yaml` stack file; `option` names the flag it came from in problems
    (`--against` marks the file as the baseline)."""
    source = str(path)
    baseline = option == "--against"
    try:
        text = read_text(path)
    except UnreadableFile as error:
        raise ConfigError(source, [Problem(option, source, str(error))], baseline=baseline) from None
    try:
        parsed = parse(text)
    except YamlRefused as error:
        problem = Problem("<yaml>", _MISSING, error.message, error.origin)
        if _looks_like_report(text, None):
            problem = _report_problem(option, source)
        raise ConfigError(source, [problem], baseline=baseline) from None
    if _looks_like_report(text, parsed.document):
        raise ConfigError(source, [_report_problem(option, source)], baseline=baseline)
    try:
        return validate_document(parsed.document, source, parsed)
    except ConfigError as error:
        raise ConfigError(source, error.problems, baseline=baseline) from None


def _looks_like_report(text: str, document: Any) -> bool:
    """A plan report (JSON, Markdown or text) given where a stack file belongs, a common mix-up with --against."""
    if isinstance(document, Mapping) and "config" not in document:
        return "steps" in document and ("trainstack" in document or "changeSummary" in document)
    head = text.lstrip()[:200]
    return head.startswith(("## trainstack plan", "trainstack plan:"))


def _report_problem(option: str, source: str) -> Problem:
    return Problem(
        option,
        source,
        "this is a trainstack plan report, not a stack file: give the stack file itself, for example "
        "stacks/Pulumi.prod.yaml, or main's copy of it (git show main:stacks/Pulumi.prod.yaml > base.yaml)",
    )


def validate_document(document: Any, source: str, parsed: Parsed | None = None) -> StackConfig:
    """Validate a parsed stack file: a mapping with a `config` mapping holding `trainstack:cluster`."""
    parsed = parsed or Parsed(document=document)
    problems = [
        Problem(_dotted(r.path), _MISSING, r.message, r.origin) for r in parsed.refusals if not _is_inside(r.path)
    ]
    inside = [r for r in parsed.refusals if _is_inside(r.path)]
    config = document.get("config") if is_mapping(document) else None
    if not is_mapping(config):
        problems.append(Problem("config", _MISSING, "a stack file is a mapping with a `config:` mapping"))
        raise ConfigError(source, problems)
    problems += [
        Problem(
            str(key),
            _MISSING,
            f"unknown config key; trainstack reads `{FULL_KEY}` (plus pulumi:/aws: settings)",
            parsed.origins.get(("config", str(key))),
        )
        for key in config
        if key != FULL_KEY and not str(key).startswith(ALLOWED_OTHER_NAMESPACES)
    ]
    if FULL_KEY not in config:
        problems.append(Problem(FULL_KEY, _MISSING, "missing: the stack's settings live under this one key"))
        raise ConfigError(source, problems)
    try:
        stack = validate_object(config[FULL_KEY], source, parsed, inside)
    except ConfigError as error:
        raise ConfigError(source, problems + error.problems) from None
    if problems:
        raise ConfigError(source, problems)
    return stack


_PREFIX: Path_ = ("config", FULL_KEY)


def _is_inside(path: Path_) -> bool:
    return path[:2] == _PREFIX


def _dotted(path: Path_) -> str:
    """The key path as problems name it: `trainstack:cluster.eks.version`, `aws:region`, `config`."""
    parts = path[1:] if path[:1] == ("config",) and len(path) > 1 else path
    return ".".join(map(str, parts)) or "<document>"


def validate_object(
    value: Any, source: str, parsed: Parsed | None = None, refusals: list[Any] | None = None
) -> StackConfig:
    """Validate the `trainstack:cluster` object itself (as YAML, or as the JSON string Pulumi gives).

    `parsed` (from a YAML file) adds line numbers, the text of unquoted scalars and the refusals inside the
    object; a refused value is not validated again."""
    if isinstance(value, str):
        try:
            value = json.loads(value, parse_constant=_no_constant, object_pairs_hook=_unique_pairs)
        except (ValueError, RecursionError) as error:
            raise ConfigError(source, [Problem(FULL_KEY, _MISSING, f"not a JSON object: {error}")]) from None
    origins = parsed.origins if parsed else {}
    problems = [Problem(_dotted(r.path), _MISSING, r.message, r.origin) for r in refusals or []]
    secrets = [path[2:] for path in parsed.secrets if _is_inside(path)] if parsed else list(_secure_paths(value, ()))
    if () in secrets:
        raise ConfigError(source, [_secret_problem((), origins)])
    problems += [_secret_problem(path, origins) for path in secrets]
    skip = [tuple(path) for path in secrets] + [r.path[2:] for r in refusals or []]
    try:
        stack = StackConfig.model_validate(value)
    except ValidationError as error:
        problems += [p for loc, p in _problems(error, origins) if not any(loc[: len(s)] == s for s in skip if s)]
        raise ConfigError(source, problems or _problems_all(error, origins)) from None
    if problems:
        raise ConfigError(source, problems)
    return stack


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, item in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = item
    return result


def _secure_paths(value: object, path: Path_) -> Iterator[Path_]:
    if is_mapping(value):
        if set(value) == {"secure"}:
            yield path
            return
        for key, item in value.items():
            yield from _secure_paths(item, (*path, str(key)))
    elif is_list(value):
        for i, item in enumerate(value):
            yield from _secure_paths(item, (*path, i))


def _secret_problem(loc: Path_, origins: Mapping[Path_, Origin]) -> Problem:
    return Problem(
        ".".join([FULL_KEY, *map(str, loc)]),
        _MISSING,
        "an encrypted Pulumi secret (`secure:`): the offline plan has no Pulumi CLI or key to decrypt it. To "
        "plan anyway, copy the stack file and put a placeholder plain value here (the plan reports the shape, "
        "not the secret); trainstack's settings hold no secrets, so keep secrets in their own config keys",
        origins.get((*_PREFIX, *loc)),
    )


def secret_refusal(source: str) -> str:
    """Why the program refuses a `trainstack:cluster` holding an encrypted value under the real CLI: it would be
    decrypted into resource inputs and the state in plain text (__main__.py)."""
    return ConfigError(
        source,
        [
            Problem(
                FULL_KEY,
                _MISSING,
                "holds an encrypted Pulumi secret (`secure:`): Pulumi hands the program the whole object decrypted, "
                "and every value in it would reach resource inputs and the state in plain text. trainstack's "
                "settings hold no secrets: remove the `secure:` value (keep secrets in their own config keys)",
            )
        ],
    ).render()


def _problems_all(error: ValidationError, origins: Mapping[Path_, Origin]) -> list[Problem]:
    return [problem for _, problem in _problems(error, origins)]


def _problems(error: ValidationError, origins: Mapping[Path_, Origin]) -> list[tuple[Path_, Problem]]:
    problems: list[tuple[Path_, Problem]] = []
    for item in error.errors(include_url=False):
        loc: Path_ = tuple(item["loc"])
        key = ".".join([FULL_KEY, *map(str, loc)])
        origin = origins.get((*_PREFIX, *loc))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "default_factory_not_called":
            continue  # a default that depends on a field that failed: that field's problem is reported
        if item["type"] == "extra_forbidden":
            valid = _valid_keys(loc[:-1])
            message = f"unknown key; valid keys here: {', '.join(valid)}" if valid else "unknown key"
        elif item["type"] == "missing":
            problems.append(
                (loc, Problem(key, _MISSING, "required key is missing", origins.get((*_PREFIX, *loc[:-1]))))
            )
            continue
        elif item["type"] == "string_pattern_mismatch":
            message = _pattern_message(loc, item)
        elif item["type"] in ("finite_number", "float_parsing") and isinstance(item.get("input"), str):
            message = "not a finite number: give a plain number"
        message += _quote_hint(item, origin)
        # A cross-field validator reports several problems, one per line.
        problems += [(loc, Problem(key, _value_at(item), line, origin)) for line in message.splitlines() if line]
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
    r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:role/([\x21-\x7E]*/)?[A-Za-z0-9_+=,.@-]{1,64}$": "an IAM role ARN such as "
    "arn:aws:iam::123456789012:role/NAME (an optional /path/, then a name of 1-64 letters, digits and _+=,.@-)",
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9-]+$": "a SageMaker training plan ARN "
    "such as arn:aws:sagemaker:us-east-1:123456789012:training-plan/NAME",
    r"^cr-[0-9a-f]{8,17}$": "a capacity reservation id such as cr-0a1b2c3d4e5f67890",
    r"^vpc-[0-9a-f]{8,17}$": "a VPC id such as vpc-0a1b2c3d4e5f67890",
    r"^subnet-[0-9a-f]{8,17}$": "a subnet id such as subnet-0a1b2c3d4e5f67890",
    r"^vpce-[0-9a-f]{8,17}$": "a VPC endpoint id such as vpce-0a1b2c3d4e5f67890",
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
    r"^v\d+\.\d+\.\d+$": "an exact image tag with a leading v, such as v1.36.1",
    r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/([\x21-\x7E]*/)?[A-Za-z0-9_+=,.@-]{1,64}$": "an IAM role or "
    "user ARN such as arn:aws:iam::123456789012:role/NAME (an optional /path/, then a name of 1-64 letters, digits "
    "and _+=,.@-)",
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d+)?/([a-z0-9._-]+/)*$": "an image registry prefix ending in /, such as "
    "public.ecr.aws/ or nvcr.io/nvidia/",
    r"^\d{1,10}:\d{1,10}$": "a UID:GID pair such as 65534:65534",
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$": "an e-mail address such as ml-platform@example.com",
    r"^((\d{1,3}|\[\d{1,3}-\d{1,3}\])\.){3}(\d{1,3}|\[\d{1,3}-\d{1,3}\])@tcp$": "a Lustre NID (range) such as "
    "10.0.1.[10-20]@tcp",
    r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$": "an absolute path without a trailing slash, such as /teams",
    r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$": "an EKS cluster name of 1-100 letters, digits, hyphens and underscores, "
    "starting with a letter or digit, such as ml-platform-eks",
    r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$": "an AMI id of 8 or 17 lower-case hex digits such as ami-0123456789abcdef0",
    r"^fs-[0-9a-f]{17}$": "an FSx file system id such as fs-0123456789abcdef0",
    r"^fs-[0-9a-f]{17}\.fsx\.[a-z0-9-]+\.amazonaws\.com$": "an FSx file system DNS name such as "
    "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    r"^[a-z0-9]{8}$|^fsx$": "a Lustre mount name (8 lower-case letters or digits, or fsx for SCRATCH_1) such as "
    "abcdefgh",
}


def _pattern_message(loc: Path_, item: Mapping[str, Any]) -> str:
    """A pattern mismatch said for people: an example of a valid value, and the pattern for the precise rule."""
    field = _field_at(loc)
    examples = (field.examples if field else None) or []
    context: Mapping[str, Any] = item.get("ctx") or {}
    pattern = str(context.get("pattern", ""))
    example = f"for example {examples[0]!r}" if examples else "see docs/config.md"
    if pattern in PATTERNS:  # the rule in words first
        return f"expected {PATTERNS[pattern]}" + (f"; {example}" if examples else "")
    return f"does not match the expected pattern: {example} (the pattern: {pattern})"


def _quote_hint(item: Mapping[str, Any], origin: Origin | None) -> str:
    """YAML reads unquoted 1.30 as the number 1.3 and 7:03:00 as 25380: say so, and how to quote."""
    value = item.get("input")
    wants_text = item["type"] in ("string_type", "literal_error", "enum", "string_pattern_mismatch")
    plain = origin.plain if origin else None
    if not wants_text or plain is None or isinstance(value, (str, Mapping, list)):
        return ""
    if (isinstance(value, float) and math.isfinite(value)) or isinstance(value, int | bool | datetime.date):
        return f'; YAML reads the unquoted {plain} as {_type_of(value)}: quote it, "{plain}"'
    return ""


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return f"the number {value}"


def _value_at(item: Mapping[str, Any]) -> Any:
    value = item.get("input", _MISSING)
    # For a model-level rule the input is the whole sub-object; do not echo it back.
    return _MISSING if isinstance(value, Mapping) else value


def _field_at(loc: Path_) -> FieldInfo | None:
    """The schema field at `loc` (list indices and dict keys skipped), for messages that need its examples."""
    model: type[BaseModel] | None = StackConfig
    field: FieldInfo | None = None
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None:
            break
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field else None
    return field


def _valid_keys(loc: Path_) -> list[str]:
    """The field names of the model at `loc` (list indices skipped), for 'unknown key' messages."""
    model: type[BaseModel] | None = StackConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field else None
    return sorted(model.model_fields) if model else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    args: tuple[Any, ...] = getattr(annotation, "__args__", ())
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in args:
        found = _model_of(arg)
        if found:
            return found
    return None
