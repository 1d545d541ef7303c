"""User data for GPU nodes: the nodeadm MIME document and the Bottlerocket TOML."""

from __future__ import annotations

import base64
import email
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components.gpu.userdata import (
    HUGEPAGES_SYSCTL_FILE,
    LOCAL_STORAGE_DIRS,
    NODEADM_API_VERSION,
    NVIDIA_RUNTIME_CONFIG,
    bottlerocket_user_data,
    encode,
    hugepages_script,
    nodeadm_user_data,
    nvidia_runtime_script,
)


def _parts(document: str) -> dict[str, str]:
    message = email.message_from_string(document)
    assert message.is_multipart()
    assert message.get_content_type() == "multipart/mixed"
    return {part.get_content_type(): part.get_payload() for part in message.get_payload()}


def test_nodeadm_document_puts_kubelet_and_containerd_on_raid0() -> None:
    parts = _parts(nodeadm_user_data(hugepages_2mi=5128, instance_store=True))
    config = yaml.safe_load(parts["application/node.eks.aws"])
    assert config["apiVersion"] == NODEADM_API_VERSION
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["instance"]["localStorage"] == {"strategy": "RAID0"}
    # Cluster details are EKS's to merge in: repeating them would pin a stale endpoint.
    assert "cluster" not in config["spec"]


def test_nodeadm_document_allocates_hugepages_before_kubelet() -> None:
    script = _parts(nodeadm_user_data(hugepages_2mi=5128, instance_store=True))["text/x-shellscript"]
    assert script.startswith("#!/bin/bash")
    assert f"echo 'vm.nr_hugepages = 5128' > {HUGEPAGES_SYSCTL_FILE}" in script
    assert f"sysctl -p {HUGEPAGES_SYSCTL_FILE}" in script


def _scripts(document: str) -> list[str]:
    return [
        p.get_payload()
        for p in email.message_from_string(document).get_payload()
        if p.get_content_type() == "text/x-shellscript"
    ]


def test_nvidia_nodes_ignore_the_device_variable_in_unprivileged_containers() -> None:
    """The review's HIGH: the AMI's default runtime hands every GPU to NVIDIA_VISIBLE_DEVICES=all."""
    scripts = _scripts(nodeadm_user_data(hugepages_2mi=5128, instance_store=True, nvidia=True))
    assert scripts[1] == nvidia_runtime_script()
    assert (
        f"nvidia-ctk config --in-place --config={NVIDIA_RUNTIME_CONFIG} "
        "--set accept-nvidia-visible-devices-envvar-when-unprivileged=false "
        "--set accept-nvidia-visible-devices-as-volume-mounts=true"
    ) in scripts[1]
    # ...and a node whose config did not take the settings says so and fails its user data.
    assert "grep -Eq '^accept-nvidia-visible-devices-envvar-when-unprivileged *= *false$'" in scripts[1]
    assert _scripts(nodeadm_user_data(hugepages_2mi=0, instance_store=False, nvidia=False)) == []
    assert _scripts(nodeadm_user_data(hugepages_2mi=0, instance_store=False, nvidia=True)) == [nvidia_runtime_script()]


def test_no_hugepages_no_script_and_no_instance_store_no_raid() -> None:
    parts = _parts(nodeadm_user_data(hugepages_2mi=0, instance_store=False))
    assert set(parts) == {"application/node.eks.aws"}
    assert yaml.safe_load(parts["application/node.eks.aws"])["spec"] == {}


@given(hugepages=st.integers(min_value=1, max_value=500_000), instance_store=st.booleans())
def test_both_formats_carry_the_hugepages_count(hugepages: int, instance_store: bool) -> None:
    script = _parts(nodeadm_user_data(hugepages_2mi=hugepages, instance_store=instance_store))["text/x-shellscript"]
    assert f"vm.nr_hugepages = {hugepages}'" in script
    settings = tomllib.loads(bottlerocket_user_data(hugepages_2mi=hugepages, instance_store=instance_store))
    assert settings["settings"]["kernel"]["sysctl"]["vm.nr_hugepages"] == str(hugepages)
    assert ("bootstrap-commands" in settings["settings"]) is instance_store


def test_bottlerocket_binds_runtime_dirs_to_ephemeral_raid() -> None:
    settings = tomllib.loads(bottlerocket_user_data(hugepages_2mi=5128, instance_store=True))["settings"]
    command = settings["bootstrap-commands"]["trainstack-local-storage"]
    assert command["commands"][0] == ["apiclient", "ephemeral-storage", "init"]
    assert command["commands"][1] == ["apiclient", "ephemeral-storage", "bind", "--dirs", *LOCAL_STORAGE_DIRS]
    assert {"/var/lib/containerd", "/var/lib/kubelet"} <= set(LOCAL_STORAGE_DIRS)
    assert command["essential"] is True
    assert command["mode"] == "always"


def test_output_is_deterministic_and_encodes_round_trip() -> None:
    first = nodeadm_user_data(hugepages_2mi=5128, instance_store=True)
    assert first == nodeadm_user_data(hugepages_2mi=5128, instance_store=True)
    assert base64.b64decode(encode(first)).decode() == first


@pytest.mark.parametrize(("hugepage_kb", "reserved"), [(2048, True), (524288, False)])
def test_hugepages_script_reserves_only_2mib_pages(tmp_path: Path, hugepage_kb: int, reserved: bool) -> None:
    # vm.nr_hugepages counts default-size pages; on a 64 KiB-page arm64 kernel those are 512 MiB, and 5128 of
    # them would exceed a p6e-gb200's memory. The script must write nothing there and fail visibly.
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       1006632960 kB\nHugepagesize:    {hugepage_kb} kB\n")
    sysctl_file = tmp_path / "90-hugepages.conf"
    allocated = tmp_path / "nr_hugepages"
    allocated.write_text("5128\n")
    script = (
        hugepages_script(5128)
        .replace("/proc/meminfo", str(meminfo))
        .replace(HUGEPAGES_SYSCTL_FILE, str(sysctl_file))
        .replace("sysctl -p", "true")
        .replace("/proc/sys/vm/nr_hugepages", str(allocated))
    )
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert sysctl_file.exists() is reserved
    if reserved:
        assert result.returncode == 0, result.stderr
        assert sysctl_file.read_text().strip() == "vm.nr_hugepages = 5128"
    else:
        assert result.returncode != 0 and "not 2048" in result.stderr


def test_the_nvidia_runtime_script_is_there_only_when_asked() -> None:
    """A group that is not NVIDIA's (nvidia left out: Neuron, CPU) gets no NVIDIA runtime script."""
    plain = nodeadm_user_data(hugepages_2mi=0, instance_store=False)
    assert "nvidia-ctk" not in plain and plain.count("Content-Type: ") == 2  # the document and its NodeConfig
    assert "nvidia-ctk" in nodeadm_user_data(hugepages_2mi=0, instance_store=False, nvidia=True)
