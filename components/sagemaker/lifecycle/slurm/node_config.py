"""This node's lifecycle settings, from provisioning_parameters.json and HyperPod's resource_config.json.

    python3 node_config.py env PARAMS RESOURCES   shell assignments (ROLE, ADDRESS, CONTROLLERS, FSX_*, settings)
    python3 node_config.py users PARAMS           one "name uid" line per cluster user
    python3 node_config.py keys PARAMS NAME       the configured SSH public keys of one user, one a line
    python3 node_config.py fsx-users PARAMS       "user NAME UID" and "key NAME KEY" lines, for setup_fsx.sh

The node is found by its primary private IPv4 address among the instances HyperPod lists per instance group
(resource_config.json: InstanceGroups[].Instances[].CustomerIpAddress, as AWS's HyperPod reference
lifecycle_script.py reads it). Any problem exits non-zero with a message naming the file and the key.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from typing import Any, TypedDict


# The two files' shapes, as far as this script reads them: provisioning_parameters.json as
# components/hyperpod.py writes it, resource_config.json as HyperPod writes it.
class Instance(TypedDict):
    CustomerIpAddress: str


class _InstanceGroupName(TypedDict):
    Name: str


class InstanceGroup(_InstanceGroupName, total=False):
    Instances: list[Instance] | None


class ResourceConfig(TypedDict, total=False):
    InstanceGroups: list[InstanceGroup]


class Containers(TypedDict, total=False):
    enroot_version: str
    pyxis_version: str


class _UserIdentity(TypedDict):
    name: str
    uid: int


class User(_UserIdentity, total=False):
    ssh_public_keys: list[str]


class SlurmSettings(TypedDict, total=False):
    containers: Containers | None
    accounting: bool
    homes_on_lustre: bool
    hold_lustre_client: bool
    users: list[User]
    nvidia_groups: list[str]


# Root squash's identity on /fsx when the file system squashes none (dev): the setup_fsx.sh step runs as it anyway.
NOBODY = "65534:65534"


class ProvisioningParameters(TypedDict, total=False):
    controller_group: str
    login_group: str
    fsx_dns_name: str
    fsx_mountname: str
    fsx_root_squash: str | None
    trainstack: SlurmSettings


def primary_address() -> str:
    # A UDP connect sends nothing; it only makes the kernel choose the source address of the default route.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]


def load(path: str) -> Any:  # JSON: its shape is checked where it is read
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"cannot read {path}: {error}")


def flag(value: object) -> str:
    return "1" if value else "0"


def node_env(params: ProvisioningParameters, resources: ResourceConfig, me: str) -> dict[str, str]:
    """The shell variables on_create.sh sources."""
    addresses = {
        group["Name"]: [i["CustomerIpAddress"] for i in group.get("Instances") or []]
        for group in resources.get("InstanceGroups", [])
    }
    mine = [name for name, ips in addresses.items() if me in ips]
    if not mine:
        sys.exit(f"this node's address {me} is in no InstanceGroups[].Instances of the resource config")
    controller_group = params.get("controller_group")
    if not controller_group:
        sys.exit("provisioning parameters have no controller_group")
    controllers = addresses.get(controller_group, [])
    if not controllers:
        sys.exit(f"controller group {controller_group} has no instances in the resource config")
    role = (
        "controller" if mine[0] == controller_group else "login" if mine[0] == params.get("login_group") else "compute"
    )
    slurm = params.get("trainstack", {})
    containers = slurm.get("containers") or {}
    squash = params.get("fsx_root_squash") or ""
    squash_uid, squash_gid = (squash or NOBODY).split(":")
    return {
        "ROLE": role,
        "GROUP": mine[0],
        "ADDRESS": me,
        "CONTROLLERS": ",".join(controllers),
        "FSX_DNS_NAME": params.get("fsx_dns_name") or "",
        "FSX_MOUNT_NAME": params.get("fsx_mountname") or "",
        "FSX_ROOT_SQUASH": squash,
        "FSX_SQUASH_UID": squash_uid,
        "FSX_SQUASH_GID": squash_gid,
        "NVIDIA": flag(mine[0] in slurm.get("nvidia_groups", [])),
        "CONTAINERS": flag(containers),
        "ENROOT_VERSION": containers.get("enroot_version", ""),
        "PYXIS_VERSION": containers.get("pyxis_version", ""),
        "ACCOUNTING": flag(slurm.get("accounting")),
        "HOMES_ON_LUSTRE": flag(slurm.get("homes_on_lustre")),
        "HOLD_LUSTRE_CLIENT": flag(slurm.get("hold_lustre_client")),
    }


def users(params: ProvisioningParameters) -> list[User]:
    return list(params.get("trainstack", {}).get("users", []))


def fsx_users(params: ProvisioningParameters) -> list[str]:
    """What setup_fsx.sh reads, one record a line: `user NAME UID`, then `key NAME KEY` per configured key."""
    lines: list[str] = []
    for user in users(params):
        lines.append(f"user {user['name']} {int(user['uid'])}")
        lines += [f"key {user['name']} {key}" for key in user.get("ssh_public_keys", [])]
    return lines


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[0] == "env":
        for key, value in node_env(load(argv[1]), load(argv[2]), primary_address()).items():
            print(f"{key}={shlex.quote(value)}")
    elif len(argv) >= 2 and argv[0] == "users":
        for user in users(load(argv[1])):
            print(user["name"], int(user["uid"]))
    elif len(argv) >= 2 and argv[0] == "fsx-users":
        for line in fsx_users(load(argv[1])):
            print(line)
    elif len(argv) >= 3 and argv[0] == "keys":
        for user in users(load(argv[1])):
            if user["name"] == argv[2]:
                for key in user.get("ssh_public_keys", []):
                    print(key)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
