"""Lifecycle bundles: content-hashed prefixes, the shipped scripts, and the Slurm provisioning parameters."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
import subprocess
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.sagemaker.hyperpod import (
    INSTANCE_CONNECTIVITY,
    INSTANCE_STRESS,
    LIFECYCLE_ROOT,
    ON_CREATE,
    PROVISIONING_PARAMETERS,
    bundle_digest,
    deep_health_checks,
    lifecycle_prefix,
    provisioning_parameters,
    read_bundle,
    script_digest,
)
from stacks.schema import HyperPodInstanceGroupSpec, HyperPodSpec

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.", min_size=1, max_size=12)
bundles = st.dictionaries(names, st.binary(max_size=256), min_size=1, max_size=6)


def slurm_spec(login: bool = True) -> HyperPodSpec:
    groups = [
        {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
        {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 4},
        {"name": "g5", "instance_type": "ml.g5.48xlarge", "instance_count": 2},
    ]
    if login:
        groups.append({"name": "login", "instance_type": "ml.m5.xlarge", "instance_count": 1, "role": "login"})
    return HyperPodSpec.model_validate({"enabled": True, "orchestrator": "slurm", "instance_groups": groups})


def test_script_digest_is_sha256_of_the_bytes() -> None:
    assert script_digest(b"#!/bin/bash\n") == hashlib.sha256(b"#!/bin/bash\n").hexdigest()


@given(bundles, st.data())
def test_a_changed_script_changes_the_prefix(files: dict[str, bytes], data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(files)))
    changed = {**files, name: files[name] + b"\n# changed"}
    assert lifecycle_prefix("c", changed) != lifecycle_prefix("c", files)


@given(bundles)
def test_the_digest_ignores_read_order(files: dict[str, bytes]) -> None:
    assert bundle_digest(dict(reversed(list(files.items())))) == bundle_digest(files)


@given(bundles, names)
def test_adding_or_renaming_a_file_changes_the_digest(files: dict[str, bytes], extra: str) -> None:
    if extra in files:
        return
    assert bundle_digest({**files, extra: b""}) != bundle_digest(files)
    first = sorted(files)[0]
    renamed = {(extra if k == first else k): v for k, v in files.items()}
    assert bundle_digest(renamed) != bundle_digest(files)


def test_prefix_is_per_cluster_under_the_lifecycle_root() -> None:
    files = {ON_CREATE: b"x"}
    assert lifecycle_prefix("a", files).startswith("hyperpod/lifecycle/a/")
    assert lifecycle_prefix("a", files).rsplit("/", 1)[1] == lifecycle_prefix("b", files).rsplit("/", 1)[1]


def test_read_bundle_requires_the_entry_point(tmp_path: Path) -> None:
    (tmp_path / "other.sh").write_text("#!/bin/bash\n")
    with pytest.raises(ValueError, match=ON_CREATE):
        read_bundle(tmp_path)


@pytest.mark.parametrize("orchestrator", ["eks", "slurm"])
def test_shipped_scripts_are_strict_bash_that_parses(orchestrator: str) -> None:
    files = read_bundle(LIFECYCLE_ROOT / orchestrator)
    scripts = {name: body.decode() for name, body in files.items() if name.endswith(".sh")}
    assert ON_CREATE in scripts
    for name, text in scripts.items():
        assert text.startswith("#!/bin/bash\n"), name
        assert "set -euo pipefail" in text, name
        subprocess.run(["bash", "-n", str(LIFECYCLE_ROOT / orchestrator / name)], check=True)


@pytest.mark.parametrize("orchestrator", ["eks", "slurm"])
def test_entry_point_runs_exactly_the_files_of_its_bundle(orchestrator: str) -> None:
    files = read_bundle(LIFECYCLE_ROOT / orchestrator)
    scripts = {name: body.decode() for name, body in files.items() if name.endswith((".sh", ".py"))}
    called = set()
    for text in scripts.values():  # helpers call helpers (setup_users.sh runs node_config.py)
        called |= set(re.findall(r"(?:bash|python3) ([a-z_]+\.(?:sh|py))", text))
        called |= set(re.findall(r"bash -s .*<([a-z_]+\.sh)", text))  # a script fed on stdin (setup_fsx.sh)
    assert called <= set(files), called - set(files)  # nothing runs a script the bundle lacks
    assert set(scripts) - {ON_CREATE} <= called  # and no script is dead weight
    if orchestrator == "slurm":
        assert PROVISIONING_PARAMETERS in files[ON_CREATE].decode()  # written next to the scripts by the component


def test_provisioning_parameters_name_groups_and_fsx() -> None:
    params = provisioning_parameters(slurm_spec(), "fs-1.fsx.us-east-1.amazonaws.com", "abcdefgh")
    assert params["workload_manager"] == "slurm"
    assert params["controller_group"] == "controller"
    assert params["login_group"] == "login"
    assert params["worker_groups"] == [
        {"instance_group_name": "p5", "partition_name": "p5"},
        {"instance_group_name": "g5", "partition_name": "g5"},
    ]
    assert (params["fsx_dns_name"], params["fsx_mountname"]) == ("fs-1.fsx.us-east-1.amazonaws.com", "abcdefgh")


def test_provisioning_parameters_without_fsx_or_login_leave_the_keys_out() -> None:
    params = provisioning_parameters(slurm_spec(login=False))
    assert "fsx_dns_name" not in params and "fsx_mountname" not in params and "login_group" not in params


def _node_config_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("node_config", LIFECYCLE_ROOT / "slurm" / "node_config.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESOURCES = {
    "InstanceGroups": [
        {"Name": "controller", "Instances": [{"CustomerIpAddress": "10.0.0.10"}]},
        {"Name": "login", "Instances": [{"CustomerIpAddress": "10.0.0.20"}]},
        {"Name": "p5", "Instances": [{"CustomerIpAddress": "10.0.0.30"}, {"CustomerIpAddress": "10.0.0.31"}]},
    ]
}


@pytest.mark.parametrize(
    ("address", "role"), [("10.0.0.10", "controller"), ("10.0.0.20", "login"), ("10.0.0.31", "compute")]
)
def test_node_config_finds_this_node_by_address(address: str, role: str) -> None:
    params = provisioning_parameters(slurm_spec(), "fs-1.fsx", "mnt")
    env = _node_config_module().node_env(params, RESOURCES, address)
    assert env["ROLE"] == role and env["CONTROLLERS"] == "10.0.0.10"
    assert (env["FSX_DNS_NAME"], env["FSX_MOUNT_NAME"]) == ("fs-1.fsx", "mnt")
    # The schema's defaults reach the scripts: containers, accounting, homes on Lustre, the client hold.
    assert env["CONTAINERS"] == env["ACCOUNTING"] == env["HOMES_ON_LUSTRE"] == env["HOLD_LUSTRE_CLIENT"] == "1"
    assert env["ENROOT_VERSION"] == "3.4.1" and env["PYXIS_VERSION"] == "0.19.0"


def test_node_config_prints_shell_safe_assignments(tmp_path: Path) -> None:
    params = provisioning_parameters(slurm_spec(), "fs-1.fsx", "mnt; rm -rf /")
    module = _node_config_module()
    module.primary_address = lambda: "10.0.0.31"
    (tmp_path / "p.json").write_text(json.dumps(params))
    (tmp_path / "r.json").write_text(json.dumps(RESOURCES))
    out = io.StringIO()
    with redirect_stdout(out):
        module.main(["env", str(tmp_path / "p.json"), str(tmp_path / "r.json")])
    sourced = subprocess.run(
        ["bash", "-c", 'eval "$1"; printf %s "$FSX_MOUNT_NAME"', "_", out.getvalue()],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sourced.stdout == "mnt; rm -rf /"


def test_node_config_refuses_a_node_outside_the_layout() -> None:
    with pytest.raises(SystemExit, match=r"10\.9\.9\.9 is in no InstanceGroups"):
        _node_config_module().node_env(provisioning_parameters(slurm_spec()), RESOURCES, "10.9.9.9")


def test_deep_health_checks_follow_accelerator_and_efa() -> None:
    p5 = HyperPodInstanceGroupSpec(name="p5", instance_type="ml.p5.48xlarge", instance_count=2)
    single = HyperPodInstanceGroupSpec(name="g5", instance_type="ml.g5.2xlarge", instance_count=1)
    controller = HyperPodInstanceGroupSpec(
        name="ctl", instance_type="ml.m5.2xlarge", instance_count=1, role="controller"
    )
    assert deep_health_checks(p5) == [INSTANCE_STRESS, INSTANCE_CONNECTIVITY]
    assert deep_health_checks(single) == [INSTANCE_STRESS]  # no EFA: nothing to test between nodes
    assert deep_health_checks(controller) == []


def test_provisioning_parameters_carry_root_squash_and_the_nvidia_groups() -> None:
    params = provisioning_parameters(slurm_spec(), "fs-1.fsx", "mnt", "65534:65534")
    assert params["fsx_root_squash"] == "65534:65534"
    assert params["trainstack"]["nvidia_groups"] == ["p5", "g5"]  # not the CPU controller and login groups
    assert provisioning_parameters(slurm_spec(), "fs-1.fsx", "mnt")["fsx_root_squash"] is None


@pytest.mark.parametrize(
    ("squash", "identity"),
    [("65534:65534", ("65534", "65534")), ("1099:1098", ("1099", "1098")), (None, ("65534", "65534"))],
)
def test_node_config_hands_the_fsx_step_root_squashs_identity(squash: str | None, identity: tuple[str, str]) -> None:
    params = provisioning_parameters(slurm_spec(), "fs-1.fsx", "mnt", squash)
    env = _node_config_module().node_env(params, RESOURCES, "10.0.0.31")
    assert (env["FSX_SQUASH_UID"], env["FSX_SQUASH_GID"]) == identity
    assert env["FSX_ROOT_SQUASH"] == (squash or "")  # empty: mount_fsx.sh may set /fsx's mode itself
    assert env["ADDRESS"] == "10.0.0.31" and env["NVIDIA"] == "1"
    assert _node_config_module().node_env(params, RESOURCES, "10.0.0.10")["NVIDIA"] == "0"  # the controller


def test_node_config_lists_users_and_keys_for_the_fsx_step() -> None:
    spec = HyperPodSpec.model_validate(
        slurm_spec().model_dump(mode="json")
        | {
            "slurm": {
                "users": [
                    {"name": "alice", "uid": 2001, "ssh_public_keys": ["ssh-ed25519 AAAA1 a@x", "ssh-rsa AAAA2 a y"]},
                    {"name": "bob", "uid": 2002},
                ]
            }
        }
    )
    lines = _node_config_module().fsx_users(provisioning_parameters(spec))
    assert lines == [
        "user alice 2001",
        "key alice ssh-ed25519 AAAA1 a@x",
        "key alice ssh-rsa AAAA2 a y",
        "user bob 2002",
    ]
