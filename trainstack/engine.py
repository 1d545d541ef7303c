"""The offline engine: runs the real program under the Pulumi SDK's mock runtime and records what it registers.

Nothing here reimplements Pulumi. `pulumi.runtime.set_mocks` runs the program exactly as `pulumi up` would
up to the provider boundary; the `Recorder` (a `MockMonitor`) keeps every `RegisterResource` request with
its engine-named inputs, dependencies, property dependencies, protect flag and provider reference, and
`TrainstackMocks` answers in place of AWS. Each run gets fresh mocks, fresh config and a fresh event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import json
import runpy
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf.json_format import MessageToDict
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import Stack, run_pulumi_func
from typing_extensions import override

from stacks.load import FULL_KEY
from stacks.schema import StackConfig
from trainstack import sdk_hooks
from trainstack.mocks import ExistingSubnetFacts, TrainstackMocks, existing_subnet_facts
from trainstack.tokens import ROOT_STACK

PROJECT = "trainstack"
ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # Pulumi's wire sentinel for a value unknown in preview


@dataclass(frozen=True)
class RecordedResource:
    """One `RegisterResource` call, as the engine saw it."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]  # engine (camelCase) names, JSON-compatible; unknowns are UNKNOWN
    dependencies: tuple[str, ...]
    property_dependencies: dict[str, tuple[str, ...]]
    protect: bool
    retain_on_delete: bool
    provider: str  # "<provider urn>::<provider id>", empty for components and providers
    id: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    ignore_changes: tuple[str, ...] = ()  # input paths `pulumi up` leaves as they are after creation
    aliases: tuple[str, ...] = ()  # earlier URNs `pulumi up` matches this resource's state by (`Recorder.alias_urns`)
    # Input paths whose change makes the engine replace the resource whatever its provider says (resource option
    # `replace_on_changes`; `*` matches any key or index), and whether it deletes the old one before creating the
    # new one (`delete_before_replace`; None: the provider decides).
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool | None = None

    @property
    def provider_urn(self) -> str:
        return self.provider.rsplit("::", 1)[0] if self.provider else ""


@dataclass(frozen=True)
class Recording:
    """Everything one run of the program registered, in a stable order (`stable_order`), and its stack outputs.

    `resources` is a tuple whatever the caller passes, so a cached recording's list cannot be changed.
    """

    stack: str
    preview: bool
    resources: tuple[RecordedResource, ...]
    outputs: dict[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "resources", tuple(self.resources))

    def by_type(self, type_token: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str) -> RecordedResource:
        found = self.by_type(type_token)
        if len(found) != 1:
            raise LookupError(f"expected one {type_token}, found {len(found)}")
        return found[0]

    def by_urn(self) -> dict[str, RecordedResource]:
        return {r.urn: r for r in self.resources}

    def children(self, urn: str) -> Iterator[RecordedResource]:
        return (r for r in self.resources if r.parent == urn)


def _edges(resource: RecordedResource) -> set[str]:
    """The URNs `resource` must come after: its parent, provider, dependencies and property dependencies."""
    after = {resource.parent, resource.provider_urn, *resource.dependencies}
    for urns in resource.property_dependencies.values():
        after.update(urns)
    after.discard("")
    after.discard(resource.urn)
    return after


def stable_order(resources: Iterable[RecordedResource]) -> tuple[RecordedResource, ...]:
    """Resources in topological order (parents, providers and dependencies first), ties broken by URN.

    The SDK registers resources from a thread pool as their inputs resolve, so registration order changes from
    run to run; every report, diff and step list follows this order instead, so the same config always gives
    byte-identical output. A cycle (impossible in a real program) falls back to URN order for what is left.
    """
    by_urn = {r.urn: r for r in resources}
    waiting = {urn: {u for u in _edges(r) if u in by_urn} for urn, r in by_urn.items()}
    dependents: dict[str, list[str]] = {urn: [] for urn in by_urn}
    for urn, before in waiting.items():
        for u in before:
            dependents[u].append(urn)
    ready = [urn for urn, before in waiting.items() if not before]
    heapq.heapify(ready)
    ordered: list[RecordedResource] = []
    while ready:
        urn = heapq.heappop(ready)
        ordered.append(by_urn[urn])
        for dependent in dependents[urn]:
            waiting[dependent].discard(urn)
            if not waiting[dependent]:
                heapq.heappush(ready, dependent)
    placed = {r.urn for r in ordered}
    ordered += sorted((r for urn, r in by_urn.items() if urn not in placed), key=lambda r: r.urn)
    return tuple(ordered)


class Recorder(MockMonitor):
    """A mock monitor that also keeps the full registration request of every resource."""

    def __init__(self, mocks: TrainstackMocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []
        self.alias_urns_of: dict[str, tuple[str, ...]] = {}

    def alias_urns(self, request: Any) -> tuple[str, ...]:
        """The URNs the engine would match this registration's prior state by, computed as the engine does for
        alias specs (pulumi/pulumi pkg/resource/deploy/source_eval.go; the SDK's own fallback for engines without
        alias specs, `pulumi.runtime.resource.all_aliases`, is the same rule): each alias's name, type and parent
        default to the resource's own; and every alias of the parent is inherited, the child's name rewritten
        when it starts with the parent's name (`<parent>-vpc` under a parent aliased from `old` becomes
        `old-vpc`) and kept as it is when it does not.
        """
        own: list[str] = []
        for alias in request.aliases:
            if alias.urn:
                own.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            own.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        parent_name = request.parent.rsplit("::", 1)[-1]
        inherited: list[str] = []
        for parent_alias in self.alias_urns_of.get(request.parent, ()):
            alias_parent_name = parent_alias.rsplit("::", 1)[-1]
            for urn in [self.make_urn(request.parent, request.type, request.name), *own]:
                name, type_ = urn.rsplit("::", 1)[-1], urn.split("::")[2].split("$")[-1]
                if name.startswith(parent_name):
                    name = alias_parent_name + name[len(parent_name) :]
                inherited.append(self.make_urn(parent_alias, type_, name))
        return tuple(dict.fromkeys(own + inherited))

    @override
    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine leaves the root Stack out of its children's URNs; the SDK's mock does not.
        if parent.split("::")[2:3] == [ROOT_STACK]:
            parent = ""
        return super().make_urn(parent, type_, name)

    @override
    def RegisterResource(self, request: Any) -> Any:  # the gRPC method name
        response = super().RegisterResource(request)
        if request.type == ROOT_STACK:
            return response
        registration = self.resources.get(response.urn)
        aliases = self.alias_urns_of[response.urn] = self.alias_urns(request)
        self.recorded.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                custom=request.custom,
                inputs=MessageToDict(request.object),
                # The SDK gathers dependencies in sets: sorted, so the same program records the same tuples.
                dependencies=tuple(sorted(set(request.dependencies))),
                property_dependencies={
                    k: tuple(sorted(set(request.propertyDependencies[k].urns)))
                    for k in sorted(request.propertyDependencies)
                },
                protect=request.protect,
                retain_on_delete=request.retainOnDelete,
                provider=request.provider,
                id=registration.id if registration and registration.id else "",
                outputs=MessageToDict(response.object) if response.object else {},
                ignore_changes=tuple(request.ignoreChanges),
                aliases=aliases,
                replace_on_changes=tuple(request.replaceOnChanges),
                delete_before_replace=request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None,
            )
        )
        return response


def _resolve(value: Any) -> Any:
    """A stack output's value; UNKNOWN where a preview cannot know it yet (as `pulumi preview` shows)."""
    output = pulumi.Output.from_input(value)
    if not sdk_hooks.sync_await(output.is_known()):
        return UNKNOWN
    return sdk_hooks.sync_await(output.future())


def pulumi_config(stack: StackConfig) -> dict[str, str]:
    """The Pulumi config the CLI would hand the program for this stack: one JSON object under our key."""
    return {FULL_KEY: json.dumps(stack.model_dump(mode="json"))}


@contextlib.contextmanager
def collector_paused() -> Generator[None, None, None]:
    """No cyclic garbage collection inside the block; as it was after.

    A run allocates a few container objects per resource (Outputs, futures, protobuf messages) that all live until
    the run ends, so collection during the run frees next to nothing; but each pass the allocations trigger in the
    oldest generation re-scans the whole heap, the SDKs' imported type modules included, and those passes come more
    often as a run grows: at 64 GPU groups (1518 resources) half the run's CPU was collection, and the cost per
    resource rose with size. What a run leaves as cyclic garbage is freed by the first pass after it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run(
    program: Callable[[], Any],
    *,
    stack: str,
    region: str,
    config: dict[str, str] | None = None,
    preview: bool = False,
    existing_subnets: Mapping[str, ExistingSubnetFacts] | None = None,
) -> Recording:
    """Run `program` under fresh mocks and return what it registered.

    Tests pass a function that builds one component; `run_program` passes the real `__main__.py`.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        with sdk_hooks.no_source_positions(), collector_paused():
            sdk_hooks.reset_root_resource()  # a new Stack per run
            set_all_config(dict(config or {}), [])
            recorder = Recorder(TrainstackMocks(region=region, preview=preview, existing_subnets=existing_subnets))
            pulumi.runtime.set_mocks(recorder.mocks, project=PROJECT, stack=stack, preview=preview, monitor=recorder)
            root = sdk_hooks.root_resource()
            sdk_hooks.sync_await(run_pulumi_func(program))
            exported = dict(root.outputs) if isinstance(root, Stack) else {}
            outputs = {name: _resolve(value) for name, value in exported.items()}
            return Recording(stack=stack, preview=preview, resources=stable_order(recorder.recorded), outputs=outputs)
    except Exception:
        # A run that failed (a refused input, an invoke AWS would refuse) leaves the SDK's tasks pending; cancelled
        # and drained here, none of them can reach into the next run, whose loop would find them on a closed one.
        # (Not on Ctrl-C: the process is leaving, and must leave at once.)
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        raise
    finally:
        sdk_hooks.forget_pending_outputs()
        asyncio.set_event_loop(None)
        loop.close()


def run_program(stack: StackConfig, *, stack_name: str, preview: bool = False, program: Path = PROGRAM) -> Recording:
    """Run the real `__main__.py` for one validated stack config."""
    if str(program.parent) not in sys.path:
        sys.path.insert(0, str(program.parent))
    return run(
        lambda: runpy.run_path(str(program), run_name="__main__"),
        stack=stack_name,
        region=stack.region,
        config=pulumi_config(stack),
        preview=preview,
        existing_subnets=existing_subnet_facts(stack),
    )
