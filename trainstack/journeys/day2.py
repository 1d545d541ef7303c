"""Day 2: a change to a stack file reaches AWS and Kubernetes as changes their APIs accept.

`pulumi up` turns a config change into updates and replacements. The Kubernetes API server refuses an update that
breaks a CRD's transition rule (`self == oldSelf`: the field is immutable), and AWS refuses an update its API
cannot make in place; a plan that shows such an update as green is a `pulumi up` that stops half-way.

On every plan, one journey over the custom resources whose CRDs freeze a field the program sets (Trainer's
ClusterTrainingRuntime: `failurePolicy`, where `max_restarts` lives; a TrainJob's `runtimeRef`; a LocalQueue's
`clusterQueue`), two steps per kind:

1. pulumi replaces such an object when a frozen field changes: its `replace_on_changes` covers every frozen
   place, found by evaluating the CRD's transition rules (cel-python) on the recorded value and small edits of it;
2. the replacement deletes the old object first when the new one keeps its name (`delete_before_replace`):
   pulumi-kubernetes asks for that only for replacements its own diff finds, and a create under a name that
   still exists fails ("already exists").

With `plan --against` (the trip carries the baseline's recording), over the change itself:

3. the API server accepts every custom resource the change updates: each transition rule holds from the
   deployed value to the new one (evaluated with cel-python where both exist, list items matched on their
   list-map keys, as the apiextensions validator does);
4. every Kubernetes object the change replaces under the same name is deleted first;
5. AWS takes every update in place: create-only inputs already plan as replacements (`trainstack.create_only`);
   the rules here are those that depend on the values (FSx for Lustre storage only grows).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from trainstack.contracts import crds
from trainstack.contracts.facts import CrdFacts
from trainstack.create_only import replaces
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import DAY2, Journey, Step, Trip
from trainstack.recording_diff import ResourceChange, diff_recordings, matched_baseline, path_parts
from trainstack.tokens import FSX_LUSTRE, HELM_RELEASE

# Where the engine turns an update under `replace_on_changes` into a replacement, and where pulumi-kubernetes
# decides delete-before-replace and refuses a create under a name that exists (read at pulumi/pulumi v3.259.0
# and pulumi-kubernetes v4.32.0 and master 2026-07-01, the newest in reach; the stacks pin the 4.34 SDK).
REPLACE_ON_CHANGES_SOURCE = "pulumi/pulumi v3.259.0 pkg/resource/deploy/step_generator.go (applyReplaceOnChanges)"
DELETE_FIRST_SOURCE = (
    "pulumi/pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go (Diff: deleteBeforeReplace only for its "
    "own replacements) and provider/pkg/await/await.go (Creation: 'The resource already exists')"
)
TRANSITION_SOURCE = (
    "CRD x-kubernetes-validations transition rules, trainstack/contracts/facts/crds; kubernetes "
    "apiextensions-apiserver pkg/apiserver/schema/cel/validation.go (oldSelf, list-map correlation)"
)
FSX_CAPACITY_SOURCE = (
    "FSx API UpdateFileSystem StorageCapacity (botocore fsx model): for SCRATCH_2 and PERSISTENT SSD file "
    "systems the new value must be greater than the current storage capacity"
)


# ------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class Frozen:
    """One recorded custom resource, the CRD it meets, and the places in it a transition rule freezes."""

    resource: RecordedResource
    facts: CrdFacts
    guards: tuple[crds.Guard, ...]

    @property
    def name(self) -> str:
        """`namespace/name`, or the name of a cluster-scoped object."""
        return object_name(self.resource)

    def uncovered(self) -> list[crds.Guard]:
        """The frozen places a change of which pulumi would apply as an update."""
        return [g for g in self.guards if not replaced_at(self.resource, g.parts)]

    @property
    def keeps_its_name(self) -> bool:
        """Named by the program (not `generateName`): its replacement has the same name."""
        metadata = self.resource.inputs.get("metadata") or {}
        return bool(metadata.get("name")) and not metadata.get("generateName")


def object_name(resource: RecordedResource) -> str:
    """A Kubernetes object as `kubectl` names it: `namespace/name`, or `name` when cluster-scoped."""
    metadata = resource.inputs.get("metadata") or {}
    name = str(metadata.get("name") or resource.name)
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace and namespace != UNKNOWN else name


def replaced_at(resource: RecordedResource, parts: Iterable[str | int]) -> bool:
    """Whether a change at `parts` replaces the resource: under its `replace_on_changes` (Pulumi's
    `PropertyPath.Contains`, `*` for any key or index) or a create-only input of its type."""
    place = list(parts)
    for pattern in resource.replace_on_changes:
        whole = path_parts(pattern)
        if len(place) >= len(whole) and all(w == "*" or w == p for w, p in zip(whole, place, strict=False)):
            return True
    return replaces(resource.type, ".".join(str(p) for p in place))


def frozen_objects(recording: Recording) -> list[Frozen]:
    """Every recorded custom resource with at least one place its CRD's transition rules freeze."""
    installed = crds.installed_operators(recording)
    found: list[Frozen] = []
    for resource in recording.resources:
        facts = crds.facts_of(resource, installed)
        if facts is None or not crds.transition_paths(facts.fields):
            continue
        guards = tuple(crds.guards(facts.fields, crds.body_of(resource)))
        if guards:
            found.append(Frozen(resource, facts, guards))
    return found


def _crd_source(facts: CrdFacts) -> str:
    return f"{facts.source.repository} {facts.source.tag} {facts.source.path} (x-kubernetes-validations)"


def plan_journeys(recording: Recording) -> Iterator[Journey]:
    """One journey, an edit of the frozen fields of the recorded custom resources: per kind, replaced when they
    change and the old object deleted first. None when no recorded object has a frozen field."""
    by_kind: dict[str, list[Frozen]] = {}
    for item in frozen_objects(recording):
        by_kind.setdefault(item.facts.kind, []).append(item)
    steps: list[Step] = []
    for kind, items in by_kind.items():
        steps += _kind_steps(kind, items)
    if steps:
        count = sum(len(items) for items in by_kind.values())
        kinds = ", ".join(by_kind)
        yield Journey(
            kind=DAY2,
            subject=f"an edit of frozen custom-resource fields ({kinds}: {count} objects)",
            steps=tuple(steps),
        )


def _kind_steps(kind: str, items: list[Frozen]) -> tuple[Step, Step]:
    facts = items[0].facts
    places = sorted({g.schema_path for item in items for g in item.guards})
    names = ", ".join(sorted(i.name for i in items))
    uncovered = [f"{item.name} {g.path}" for item in items for g in item.uncovered()]
    covered = Step(
        name=f"pulumi replaces a {kind} whose frozen fields change",
        holds=not uncovered,
        detail=(
            f"the CRD freezes {', '.join(places)}; not under replace_on_changes, so an edit plans as an update "
            f"the API server refuses: {'; '.join(uncovered)}"
            if uncovered
            else f"the CRD freezes {', '.join(places)}; every one is under replace_on_changes on {names}"
        ),
        source=f"{_crd_source(facts)}; {REPLACE_ON_CHANGES_SOURCE}",
    )
    late = [i.name for i in items if i.keeps_its_name and i.resource.delete_before_replace is not True]
    first = Step(
        name=f"the old {kind} is deleted before its replacement is created",
        holds=not late,
        detail=(
            f"no delete_before_replace on {', '.join(late)}: the replacement is created first, under the same "
            "name, and the API server answers 'already exists'"
            if late
            else f"{names} keep their names and have delete_before_replace"
        ),
        source=DELETE_FIRST_SOURCE,
    )
    return covered, first


# ------------------------------------------------------------------------------------------ the change


def _is_kubernetes_object(change: ResourceChange) -> bool:
    return change.type.startswith("kubernetes:") and change.type != HELM_RELEASE


def refused_transitions(baseline: Recording, recording: Recording, changed: Iterable[ResourceChange]) -> list[str]:
    """Every custom resource the change updates in place whose transition rules fail from old to new."""
    installed = crds.installed_operators(recording)
    old = matched_baseline(baseline, recording)
    now = recording.by_urn()
    found: list[str] = []
    for change in changed:
        if change.op != "update" or change.urn not in old:
            continue
        resource = now[change.urn]
        facts = crds.facts_of(resource, installed)
        if facts is None:
            continue
        for t in crds.transition_problems(facts.fields, crds.body_of(old[change.urn]), crds.body_of(resource)):
            found.append(f"{facts.kind} {object_name(resource)} {t.path}: `{t.rule}` fails ({t.message})")
    return found


def _name_of(resource: RecordedResource) -> tuple[Any, Any]:
    metadata = resource.inputs.get("metadata") or {}
    return metadata.get("name"), metadata.get("namespace")


def created_over_themselves(baseline: Recording, recording: Recording, changed: Iterable[ResourceChange]) -> list[str]:
    """Kubernetes objects replaced under the same name whose old object is not deleted first. A replacement the
    provider's own diff finds (a create-only field, `trainstack.create_only`) gets delete-before-replace from
    pulumi-kubernetes; one that only `replace_on_changes` makes needs the option."""
    old = matched_baseline(baseline, recording)
    now = recording.by_urn()
    found: list[str] = []
    for change in changed:
        if change.op != "replace" or not _is_kubernetes_object(change) or change.urn not in old:
            continue
        name = _name_of(now[change.urn])
        if name[0] in (None, UNKNOWN) or name != _name_of(old[change.urn]):
            continue
        by_provider = any(replaces(change.type, path) for path in change.replace_reasons)
        if not by_provider and change.delete_before_replace is not True:
            found.append(f"{object_name(now[change.urn])} ({', '.join(change.replace_reasons)})")
    return found


def refused_aws_updates(changed: Iterable[ResourceChange]) -> list[str]:
    """AWS updates that depend on the values and that the API refuses: an FSx for Lustre file system shrunk."""
    found: list[str] = []
    for change in changed:
        if change.type != FSX_LUSTRE or change.op != "update":
            continue
        for item in change.changes:
            numbers = isinstance(item.old, int | float) and isinstance(item.new, int | float)
            if item.path == "storageCapacity" and numbers and item.new < item.old:
                found.append(
                    f"{change.urn.rsplit('::', 1)[-1]} storageCapacity {item.old:g} -> {item.new:g} GiB: FSx cannot "
                    "shrink a file system; make a new one and copy the data"
                )
    return found


def change_journey(baseline: Recording, recording: Recording) -> Journey:
    """The change from the deployed stack: every update and replacement is one the APIs take."""
    _, _, changed = diff_recordings(baseline, recording)
    transitions = refused_transitions(baseline, recording, changed)
    now = recording.by_urn()
    updated = sum(1 for c in changed if c.op == "update" and crds.custom_resource_kind(now[c.urn]) is not None)
    collisions = created_over_themselves(baseline, recording, changed)
    aws = refused_aws_updates(changed)
    replaced = sum(1 for c in changed if c.op == "replace")
    steps = (
        Step(
            name="the API server accepts every updated custom resource",
            holds=not transitions,
            detail="; ".join(transitions)
            if transitions
            else f"{updated} custom resource(s) updated in place; every transition rule holds from old to new",
            source=TRANSITION_SOURCE,
        ),
        Step(
            name="every Kubernetes object replaced under its own name is deleted first",
            holds=not collisions,
            detail=f"created before the old one is deleted, under the same name: {'; '.join(collisions)}"
            if collisions
            else f"{replaced} replacement(s); none creates a Kubernetes object over one that still exists",
            source=DELETE_FIRST_SOURCE,
        ),
        Step(
            name="AWS makes every update in place",
            holds=not aws,
            detail="; ".join(aws)
            if aws
            else "no update the AWS API refuses (create-only inputs plan as replacements: trainstack/create_only.py)",
            source=FSX_CAPACITY_SOURCE,
        ),
    )
    return Journey(
        kind=DAY2,
        subject=f"the change from the deployed stack ({len(changed) - replaced} updates, {replaced} replacements)",
        steps=steps,
    )


def walk(trip: Trip) -> Iterator[Journey]:
    yield from plan_journeys(trip.recording)
    if trip.baseline is not None:
        yield change_journey(trip.baseline, trip.recording)
