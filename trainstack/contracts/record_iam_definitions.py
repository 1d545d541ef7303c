"""Record, from the installed parliament, the IAM definitions of the services the shipped stacks' policies name.

    .venv/bin/python -m trainstack.contracts.record_iam_definitions          # rewrite facts/iam_definitions.json
    .venv/bin/python -m trainstack.contracts.record_iam_definitions --check  # exit 1 if the file is stale

The file is parliament's own list (`iam_definition.json`, from the AWS Service Authorization Reference) cut to
SERVICES, every entry whole and in parliament's order, so the IAM contract loads 0.9 MB instead of 10 MB and
parliament answers as it would with all of them (trainstack/contracts/iam.py, `_covered`). A test keeps SERVICES
covering every action prefix of the shipped stacks' policies; a document naming another service is linted with
every service's definitions.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from typing import Any

from trainstack.contracts import recorder
from trainstack.contracts.iam import DEFINITIONS, SERVICES, every_service

MODULE = "trainstack.contracts.record_iam_definitions"


def record() -> list[dict[str, Any]]:
    every = json.loads(every_service().read_bytes())
    return [service for service in every if service["prefix"] in SERVICES]


def render(definitions: list[dict[str, Any]]) -> str:
    return json.dumps(definitions, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    origin = f"{len(SERVICES)} services, parliament {importlib.metadata.version('parliament')}"
    return recorder.main(argv, __doc__ or "", DEFINITIONS, lambda: render(record()), MODULE, origin)


if __name__ == "__main__":
    sys.exit(main())
