"""The pack as the Pulumi CLI runs it: its files, its isolation from the program, and its analyzer protocol.

`test_served_pack_agrees_with_offline_review` copies the pack out of the repository under another directory
name, starts it the way the CLI does (`python -m pulumi.policy <engine> <pack dir>`: it prints its gRPC port
and blocks), configures it with the stack's resolved levels and sends it what the offline engine recorded,
over the real Analyzer protocol: the diagnostics must equal `trainstack.review`'s violations.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from policies import waivers
from policies.enforcement import FLOORS
from policies.rules import BY_NAME, POLICIES
from stacks.load import FULL_KEY, ConfigError, validate_object
from tests.conftest import ROOT, STACKS, recording, stack_document
from tests.policy.helpers import mutated, scenario
from trainstack.engine import Recording
from trainstack.review import resolve_config, review

PACK = ROOT / "policies"


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level


def test_pack_imports_nothing_from_the_program() -> None:
    """Only the SDK and the standard library by absolute import; the pack's own modules relatively, so the
    pack works under any directory name (`pulumi policy publish` unpacks it elsewhere)."""
    allowed = {"pulumi_policy", "__future__"} | set(sys.stdlib_module_names)
    for path in PACK.rglob("*.py"):
        if ".venv" in path.parts:
            continue
        for module, level in _imports(path):
            if level == 0:
                assert module.split(".")[0] in allowed, f"{path.relative_to(ROOT)} imports {module}"


def _copy_pack(destination: Path) -> Path:
    """The pack's files (not its virtualenv or caches) under a directory that is not called `policies`."""
    shutil.copytree(PACK, destination, ignore=shutil.ignore_patterns(".venv", "__pycache__"))
    return destination


def _pack_env() -> dict[str, str]:
    """The test's environment without PYTHONPATH, so only the pack's directory and site-packages import."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


# Runs a pack directory the way `python -m pulumi.policy <engine> <dir>` does (runpy.run_path), with
# PolicyPack replaced so nothing is served, and prints the policy names and every module file loaded from
# outside the interpreter's own directories.
_RUN_PACK = """
import json, runpy, sys, sysconfig
import pulumi_policy
built = []
pulumi_policy.PolicyPack = lambda **kwargs: built.append(kwargs)
runpy.run_path(sys.argv[1], run_name="__main__")
prefixes = tuple({sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")})
files = sorted(
    f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None)) and not f.startswith(prefixes)
)
print(json.dumps({"policies": [p.name for p in built[0]["policies"]], "files": files}))
"""


@pytest.mark.e2e
def test_pack_runs_from_anywhere(tmp_path: Path) -> None:
    copy = _copy_pack(tmp_path / "published-pack")
    done = subprocess.run(
        [sys.executable, "-c", _RUN_PACK, str(copy)],
        cwd=copy,
        env=_pack_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["policies"] == [p.name for p in POLICIES]
    assert result["files"], "the copy's own modules were not loaded"
    assert all(Path(f).is_relative_to(copy) for f in result["files"]), result["files"]


def test_pack_main_is_imported_nowhere() -> None:
    for path in [
        *ROOT.glob("*.py"),
        *(ROOT / "trainstack").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(PACK / "rules").rglob("*.py"),
    ]:
        if "__main__" not in path.read_text():  # no import of it can be spelled without the name: not parsed
            continue
        for module, _ in _imports(path):
            assert module != "policies.__main__", f"{path} imports the pack entry point (it blocks forever)"


def test_requirements_pin_the_program_versions() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = dict(
        re.match(r"([a-z0-9.-]+)(?:\[[a-z,]+\])?==(.+)", d).groups()  # type: ignore[union-attr]
        for d in pyproject["project"]["dependencies"] + pyproject["dependency-groups"]["dev"]
    )
    lines = [line for line in (PACK / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    required = dict(line.split("==") for line in lines)
    assert required == {"pulumi": pins["pulumi"], "pulumi-policy": pins["pulumi-policy"]}


def test_pack_manifest() -> None:
    manifest = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert manifest["runtime"]["options"]["virtualenv"] == ".venv"  # ignored by git and ruff
    assert manifest["version"] and manifest["description"]  # the pack's name comes from PolicyPack(name=...)


def test_main_assembles_the_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    import runpy

    import pulumi_policy
    from pulumi_policy import policy as sdk

    built: list[dict[str, object]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.append(kwargs))
    analyzer = sdk._PolicyAnalyzerServicer
    monkeypatch.setattr(sdk, "_PolicyAnalyzerServicer", analyzer)  # restored after: __main__ replaces it
    runpy.run_path(str(PACK / "__main__.py"), run_name="__main__")
    assert issubclass(sdk._PolicyAnalyzerServicer, analyzer) and sdk._PolicyAnalyzerServicer is not analyzer
    assert len(built) == 1
    assert built[0]["name"] == "trainstack"
    assert [p.name for p in built[0]["policies"]] == [p.name for p in POLICIES]  # type: ignore[attr-defined]
    assert built[0]["enforcement_level"] is EnforcementLevel.ADVISORY


# --------------------------------------------------------------------------------- the served pack


PACK_PYTHON = ROOT / "policies" / ".venv" / "bin" / "python"  # `make policy-venv`, from policies/requirements.txt


def pack_python() -> str:
    """The pack's own interpreter, as the CLI runs a local Python pack (PulumiPolicy.yaml: virtualenv .venv).
    `make test` creates it; a bare `pytest` outside CI falls back to the program's interpreter."""
    if PACK_PYTHON.exists():
        return str(PACK_PYTHON)
    if os.environ.get("CI"):
        pytest.fail("policies/.venv is missing: `make test` creates it (make policy-venv)")
    return sys.executable


@contextlib.contextmanager
def served(tmp_path: Path, environ: dict[str, str] | None = None) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """A copy of the pack, outside the repository and not named `policies`, served as the CLI serves it: the
    pack's own virtualenv runs `python -m pulumi.policy <engine> <pack dir>`, with what the Python language host
    adds to its environment for a stack (`environ`: PULUMI_CONFIG, PULUMI_STACK, ...)."""
    copy = _copy_pack(tmp_path / "trainstack-guardrails")
    process = subprocess.Popen(
        [pack_python(), "-m", "pulumi.policy", "127.0.0.1:0", str(copy)],
        cwd=copy,
        env={**_pack_env(), **(environ or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        port = int(process.stdout.readline())  # type: ignore[union-attr]
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=10)


def stack_environ(document: dict[str, object], stack: str, preview: bool = True) -> dict[str, str]:
    """What pulumi-language-python's RunPlugin sets for a policy pack (pulumi/pulumi v3.259.0,
    sdk/python/cmd/pulumi-language-python/main.go): the organization, project, stack, dry-run flag and the
    stack's decrypted config map as JSON, every value a string (objects as their JSON)."""
    from tests.policy.test_waivers import pulumi_config

    return {
        "PULUMI_ORGANIZATION": "organization",
        "PULUMI_PROJECT": "trainstack",
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true" if preview else "false",
        "PULUMI_CONFIG": json.dumps(pulumi_config(document)),
    }


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """One served pack for the tests that do not depend on a stack's config."""
    with served(tmp_path_factory.mktemp("served")) as stub:
        yield stub


_LEVELS = {
    EnforcementLevel.ADVISORY: analyzer_pb2.ADVISORY,
    EnforcementLevel.MANDATORY: analyzer_pb2.MANDATORY,
    EnforcementLevel.REMEDIATE: analyzer_pb2.REMEDIATE,
    EnforcementLevel.DISABLED: analyzer_pb2.DISABLED,
}
_NAMES = {analyzer_pb2.ADVISORY: "advisory", analyzer_pb2.MANDATORY: "mandatory"}


def _struct(value: dict[str, object]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


@pytest.mark.e2e
def test_served_pack_lists_every_rule(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    from google.protobuf import empty_pb2

    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "trainstack"
    assert [p.name for p in info.policies] == [p.name for p in POLICIES]
    assert all(p.description and p.severity for p in info.policies)
    kinds = {p.name: p.policy_type for p in info.policies}
    for policy in POLICIES:
        expected = (
            analyzer_pb2.POLICY_TYPE_RESOURCE
            if isinstance(policy, ResourceValidationPolicy)
            else analyzer_pb2.POLICY_TYPE_STACK
        )
        assert kinds[policy.name] == expected


def cli_config(document: dict[str, object]) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """The Configure call the CLI makes for `--policy-pack-config <document>`: every policy, with the level and
    properties pulumi/pulumi's ReconcilePolicyPackConfig resolves (the policy's default, then `all`, then its
    entry; pkg/resource/analyzer/config.go). The CLI knows nothing of the floors: the pack holds them itself."""
    config = resolve_config(document)
    return analyzer_pb2.ConfigureAnalyzerRequest(
        policyConfig={
            name: analyzer_pb2.PolicyConfig(
                enforcementLevel=_LEVELS[level], properties=_struct(dict(config.properties[name]))
            )
            for name, level in config.levels.items()
        }
    )


def analyze(analyzer: analyzer_pb2_grpc.AnalyzerStub, recorded: Recording) -> set[tuple[str, str, str, str]]:
    """Every diagnostic the served pack returns for a recording, as the engine asks: Analyze per resource, then
    AnalyzeStack with them all. (policy, urn, level, message less the policy's description)."""
    by_urn = {r.urn: r for r in recorded.resources}

    def provider(urn: str) -> analyzer_pb2.AnalyzerProviderResource | None:
        found = by_urn.get(urn)
        if found is None:
            return None
        return analyzer_pb2.AnalyzerProviderResource(
            type=found.type, urn=found.urn, name=found.name, properties=_struct(found.inputs)
        )

    served: set[tuple[str, str, str, str]] = set()

    def keep(d: analyzer_pb2.AnalyzeDiagnostic, urn: str) -> None:
        # A violation's message is the policy's description, a line break, then the rule's words; the "can't run
        # during preview" advisory also names the pack (pulumi_policy policy.py), which the offline review leaves out.
        message = re.sub(r" from policy pack '[^']*'", "", d.message.split("\n", 1)[-1])
        served.add((d.policyName, d.urn or urn, _NAMES[d.enforcementLevel], message))

    stack_resources = []
    for r in recorded.resources:
        options = analyzer_pb2.AnalyzerResourceOptions(protect=r.protect, parent=r.parent)
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type,
            properties=_struct(r.inputs),
            urn=r.urn,
            name=r.name,
            options=options,
            provider=provider(r.provider_urn),
        )
        for d in analyzer.Analyze(request).diagnostics:
            keep(d, r.urn)
        stack_resources.append(
            analyzer_pb2.AnalyzerResource(
                type=r.type,
                properties=_struct(r.inputs),
                urn=r.urn,
                name=r.name,
                options=options,
                provider=provider(r.provider_urn),
                parent=r.parent,
                dependencies=list(r.dependencies),
                propertyDependencies={
                    k: analyzer_pb2.AnalyzerPropertyDependencies(urns=list(v))
                    for k, v in r.property_dependencies.items()
                },
            )
        )
    for d in analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=stack_resources)).diagnostics:
        keep(d, "")
    return served


def _waive(document: dict[str, Any], rule: str, resource: str, days: int = 90, environment: str | None = None) -> None:
    """Add a waiver with an owner, expiring `days` from today (the served pack judges on the real day, as the
    offline review does), granted for `environment` (the document's own by default)."""
    cluster = document["config"][FULL_KEY]
    cluster.setdefault("waivers", []).append(
        {
            "rule": rule,
            "resource": resource,
            "reason": REASON,
            "owner": "ml-platform@example.com",
            "expires": (waivers.today() + timedelta(days=days)).isoformat(),
            "environment": environment or cluster["environment"],
        }
    )


REASON = "approved by the platform team for the evaluation quarter, with an owner"
# Each source: the recording, and the stack file whose config the CLI hands the pack (PULUMI_CONFIG).
SOURCES: dict[str, Callable[[], tuple[Recording, dict[str, Any]]]] = {
    **{name: (lambda name=name: (recording(name), stack_document(name))) for name in STACKS},
    "staging-no-placement-preview": lambda: (scenario("staging-no-placement", preview=True), stack_document("staging")),
    "prod-gpu-taint-removed": lambda: (
        mutated(recording("prod"), "-gpu-p5-train-ng", lambda i: i.pop("taints")),
        stack_document("prod"),
    ),
    # Waived variants: an advisory of dev, and a mandatory violation of prod, each waived for its one resource.
    "dev-waived": lambda: (recording("dev"), _with(stack_document("dev"), _waive, *_first_waivable("dev"))),
    "prod-gpu-taint-removed-waived": lambda: (
        mutated(recording("prod"), "-gpu-p5-train-ng", lambda i: i.pop("taints")),
        _with(stack_document("prod"), _waive, "gpu-taint", "gpu-p5-train-ng"),
    ),
    # An expired waiver exempts nothing: the violation stands, mandatory, and waiver-expired names the waiver.
    "prod-gpu-taint-removed-expired": lambda: (
        mutated(recording("prod"), "-gpu-p5-train-ng", lambda i: i.pop("taints")),
        _with(stack_document("prod"), lambda d: _waive(d, "gpu-taint", "gpu-p5-train-ng", days=-1)),
    ),
}


def _with(document: dict[str, Any], edit: Callable[..., None], *args: str) -> dict[str, Any]:
    edit(document, *args)
    return document


def _first_waivable(stack: str) -> tuple[str, str]:
    """A violation of the committed stack that a waiver may exempt: the first of a rule that is not critical."""
    violation = next(
        v
        for v in review(recording(stack), stack).violations
        if v.name and BY_NAME[v.policy].severity is not None and BY_NAME[v.policy].severity.value != "critical"
    )
    return violation.policy, violation.name


def _offline(recorded: Recording, document: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    cluster = validate_object(document["config"][FULL_KEY], "test")
    result = review(recorded, cluster.environment.value, waivers=cluster.waivers)
    return {(v.policy, v.urn, v.level, v.message) for v in result.violations}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.e2e
def test_served_pack_agrees_with_offline_review(tmp_path: Path, source: str) -> None:
    """The pack served as `pulumi preview --policy-pack policies --policy-pack-config policies/config/<env>.json`
    serves it (the stack's config in its environment, the CLI's resolved config over Configure) reports exactly
    what the offline review reports, level and message included, waivers applied."""
    recorded, document = SOURCES[source]()
    environment = str(document["config"][FULL_KEY]["environment"])
    with served(tmp_path, stack_environ(document, recorded.stack, recorded.preview)) as analyzer:
        analyzer.Configure(cli_config(json.loads((PACK / "config" / f"{environment}.json").read_text())))
        served_diagnostics = analyze(analyzer, recorded)
    offline = _offline(recorded, document)
    assert offline == served_diagnostics
    if source.endswith("-waived"):  # the waiver exempted something the unwaived stack reports
        unwaived = _offline(
            recorded,
            {
                "config": {
                    **document["config"],
                    FULL_KEY: {k: v for k, v in document["config"][FULL_KEY].items() if k != "waivers"},
                }
            },
        )
        assert offline < unwaived
    if source not in STACKS:
        assert any(level == "mandatory" for _, _, level, _ in offline) or recorded.preview or "waived" in source
    if source.endswith("-expired"):
        assert {(policy, level) for policy, _, level, _ in offline} >= {
            ("gpu-taint", "mandatory"),
            ("waiver-expired", "advisory"),
        }


@pytest.mark.parametrize(
    ("stack", "edit", "says"),
    [
        ("prod", lambda d: _waive(d, "nat-per-az", "network-private-us-east-1b"), "is a floor, which prod never"),
        ("prod", lambda d: _waive(d, "fsx-team-isolation", "x"), "is a rule of high severity, which prod never"),
        ("staging", lambda d: _waive(d, "nat-per-az", "network-private-us-east-1b", days=400), "more than 365 days"),
    ],
)
@pytest.mark.e2e
def test_the_served_pack_refuses_what_prod_never_waives_as_the_plan_does(
    tmp_path: Path, stack: str, edit: Callable[[dict[str, Any]], None], says: str
) -> None:
    document = stack_document(stack)
    document["config"][FULL_KEY]["waivers"] = []
    edit(document)
    with served(tmp_path, stack_environ(document, stack)) as analyzer:
        analyzer.Configure(cli_config(json.loads((PACK / "config" / f"{stack}.json").read_text())))
        found = {d for d in analyze(analyzer, recording(stack)) if d[0] == "stack-waivers"}
    with pytest.raises(ConfigError) as raised:
        _offline(recording(stack), document)
    [problem] = raised.value.problems
    assert says in problem.message
    assert {(level, message) for _, _, level, message in found} == {
        ("mandatory", f"{problem.key} ({problem.value!r}): {problem.message}")
    }


@pytest.mark.e2e
def test_the_staging_file_served_as_prod_loses_its_waiver(tmp_path: Path) -> None:
    """The staging file deployed as stack prod (the program's schema refuses it first; the pack on its own too):
    its waiver was granted for staging, a floor besides, so it exempts nothing and stack-waivers says why."""
    document = stack_document("staging")
    with served(tmp_path, stack_environ(document, "prod")) as analyzer:
        analyzer.Configure(cli_config(json.loads((PACK / "config" / "prod.json").read_text())))
        found = {d for d in analyze(analyzer, recording("staging")) if d[0] in ("stack-waivers", "nat-per-az")}
    assert {(policy, level) for policy, _, level, _ in found} == {
        ("stack-waivers", "mandatory"),
        ("nat-per-az", "mandatory"),
    }
    [message] = [m for policy, _, _, m in found if policy == "stack-waivers"]
    assert "nat-per-az is a floor, which prod never waives" in message


@pytest.mark.parametrize(
    ("rule", "resource", "says"),
    [
        ("no-such-rule", "network", "no such policy rule"),
        ("sg-no-world-ingress", "network", "a critical rule cannot be waived"),
        ("nat-per-az", "zzz", "waives nothing"),
    ],
)
@pytest.mark.e2e
def test_a_waiver_that_cannot_stand_blocks_the_served_pack_as_it_refuses_the_plan(
    tmp_path: Path, rule: str, resource: str, says: str
) -> None:
    """Offline: exit 2 naming the waiver's key. Served: a mandatory `stack-waivers` violation with the same
    words, whatever the config file says of that rule (held in code: policies/enforcement.py)."""
    document = _with(stack_document("staging"), _waive, rule, resource)
    with served(tmp_path, stack_environ(document, "staging")) as analyzer:
        lowered = {**json.loads((PACK / "config" / "staging.json").read_text()), "stack-waivers": "disabled"}
        analyzer.Configure(cli_config(lowered))  # even a config that turns the waiver rule off
        found = {d for d in analyze(analyzer, recording("staging")) if d[0] == "stack-waivers"}
    with pytest.raises(ConfigError) as raised:
        _offline(recording("staging"), document)
    problem = next(p for p in raised.value.problems if says in p.message)
    assert {(level, message) for _, _, level, message in found} == {
        ("mandatory", f"{problem.key} ({problem.value!r}): {problem.message}")
    }


@pytest.mark.e2e
def test_without_a_policy_config_the_floors_still_block(tmp_path: Path) -> None:
    """`pulumi preview --policy-pack policies` with no config: every rule at the pack's level (advisory) on main,
    the floors included. Now the floors are held in code: still mandatory, at the committed thresholds."""
    recorded = mutated(
        recording("prod"), "-gpu-p5-train-ng", lambda i: i["updateConfig"].update(maxUnavailablePercentage=100)
    )
    with served(tmp_path, stack_environ(stack_document("prod"), "prod")) as analyzer:
        analyzer.Configure(cli_config({}))
        found = analyze(analyzer, recorded)
    levels = {(policy, level) for policy, _, level, _ in found}
    assert ("node-update-budget", "mandatory") in levels
    assert ("stack-environment", "advisory") not in levels and ("node-update-budget", "advisory") not in levels
    # A rule that is not a floor follows the (absent) config: advisory.
    assert all(level == "advisory" for policy, _, level, _ in found if policy not in FLOORS)


@pytest.mark.e2e
def test_a_config_that_lowers_a_floor_is_overruled(tmp_path: Path) -> None:
    """A prod stack previewed with a config that turns the floors off and their thresholds down."""
    recorded = mutated(
        recording("prod"), "-gpu-p5-train-ng", lambda i: i["updateConfig"].update(maxUnavailablePercentage=100)
    )
    lowered = json.loads((PACK / "config" / "prod.json").read_text())
    lowered["node-update-budget"] = {"enforcementLevel": "disabled", "maxUnavailablePercent": 100}
    with served(tmp_path, stack_environ(stack_document("prod"), "prod")) as analyzer:
        analyzer.Configure(cli_config(lowered))
        found = analyze(analyzer, recorded)
    assert {level for policy, _, level, _ in found if policy == "node-update-budget"} == {"mandatory"}


def test_config_files_are_json_objects() -> None:
    for env in ("dev", "staging", "prod"):
        assert isinstance(json.loads((PACK / "config" / f"{env}.json").read_text()), dict)
