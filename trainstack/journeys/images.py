"""Deploy: every image every workload pulls reaches the nodes, through the network the stack built.

For each workload (a Helm release and what it runs, an EKS add-on, a training runtime, a validation job) and each
image it pulls, in the order the pull meets them:
1. the image is known: a chart's images come from its recorded facts at the pinned version (rendered by Helm,
   `facts/workloads/`) under the release's own values; the stack's own images from the recording;
2. in a team namespace, the registry admission policy admits the pod (its CEL, evaluated with cel-python);
3. the registry's API is reachable from the private subnets (an interface endpoint for this region's ECR, or
   the NAT gateway);
4. the layers arrive: where the registry serves them from (`stacks/registries.py`, with sources), and the route
   there: an S3 bucket in the VPC's region through the S3 gateway endpoint, whose policy must allow the read;
   anything else through NAT.
A step fails where a layer cannot arrive; an atomic Helm release then times out and rolls back.

What the plan cannot show: the registry's own availability and rate limits (Docker Hub's anonymous pull limit
per NAT address), and the routes of a VPC the stack does not build (`network.existing_vpc`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.k8s.tenancy import REGISTRY_POLICY_NAME
from stacks.registries import LayerStore, image_registry, registry_facts
from trainstack.engine import UNKNOWN, Recording
from trainstack.journeys import DEPLOY, Journey, Step, Trip, iam
from trainstack.journeys.workload_facts import chart_workloads, enabled_missing_subcharts, running
from trainstack.tokens import (
    CLUSTER_TRAINING_RUNTIME,
    EKS_ADDON,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    K8S_JOB,
    NAMESPACE,
    ROUTE,
    ROUTE_TABLE_ASSOCIATION,
    SUBNET,
    TRAIN_JOB,
    VALIDATING_ADMISSION_POLICY,
    VALIDATING_ADMISSION_POLICY_BINDING,
    VPC_ENDPOINT,
)

PRIVATE_SUBNET_TAG = "kubernetes.io/role/internal-elb"  # components/network/network.py INTERNAL_ELB_TAG

SRC_GATEWAY = (
    'VPC User Guide, "Gateway endpoints for Amazon S3" (the route to the region\'s S3 prefix list) and "Control '
    'access to VPC endpoints using endpoint policies"'
)
SRC_NAT = 'VPC User Guide, "NAT gateways" (private subnets reach the internet through a NAT gateway route)'
SRC_ECR_ENDPOINTS = 'ECR User Guide, "Amazon ECR interface VPC endpoints (AWS PrivateLink)" (ecr.api and ecr.dkr)'
SRC_VAP = "Kubernetes docs, Validating Admission Policy (validations on CREATE of pods in bound namespaces)"
SRC_ADDONS = 'EKS User Guide, "View Amazon container image registries for Amazon EKS add-ons"'
# EKS add-on images: account 602401143452 in the cluster's region, except the regions listed (EKS User Guide,
# "View Amazon container image registries for Amazon EKS add-ons"). (verify) written from that page as known.
ADDON_REGISTRY_ACCOUNTS: dict[str, str] = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "ca-west-1": "761377655185",
    "eu-central-2": "900612956339",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428327",
    "il-central-1": "066635153087",
    "me-central-1": "759879836304",
    "me-south-1": "558608220178",
}
DEFAULT_ADDON_ACCOUNT = "602401143452"


@dataclass(frozen=True)
class Pull:
    """One image a workload pulls, where its pods run, and where the image reference comes from."""

    image: str
    namespace: str
    source: str
    regional: bool = False  # the chart picks the registry by the cluster's region


@dataclass(frozen=True)
class Workload:
    subject: str
    pulls: tuple[Pull, ...]
    checks: tuple[Step, ...] = ()  # steps about the workload itself (its facts), before any pull


@dataclass(frozen=True)
class Network:
    """What the nodes' private subnets reach: built by the stack, or an existing VPC's."""

    region: str
    partition: str
    built: bool
    nat: bool  # every private route table has a default route to a NAT gateway
    s3_gateway: bool  # the S3 gateway endpoint is on every private route table
    s3_policy: Any  # the endpoint's policy document, UNKNOWN in preview, None without one
    interface: frozenset[str] = field(default_factory=frozenset)  # interface endpoint services (ecr.api, ...)


# ------------------------------------------------------------------------------------------ the network


def _names(urns: Iterable[str]) -> set[str]:
    return {u.rsplit("::", 1)[-1] for u in urns}


def network(recording: Recording, region: str, partition: str) -> Network:
    subnets = recording.by_type(SUBNET)
    if not subnets:
        return Network(region, partition, built=False, nat=False, s3_gateway=False, s3_policy=None)
    private_subnets = {s.name for s in subnets if PRIVATE_SUBNET_TAG in (s.inputs.get("tags") or {})}
    private_tables = {
        name
        for a in recording.by_type(ROUTE_TABLE_ASSOCIATION)
        if _names(a.property_dependencies.get("subnetId", ())) & private_subnets
        for name in _names(a.property_dependencies.get("routeTableId", ()))
    }
    nat_tables = {
        name
        for r in recording.by_type(ROUTE)
        if r.inputs.get("destinationCidrBlock") == "0.0.0.0/0" and r.inputs.get("natGatewayId")
        for name in _names(r.property_dependencies.get("routeTableId", ()))
    }
    s3_policy: Any = None
    s3_gateway = False
    interface: set[str] = set()
    for endpoint in recording.by_type(VPC_ENDPOINT):
        service = str(endpoint.inputs.get("serviceName", ""))
        kind = endpoint.inputs.get("vpcEndpointType")
        if kind == "Gateway" and service == f"com.amazonaws.{region}.s3":
            s3_gateway = bool(private_tables) and private_tables <= _names(
                endpoint.property_dependencies.get("routeTableIds", ())
            )
            policy = endpoint.inputs.get("policy")
            s3_policy = json.loads(policy) if isinstance(policy, str) and policy != UNKNOWN else policy
        elif kind == "Interface":
            interface.add(service.removeprefix(f"com.amazonaws.{region}."))
    return Network(
        region,
        partition,
        built=True,
        nat=bool(private_tables) and private_tables <= nat_tables,
        s3_gateway=s3_gateway,
        s3_policy=s3_policy,
        interface=frozenset(interface),
    )


# ----------------------------------------------------------------------------- the endpoint policy


def endpoint_allows(
    policy: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]
) -> tuple[bool | None, str]:
    """Whether a gateway endpoint's policy lets a request without credentials through: a statement for anyone
    allows it and none denies it (an endpoint policy does not grant, it only limits: VPC User Guide, "Control
    access to VPC endpoints using endpoint policies"). Matching is principalmapper's (trainstack/journeys/iam.py);
    a request without credentials has no aws:PrincipalAccount, so a statement conditioned on it does not apply.
    Returns (the decision, or None when the policy uses an operator the evaluator does not judge; the reason)."""
    document = iam.Policy.of("the S3 gateway endpoint policy", dict(policy))
    try:
        if denied := iam.anyone_statements(document, "Deny", action, resource, context):
            return False, f"denied by statement {denied[0].get('Sid', '(no Sid)')}"
        allowed = iam.anyone_statements(document, "Allow", action, resource, context)
    except iam.UnsupportedPolicy as error:
        return None, str(error)
    if allowed:
        return True, f"allowed by statement {allowed[0].get('Sid', '(no Sid)')}"
    return False, "no statement allows it"


# ---------------------------------------------------------------------------------------- admission


@dataclass(frozen=True)
class Admission:
    """The registry admission policy and the namespaces its binding selects."""

    policy: Mapping[str, Any] | None
    namespaces: frozenset[str]
    decided: dict[str, tuple[bool, str]] = field(default_factory=dict[str, tuple[bool, str]])


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector's matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) over labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if (
            (operator == "In" and labels.get(key) not in values)
            or (operator == "NotIn" and key in labels and labels[key] in values)
            or (operator == "Exists" and key not in labels)
            or (operator == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def admission(recording: Recording) -> Admission:
    policies = {
        p.inputs.get("metadata", {}).get("name"): p.inputs for p in recording.by_type(VALIDATING_ADMISSION_POLICY)
    }
    namespaces = {
        n.inputs["metadata"]["name"]: n.inputs["metadata"].get("labels") or {} for n in recording.by_type(NAMESPACE)
    }
    for binding in recording.by_type(VALIDATING_ADMISSION_POLICY_BINDING):
        spec = binding.inputs.get("spec") or {}
        if spec.get("policyName") != REGISTRY_POLICY_NAME:  # the device access policy judges no image
            continue
        policy = policies.get(spec.get("policyName"))
        if policy is None or "Deny" not in (spec.get("validationActions") or []):
            continue
        selector = (spec.get("matchResources") or {}).get("namespaceSelector") or {}
        bound = frozenset(name for name, labels in namespaces.items() if _selects(selector, labels))
        return Admission(policy, bound)
    return Admission(None, frozenset())


def admits(policy: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[bool, str]:
    """The policy's validations on a pod's CREATE, evaluated with cel-python by the team-job journey's evaluator
    (team_job.registry_refusal: variables first, oldObject null; an expression that fails to evaluate refuses,
    as the policy's failurePolicy Fail does)."""
    from trainstack.journeys.team_job import registry_refusal

    refusal = registry_refusal(policy.get("spec") or {}, pod, None)
    return refusal is None, refusal or "every validation holds"


# ---------------------------------------------------------------------------------------- the pulls


def _images_in(value: Any) -> Iterator[str]:
    """Every container image of a pod template or object the stack writes (`image` under `containers` /
    `initContainers` / `sidecars` lists)."""
    if isinstance(value, Mapping):
        for key, child in value.items():
            if key in ("containers", "initContainers", "sidecars", "extraContainers") and isinstance(child, list):
                for container in child:
                    if isinstance(container, Mapping) and isinstance(container.get("image"), str):
                        yield container["image"]
            yield from _images_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from _images_in(child)


def _release_workloads(recording: Recording) -> Iterator[Workload]:
    from trainstack.contracts.helm_values import chart_name

    for release in recording.by_type(HELM_RELEASE):
        inputs = release.inputs
        chart, version = chart_name(str(inputs.get("chart", ""))), str(inputs.get("version", ""))
        name, namespace = str(inputs.get("name") or release.name), str(inputs.get("namespace", "default"))
        values = inputs.get("values") if isinstance(inputs.get("values"), Mapping) else {}
        subject = f"Helm release {name} ({chart} {version}, namespace {namespace})"
        facts = chart_workloads(chart, version)
        source = f"the recording (release {release.name})"
        own = tuple(Pull(image, namespace, source) for image in dict.fromkeys(_images_in(values)))
        if facts is None:
            missing = Step(
                f"the images of chart {chart} {version} are known",
                False,
                f"no workload facts for {chart} {version}: add its row to scripts/extract_contract_facts.py",
                "trainstack/contracts/facts/workloads/",
            )
            yield Workload(subject, own, (missing,))
            continue
        unknown = enabled_missing_subcharts(facts, values)
        checks = (
            Step(
                f"the images of chart {chart} {version} are known",
                not unknown,
                "the release turns on subcharts whose images are not recorded: " + ", ".join(unknown)
                if unknown
                else f"{len(facts.workloads)} workloads recorded; the release's values decide which run",
                facts.source,
            ),
        )
        pulls: dict[str, Pull] = {}
        for run in running(facts, values):
            _, pod_namespace, _ = run.workload.resolved(name, namespace)
            for container, image in run.containers:
                pulls.setdefault(image, Pull(image, pod_namespace, facts.source, bool(container.regional_by)))
        for pull in own:
            pulls.setdefault(pull.image, pull)
        yield Workload(subject, tuple(pulls.values()), checks)


def _addon_workloads(recording: Recording, region: str) -> Iterator[Workload]:
    addons = recording.by_type(EKS_ADDON)
    if not addons:
        return
    account = ADDON_REGISTRY_ACCOUNTS.get(region, DEFAULT_ADDON_ACCOUNT)
    pulls = tuple(
        Pull(
            f"{account}.dkr.ecr.{region}.amazonaws.com/eks/{a.inputs.get('addonName')}:{a.inputs.get('addonVersion')}",
            "kube-system",
            SRC_ADDONS,
        )
        for a in addons
    )
    yield Workload(f"EKS add-ons ({', '.join(str(a.inputs.get('addonName')) for a in addons)})", pulls)


def _object_workloads(recording: Recording, teams: tuple[str, ...]) -> Iterator[Workload]:
    """The stack's own pods: training runtimes (in the namespaces of the TrainJobs that use them, or every team
    namespace for the runtimes teams use) and plain Jobs."""
    used_in: dict[str, set[str]] = {}
    for job in recording.by_type(TRAIN_JOB):
        ref = ((job.inputs.get("spec") or {}).get("runtimeRef") or {}).get("name")
        used_in.setdefault(str(ref), set()).add(str(job.inputs.get("metadata", {}).get("namespace", "default")))
    for runtime in recording.by_type(CLUSTER_TRAINING_RUNTIME):
        name = str(runtime.inputs.get("metadata", {}).get("name", runtime.name))
        namespaces = sorted(used_in.get(name) or teams)
        images = list(dict.fromkeys(_images_in(runtime.inputs.get("spec"))))
        source = f"the recording (ClusterTrainingRuntime {name})"
        pulls = tuple(Pull(image, ns, source) for ns in namespaces for image in images)
        yield Workload(f"ClusterTrainingRuntime {name} (in {', '.join(namespaces) or 'no namespace'})", pulls)
    for job in recording.by_type(K8S_JOB):
        meta = job.inputs.get("metadata", {})
        namespace = str(meta.get("namespace", "default"))
        images = dict.fromkeys(_images_in(job.inputs.get("spec")))
        source = f"the recording (Job {meta.get('name', job.name)})"
        yield Workload(
            f"Job {meta.get('name', job.name)} (namespace {namespace})",
            tuple(Pull(image, namespace, source) for image in images),
        )


# --------------------------------------------------------------------------------------- the steps


def _route(net: Network, where: str) -> Step | None:
    """Through NAT, or why not; None when the stack does not build the VPC (its owner's routes)."""
    if not net.built:
        return None
    return Step(
        f"{where} through the NAT gateway",
        net.nat,
        "every private route table has a default route to a NAT gateway"
        if net.nat
        else "a private route table has no default route to a NAT gateway (network.nat_gateways)",
        SRC_NAT,
    )


def _api_step(pull: Pull, net: Network) -> Step:
    host = image_registry(pull.image)
    facts = registry_facts(host, net.region)
    if not net.built:
        return Step(
            f"{pull.image}: registry API reachable",
            True,
            f"{host}: the existing VPC's owner routes it; the plan cannot show the route",
            "network.existing_vpc (docs/existing-infra.md)",
        )
    if facts.ecr_region == net.region and {"ecr.api", "ecr.dkr"} <= net.interface:
        return Step(
            f"{pull.image}: registry API reachable",
            True,
            f"{host}: through the interface endpoints ecr.api and ecr.dkr",
            SRC_ECR_ENDPOINTS,
        )
    route = _route(net, f"{pull.image}: registry API reachable")
    assert route is not None
    return Step(route.name, route.holds, f"{host}: {route.detail}", route.source)


def _layer_step(pull: Pull, store: LayerStore, net: Network) -> Step:
    name = f"{pull.image}: layers arrive from {store.description}"
    source = f"{store.source}; {SRC_GATEWAY if store.bucket else SRC_NAT}"
    if not net.built:
        return Step(name, True, "the existing VPC's owner routes it; the plan cannot show the route", source)
    if store.bucket is None or store.bucket_region != net.region or not net.s3_gateway:
        why = "outside this region's S3" if store.bucket is None or store.bucket_region != net.region else ""
        route = _route(net, name)
        assert route is not None
        return Step(name, route.holds, f"{why or 'no S3 gateway endpoint'}: {route.detail}", source)
    if net.s3_policy == UNKNOWN:
        return Step(name, True, "the S3 gateway endpoint's policy is unknown in preview", source)
    if not isinstance(net.s3_policy, Mapping):
        return Step(name, True, "through the S3 gateway endpoint, which has no policy (full access)", source)
    resource = store.object_arn(net.partition)
    # The kubelet's layer request carries no credentials of this account (a public bucket, or a URL ECR signed):
    # aws:PrincipalAccount is absent, and the bucket belongs to the registry.
    decision, why = endpoint_allows(net.s3_policy, "s3:GetObject", resource, {"aws:ResourceAccount": "registry"})
    return Step(
        name,
        bool(decision),
        f"through the S3 gateway endpoint: s3:GetObject on {resource} without credentials: {why}",
        source,
    )


def _pod(image: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": image}]}}


def _admission_step(pull: Pull, gate: Admission) -> Step | None:
    if gate.policy is None or pull.namespace not in gate.namespaces:
        return None
    if pull.image not in gate.decided:  # the same image in every team namespace: evaluated once
        gate.decided[pull.image] = admits(gate.policy, _pod(pull.image))
    decision, detail = gate.decided[pull.image]
    return Step(f"{pull.namespace}: registry admission admits {pull.image}", bool(decision), detail, SRC_VAP)


def _pull_steps(pull: Pull, net: Network, gate: Admission) -> list[Step]:
    steps: list[Step] = []
    admitted = _admission_step(pull, gate)
    if admitted is not None:
        steps.append(admitted)
    host = image_registry(pull.image)
    facts = registry_facts(host, net.region)
    if pull.regional and facts.ecr_region is not None and facts.ecr_region != net.region:
        # The chart picks its registry by the cluster's region at install: the copy in this region.
        facts = registry_facts(host.replace(f".{facts.ecr_region}.", f".{net.region}."), net.region)
    if not facts.stores:
        steps.append(
            Step(
                f"{pull.image}: where {host} serves layers from is known",
                False,
                f"no facts for registry {host} in stacks/registries.py: where its layers come from decides the route",
                "stacks/registries.py",
            )
        )
        return steps
    steps.append(_api_step(pull, net))
    steps.extend(_layer_step(pull, store, net) for store in facts.stores)
    return steps


def _hyperpod_step(recording: Recording) -> Step | None:
    clusters = recording.by_type(HYPERPOD_CLUSTER)
    if not clusters:
        return None
    private = {s.name for s in recording.by_type(SUBNET) if PRIVATE_SUBNET_TAG in (s.inputs.get("tags") or {})}
    used = _names(clusters[0].property_dependencies.get("vpcConfig", ()))
    subnets = used & {s.name for s in recording.by_type(SUBNET)}
    holds = not private or subnets <= private
    return Step(
        "HyperPod nodes pull through the same private subnets",
        holds,
        f"the HyperPod cluster's subnets ({', '.join(sorted(subnets)) or 'from the stack file'}) are private "
        "subnets whose routes are checked"
        if holds
        else f"the HyperPod cluster uses subnets outside the private ones: {sorted(subnets - private)}",
        "SageMaker HyperPod API, CreateCluster VpcConfig (instances get ENIs in these subnets)",
    )


def walk(trip: Trip) -> Iterator[Journey]:
    from components.naming import aws_partition

    region = trip.stack.region
    net = network(trip.recording, region, aws_partition(region))
    gate = admission(trip.recording)
    teams = tuple(team.name for team in trip.stack.kubernetes.teams)
    hyperpod = _hyperpod_step(trip.recording)
    workloads = [
        *_addon_workloads(trip.recording, region),
        *_release_workloads(trip.recording),
        *_object_workloads(trip.recording, teams),
    ]
    for workload in workloads:
        steps = list(workload.checks)
        if hyperpod is not None and "hyperpod" in workload.subject:
            steps.append(hyperpod)
        for pull in workload.pulls:
            steps.extend(_pull_steps(pull, net, gate))
        yield Journey(DEPLOY, workload.subject, tuple(steps))
