"""Every place trainstack reaches into the Pulumi SDK's internals, and only here.

The offline engine (`trainstack.engine`) runs the real program under `pulumi.runtime.set_mocks`, which is public;
running it many times in one process, and waiting on outputs outside the program, needs a few names the SDK does
not promise to keep. Each is wrapped here under a name of our own, and `HOOKS` lists the SDK attribute behind each,
so `tests/unit/test_sdk_hooks.py` fails on the SDK bump that moves or reshapes one, naming it, instead of a plan
failing somewhere downstream. Read against pulumi 3.272.0 (sdk/python/lib/pulumi/runtime/: sync_await.py,
settings.py, resource.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Generator
from typing import Any, TypeVar

from pulumi.runtime import resource as _resource
from pulumi.runtime import settings as _settings
from pulumi.runtime import sync_await as _sync_await_module
from pulumi.runtime.proto import source_pb2

T = TypeVar("T")

# (module, attribute): the private or undocumented SDK names this module stands on, each used below.
HOOKS: tuple[tuple[str, str], ...] = (
    ("pulumi.runtime.sync_await", "_sync_await"),
    ("pulumi.runtime.settings", "set_root_resource"),
    ("pulumi.runtime.settings", "get_root_resource"),
    ("pulumi.runtime.settings", "SETTINGS"),
    ("pulumi.runtime.resource", "_get_stack_trace"),
)

# Not private, but outside `pulumi.runtime`'s exports: components/deploy_guard.py asks `settings.get_monitor()`
# whether it runs under the mock engine. components/ may not import trainstack/ (the import contract), so it
# calls the SDK itself; the hooks test checks this name with the others.
ALSO_USED: tuple[tuple[str, str], ...] = (("pulumi.runtime.settings", "get_monitor"),)


def sync_await(awaitable: Awaitable[T]) -> T:
    """Wait for `awaitable` on the current event loop, running it if it is not running (the SDK's own helper)."""
    return _sync_await_module._sync_await(awaitable)


def reset_root_resource() -> None:
    """Forget the previous run's root Stack, so the next run makes its own.

    pulumi types the parameter `Resource`, though the context variable it sets is Optional[Resource] and starts as
    None.
    """
    _settings.set_root_resource(None)  # type: ignore[bad-argument-type]


def root_resource() -> Any:
    """The root Stack of the current run (None before a program ran)."""
    return _settings.get_root_resource()


def forget_pending_outputs() -> None:
    """Drop the SDK's record of the outputs it still tracks, so none leaks into the next run's event loop.

    `Settings.outputs` is a set[asyncio.Task] behind the untyped @contextproperty decorator, which the checker sees
    as the decorator's own return (a ContextProperty or a function), not the descriptor's value.
    """
    _settings.SETTINGS.outputs.clear()  # type: ignore[missing-attribute]


@contextlib.contextmanager
def no_source_positions() -> Generator[None, None, None]:
    """Registrations without the caller's stack trace, inside the block.

    On every registration the SDK walks the Python stack and reads each frame's source line, so that the engine
    can show where a resource was declared. A recording never keeps it, and under a deep caller (pytest) the walk
    was about a quarter of a run's CPU time. Only the mock runs use this; `pulumi up` runs `__main__.py` in
    Pulumi's own language host, which never enters this block.
    """
    original = _resource._get_stack_trace
    _resource._get_stack_trace = source_pb2.StackTrace  # an empty trace: no source position
    try:
        yield
    finally:
        _resource._get_stack_trace = original
