"""The trainstack CrossGuard policy pack: assembles `policies.rules.POLICIES` and serves them to the CLI.

The CLI runs this file with the pack directory first on sys.path; the rules are the `policies` package, so
its parent goes on the path too. The pack imports nothing else from the repository (a test checks).
Constructing PolicyPack starts the analyzer's gRPC server and blocks: never import this module.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.rules import POLICIES

PolicyPack(name="trainstack", policies=POLICIES, enforcement_level=EnforcementLevel.ADVISORY)
