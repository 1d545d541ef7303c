"""The CI workflows a team copies: they pass two real workflow linters (the GitHub workflow schema through
check-jsonschema, zizmor's security audits), and they do what docs/ci.md says: every stack previewed with
its own policy config, cloud credentials only through OIDC, actions pinned to commits."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def workflow(name: str) -> dict[str, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in document["jobs"].values() for step in job["steps"]]


def zizmor(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_linter_catches_a_template_injection(tmp_path: Path) -> None:
    """The audit is not a rubber stamp: a PR title expanded into a shell script is refused."""
    shutil.copy(WORKFLOWS / "plan.yml", tmp_path / "plan.yml")
    text = (
        (tmp_path / "plan.yml")
        .read_text()
        .replace("run: make test", 'run: echo "${{ github.event.pull_request.title }}" && make test')
    )
    (tmp_path / "plan.yml").write_text(text)
    assert zizmor(tmp_path).returncode != 0


@pytest.mark.parametrize("name", ["plan.yml", "deploy.yml"])
def test_every_stack_runs_with_its_own_policy_config(name: str) -> None:
    document = workflow(name)
    (pulumi_job,) = [
        j for j in document["jobs"].values() if any("pulumi/actions" in s.get("uses", "") for s in j["steps"])
    ]
    assert sorted(pulumi_job["strategy"]["matrix"]["stack"]) == STACKS
    (step,) = [s for s in pulumi_job["steps"] if "pulumi/actions" in s.get("uses", "")]
    assert step["with"]["policyPacks"] == "policies"
    assert step["with"]["policyPackConfigs"] == "policies/config/${{ matrix.stack }}.json"
    assert step["with"]["command"] == ("preview" if name == "plan.yml" else "up")


@pytest.mark.parametrize("name", ["plan.yml", "deploy.yml"])
def test_credentials_come_from_oidc_and_actions_are_pinned(name: str) -> None:
    document = workflow(name)
    text = (WORKFLOWS / name).read_text()
    assert document["permissions"] == {}  # every job asks for what it needs
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    for job in document["jobs"].values():
        if any("configure-aws-credentials" in s.get("uses", "") for s in job["steps"]):
            assert job["permissions"]["id-token"] == "write"
    for step in steps(document):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_deploy_goes_through_environments_in_order() -> None:
    (job,) = workflow("deploy.yml")["jobs"].values()
    assert job["environment"] == "${{ matrix.stack }}"
    assert job["strategy"]["max-parallel"] == 1
    assert job["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod"]


def test_deploy_runs_preflight_with_the_deploy_role_before_pulumi_up() -> None:
    (job,) = workflow("deploy.yml")["jobs"].values()
    names = [step.get("uses", "").split("@")[0] or step.get("run", "") for step in job["steps"]]
    credentials = names.index("aws-actions/configure-aws-credentials")
    preflight = next(i for i, name in enumerate(names) if "-m trainstack preflight --stack" in name)
    up = names.index("pulumi/actions")
    assert credentials < preflight < up
    assert 'exit "$status"' in names[preflight]  # a failed check stops the job before `pulumi up`
