"""The trainstack CrossGuard policy pack: assembles the rules' `POLICIES` and serves them to the CLI.

The floors (the rules marked `floor=`) are held in code: the analyzer pulumi-policy builds is given two methods
that put them on top of whatever levels and thresholds the CLI configured (policies/enforcement.py).
pulumi-policy 1.21.0 (pinned in requirements.txt) resolves both in `_PolicyAnalyzerServicer`:
`_get_enforcement_level(policy)` for the level each diagnostic carries (a disabled policy is skipped) and
`_get_policy_config(name)` for the properties a rule reads; PolicyPack builds that class by its module name.

The CLI runs this file (`python -m pulumi.policy <engine> <pack dir>`) from wherever the pack lives: this
checkout's `policies/`, or a directory `pulumi policy publish` unpacked under another name. So the pack
imports itself by location: its directory becomes the package `PACKAGE` (the rules import their facts
relatively), and nothing of the trainstack program goes on the path (a test serves a copy from elsewhere).
Constructing PolicyPack starts the analyzer's gRPC server and blocks: never import this module.
"""

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pulumi_policy import EnforcementLevel, Policy, PolicyPack
from pulumi_policy import policy as sdk

PACKAGE = "trainstack_policy_pack"


def load(directory: Path) -> ModuleType:
    """The pack's `rules` module, importing `directory` as the package `PACKAGE` whatever it is named."""
    loaded = sys.modules.get(PACKAGE)
    if loaded is None or list(getattr(loaded, "__path__", [])) != [str(directory)]:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]  # another copy of the pack was loaded in this process: serve this one
        spec = importlib.util.spec_from_file_location(
            PACKAGE, directory / "__init__.py", submodule_search_locations=[str(directory)]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the policy pack from {directory}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.rules")


def hold_floors(enforcement: ModuleType) -> None:
    """Make the analyzer PolicyPack builds enforce the floors whatever the CLI's config says."""
    environment = enforcement.environment()

    class FloorsHeldInCode(sdk._PolicyAnalyzerServicer):
        # No @override: typing.override is Python 3.12's, and the pack imports only the standard library and the SDK.
        def _get_enforcement_level(self, policy: Policy) -> EnforcementLevel:  # pyrefly: ignore[missing-override-decorator]
            level = super()._get_enforcement_level(policy)
            return EnforcementLevel(enforcement.floor_level(policy.name, environment, level.value))

        def _get_policy_config(self, name: str) -> dict[str, Any] | None:  # pyrefly: ignore[missing-override-decorator]
            held = enforcement.floor_settings(name, environment)
            return held if held is not None else super()._get_policy_config(name)

    sdk._PolicyAnalyzerServicer = FloorsHeldInCode


directory = Path(__file__).resolve().parent
rules = load(directory)
enforcement = importlib.import_module(f"{PACKAGE}.enforcement")
hold_floors(enforcement)
# The waivers of the stack this process serves, in force for every rule's report (policies/waivers.py).
importlib.import_module(f"{PACKAGE}.waivers").serve(enforcement.served())
PolicyPack(name="trainstack", policies=rules.POLICIES, enforcement_level=EnforcementLevel.ADVISORY)
