"""The trainstack CrossGuard policy pack: assembles the rules' `POLICIES` and serves them to the CLI.

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

from pulumi_policy import EnforcementLevel, PolicyPack

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


PolicyPack(
    name="trainstack",
    policies=load(Path(__file__).resolve().parent).POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
)
