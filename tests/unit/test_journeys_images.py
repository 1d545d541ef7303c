"""The deploy journey's evaluators, one rule at a time: the gateway endpoint's policy for an anonymous layer
read, the registry admission policy's CEL on a pod, a release's image under its values, label selectors."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from components.k8s.tenancy import REGISTRY_POLICY_NAME
from tests.conftest import stack_config
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import Trip
from trainstack.journeys.images import (
    PRIVATE_SUBNET_TAG,
    Admission,
    Network,
    Pull,
    _addon_workloads,
    _hyperpod_step,
    _object_workloads,
    _pull_steps,
    _release_workloads,
    _route,
    _selects,
    admission,
    admits,
    endpoint_allows,
    network,
    walk,
)
from trainstack.journeys.workload_facts import (
    WORKLOADS_DIR,
    ChartWorkloads,
    ContainerFacts,
    ImagePart,
    WorkloadFacts,
    chart_workloads,
    enabled_missing_subcharts,
    image_of,
    running,
    sets,
    value_at,
)
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

OBJECT = "arn:aws:s3:::prod-registry-k8s-io-us-east-1/containers/images/sha256:0"
ANONYMOUS = {"aws:ResourceAccount": "registry"}


def statement(**fields: Any) -> dict[str, Any]:
    return {"Sid": "S", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "*", **fields}


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def test_an_allow_for_the_object_lets_the_read_through() -> None:
    decision, why = endpoint_allows(
        policy(statement(Resource=["arn:aws:s3:::prod-registry-k8s-io-us-east-1/containers/images/*"])),
        "s3:GetObject",
        OBJECT,
        ANONYMOUS,
    )
    assert decision is True and "S" in why


@pytest.mark.parametrize(
    "resource",
    [
        "arn:aws:s3:::prod-registry-k8s-io-us-east-2/*",  # another bucket
        "arn:aws:s3:::prod-registry-k8s-io-us-east-1/other/*",  # another prefix
        "arn:aws:s3:::prod-registry-k8s-io-us-east-1",  # the bucket, not its objects
    ],
)
def test_an_allow_for_another_resource_does_not(resource: str) -> None:
    assert endpoint_allows(policy(statement(Resource=resource)), "s3:GetObject", OBJECT, ANONYMOUS)[0] is False


def test_wildcards_in_actions_match_case_insensitively() -> None:
    assert endpoint_allows(policy(statement(Action="S3:Get*")), "s3:GetObject", OBJECT, ANONYMOUS)[0] is True
    assert endpoint_allows(policy(statement(Action="s3:Put*")), "s3:GetObject", OBJECT, ANONYMOUS)[0] is False


def test_an_account_condition_fails_for_a_request_without_credentials() -> None:
    # IAM User Guide: a condition key absent from the request fails every operator but ...IfExists and Null.
    account = {"StringEquals": {"aws:PrincipalAccount": "123456789012"}}
    assert endpoint_allows(policy(statement(Condition=account)), "s3:GetObject", OBJECT, ANONYMOUS)[0] is False
    if_exists = {"StringEqualsIfExists": {"aws:PrincipalAccount": "123456789012"}}
    assert endpoint_allows(policy(statement(Condition=if_exists)), "s3:GetObject", OBJECT, ANONYMOUS)[0] is True


def test_a_deny_wins_and_a_named_principal_is_not_anyone() -> None:
    denied = policy(statement(), statement(Sid="D", Effect="Deny"))
    assert endpoint_allows(denied, "s3:GetObject", OBJECT, ANONYMOUS) == (False, "denied by statement D")
    named = policy(statement(Principal={"AWS": "arn:aws:iam::123456789012:root"}))
    assert endpoint_allows(named, "s3:GetObject", OBJECT, ANONYMOUS)[0] is False


def test_an_operator_the_evaluator_gets_wrong_is_said_not_guessed() -> None:
    # StringNotLike on a key the request lacks: AWS says true, principalmapper false (trainstack/journeys/iam.py).
    not_like = policy(statement(Condition={"StringNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/x"}}))
    decision, why = endpoint_allows(not_like, "s3:GetObject", OBJECT, ANONYMOUS)
    assert decision is None and "StringNotLike" in why


REGISTRY_POLICY = {
    "spec": {
        "variables": [
            {
                "name": "images",
                "expression": "object.spec.containers.map(c, c.image) + (has(object.spec.initContainers) ? "
                "object.spec.initContainers.map(c, c.image) : [])",
            }
        ],
        "validations": [
            {
                "expression": "variables.images.all(image, ['public.ecr.aws/', 'nvcr.io/nvidia/'].exists(p, "
                "image.startsWith(p)))",
                "message": "images must come from the allowed registries",
            }
        ],
    }
}


def pod(*images: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": image} for i, image in enumerate(init)]
    return {"spec": spec}


def test_the_registry_policy_admits_allowed_images_and_refuses_others_with_its_message() -> None:
    assert admits(REGISTRY_POLICY, pod("public.ecr.aws/x:1"))[0] is True
    assert admits(REGISTRY_POLICY, pod("public.ecr.aws/x:1", init=("nvcr.io/nvidia/y:2",)))[0] is True
    decision, message = admits(REGISTRY_POLICY, pod("public.ecr.aws/x:1", init=("docker.io/z:3",)))
    assert decision is False and message == "images must come from the allowed registries"
    assert admits(REGISTRY_POLICY, pod("nvcr.io/other/y:2"))[0] is False  # the prefix includes the org


def test_a_policy_that_fails_to_evaluate_refuses_as_failure_policy_fail_does() -> None:
    broken = {"spec": {"validations": [{"expression": "object.spec.(("}]}}
    decision, detail = admits(broken, pod("public.ecr.aws/x:1"))
    assert decision is False and "failed to evaluate" in detail


def test_label_selectors() -> None:
    labels = {"trainstack.io/tenant": "team", "team": "a"}
    assert _selects({"matchLabels": {"trainstack.io/tenant": "team"}}, labels)
    assert not _selects({"matchLabels": {"trainstack.io/tenant": "platform"}}, labels)
    assert _selects({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "x", "operator": "In", "values": ["a"]}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}, labels)
    assert _selects({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, labels)


# kube-state-metrics 8.4.0's container as recorded (facts/workloads): global.imageRegistry and image.registry land
# on the same span, the global one wins when both are set.
KSM = ContainerFacts(
    name="kube-state-metrics",
    init=False,
    image="registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.20.0",
    ports=("http",),
    parts=(
        ImagePart("global.imageRegistry", 0, 15, 0, True),
        ImagePart("image.registry", 0, 15, 1, True),
        ImagePart("image.repository", 16, 53, 0, True),
        ImagePart("image.tag", 54, 61, 0, True),
        ImagePart("image.sha", 61, 61, 0, False),
    ),
    when={},
)


def test_a_release_value_replaces_its_span_of_the_image() -> None:
    assert image_of(KSM, {}) == KSM.image
    assert image_of(KSM, {"image": {"registry": "quay.io"}}) == "quay.io/kube-state-metrics/kube-state-metrics:v2.20.0"
    assert image_of(KSM, {"image": {"tag": "v2.21.0"}}).endswith(":v2.21.0")
    both = {"global": {"imageRegistry": "mirror.example"}, "image": {"registry": "quay.io"}}
    assert image_of(KSM, both).startswith("mirror.example/")  # rank 0 wins
    assert image_of(KSM, {"image": {"sha": "abc", "registry": ""}}) == KSM.image  # no span, an empty value


# ------------------------------------------------------------------------- what a release runs under its values


def test_a_value_is_read_at_its_dotted_key_and_only_where_a_mapping_holds_it() -> None:
    values = {"image": {"registry": "quay.io", "empty": None}, "flag": False}
    assert value_at(values, "image.registry") == "quay.io"
    assert value_at(values, "image.empty") is None and sets(values, "image.empty")  # set, to null
    assert sets(values, "flag") and not sets(values, "image.tag") and not sets(values, "image.registry.x")
    assert not sets(values, "missing.key")


def workload(name: str, when: dict[str, Any], *containers: ContainerFacts, hook: str = "") -> WorkloadFacts:
    return WorkloadFacts("Deployment", name, "{namespace}", "t.yaml", hook, {}, (), when, containers)


def plain(name: str, when: dict[str, Any] | None = None) -> ContainerFacts:
    return ContainerFacts(name, False, f"repo/{name}:1", (), (), when or {})


FACTS = ChartWorkloads(
    "chart", "1.0.0", "src",
    (workload("always", {}, plain("main"), plain("metrics", {"metrics.enabled": True})),
     workload("optional", {"extra.enabled": True}, plain("extra")),
     workload("off-by-default", {"other.enabled": True}, plain("other")),
     workload("only-when-off", {"legacy": False}, plain("legacy")),
     workload("hook", {}, plain("migrate"), hook="pre-upgrade"),
     workload("nothing-runs", {}, plain("gated", {"never": True}))),
    {"extra.enabled": True, "metrics.enabled": False},
    ({"name": "cert-manager", "version": "v1.15.0", "condition": "cert-manager.enabled"},
     {"name": "mpi-operator", "version": "0.6.0", "condition": "mpi.enabled"},
     {"name": "always-there", "version": "1.0.0"}),
)  # fmt: skip


def ran(values: dict[str, Any], hooks: bool = False) -> dict[str, list[str]]:
    return {r.workload.name: [c.name for c, _ in r.containers] for r in running(FACTS, values, hooks)}


def test_a_release_runs_the_workloads_and_containers_its_values_or_the_charts_defaults_turn_on() -> None:
    assert ran({}) == {"always": ["main"], "optional": ["extra"], "only-when-off": ["legacy"]}
    on = ran({"metrics": {"enabled": True}, "extra": {"enabled": False}, "other": {"enabled": "yes"}, "legacy": 1})
    assert on == {"always": ["main", "metrics"], "off-by-default": ["other"]}
    assert ran({}, hooks=True)["hook"] == ["migrate"]  # hooks only when asked
    [always] = [r for r in running(FACTS, {}) if r.workload.name == "always"]
    assert always.containers == ((FACTS.workloads[0].containers[0], "repo/main:1"),)


def test_the_subcharts_without_facts_that_a_release_turns_on_are_named() -> None:
    assert enabled_missing_subcharts(FACTS, {}) == [
        "cert-manager v1.15.0 (cert-manager.enabled)",
        "mpi-operator 0.6.0 (mpi.enabled)",
        "always-there 1.0.0 (always)",
    ]
    defaults_off = dataclasses.replace(FACTS, condition_defaults={"cert-manager.enabled": False})
    assert enabled_missing_subcharts(defaults_off, {"mpi": {"enabled": False}}) == ["always-there 1.0.0 (always)"]
    assert enabled_missing_subcharts(defaults_off, {"cert-manager": {"enabled": True}})[0].startswith("cert-manager")


def test_workload_facts_are_found_with_or_without_a_leading_v() -> None:
    ksm = chart_workloads("kube-state-metrics", "8.4.0")
    assert ksm is not None and ksm.version.removeprefix("v") == "8.4.0" and ksm.workloads
    assert chart_workloads("kube-state-metrics", "v8.4.0") == ksm
    gpu = chart_workloads("gpu-operator", "25.3.4")  # the file is gpu-operator@v25.3.4.json
    assert gpu is not None and gpu == chart_workloads("gpu-operator", "v25.3.4")
    assert chart_workloads("kube-state-metrics", "0.0.1") is None and chart_workloads("no-such-chart", "1") is None
    assert "kube-state-metrics" in ksm.source and "rendered with" in ksm.source


def test_values_on_two_spans_both_land_and_only_non_empty_text_replaces() -> None:
    both = {"image": {"registry": "quay.io", "tag": "v2.21.0"}}  # the registry is shorter: offsets must not shift
    assert image_of(KSM, both) == "quay.io/kube-state-metrics/kube-state-metrics:v2.21.0"
    assert image_of(KSM, {"image": {"tag": 2.21, "registry": None}}) == KSM.image  # not text: the chart's default


def test_no_two_values_of_one_image_span_share_a_rank_in_the_facts() -> None:
    """scripts/chart_workloads.py ranks values on one span by which one Helm renders: one rank 0, the others 1."""
    for path in sorted(WORKLOADS_DIR.glob("*.json")):
        chart, version = path.stem.split("@")
        facts = chart_workloads(chart, version)
        assert facts is not None
        for w in facts.workloads:
            for c in w.containers:
                ranks = [(p.start, p.end, p.rank) for p in c.parts if p.replaces]
                assert len(ranks) == len(set(ranks)), (path.name, c.name)


def test_a_workloads_name_namespace_and_labels_take_the_release() -> None:
    facts = WorkloadFacts("DaemonSet", "{release}-exporter", "{namespace}", "t", "", {"app": "{release}", "x": "y"},
                          (), {}, ())  # fmt: skip
    assert facts.resolved("gpu", "monitoring") == ("gpu-exporter", "monitoring", {"app": "gpu", "x": "y"})


# ------------------------------------------------------------------- the network, admission and pulls, by hand

REGION = "us-east-1"


def res(type_: str, name: str, inputs: dict[str, Any], **deps: tuple[str, ...]) -> RecordedResource:
    return RecordedResource(type_, name, f"urn::{name}", "", True, inputs, (), deps, False, False, "")


def vpc(
    *,
    nat: bool = True,
    gateway_tables: tuple[str, ...] = ("urn::rt-private",),
    policy: Any = None,
    service: str = f"com.amazonaws.{REGION}.s3",
    extra: tuple[RecordedResource, ...] = (),
) -> Recording:
    """Two subnets (one private), the private one's route table, its NAT route, and the S3 gateway endpoint."""
    found = [
        res(SUBNET, "private-a", {"tags": {PRIVATE_SUBNET_TAG: "1"}}),
        res(SUBNET, "public-a", {"tags": {"kubernetes.io/role/elb": "1"}}),
        res(ROUTE_TABLE_ASSOCIATION, "a1", {}, subnetId=("urn::private-a",), routeTableId=("urn::rt-private",)),
        res(ROUTE_TABLE_ASSOCIATION, "a2", {}, subnetId=("urn::public-a",), routeTableId=("urn::rt-public",)),
        res(
            ROUTE, "to-igw", {"destinationCidrBlock": "0.0.0.0/0", "gatewayId": "igw"}, routeTableId=("urn::rt-public",)
        ),
        res(
            VPC_ENDPOINT, "ecr-api", {"serviceName": f"com.amazonaws.{REGION}.ecr.api", "vpcEndpointType": "Interface"}
        ),
        res(
            VPC_ENDPOINT,
            "s3",
            {
                "serviceName": service,
                "vpcEndpointType": "Gateway",
                **({"policy": policy} if policy is not None else {}),
            },
            routeTableIds=gateway_tables,
        ),
        *extra,
    ]
    if nat:
        found.append(
            res(
                ROUTE,
                "to-nat",
                {"destinationCidrBlock": "0.0.0.0/0", "natGatewayId": "nat"},
                routeTableId=("urn::rt-private",),
            )
        )
    return Recording("s", False, tuple(found), {})


def test_the_network_is_what_the_private_subnets_route_tables_reach() -> None:
    full = network(vpc(policy=json.dumps(policy(statement()))), REGION, "aws")
    assert (full.built, full.nat, full.s3_gateway, full.interface) == (True, True, True, frozenset({"ecr.api"}))
    assert full.s3_policy == policy(statement())
    assert not network(vpc(nat=False), REGION, "aws").nat  # the public table's internet route does not count
    assert network(vpc(policy=UNKNOWN), REGION, "aws").s3_policy == UNKNOWN
    plain = network(vpc(), REGION, "aws")
    assert plain.s3_gateway and plain.s3_policy is None  # no policy: full access
    assert not network(vpc(gateway_tables=("urn::rt-public",)), REGION, "aws").s3_gateway
    other_region = network(vpc(service="com.amazonaws.us-west-2.s3"), REGION, "aws")
    assert not other_region.s3_gateway and other_region.s3_policy is None
    assert network(Recording("s", False, (), {}), REGION, "aws") == Network(REGION, "aws", False, False, False, None)
    no_private = Recording("s", False, tuple(r for r in vpc().resources if r.name != "private-a"), {})
    assert (network(no_private, REGION, "aws").nat, network(no_private, REGION, "aws").s3_gateway) == (False, False)


def binding(name: str, actions: list[str], selector: dict[str, Any]) -> RecordedResource:
    spec = {"policyName": name, "validationActions": actions, "matchResources": {"namespaceSelector": selector}}
    return res(VALIDATING_ADMISSION_POLICY_BINDING, f"b-{name}-{len(actions)}", {"spec": spec})


def namespace(name: str, **labels: str) -> RecordedResource:
    return res(NAMESPACE, name, {"metadata": {"name": name, "labels": labels}})


VAP = res(VALIDATING_ADMISSION_POLICY, "p", {"metadata": {"name": REGISTRY_POLICY_NAME}, "spec": {}})
TEAMS = {"matchLabels": {"trainstack.io/tenant": "team"}}
NO_GATE = Admission(None, frozenset())


def test_admission_binds_the_registry_policy_where_it_denies_in_the_selected_namespaces() -> None:
    namespaces = (namespace("a", **{"trainstack.io/tenant": "team"}), namespace("kube-system"))
    bound = admission(Recording("s", False, (VAP, binding(REGISTRY_POLICY_NAME, ["Deny"], TEAMS), *namespaces), {}))
    assert bound.policy == VAP.inputs and bound.namespaces == {"a"}
    for other in (binding(REGISTRY_POLICY_NAME, ["Audit"], TEAMS), binding("device-access", ["Deny"], TEAMS)):
        assert admission(Recording("s", False, (VAP, other, *namespaces), {})) == Admission(None, frozenset())
    unbuilt = Recording("s", False, (binding(REGISTRY_POLICY_NAME, ["Deny"], TEAMS), *namespaces), {})
    assert admission(unbuilt) == Admission(None, frozenset())  # a binding to a policy the plan does not build


def test_the_stacks_own_pods_pull_in_the_namespaces_that_run_them() -> None:
    def runtime(name: str, image: str) -> RecordedResource:
        spec = {
            "template": {
                "spec": {
                    "containers": [{"name": "node", "image": image}],
                    "initContainers": [{"name": "i", "image": image}],
                }
            }
        }
        return res(CLUSTER_TRAINING_RUNTIME, name, {"metadata": {"name": name}, "spec": spec})

    train_job = res(
        TRAIN_JOB, "tj", {"metadata": {"namespace": "validation"}, "spec": {"runtimeRef": {"name": "nccl"}}}
    )
    job = res(
        K8S_JOB,
        "j",
        {
            "metadata": {"name": "check", "namespace": "ops"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x/check:1"}]}}},
        },
    )
    rec = Recording("s", False, (runtime("nccl", "x/nccl:1"), runtime("torch", "x/torch:1"), train_job, job), {})
    found = {w.subject: [(p.image, p.namespace) for p in w.pulls] for w in _object_workloads(rec, ("b", "a"))}
    assert found == {
        "ClusterTrainingRuntime nccl (in validation)": [("x/nccl:1", "validation")],
        "ClusterTrainingRuntime torch (in a, b)": [("x/torch:1", "a"), ("x/torch:1", "b")],
        "Job check (namespace ops)": [("x/check:1", "ops")],
    }


def test_a_pull_is_admitted_then_routed_and_a_registry_without_facts_stops_it() -> None:
    gate = Admission({"spec": {}}, frozenset({"a"}), {"registry.example.com/x:1": (False, "not approved")})
    net = network(vpc(), REGION, "aws")
    steps = _pull_steps(Pull("registry.example.com/x:1", "a", "s"), net, gate)
    assert [(s.name, s.holds) for s in steps] == [
        ("a: registry admission admits registry.example.com/x:1", False),
        ("registry.example.com/x:1: where registry.example.com serves layers from is known", False),
    ]
    unbound = _pull_steps(Pull("registry.k8s.io/kueue/kueue:v0.14.8", "kube-system", "s"), net, gate)
    assert unbound[0].name.endswith("registry API reachable through the NAT gateway") and all(s.holds for s in unbound)


def test_no_add_ons_no_add_on_workload() -> None:
    assert list(_addon_workloads(Recording("s", False, (), {}), REGION)) == []


def test_a_layer_outside_this_regions_s3_or_without_a_gateway_goes_through_nat_and_says_why() -> None:
    no_gateway = dataclasses.replace(network(vpc(), REGION, "aws"), s3_gateway=False)
    here = _pull_steps(Pull(f"111122223333.dkr.ecr.{REGION}.amazonaws.com/x:1", "a", "s"), no_gateway, NO_GATE)
    assert here[-1].detail.startswith("no S3 gateway endpoint: every private route table")
    there = _pull_steps(Pull("111122223333.dkr.ecr.us-west-2.amazonaws.com/x:1", "a", "s"), no_gateway, NO_GATE)
    assert there[-1].detail.startswith("outside this region's S3: every private route table")


def test_only_a_chart_that_picks_its_registry_by_region_pulls_from_this_regions_copy() -> None:
    net = network(vpc(), REGION, "aws")
    image = "111122223333.dkr.ecr.us-west-2.amazonaws.com/x:1"
    fixed = _pull_steps(Pull(image, "a", "s"), net, NO_GATE)
    assert "(us-west-2)" in fixed[-1].name  # the image as written: another region's layer bucket
    regional = _pull_steps(Pull(image, "a", "s", regional=True), net, NO_GATE)
    assert f"({REGION})" in regional[-1].name and regional[-1].detail.startswith("through the S3 gateway endpoint")


def test_hyperpod_nodes_must_use_the_private_subnets() -> None:
    def cluster(*subnets: str) -> RecordedResource:
        return res(HYPERPOD_CLUSTER, "hp", {}, vpcConfig=tuple(f"urn::{s}" for s in subnets))

    assert _hyperpod_step(Recording("s", False, (), {})) is None
    same = _hyperpod_step(Recording("s", False, (*vpc().resources, cluster("private-a")), {}))
    assert same is not None and same.holds
    public = _hyperpod_step(Recording("s", False, (*vpc().resources, cluster("private-a", "public-a")), {}))
    assert public is not None and not public.holds and "['public-a']" in public.detail


def test_no_route_to_show_in_a_vpc_the_stack_does_not_build() -> None:
    assert _route(Network(REGION, "aws", False, False, False, None), "x") is None


def test_only_hyperpod_workloads_carry_the_hyperpod_subnet_step() -> None:
    def job(name: str) -> RecordedResource:
        template = {"template": {"spec": {"containers": [{"name": "c", "image": "public.ecr.aws/x/y:1"}]}}}
        return res(K8S_JOB, name, {"metadata": {"name": name, "namespace": "ops"}, "spec": template})

    cluster = res(HYPERPOD_CLUSTER, "hp", {}, vpcConfig=("urn::private-a",))
    rec = Recording("s", False, (*vpc().resources, cluster, job("hyperpod-health"), job("nccl-test")), {})
    found = {j.subject: [s.name for s in j.steps] for j in walk(Trip(rec, stack_config("dev")))}
    assert "HyperPod nodes pull through the same private subnets" in found["Job hyperpod-health (namespace ops)"]
    assert "HyperPod nodes pull through the same private subnets" not in found["Job nccl-test (namespace ops)"]


def test_this_regions_ecr_needs_both_interface_endpoints_or_a_nat_route_and_a_preview_policy_breaks_nothing() -> None:
    image = f"111122223333.dkr.ecr.{REGION}.amazonaws.com/x:1"
    private = dataclasses.replace(network(vpc(nat=False), REGION, "aws"), interface=frozenset({"ecr.api", "ecr.dkr"}))
    api = _pull_steps(Pull(image, "a", "s"), private, NO_GATE)[0]
    assert api.holds and api.detail.endswith("through the interface endpoints ecr.api and ecr.dkr")
    half = dataclasses.replace(private, interface=frozenset({"ecr.api"}))
    assert not _pull_steps(Pull(image, "a", "s"), half, NO_GATE)[0].holds  # no NAT either
    preview = network(vpc(policy=UNKNOWN), REGION, "aws")
    layers = _pull_steps(Pull(image, "a", "s"), preview, NO_GATE)[-1]
    assert layers.holds and layers.detail == "the S3 gateway endpoint's policy is unknown in preview"


def test_only_a_default_route_through_nat_counts() -> None:
    narrow = res(ROUTE, "to-peer", {"destinationCidrBlock": "10.8.0.0/16", "natGatewayId": "nat"},
                 routeTableId=("urn::rt-private",))  # fmt: skip
    assert not network(vpc(nat=False, extra=(narrow,)), REGION, "aws").nat


def test_a_release_pulls_the_images_its_own_values_name_besides_the_charts() -> None:
    values = {
        "sidecars": [{"name": "efa-counters", "image": "public.ecr.aws/docker/library/busybox:1.37.0"}],
        "extraManifests": [{"kind": "ConfigMap", "image": "example.com/not-a-container:1"}],  # not a container list
    }
    release = res(HELM_RELEASE, "ne", {"chart": "prometheus-node-exporter", "version": "4.56.1", "name": "ne",
                                       "namespace": "mon", "values": values})  # fmt: skip
    [workload] = _release_workloads(Recording("s", False, (release,), {}))
    images = [p.image for p in workload.pulls]
    assert "public.ecr.aws/docker/library/busybox:1.37.0" in images
    assert "example.com/not-a-container:1" not in images
    assert any("node-exporter" in i for i in images) and all(p.namespace == "mon" for p in workload.pulls)


# ------------------------------------------------------------------- each branch of a pull, one at a time

ECR_HERE = f"111122223333.dkr.ecr.{REGION}.amazonaws.com/x:1"


def test_in_a_vpc_the_stack_does_not_build_every_route_is_its_owners_and_still_shown() -> None:
    existing = Network(REGION, "aws", built=False, nat=False, s3_gateway=False, s3_policy=None)
    api, layers = _pull_steps(Pull(ECR_HERE, "a", "s"), existing, NO_GATE)
    assert (api.name, api.holds) == (f"{ECR_HERE}: registry API reachable", True)
    assert "the existing VPC's owner routes it" in api.detail and api.source.startswith("network.existing_vpc")
    assert layers.holds and layers.detail == "the existing VPC's owner routes it; the plan cannot show the route"
    assert layers.name == f"{ECR_HERE}: layers arrive from S3 bucket prod-{REGION}-starport-layer-bucket ({REGION})"


def test_the_gateway_endpoints_policy_decides_each_layer_bucket_on_its_own() -> None:
    k8s_only = policy(statement(Resource="arn:aws:s3:::prod-registry-k8s-io-us-east-1/*"))
    net = network(vpc(nat=False, policy=json.dumps(k8s_only)), REGION, "aws")
    ecr = _pull_steps(Pull(ECR_HERE, "a", "s"), net, NO_GATE)[-1]
    assert not ecr.holds
    assert ecr.detail == (
        f"through the S3 gateway endpoint: s3:GetObject on arn:aws:s3:::prod-{REGION}-starport-layer-bucket/sha256:0 "
        "without credentials: no statement allows it"
    )
    k8s = _pull_steps(Pull("registry.k8s.io/kueue/kueue:v0.14.8", "a", "s"), net, NO_GATE)[-1]
    assert k8s.holds and k8s.detail.endswith("allowed by statement S")


def test_a_layer_store_outside_s3_needs_nat_even_beside_a_gateway_endpoint() -> None:
    no_nat = network(vpc(nat=False), REGION, "aws")  # the S3 gateway endpoint is there
    assert no_nat.s3_gateway and not no_nat.nat
    cdn = _pull_steps(Pull("public.ecr.aws/x/y:1", "a", "s"), no_nat, NO_GATE)[-1]
    assert not cdn.holds and cdn.detail.startswith("outside this region's S3: a private route table has no default")
    there = _pull_steps(Pull("111122223333.dkr.ecr.us-west-2.amazonaws.com/x:1", "a", "s"), no_nat, NO_GATE)[-1]
    assert not there.holds and there.detail.startswith("outside this region's S3")


def test_admission_is_judged_on_the_image_once_and_remembered_for_the_next_namespace() -> None:
    gate = Admission(REGISTRY_POLICY, frozenset({"a", "b"}))
    net = network(vpc(), REGION, "aws")
    allowed = _pull_steps(Pull("public.ecr.aws/x/y:1", "a", "s"), net, gate)[0]
    assert (allowed.name, allowed.holds, allowed.detail) == (
        "a: registry admission admits public.ecr.aws/x/y:1",
        True,
        "every validation holds",
    )
    refused = _pull_steps(Pull("docker.io/library/z:3", "b", "s"), net, gate)[0]
    assert not refused.holds and refused.detail == "images must come from the allowed registries"
    assert gate.decided == {
        "public.ecr.aws/x/y:1": (True, "every validation holds"),
        "docker.io/library/z:3": (False, "images must come from the allowed registries"),
    }
    outside = _pull_steps(Pull("docker.io/library/z:3", "kube-system", "s"), net, gate)
    assert not outside[0].name.startswith("kube-system: registry admission")  # not bound there: not judged


def test_the_device_access_policy_is_not_taken_for_the_registry_policy() -> None:
    from components.k8s.tenancy import DEVICE_POLICY_NAME

    device = res(VALIDATING_ADMISSION_POLICY, "d", {"metadata": {"name": DEVICE_POLICY_NAME}, "spec": {"x": 1}})
    teams = (namespace("a", **{"trainstack.io/tenant": "team"}),)
    alone = Recording("s", False, (device, binding(DEVICE_POLICY_NAME, ["Deny"], TEAMS), *teams), {})
    assert admission(alone) == Admission(None, frozenset())
    both = Recording(
        "s",
        False,
        (
            device,
            VAP,
            binding(DEVICE_POLICY_NAME, ["Deny"], TEAMS),
            binding(REGISTRY_POLICY_NAME, ["Deny"], TEAMS),
            *teams,
        ),
        {},
    )
    assert admission(both).policy == VAP.inputs


def test_does_not_exist_refuses_a_namespace_that_has_the_key() -> None:
    labels = {"team": "a"}
    assert not _selects({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, labels)
    assert _selects({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, labels)


def test_add_ons_pull_from_the_regions_eks_registry_account() -> None:
    def addon(name: str, version: str) -> RecordedResource:
        return res(EKS_ADDON, name, {"addonName": name, "addonVersion": version})

    rec = Recording("s", False, (addon("vpc-cni", "v1.20.0"), addon("coredns", "v1.11.4")), {})
    [here] = _addon_workloads(rec, REGION)
    assert here.subject == "EKS add-ons (vpc-cni, coredns)"
    assert [(p.image, p.namespace) for p in here.pulls] == [
        (f"602401143452.dkr.ecr.{REGION}.amazonaws.com/eks/vpc-cni:v1.20.0", "kube-system"),
        (f"602401143452.dkr.ecr.{REGION}.amazonaws.com/eks/coredns:v1.11.4", "kube-system"),
    ]
    [cape_town] = _addon_workloads(rec, "af-south-1")
    assert cape_town.pulls[0].image.startswith("877085696533.dkr.ecr.af-south-1.amazonaws.com/eks/vpc-cni:")


def test_a_chart_without_workload_facts_stops_at_its_own_step_and_keeps_the_releases_images() -> None:
    values = {"sidecars": [{"name": "s", "image": "public.ecr.aws/x/s:1"}]}
    release = res(HELM_RELEASE, "r", {"chart": "no-such-chart", "version": "1.0.0", "name": "n", "values": values})
    [found] = _release_workloads(Recording("s", False, (release,), {}))
    assert found.subject == "Helm release n (no-such-chart 1.0.0, namespace default)"
    [check] = found.checks
    assert not check.holds and check.detail.startswith("no workload facts for no-such-chart 1.0.0")
    assert [(p.image, p.namespace) for p in found.pulls] == [("public.ecr.aws/x/s:1", "default")]


def test_a_release_that_turns_on_a_subchart_without_facts_says_which() -> None:
    def hyperpod(values: dict[str, Any]) -> RecordedResource:
        inputs = {
            "chart": "charts/hyperpod-helm-chart",
            "version": "0.1.0",
            "namespace": "kube-system",
            "values": values,
        }
        return res(HELM_RELEASE, "hp-release", inputs)

    [defaults] = _release_workloads(Recording("s", False, (hyperpod({}),), {}))
    assert defaults.subject.startswith("Helm release hp-release (hyperpod-helm-chart 0.1.0")  # no name: the resource's
    [check] = defaults.checks
    assert not check.holds
    assert check.detail == (
        "the release turns on subcharts whose images are not recorded: nvidia-device-plugin 0.16.1 "
        "(nvidia-device-plugin.devicePlugin.enabled), aws-efa-k8s-device-plugin 0.5.20 "
        "(aws-efa-k8s-device-plugin.devicePlugin.enabled)"
    )
    off = {name: {"devicePlugin": {"enabled": False}} for name in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin")}
    [known] = _release_workloads(Recording("s", False, (hyperpod(off),), {}))
    assert known.checks[0].holds and known.checks[0].detail.endswith("the release's values decide which run")


def test_a_release_is_named_by_its_name_input_before_its_resource_name() -> None:
    release = res(HELM_RELEASE, "resource-name", {"chart": "prometheus-node-exporter", "version": "4.56.1",
                                                  "name": "ne", "namespace": "mon"})  # fmt: skip
    [found] = _release_workloads(Recording("s", False, (release,), {}))
    assert found.subject == "Helm release ne (prometheus-node-exporter 4.56.1, namespace mon)"
    assert found.checks[0].holds


def test_images_are_found_under_lists_and_only_as_text() -> None:
    replicated = {
        "template": {
            "spec": {
                "replicatedJobs": [
                    {"name": "node", "template": {"spec": {"template": {"spec": {
                        "containers": [{"name": "node", "image": "x/node:1"}, {"name": "no-image"}],
                        "initContainers": [{"name": "chart-style", "image": {"repository": "x/r", "tag": "1"}}],
                    }}}}},
                ]
            }
        }
    }  # fmt: skip
    runtime = res(CLUSTER_TRAINING_RUNTIME, "rt", {"metadata": {"name": "rt"}, "spec": replicated})
    [found] = _object_workloads(Recording("s", False, (runtime,), {}), ("a",))
    assert [(p.image, p.namespace) for p in found.pulls] == [("x/node:1", "a")]


def test_every_pull_of_a_workload_is_walked_in_its_journey() -> None:
    pod = {"template": {"spec": {"containers": [{"name": "c", "image": "public.ecr.aws/x/y:1"}]}}}
    job = res(K8S_JOB, "j", {"metadata": {"name": "check", "namespace": "ops"}, "spec": pod})
    found = {j.subject: j for j in walk(Trip(Recording("s", False, (*vpc().resources, job), {}), stack_config("dev")))}
    assert [s.name for s in found["Job check (namespace ops)"].steps] == [
        "public.ecr.aws/x/y:1: registry API reachable through the NAT gateway",
        "public.ecr.aws/x/y:1: layers arrive from ECR Public's CloudFront distributions",
    ]
