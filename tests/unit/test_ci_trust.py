"""The deploy roles' trust (trainstack/ci_trust.py): only deploy.yml on main, in its own environment, may assume an
environment's role; docs/ci.md shows the same documents."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT
from trainstack.ci_trust import deploy_subject, deploy_trust_policy, subject_template

REPO = "example-org/trainstack"


def admitted(policy: dict, sub: str, aud: str = "sts.amazonaws.com") -> bool:
    """StringEquals on both claims (IAM: every key of the block must match one of its values)."""
    [statement] = policy["Statement"]
    wanted = statement["Condition"]["StringEquals"]
    claims = {"token.actions.githubusercontent.com:sub": sub, "token.actions.githubusercontent.com:aud": aud}
    return set(wanted) == set(claims) and all(claims[k] == v for k, v in wanted.items())


def test_only_deploy_yml_on_main_in_its_environment() -> None:
    policy = deploy_trust_policy("123456789012", REPO, "prod")
    [statement] = policy["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {
        "Federated": "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"
    }
    main = f"repo:{REPO}:environment:prod:job_workflow_ref:{REPO}/.github/workflows/deploy.yml@refs/heads/main"
    assert admitted(policy, main)
    assert not admitted(policy, main, aud="https://github.com/example-org")
    # What GitHub issues to the attacks the review found, under the same subject template:
    branch = main.replace("@refs/heads/main", "@refs/heads/evil")  # a branch workflow naming environment prod
    other_file = main.replace("deploy.yml", "exfiltrate.yml")  # another workflow on main naming prod
    staging = main.replace("environment:prod", "environment:staging")  # staging's job asking for prod's role
    default_template = f"repo:{REPO}:environment:prod"  # the template left at GitHub's default
    pull_request = f"repo:{REPO}:pull_request"
    for sub in (branch, other_file, staging, default_template, pull_request):
        assert not admitted(policy, sub), sub


@pytest.mark.parametrize("repository", ["trainstack", "a/b/c", "/b", "a/"])
def test_a_repository_without_owner_and_name_is_refused(repository: str) -> None:
    with pytest.raises(ValueError, match="owner"):
        deploy_trust_policy("123456789012", repository, "prod")


def test_the_subject_template_carries_the_workflow_file() -> None:
    assert subject_template() == {"use_default": False, "include_claim_keys": ["repo", "context", "job_workflow_ref"]}
    assert deploy_subject("o/r", "dev").endswith(":job_workflow_ref:o/r/.github/workflows/deploy.yml@refs/heads/main")


def _json_blocks(text: str) -> list[object]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, flags=re.S)]


def test_docs_show_the_documents_the_code_writes() -> None:
    blocks = _json_blocks((ROOT / "docs" / "ci.md").read_text())
    assert deploy_trust_policy("<account-id>", "<owner>/<repo>", "<environment>") in blocks
    assert subject_template() in blocks
