"""What every rule module shares: resource type tokens, the two rule decorators, property access on the
read-only proxies the SDK hands policies, and a dependency graph for stack rules.

Stack rules join resources only through the dependency graph (`property_dependencies`, parents, URNs),
never through computed ids or ARNs: ids are unknown during `pulumi preview`, so an id join would degrade
to an advisory "can't run during preview", while a graph join keeps enforcing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from pulumi_policy import (
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .. import waivers
from ..facts import EFA_PRESENT_LABEL, ENVIRONMENTS, GIB_PER_TIB, SCRATCH_2_BASELINE_MB_S_PER_TIB, Instance, instance
from ..facts_generated import (
    BUCKET_ENCRYPTION,
    BUCKET_VERSIONING,
    CLUSTER_TRAINING_RUNTIME,
    HELM_CHART,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    K8S_JOB,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    TRAIN_JOB,
)

# ----------------------------------------------------------------------------------------- type tokens
# The vocabulary's tokens (trainstack/tokens.py) come generated, under its names, from facts_generated.py. These are
# the pack's own: types the program does not create but a rule still judges when another program (or an older
# pulumi-aws) does, so a stack cannot step around a rule by choosing the other resource.

SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
S3_SSE = (
    BUCKET_ENCRYPTION,
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
S3_VERSIONING = (BUCKET_VERSIONING, "aws:s3/bucketVersioningV2:BucketVersioningV2")
HELM_TYPES = (HELM_RELEASE, HELM_CHART)
WORKLOAD_TYPES = (
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    K8S_JOB,
    "kubernetes:batch/v1:CronJob",
    "kubernetes:core/v1:Pod",
    # Training operators' custom resources carry pod templates too.
    CLUSTER_TRAINING_RUNTIME,
    "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime",
    TRAIN_JOB,
    "kubernetes:kubeflow.org/v2beta1:MPIJob",
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
)

# The resource types each resource rule inspects, by rule id (the review and the tests use it).
RESOURCE_TYPES: dict[str, frozenset[str]] = {}


class Report(Protocol):
    """The callback the engine hands every rule: `report(message)`, or `report(message, urn)` to name the
    resource a stack rule found. pulumi_policy 1.21 types it as `ReportViolation = Callable[[str,
    Optional[str]], None]`, a required urn, while the function it passes defaults the urn to None
    (policy.py, `report_violation(message, urn=None)`) and its docs call it optional: the rules take this
    type, and the two places below that hand them to the SDK say so."""

    def __call__(self, message: str, urn: str | None = None, /) -> None: ...


ValidateResource = Callable[[ResourceValidationArgs, Report], None]
ValidateStack = Callable[[StackValidationArgs, Report], None]


# ------------------------------------------------------------------------------------------- the rules


class ResourceRule(ResourceValidationPolicy):
    """A resource rule of the pack. `floor`: the first environment (of dev, staging, prod) from which the rule is
    a floor held in code (policies/enforcement.py), None for a rule the config files set freely."""

    floor: str | None = None


class StackRule(StackValidationPolicy):
    """A stack rule of the pack; `floor` as for ResourceRule."""

    floor: str | None = None


Rule = ResourceRule | StackRule


def floor_of(policy: object) -> str | None:
    """The environment from which `policy` is a floor, or None (also for a policy that is not one of the pack's)."""
    return policy.floor if isinstance(policy, (ResourceRule, StackRule)) else None


def _floor(name: str, floor: str | None) -> str | None:
    if floor is not None and floor not in ENVIRONMENTS:
        raise ValueError(f"rule {name}: floor {floor!r} is not an environment; valid: {', '.join(ENVIRONMENTS)}")
    return floor


# ------------------------------------------------------------------------------------------- decorators


def _schema(config: Mapping[str, Mapping[str, Any]] | None) -> PolicyConfigSchema | None:
    """The rule's config schema; every property has a default or is optional, so `required` stays empty."""
    if not config:
        return None
    return PolicyConfigSchema(properties={k: dict(v) for k, v in config.items()})


def resource_rule(
    *,
    name: str,
    description: str,
    severity: Severity,
    types: Iterable[str],
    config: Mapping[str, Mapping[str, Any]] | None = None,
    remediation: str | None = None,
    floor: str | None = None,
) -> Callable[[ValidateResource], ResourceRule]:
    """Turn `validate(args, report)` into a ResourceValidationPolicy that runs only on `types`.

    Other types return quietly (the engine asks every resource policy about every resource); a matching
    resource the rule does not cover calls `args.not_applicable(reason)`. The default enforcement level
    is left unset: the pack is advisory and `policies/config/<env>.json` raises rules per environment, except
    for a floor: mandatory from environment `floor` on, whatever the config says (policies/enforcement.py).
    """
    wanted = frozenset(types)
    RESOURCE_TYPES[name] = wanted
    held = _floor(name, floor)

    def decorate(validate: ValidateResource) -> ResourceRule:
        def run(args: ResourceValidationArgs, report: Report) -> None:
            if args.resource_type in wanted:
                validate(args, _screened(name, report, args.urn))

        run.__name__ = validate.__name__
        run.__doc__ = validate.__doc__
        rule = ResourceRule(
            name=name,
            description=description,
            validate=run,  # type: ignore[bad-argument-type]  # the SDK's ReportViolation: see Report
            severity=severity,
            config_schema=_schema(config),
            remediation_steps=remediation,
            tags=sorted({t.split(":")[0] for t in wanted}),
        )
        rule.floor = held
        return rule

    return decorate


def stack_rule(
    *,
    name: str,
    description: str,
    severity: Severity,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    remediation: str | None = None,
    floor: str | None = None,
) -> Callable[[ValidateStack], StackRule]:
    """Turn `validate(args, report)` into a StackValidationPolicy; `floor` as for `resource_rule`."""
    held = _floor(name, floor)

    def decorate(validate: ValidateStack) -> StackRule:
        def run(args: StackValidationArgs, report: Report) -> None:
            validate(args, _screened(name, report))

        run.__name__ = validate.__name__
        run.__doc__ = validate.__doc__
        rule = StackRule(
            name=name,
            description=description,
            validate=run,  # type: ignore[bad-argument-type]  # the SDK's ReportViolation: see Report
            severity=severity,
            config_schema=_schema(config),
            remediation_steps=remediation,
            tags=["stack"],
        )
        rule.floor = held
        return rule

    return decorate


def _screened(rule: str, report: Report, resource_urn: str | None = None) -> Report:
    """`report`, less what the stack's waivers exempt (policies/waivers.py): a resource rule's violation is its
    resource's (`resource_urn`: the engine ignores the URN such a rule passes), a stack rule's the one whose URN
    it names."""

    def screened(message: str, urn: str | None = None, /) -> None:
        if not waivers.active().screen(rule, resource_urn if resource_urn is not None else urn or "", message):
            report(message, urn)

    return screened


# --------------------------------------------------------------------------------- property access


def get(props: Any, path: str, default: Any = None) -> Any:
    """`props["a"]["b"][0]` by dotted path ("a.b.0"); `default` when any step is missing.

    Unknown values (preview) raise the SDK's UnknownValueError, which the engine reports as "can't run
    during preview": a rule that must keep enforcing in preview reads only values known at preview time.
    """
    value = props
    for step in path.split("."):
        if isinstance(value, Mapping):
            if step not in value:
                return default
            value = value[step]
        elif isinstance(value, Sequence) and not isinstance(value, str) and step.isdigit():
            index = int(step)
            if index >= len(value):
                return default
            value = value[index]
        else:
            return default
        if value is None:
            return default
    return value


def has(props: Any, key: str) -> bool:
    """Whether a mapping sets `key`, without reading its value (which may be unknown during preview)."""
    return isinstance(props, Mapping) and key in iter(props)


def items(value: Any) -> list[Any]:
    """A list or read-only list proxy as a list; anything else (missing, a scalar) as []."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def truthy(value: Any) -> bool:
    """Booleans that providers model as strings ("true") or real booleans."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def number(value: Any) -> float | None:
    """A number (the engine sends every number as a float); None when missing or not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def json_document(value: Any) -> Any:
    """A JSON policy document given as a string (IAM, provider default tags) or already as a mapping."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def as_list(value: Any) -> list[Any]:
    """IAM's "one value or a list" fields as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return items(value)


def config(args: ResourceValidationArgs | StackValidationArgs, key: str, default: Any) -> Any:
    """One property of the rule's config (the pack config file), with the schema default as fallback."""
    return args.get_config().get(key, default)


def int_config(args: StackValidationArgs, key: str, default: int) -> int:
    """An integer property of the rule's config (a floor's threshold), with the schema default as fallback."""
    return int(args.get_config().get(key, default))


def policy_statements(document: Any) -> list[Mapping[str, Any]]:
    """The statements of a JSON policy document (a bucket, key or endpoint policy): `Statement` is one statement
    object or a list of them (IAM User Guide, IAM JSON policy elements: Statement); [] for anything else."""
    doc = json_document(document)
    if not isinstance(doc, Mapping):
        return []
    statements = get(doc, "Statement")
    return [
        s for s in ([statements] if isinstance(statements, Mapping) else as_list(statements)) if isinstance(s, Mapping)
    ]


def condition_keys(statement: Mapping[str, Any]) -> set[str]:
    """The condition keys a policy statement tests, whatever the operator."""
    condition = statement.get("Condition")
    if not isinstance(condition, Mapping):
        return set()
    return {str(k) for block in condition.values() if isinstance(block, Mapping) for k in block}


def availability_zone(subnet: PolicyResource) -> str:
    """A subnet's AZ by name, or by AZ id when that is what the subnet was given."""
    return str(get(subnet.props, "availabilityZone") or get(subnet.props, "availabilityZoneId"))


# ------------------------------------------------------------------------------ the environment/stack tie


def environment_of_stack(stack: str) -> str | None:
    """The environment a stack name maps to (`prod`, `prod-<suffix>` -> prod); the pack's copy of
    `stacks/load.py`'s rule, proven equal by tests/redteam/test_defence.py."""
    for environment in ENVIRONMENTS:
        if stack == environment or stack.startswith(f"{environment}-"):
            return environment
    return None


def stack_of(urn: str) -> str:
    """The stack segment of a URN: urn:pulumi:<stack>::<project>::<type>::<name>."""
    return urn.split("::", 1)[0].split(":")[-1]


# ------------------------------------------------------------------------------------------ the graph


class Graph:
    """The stack's resources indexed by URN, type and reverse property dependencies."""

    def __init__(self, resources: Sequence[PolicyResource]) -> None:
        self.resources = list(resources)
        self._by_type: dict[str, list[PolicyResource]] = {}
        self._referrers: dict[str, list[tuple[PolicyResource, str]]] = {}
        for resource in self.resources:
            self._by_type.setdefault(resource.resource_type, []).append(resource)
            for prop, deps in resource.property_dependencies.items():
                for dep in deps:
                    self._referrers.setdefault(dep.urn, []).append((resource, prop))

    def of_type(self, *types: str) -> list[PolicyResource]:
        return [r for t in types for r in self._by_type.get(t, [])]

    @staticmethod
    def deps(resource: PolicyResource, prop: str, *types: str) -> list[PolicyResource]:
        """Resources the value of `prop` was computed from, optionally only of `types`."""
        found = resource.property_dependencies.get(prop, [])
        return [d for d in found if not types or d.resource_type in types]

    def referrers(self, resource: PolicyResource, prop: str | None = None, *types: str) -> list[PolicyResource]:
        """Resources whose `prop` (any property when None) was computed from `resource`."""
        out: list[PolicyResource] = []
        for other, other_prop in self._referrers.get(resource.urn, []):
            if (
                (prop is None or other_prop == prop)
                and (not types or other.resource_type in types)
                and other not in out
            ):
                out.append(other)
        return out


def graph(args: StackValidationArgs) -> Graph:
    """The graph of this stack, built for each stack rule: the analyzer hands every policy its own resources
    list, so a shared cache would never hit, and building one is cheap (prod's 158 resources: under 0.1 ms,
    2 ms for all stack rules)."""
    return Graph(args.resources)


# ------------------------------------------------------------------------------ node-group joins


def launch_template_of(node_group: PolicyResource) -> PolicyResource | None:
    """The launch template a node group launches from, joined through `launchTemplate`'s dependencies."""
    found = Graph.deps(node_group, "launchTemplate", LAUNCH_TEMPLATE)
    return found[0] if found else None


def efa_interfaces(launch_template_props: Mapping[str, Any]) -> list[Any]:
    """The launch template's network interfaces of type `efa` or `efa-only`. The one reader of a recorded
    template's EFA interfaces: the rules and the plan's report both use it."""
    return [
        nic
        for nic in items(get(launch_template_props, "networkInterfaces"))
        if get(nic, "interfaceType") in ("efa", "efa-only")
    ]


def lustre_throughput_mb_s(props: Any) -> float:
    """Baseline throughput of a recorded `aws.fsx.LustreFileSystem` in MB/s: TiB of storage x MB/s per TiB,
    where SCRATCH_2 has a fixed baseline and PERSISTENT_2 the provisioned perUnitStorageThroughput. The one
    reader of a file system's throughput: the storage rules and the plan's report both use it."""
    capacity_tib = float(number(get(props, "storageCapacity")) or 0) / GIB_PER_TIB
    if get(props, "deploymentType") == "SCRATCH_2":
        per_tib = float(SCRATCH_2_BASELINE_MB_S_PER_TIB)
    else:
        per_tib = float(number(get(props, "perUnitStorageThroughput")) or 0)
    return capacity_tib * per_tib


def instance_types_of(node_group: PolicyResource) -> list[str]:
    """The node group's instance types: its own `instanceTypes`, else its launch template's `instanceType`."""
    own = [str(t) for t in items(get(node_group.props, "instanceTypes"))]
    if own:
        return own
    template = launch_template_of(node_group)
    if template is not None and get(template.props, "instanceType"):
        return [str(get(template.props, "instanceType"))]
    return []


def accelerated_node_groups(g: Graph) -> list[tuple[PolicyResource, Instance]]:
    """Node groups of accelerated instances (GPU or Trainium), each with its instance facts."""
    out: list[tuple[PolicyResource, Instance]] = []
    for group in g.of_type(NODE_GROUP):
        for instance_type in instance_types_of(group):
            facts = instance(instance_type)
            if facts is not None:
                out.append((group, facts))
                break
    return out


class Capacity(NamedTuple):
    """Accelerators one source of the stack can run at once: a node group at maxSize, or a HyperPod group."""

    name: str
    accelerators: int


def accelerator_capacity(g: Graph) -> list[Capacity]:
    """Every accelerated node group at its maximum size and every accelerated HyperPod instance group at its
    instance count (`ml.<ec2 type>` has the EC2 twin's accelerators). The GPU budget and the storage demand
    both count this, like the plan does."""
    out = [
        Capacity(group.name, int(number(get(group.props, "scalingConfig.maxSize")) or 0) * facts.accelerators)
        for group, facts in accelerated_node_groups(g)
    ]
    for cluster in g.of_type(HYPERPOD_CLUSTER):
        for ig in items(get(cluster.props, "instanceGroups")):
            facts = instance(str(get(ig, "instanceType", "")))
            if facts is not None:
                count = int(number(get(ig, "instanceCount")) or 0) * facts.accelerators
                out.append(Capacity(f"{cluster.name}/{get(ig, 'instanceGroupName')}", count))
    return out


def efa_node_groups(g: Graph) -> list[tuple[PolicyResource, PolicyResource]]:
    """Node groups meant for EFA, each with its launch template: the template has EFA interfaces, or the
    group carries the EFA node label (so a template that lost its interfaces is still checked)."""
    out: list[tuple[PolicyResource, PolicyResource]] = []
    for group in g.of_type(NODE_GROUP):
        template = launch_template_of(group)
        labelled = label(group, EFA_PRESENT_LABEL) == "true"
        if template is not None and (efa_interfaces(template.props) or labelled):
            out.append((group, template))
    return out


def label(group: PolicyResource, key: str) -> Any:
    """A node group's Kubernetes label value, or None."""
    labels = get(group.props, "labels")
    return labels[key] if isinstance(labels, Mapping) and key in iter(labels) else None
