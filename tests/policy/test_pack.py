"""The pack as the Pulumi CLI runs it: its files, its isolation from the program, and its analyzer protocol.

`test_served_pack_agrees_with_offline_review` copies the pack out of the repository under another directory
name, starts it the way the CLI does (`python -m pulumi.policy <engine> <pack dir>`: it prints its gRPC port
and blocks), configures it with the stack's resolved levels and sends it what the offline engine recorded,
over the real Analyzer protocol: the diagnostics must equal `trainstack.review`'s violations.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from policies.rules import POLICIES
from tests.conftest import ROOT, recording
from tests.policy.helpers import mutated, scenario
from trainstack.review import load_config, review

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
        for module, _ in _imports(path):
            assert module != "policies.__main__", f"{path} imports the pack entry point (it blocks forever)"


def test_requirements_pin_the_program_versions() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = dict(
        re.match(r"([a-z0-9-]+)(?:\[[a-z,]+\])?==(.+)", d).groups()  # type: ignore[union-attr]
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

    built: list[dict[str, object]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.append(kwargs))
    runpy.run_path(str(PACK / "__main__.py"), run_name="__main__")
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


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """A copy of the pack, outside the repository and not named `policies`, served as the CLI would: the pack's
    own virtualenv runs `python -m pulumi.policy <engine> <pack dir>`."""
    copy = _copy_pack(tmp_path_factory.mktemp("served") / "trainstack-guardrails")
    process = subprocess.Popen(
        [pack_python(), "-m", "pulumi.policy", "127.0.0.1:0", str(copy)],
        cwd=copy,
        env=_pack_env(),
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


SOURCES = {
    "staging": lambda: recording("staging"),
    "staging-no-placement-preview": lambda: scenario("staging-no-placement", preview=True),
    "prod-gpu-taint-removed": lambda: mutated(recording("prod"), "-gpu-p5-train-ng", lambda i: i.pop("taints")),
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.e2e
def test_served_pack_agrees_with_offline_review(analyzer: analyzer_pb2_grpc.AnalyzerStub, source: str) -> None:
    recorded = SOURCES[source]()
    stack = recorded.stack
    config = load_config(stack)
    analyzer.Configure(
        analyzer_pb2.ConfigureAnalyzerRequest(
            policyConfig={
                name: analyzer_pb2.PolicyConfig(
                    enforcementLevel=_LEVELS[level], properties=_struct(dict(config.properties[name]))
                )
                for name, level in config.levels.items()
            }
        )
    )
    by_urn = {r.urn: r for r in recorded.resources}

    def provider(urn: str) -> analyzer_pb2.AnalyzerProviderResource | None:
        found = by_urn.get(urn)
        if found is None:
            return None
        return analyzer_pb2.AnalyzerProviderResource(
            type=found.type, urn=found.urn, name=found.name, properties=_struct(found.inputs)
        )

    served: set[tuple[str, str, str]] = set()
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
            served.add((d.policyName, d.urn or r.urn, _NAMES[d.enforcementLevel]))
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
        served.add((d.policyName, d.urn, _NAMES[d.enforcementLevel]))

    offline = review(recorded, stack)
    assert {(v.policy, v.urn, v.level) for v in offline.violations} == served
    if source != "staging":
        assert offline.mandatory or offline.preview  # the comparison covers blocking results too


def test_config_files_are_json_objects() -> None:
    for env in ("dev", "staging", "prod"):
        assert isinstance(json.loads((PACK / "config" / f"{env}.json").read_text()), dict)
