"""The Pulumi SDK internals the offline engine stands on (trainstack/sdk_hooks.py): each still where it was and
still doing what the engine needs, so an SDK bump that moves one fails here by name; and no other file reaches
into the SDK's private names."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re

import pulumi
import pytest
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import settings as sdk_settings

from tests.conftest import ROOT
from trainstack import engine, sdk_hooks


@pytest.mark.parametrize(("module", "name"), sdk_hooks.HOOKS + sdk_hooks.ALSO_USED, ids=lambda v: str(v))
def test_every_hook_is_still_where_the_sdk_had_it(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"the Pulumi SDK no longer has {module}.{name}"


def test_sync_await_runs_a_coroutine_to_its_value_on_the_current_loop() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        assert sdk_hooks.sync_await(answer()) == 42
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_reset_root_resource_forgets_the_previous_runs_stack() -> None:
    engine.run(lambda: pulumi.export("x", 1), stack="hooks", region="us-east-1")
    assert sdk_hooks.root_resource() is not None  # the run left its Stack behind
    sdk_hooks.reset_root_resource()
    assert sdk_hooks.root_resource() is None
    assert sdk_settings.get_root_resource() is None


def test_forget_pending_outputs_empties_the_sdks_own_set() -> None:
    outputs = sdk_settings.SETTINGS.outputs
    assert isinstance(outputs, set), "Settings.outputs is no longer a set of tasks"
    outputs.add("left over")
    sdk_hooks.forget_pending_outputs()
    assert sdk_settings.SETTINGS.outputs == set()


def test_the_sdk_still_looks_its_stack_trace_up_by_module_name_on_every_registration() -> None:
    # The patch works only while register_resource and read_resource call the module global at call time.
    for caller in (sdk_resource.register_resource, sdk_resource.read_resource):
        assert "_get_stack_trace" in caller.__code__.co_names, f"{caller.__name__} no longer calls _get_stack_trace"
    assert inspect.signature(sdk_resource._get_stack_trace).parameters == {}


def test_no_source_positions_swaps_the_trace_for_an_empty_one_and_puts_it_back() -> None:
    original = sdk_resource._get_stack_trace
    with sdk_hooks.no_source_positions():
        assert sdk_resource._get_stack_trace().ByteSize() == 0
    assert sdk_resource._get_stack_trace is original
    with pytest.raises(RuntimeError), sdk_hooks.no_source_positions():
        raise RuntimeError("a failed run")
    assert sdk_resource._get_stack_trace is original


def test_a_run_leaves_no_pending_output_behind() -> None:
    engine.run(lambda: pulumi.export("x", pulumi.Output.from_input(1)), stack="hooks", region="us-east-1")
    assert sdk_settings.SETTINGS.outputs == set()


# A private name of the SDK reached from outside sdk_hooks: `pulumi.x._y`, `from pulumi.x import _y`, or one of the
# hooks by its own name.
_PRIVATE = re.compile(
    r"\bpulumi[\w.]*\._[a-z]\w*|\bfrom pulumi[\w.]* import [^\n]*\b_[a-z]\w*"
    r"|\b(?:_sync_await|SETTINGS|set_root_resource|get_root_resource|_get_stack_trace)\b"
)
_SOURCES = ("trainstack", "components", "stacks", "policies", "scripts", "bench", "__main__.py")


def test_no_other_file_reaches_into_the_sdks_private_names() -> None:
    files = [ROOT / s for s in _SOURCES if (ROOT / s).is_file()]
    files += [
        p
        for s in _SOURCES
        if (ROOT / s).is_dir()
        for p in sorted((ROOT / s).rglob("*.py"))
        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)  # policies/.venv: the SDK itself
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        if path.name != "sdk_hooks.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _PRIVATE.search(line)
    ]
    assert not found, "SDK internals outside trainstack/sdk_hooks.py:\n" + "\n".join(found)


def test_the_guard_sees_each_kind_of_reach() -> None:
    for line in (
        "from pulumi.runtime.sync_await import _sync_await",
        "pulumi_settings.SETTINGS.outputs.clear()",
        "x = pulumi.runtime.resource._get_stack_trace",
        "settings.set_root_resource(None)",
    ):
        assert _PRIVATE.search(line), line
    for line in ("sdk_hooks.reset_root_resource()", "pulumi.runtime.set_mocks(m)", "NVIDIA_RUNTIME_SETTINGS = ("):
        assert not _PRIVATE.search(line), line
