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


def triggers(document: dict[Any, Any]) -> Any:
    """The `on:` block (YAML 1.1 reads the bare key `on` as true)."""
    return document.get("on", document.get(True))


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


def test_every_stack_previews_then_deploys_with_its_own_policy_config() -> None:
    (job,) = workflow("deploy.yml")["jobs"].values()
    assert sorted(job["strategy"]["matrix"]["stack"]) == STACKS
    pulumi = [s for s in job["steps"] if "pulumi/actions" in s.get("uses", "")]
    assert [s["with"]["command"] for s in pulumi] == ["preview", "up"]
    for step in pulumi:
        assert step["with"]["policyPacks"] == "policies"
        assert step["with"]["policyPackConfigs"] == "policies/config/${{ matrix.stack }}.json"


def test_pull_requests_get_no_cloud_credentials() -> None:
    """Code from a pull request runs in the plan workflow: no OIDC token, no AWS role, so nothing it runs can
    decrypt a stack's secrets (docs/security.md, threat model)."""
    document = workflow("plan.yml")
    assert list(triggers(document)) == ["pull_request"]
    for job in document["jobs"].values():
        assert "id-token" not in job.get("permissions", {})
        assert not [s for s in job["steps"] if "configure-aws-credentials" in s.get("uses", "")]
        assert not [s for s in job["steps"] if "pulumi/actions" in s.get("uses", "")]
    assert "AWS_PREVIEW_ROLE_ARN" not in (WORKFLOWS / "plan.yml").read_text()


def test_deploys_run_only_from_main() -> None:
    document = workflow("deploy.yml")
    assert triggers(document) == {"push": {"branches": ["main"]}}


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
