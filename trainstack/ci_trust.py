"""The IAM trust policy of each environment's deploy role, as docs/ci.md tells a team to create it.

GitHub puts `environment:<name>` in an OIDC token's `sub` for any job that names the environment, from any
branch and any workflow file: a workflow pushed on a branch that names `environment: prod` would get prod's deploy
role with the default subject. So the repository's subject template also carries `job_workflow_ref` (GitHub
Actions, "Customizing the subject claims for an organization or repository": `include_claim_keys`
`["repo", "context", "job_workflow_ref"]`), and the trust policy names the one workflow file at `refs/heads/main`:
only deploy.yml as it is on main may deploy. The environment's deployment branch policy (main only) is the second
layer, and prod's required reviewers the third.

There is no preview role: pull requests run the offline plan, which needs no credentials, and no code from a pull
request runs with a role that can decrypt a stack's secrets (a program prints what it decrypts).
"""

from __future__ import annotations

from typing import Any

GITHUB_OIDC = "token.actions.githubusercontent.com"
SUBJECT_CLAIM_KEYS = ("repo", "context", "job_workflow_ref")
DEPLOY_WORKFLOW = ".github/workflows/deploy.yml"
MAIN = "refs/heads/main"


def deploy_subject(repository: str, environment: str) -> str:
    """The `sub` of deploy.yml's job for `environment`, on main, under the customized subject template."""
    return f"repo:{repository}:environment:{environment}:job_workflow_ref:{repository}/{DEPLOY_WORKFLOW}@{MAIN}"


def deploy_trust_policy(account_id: str, repository: str, environment: str) -> dict[str, Any]:
    """Trust for one environment's deploy role: GitHub's OIDC provider, audience STS, that one subject exactly."""
    if repository.count("/") != 1 or not all(repository.split("/")):
        raise ValueError(f"repository {repository!r}: expected <owner>/<name>")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DeployYmlOnMainOnly",
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{account_id}:oidc-provider/{GITHUB_OIDC}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{GITHUB_OIDC}:aud": "sts.amazonaws.com",
                        f"{GITHUB_OIDC}:sub": deploy_subject(repository, environment),
                    }
                },
            }
        ],
    }


def subject_template() -> dict[str, Any]:
    """The body of `PUT /repos/<owner>/<repo>/actions/oidc/customization/sub` (GitHub REST API)."""
    return {"use_default": False, "include_claim_keys": list(SUBJECT_CLAIM_KEYS)}
