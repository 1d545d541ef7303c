"""Day one, offline: the README's deploy steps and both workflows' steps, in order, in a fresh clone.

Everything runs for real (git, make, uv, the virtualenvs, `trainstack`, the Makefile's targets, the workflows'
shell steps) except what cannot exist here: the AWS CLI, the Pulumi CLI, the GitHub CLI, helm and the actions
themselves. Their stubs (tests/e2e/stubs/) refuse what the real ones refuse before any remote call: the Pulumi
CLI's flags at the pinned release, a stack that was never created, a missing `uv` on PATH, a policy pack or
config that is not there; the AWS CLI's operations and parameters by botocore's service models; a comment body
longer than GitHub takes. The actions are emulated from their inputs (pulumi/actions runs the CLI through the
Automation API: `pulumi <command> --stack ... --non-interactive ... --policy-pack ... --policy-pack-config ...`).

Two substitutions, both named below and checked against the README and the workflows so they cannot go stale:
the README's `make test` and the workflows' `make test` / `make test-e2e` run `make policy-venv` instead (the
state `make test` leaves for the next steps: both virtualenvs; the suites themselves are what is running this
test), and `<placeholders>` get example values, as the person following the README fills them in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.sagemaker.hyperpod_dependencies import CHART_PATH, HYPERPOD_CLI_TAG
from tests.conftest import ROOT, STACKS
from tests.tiers import require

pytestmark = pytest.mark.e2e

STUBS = Path(__file__).resolve().parent / "stubs"
# The README's placeholders, filled in as its reader would (AWS documentation's example key id).
PLACEHOLDERS = {
    "<this repository>": "{repository}",
    "<state-bucket>": "example-trainstack-state",
    "<kms key id>": "1234abcd-12ab-34cd-56ef-1234567890ab",
}
# Commands that would run the suites inside the suite: what they leave behind instead.
SUITES = {"make test": "make policy-venv", "make test-e2e": "make policy-venv"}
# What the workflows' expressions evaluate to in the dry run: the repository variables docs/ci.md asks for.
VARIABLES = {
    "vars.PULUMI_BACKEND_URL": "s3://example-trainstack-state?region=us-east-1&awssdk=v2",
    "vars.AWS_DEPLOY_ROLE_ARN": "arn:aws:iam::111122223333:role/trainstack-deploy",
    "github.token": "ghs_example",
    "github.event.pull_request.number": "35",
    "runner.os": "Linux",
}
SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")
# Steps that are calls to AWS (read-only, through boto3), which the dry run leaves out; their own tests run them
# against moto's server (tests/preflight/). Each must come before the job's `pulumi up`.
AWS_STEPS = ("trainstack preflight",)


@dataclass
class Machine:
    """A fresh clone, a PATH with the stubs and nothing of this checkout's, and the stubs' logs and state."""

    home: Path
    clone: Path
    env: dict[str, str]

    def log(self, name: str) -> list[Any]:
        path = self.home / f"{name}.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _chart_mirror(directory: Path) -> Path:
    """A git repository with the HyperPod chart's tag and a Chart.yaml where the release looks for it: what `make
    hyperpod-chart` clones in place of GitHub's (HYPERPOD_CHART_MIRROR)."""
    chart = directory / CHART_PATH
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hyperpod-helm-chart\nversion: 0.1.0\n")
    for command in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "chart"],
        ["tag", HYPERPOD_CLI_TAG],
    ):
        subprocess.run(["git", *command], cwd=directory, check=True, capture_output=True)
    return directory


def new_machine(home: Path) -> Machine:
    bin_dir = home / "bin"
    bin_dir.mkdir()
    for tool in ("pulumi", "aws", "gh", "helm"):
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STUBS / f"{tool}.py"}" "$@"\n')
        wrapper.chmod(0o755)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if ".venv" not in p and ".tools" not in p]
    # The machine's own environment (its package index settings, certificates, caches), less this checkout's
    # virtualenvs, with the stubs first on PATH.
    inherited = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env = {
        **inherited,
        "PATH": os.pathsep.join([str(bin_dir), *path]),
        "LANG": "C.UTF-8",
        "PULUMI_STUB_STATE": str(home / "pulumi-state.json"),
        "PULUMI_STUB_LOG": str(home / "pulumi.log"),
        "AWS_STUB_LOG": str(home / "aws.log"),
        "GH_STUB_LOG": str(home / "gh.log"),
        "HYPERPOD_CHART_MIRROR": str(_chart_mirror(home / "hyperpod-cli")),
        "EDITOR": "true",  # the reader's edit of the example values: the dry run keeps them
        "PULUMI_STUB_TERMINAL": "1",  # a person at a terminal answers `pulumi up`'s prompt
    }
    return Machine(home, home / "trainstack", env)


# ------------------------------------------------------------------------------------------------ the README


def readme_steps() -> list[str]:
    """The README's deploy block, line by line."""
    text = (ROOT / "README.md").read_text()
    deploy = text[text.index("## Deploy") :]
    block = re.search(r"```sh\n(.*?)```", deploy, re.DOTALL)
    assert block, "README.md: the Deploy section has no ```sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def dry_run_script(steps: list[str], repository: Path) -> str:
    lines: list[str] = []
    for step in steps:
        command = step.split("#", 1)[0].strip()
        for placeholder, value in PLACEHOLDERS.items():
            step = step.replace(placeholder, value.format(repository=repository))
        if command in SUITES:
            step = SUITES[command]
        if any(call in command for call in AWS_STEPS):
            step = f": leaves out {command!r}: it only asks AWS"
        assert "<" not in step.split("#", 1)[0].replace("<(", ""), (
            f"a README placeholder the dry run cannot fill: {step}"
        )
        lines.append(step)
    return "set -euo pipefail\nset -x\n" + "\n".join(lines) + "\n"


def readme_dry_run(machine: Machine) -> None:
    """The README's deploy steps as one shell session, in order."""
    steps = readme_steps()
    assert steps[0].startswith("git clone <this repository> trainstack && cd trainstack")
    assert any(s.split("#")[0].strip() == "make test" for s in steps)
    script = dry_run_script(steps, ROOT)
    done = subprocess.run(
        ["bash", "-c", script], cwd=machine.home, env=machine.env, capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0, done.stderr[-4000:]
    calls = [c["argv"] for c in machine.log("pulumi")]
    assert [c[0] for c in calls] == ["login", "stack", "preview", "up", "stack"]
    assert all("--policy-pack-config" in c for c in calls if c[0] in ("preview", "up"))
    assert [a[:2] for a in machine.log("aws")] == [s.split()[1:3] for s in steps if s.startswith("aws ")]
    update = machine.log("aws")[-1]
    name = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]["trainstack:cluster"]["name"]
    assert update[update.index("--name") + 1] == name  # the stack output the stub's `up` recorded
    assert "deploy-example-value" in done.stdout  # `trainstack plan --stack dev` listed the example values


def old_path_step_breaks_python(machine: Machine) -> None:
    """The README on main said `export PATH="$PWD/.tools/bin:$PATH"` and then ran `python -m trainstack`: the
    bootstrap virtualenv's bare python came first (ModuleNotFoundError). The README's `source .venv/bin/activate`
    gives python, trainstack and uv of .venv."""
    old = subprocess.run(
        ["bash", "-c", 'export PATH="$PWD/.tools/bin:$PATH"; python -m trainstack --version'],
        cwd=machine.clone,
        env=machine.env,
        capture_output=True,
        text=True,
    )
    assert old.returncode != 0 and "No module named" in old.stderr
    new = subprocess.run(
        ["bash", "-c", "source .venv/bin/activate; python -m trainstack --version; trainstack --version; uv --version"],
        cwd=machine.clone,
        env=machine.env,
        capture_output=True,
        text=True,
    )
    assert new.returncode == 0, new.stderr
    assert new.stdout.count("trainstack ") == 2 and new.stdout.splitlines()[-1].startswith("uv ")


REFUSED = (
    (
        "pulumi up --stack dev --policy-pack policies --policy-pack-config policies/config/dev.json",
        "Could not find `uv`",
    ),
    ("pulumi preview --stack qa --policy-pack policies", "no stack named 'qa'"),
    ("pulumi preview --stack dev --policy-packs policies", "unknown flag: --policy-packs"),
    ("pulumi preview --stack dev --policy-pack policies --policy-pack-config nope.json", "loading policy pack config"),
    ("aws kms create-alias --alias-name alias/x", "required: --target-key-id"),
    ("aws eks describe-addon-versions --kubernetes-versions 1.36", "Unknown options"),
)


def stubs_refuse(machine: Machine) -> None:
    """After the README's steps (the stub state has dev): without .venv on PATH there is no uv, and the rest are
    mistakes the real CLIs stop at."""
    for command, says in REFUSED:
        done = subprocess.run(
            ["bash", "-c", command], cwd=machine.clone, env=machine.env, capture_output=True, text=True
        )
        assert done.returncode != 0 and says in done.stderr, (command, done.stderr)


# ------------------------------------------------------------------------------------------------ the workflows


def evaluate(text: str, matrix: dict[str, str]) -> str:
    """`${{ ... }}` in a workflow value, for the forms the workflows use; anything else fails the test."""

    def one(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if expression.startswith("matrix."):
            return matrix[expression.removeprefix("matrix.")]
        if expression in VARIABLES:
            return VARIABLES[expression]
        if files := re.fullmatch(r"hashFiles\((.*)\)", expression):  # cache keys: the files must exist
            names = [n.strip(" '\"") for n in files.group(1).split(",")]
            assert all((ROOT / n).is_file() for n in names), names
            return "hash"
        raise AssertionError(f"the dry run does not know ${{{{ {expression} }}}}: teach it (VARIABLES)")

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def workflow(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / ".github" / "workflows" / f"{name}.yml").read_text())


def run_job(machine: Machine, job: dict[str, Any], matrix: dict[str, str]) -> list[str]:
    """Each step of `job` in order: shell steps for real, actions emulated from their inputs. Returns the steps'
    names as run."""
    env = {**machine.env, **{k: evaluate(v, matrix) for k, v in (job.get("env") or {}).items()}}
    github_path = machine.home / "github_path"
    github_path.write_text("")
    env["GITHUB_PATH"] = str(github_path)
    env["RUNNER_TEMP"] = str(machine.home)
    env["GITHUB_STEP_SUMMARY"] = str(machine.home / "step_summary.md")
    ran: list[str] = []
    for step in job["steps"]:
        step_env = {**env, **{k: evaluate(v, matrix) for k, v in (step.get("env") or {}).items()}}
        added = [line for line in github_path.read_text().splitlines() if line]
        step_env["PATH"] = os.pathsep.join([*reversed(added), env["PATH"]])
        inputs = {k: evaluate(v, matrix) for k, v in (step.get("with") or {}).items()}
        if "uses" in step:
            emulate(step["uses"].split("@")[0], inputs, step_env, machine, env)
            ran.append(step["uses"].split("@")[0])
            continue
        script = step["run"]
        assert "${{" not in script, f"an expression inside a run script (template injection): {script}"
        if any(call in script for call in AWS_STEPS):
            ran.append(f"(AWS) {step.get('name')}")
            continue
        for suite, instead in SUITES.items():
            script = re.sub(rf"^{re.escape(suite)}$", instead, script, flags=re.MULTILINE)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=machine.clone,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert done.returncode == 0, (step.get("name"), done.stdout[-2000:], done.stderr[-3000:])
        ran.append(step.get("name", script.splitlines()[0]))
    return ran


def emulate(
    action: str, inputs: dict[str, str], env: dict[str, str], machine: Machine, job_env: dict[str, str]
) -> None:
    if action == "actions/checkout":
        assert inputs.get("persist-credentials") in (False, "False", "false")
    elif action == "actions/setup-python":
        assert inputs["python-version"] in SUPPORTED_PYTHONS
    elif action == "actions/cache":
        assert inputs.get("path") and inputs.get("key")
    elif action == "aws-actions/configure-aws-credentials":
        assert inputs["role-to-assume"].startswith("arn:aws:iam::") and inputs["aws-region"]
        job_env.update(AWS_REGION=inputs["aws-region"], AWS_ACCESS_KEY_ID="ASIAEXAMPLE", AWS_SECRET_ACCESS_KEY="x")
    elif action == "pulumi/actions":
        pinned = re.search(r'name = "pulumi"\nversion = "([^"]+)"', (ROOT / "uv.lock").read_text())
        assert pinned and inputs["pulumi-version"] == pinned.group(1), "the CLI is the release of the SDK in uv.lock"
        argv = [inputs["command"], "--stack", inputs["stack-name"], "--non-interactive", "--exec-kind", "auto.local"]
        if inputs["command"] == "up":
            argv += ["--yes", "--skip-preview"]  # the Automation API's up
        for pack in inputs.get("policyPacks", "").split():
            argv += ["--policy-pack", pack]
        for config in inputs.get("policyPackConfigs", "").split():
            argv += ["--policy-pack-config", config]
        done = subprocess.run(["pulumi", *argv], cwd=machine.clone, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    else:
        raise AssertionError(f"the dry run does not know the action {action}: emulate it")


def workflows_dry_run(machine: Machine) -> None:
    """After the README (so the backend has dev), the other stacks exist in the backend too: CI never creates
    stacks. Then plan.yml's jobs (the Python matrix aside: it is `make test` again), then deploy.yml's."""
    state = json.loads(Path(machine.env["PULUMI_STUB_STATE"]).read_text())
    for stack in STACKS:
        state["stacks"].setdefault(stack, {"secrets_provider": "awskms://alias/x", "outputs": {}})
    state["backend"] = None  # CI logs in through PULUMI_BACKEND_URL
    Path(machine.env["PULUMI_STUB_STATE"]).write_text(json.dumps(state))
    before = len(machine.log("pulumi"))

    plan = workflow("plan")
    ran = run_job(machine, plan["jobs"]["offline"], {})
    assert "Offline plan of every stack" in ran
    assert (machine.clone / "plan-comment.md").stat().st_size > 0
    assert [c[:2] for c in machine.log("gh")][-1] == ["pr", "comment"]
    # No pull request job gets AWS credentials or runs Pulumi (docs/ci.md): the real preview is deploy.yml's.
    assert not [j for j in plan["jobs"].values() if "id-token" in j.get("permissions", {})]
    deploy = workflow("deploy")["jobs"]["up"]
    for stack in deploy["strategy"]["matrix"]["stack"]:
        ran = run_job(machine, deploy, {"stack": stack})
        preflight = [i for i, name in enumerate(ran) if name.startswith("(AWS)") and "reflight" in name]
        assert preflight and preflight[0] < ran.index("pulumi/actions"), ran  # preflight before `pulumi up`

    calls = [c["argv"] for c in machine.log("pulumi")[before:]]
    order = deploy["strategy"]["matrix"]["stack"]
    assert sorted(order) == sorted(STACKS) and order == ["dev", "staging", "prod"]
    assert [(c[0], c[2]) for c in calls] == [(command, s) for s in order for command in ("preview", "up")]
    assert all(f"policies/config/{c[2]}.json" in c for c in calls)
    charts = list((machine.clone / ".hyperpod-chart").glob(f"{HYPERPOD_CLI_TAG}/{CHART_PATH}/Chart.yaml"))
    assert charts, "staging runs HyperPod on EKS: its chart was fetched before `pulumi up`"
    assert shutil.which("pulumi", path=machine.env["PATH"])  # the stub, never a real CLI


def test_day_one_offline(tmp_path: Path) -> None:
    """One machine, in order: the README's deploy steps; the old README's PATH step fails where the new one works;
    the stubs refuse the mistakes the real tools refuse; then both workflows' jobs."""
    require("e2e", "clones the repository, builds its virtualenvs and plans every stack in new processes")
    machine = new_machine(tmp_path)
    readme_dry_run(machine)
    old_path_step_breaks_python(machine)
    stubs_refuse(machine)
    workflows_dry_run(machine)


def test_make_test_says_how_to_get_promtool_where_apt_get_is_missing(tmp_path: Path) -> None:
    """A Mac (no apt-get) or a machine without promtool: `make test` used to try `sudo apt-get` and stop there."""
    require("e2e", "runs make in a new process")
    done = subprocess.run(
        ["/usr/bin/make", "--no-print-directory", "promtool"],
        cwd=ROOT,
        env={**os.environ, "PATH": str(tmp_path)},  # neither promtool nor apt-get on PATH
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "promtool (Prometheus) is needed" in done.stderr and "brew install prometheus" in done.stderr
