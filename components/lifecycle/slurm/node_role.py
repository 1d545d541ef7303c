"""Print this node's Slurm role, the controller addresses, and the FSx settings, space-separated.

Usage: python3 node_role.py provisioning_parameters.json resource_config.json
The node is found by its primary private IPv4 address among the instances HyperPod lists per instance group.
"""

import json
import socket
import sys


def primary_address() -> str:
    # A UDP connect sends nothing; it only makes the kernel choose the source address of the default route.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]


def main(params_path: str, resources_path: str) -> None:
    with open(params_path, encoding="utf-8") as f:
        params = json.load(f)
    with open(resources_path, encoding="utf-8") as f:
        resources = json.load(f)
    addresses = {
        group["Name"]: [i["CustomerIpAddress"] for i in group.get("Instances", [])]
        for group in resources["InstanceGroups"]
    }
    me = primary_address()
    mine = [name for name, ips in addresses.items() if me in ips]
    if not mine:
        sys.exit(f"address {me} is in no instance group of {resources_path}")
    if mine[0] == params["controller_group"]:
        role = "controller"
    elif mine[0] == params.get("login_group"):
        role = "login"
    else:
        role = "compute"
    controllers = ",".join(addresses.get(params["controller_group"], []))
    if not controllers:
        sys.exit(f"controller group {params['controller_group']} has no instances in {resources_path}")
    print(role, controllers, params.get("fsx_dns_name") or "-", params.get("fsx_mountname") or "-")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
