"""A stand-in for the `aws` CLI in the day-one dry run: no call reaches AWS, and a call the real CLI would refuse
before sending it is refused here, by the same service models: botocore's (the AWS CLI is built on it). An
unknown service or operation, an unknown parameter or a missing required one ends with exit 252, as the CLI's
argument parser does. `eks update-kubeconfig`, a CLI customization with no API operation, takes its own options.

Every call is appended to AWS_STUB_LOG, one JSON line each.
"""

from __future__ import annotations

import json
import os
import sys

import botocore.session
from botocore.exceptions import UnknownServiceError

GLOBAL = {"region", "output", "profile", "query", "no-cli-pager", "debug", "endpoint-url", "no-verify-ssl"}
# awscli/customizations/eks/update_kubeconfig.py: the command's arguments.
UPDATE_KUBECONFIG = {"name", "kubeconfig", "role-arn", "dry-run", "verbose", "alias", "user-alias", "assume-role-arn"}


def kebab(name: str) -> str:
    return botocore.xform_name(name, "-")


def refuse(message: str) -> int:
    print(f"aws: error: {message}", file=sys.stderr)
    return 252


def options(argv: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    i = 0
    while i < len(argv):
        if not argv[i].startswith("--"):
            raise ValueError(f"unrecognized arguments: {argv[i]}")
        name = argv[i][2:]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else "true"
        found[name] = value
        i += 2 if value != "true" or (i + 1 < len(argv) and argv[i + 1] == "true") else 1
    return found


def main(argv: list[str]) -> int:
    with open(os.environ["AWS_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    if len(argv) < 2:
        return refuse("the following arguments are required: command, operation")
    service, operation, rest = argv[0], argv[1], argv[2:]
    try:
        given = options(rest)
    except ValueError as error:
        return refuse(str(error))
    if (service, operation) == ("eks", "update-kubeconfig"):
        unknown = set(given) - UPDATE_KUBECONFIG - GLOBAL
        if unknown or "name" not in given or not given["name"]:
            return refuse(f"unknown or missing options: {sorted(unknown) or ['--name']}")
        print(f"Added new context arn:aws:eks:{given.get('region', 'us-east-1')}:111122223333:cluster/{given['name']}")
        return 0
    session = botocore.session.get_session()
    try:
        model = session.get_service_model(service)
    except UnknownServiceError:
        return refuse(f"argument command: Invalid choice: {service!r}")
    names = {kebab(op): op for op in model.operation_names}
    if operation not in names:
        return refuse(f"argument operation: Invalid choice: {operation!r}")
    shape = model.operation_model(names[operation]).input_shape
    members = {kebab(m): m for m in (shape.members if shape else {})}
    unknown = set(given) - set(members) - GLOBAL
    if unknown:
        return refuse(f"Unknown options: {', '.join('--' + u for u in sorted(unknown))}")
    required = {kebab(m) for m in (shape.required_members if shape else [])}
    if missing := sorted(required - set(given)):
        return refuse(f"the following arguments are required: {', '.join('--' + m for m in missing)}")
    print("{}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
