"""The CloudFormation schema contract (trainstack/contracts/cloudformation.py) on a hand-written HyperPod cluster:
camelCase keys to the schema's names (through $ref and oneOf), what a preview does not know yet, the regional
instance-type list, the deepest error under oneOf, and the provider's region. The schema is cfn-lint's own
(stacks/cfn_data.py reads it); the shipped stacks' clusters are checked in tests/stack/test_contracts_aws.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainstack.contracts import cloudformation as cfn
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import HYPERPOD_CLUSTER

REGION = "us-east-1"
CLUSTER: dict[str, Any] = {
    "clusterName": "demo",
    "instanceGroups": [
        {
            "instanceGroupName": "workers",
            "instanceType": "ml.p5.48xlarge",
            "instanceCount": 2,
            "executionRole": "arn:aws:iam::123456789012:role/hp",
            "lifeCycleConfig": {"sourceS3Uri": "s3://b/lc/", "onCreate": "on_create.sh"},
        }
    ],
    "orchestrator": {"eks": {"clusterArn": "arn:aws:eks:us-east-1:123456789012:cluster/c"}},
}
PROVIDER = RecordedResource(
    "pulumi:providers:aws-native", "p", "urn:p", "", True, {"region": REGION}, (), {}, False, False, ""
)


def _cluster(edit: Any = None, provider: str = "urn:p::id") -> RecordedResource:
    inputs = copy.deepcopy(CLUSTER)
    if edit:
        edit(inputs)
    return RecordedResource(HYPERPOD_CLUSTER, "hp", "urn:hp", "", True, inputs, (), {}, False, False, provider)


def _found(edit: Any = None, preview: bool = False, region: str = REGION) -> list[tuple[str, str, str]]:
    return [(v.path, v.value, v.rule) for v in cfn.check_resource(_cluster(edit), region, preview)]


def test_a_valid_cluster_passes() -> None:
    assert _found() == []


def test_a_bound_is_reported_at_the_engine_path_with_the_schema_as_source() -> None:
    (violation,) = cfn.check_resource(
        _cluster(lambda i: i["instanceGroups"][0].update(instanceCount=-1)), REGION, False
    )
    assert (violation.path, violation.value) == ("instanceGroups[0].instanceCount", "-1")
    assert violation.rule.startswith("minimum: -1 is less than the minimum of 0")
    assert violation.source.startswith(f"CloudFormation resource schema AWS::SageMaker::Cluster ({REGION}), as ")


def test_a_key_no_property_matches_is_kept_so_the_schema_refuses_it() -> None:
    found = _found(lambda i: i["instanceGroups"][0].update(instanceKind="gpu"))
    assert [(path, rule.split(":")[0]) for path, _, rule in found] == [("instanceGroups[0]", "additionalProperties")]
    assert "'instanceKind'" in found[0][2]


def test_a_long_rule_is_cut_to_300_characters() -> None:
    ((_, _, rule),) = _found(lambda i: i["instanceGroups"][0].update({"x" * 400: 1}))
    assert len(rule) == 300 and rule.startswith("additionalProperties: Additional properties are not allowed ('xxx")
    ((_, _, short),) = _found(lambda i: i["instanceGroups"][0].update({"x" * 200: 1}))
    assert short.endswith("was unexpected)")


def test_keys_are_matched_through_refs_and_one_of_branches() -> None:
    names: dict[cfn.DocumentPath, str] = {(): ""}
    schema = cfn.resource_schema("AWS::SageMaker::Cluster", REGION)
    document = cfn.to_cfn(CLUSTER, schema, schema, (), names)
    assert document["Orchestrator"] == {"Eks": {"ClusterArn": CLUSTER["orchestrator"]["eks"]["clusterArn"]}}
    group = document["InstanceGroups"][0]
    assert group["LifeCycleConfig"] == {"SourceS3Uri": "s3://b/lc/", "OnCreate": "on_create.sh"}
    assert names[("InstanceGroups", 0, "LifeCycleConfig", "OnCreate")] == "instanceGroups[0].lifeCycleConfig.onCreate"
    assert names[("Orchestrator", "Eks")] == "orchestrator.eks"
    assert names[("ClusterName",)] == "clusterName"


def test_under_one_of_the_branch_that_fits_names_the_member() -> None:
    found = _found(lambda i: i["orchestrator"]["eks"].update(clusterArn=5))
    assert [(path, rule.split(":")[0]) for path, _, rule in found] == [("orchestrator.eks.clusterArn", "type")]
    slurm = _found(lambda i: i.update(orchestrator={"slurm": {"slurmConfigStrategy": "Bogus"}}))
    assert [(path, rule.split(":")[0]) for path, _, rule in slurm] == [
        ("orchestrator.slurm.slurmConfigStrategy", "enum")
    ]


def test_an_instance_type_the_region_lacks_is_refused_with_the_regional_list() -> None:
    (violation,) = cfn.check_resource(
        _cluster(lambda i: i["instanceGroups"][0].update(instanceType="ml.p99.48xlarge")), REGION, False
    )
    allowed = cfn.regional_enum("AWS::SageMaker::Cluster", REGION)
    assert allowed is not None and "ml.p5.48xlarge" in allowed[1]
    assert (violation.path, violation.value) == ("instanceGroups[0].instanceType", "ml.p99.48xlarge")
    assert violation.rule == (
        f"not offered in {REGION}: InstanceGroups/*/InstanceType must be one of the {len(allowed[1])} "
        "instance types cfn-lint lists for the region"
    )
    assert violation.source.endswith("regional enum " + cfn.REGIONAL_ENUMS["AWS::SageMaker::Cluster"][1])
    assert _found(lambda i: i["instanceGroups"][0].update(instanceType=UNKNOWN)) == []


def test_regional_enums_exist_only_for_the_types_that_have_them() -> None:
    assert cfn.regional_enum("AWS::S3::Bucket", REGION) is None
    pointer, allowed = cfn.regional_enum("AWS::SageMaker::Cluster", "xx-nowhere-1") or ((), ["?"])
    assert pointer == ("InstanceGroups", "*", "InstanceType") and allowed == []  # a region not listed offers none


def test_a_type_the_region_does_not_offer_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match=r"AWS::SageMaker::NoSuchThing is not offered in us-east-1 \(cfn-lint "):
        cfn.resource_schema("AWS::SageMaker::NoSuchThing", REGION)


@pytest.mark.parametrize(
    ("value", "preview", "unknown"),
    [
        (UNKNOWN, False, True),
        ("known", True, False),
        (None, True, True),  # a preview records null for what does not exist yet
        (None, False, False),
        ({"a": "x", "b": [1, UNKNOWN]}, False, True),
        ({"a": "x", "b": None}, True, True),
        ([1, "x"], True, False),
        (3, True, False),
    ],
)
def test_what_a_preview_does_not_know_yet(value: Any, preview: bool, unknown: bool) -> None:
    assert cfn._has_unknown(value, preview) is unknown


def test_an_unknown_value_is_judged_once_known() -> None:
    def edit(inputs: dict[str, Any]) -> None:
        inputs["instanceGroups"][0]["instanceCount"] = None  # the count is not known in this preview

    assert _found(edit, preview=True) == []
    assert [path for path, _, _ in _found(edit, preview=False)] == ["instanceGroups[0].instanceCount"]


def test_a_pointer_steps_over_list_items_and_skips_what_is_missing() -> None:
    document = {"G": [{"T": "a"}, {"U": "b"}, {"T": "c"}], "H": "x"}
    assert list(cfn._at(document, ("G", "*", "T"))) == [(("G", 0, "T"), "a"), (("G", 2, "T"), "c")]
    assert list(cfn._at(document, ("H", "*", "T"))) == []  # not a list
    assert list(cfn._at(document, ("X",))) == []
    assert list(cfn._at(["a"], ("X",))) == []  # a list is stepped over only by `*`
    assert list(cfn._at({"*": 1}, ("*",))) == [(("*",), 1)]  # a literal `*` key of an object
    assert list(cfn._at(document, ())) == [((), document)]


def test_the_region_is_the_providers() -> None:
    cluster = _cluster()
    assert cfn.region_of(cluster, Recording("s", False, (PROVIDER, cluster), {})) == REGION
    assert cfn.region_of(cluster, Recording("s", False, (cluster,), {})) is None
    numbered = RecordedResource(
        "pulumi:providers:aws-native", "p", "urn:p", "", True, {"region": 1}, (), {}, False, False, ""
    )
    assert cfn.region_of(cluster, Recording("s", False, (numbered, cluster), {})) is None


def test_check_needs_a_region_and_checks_only_mapped_types() -> None:
    bad = _cluster(lambda i: i.update(clusterName="-bad-"))
    other = RecordedResource("aws:s3/bucket:Bucket", "b", "urn:b", "", True, {"x": 1}, (), {}, False, False, "")
    found = list(cfn.check(Recording("s", False, (PROVIDER, bad, other), {})))
    assert [(v.urn, v.path) for v in found] == [("urn:hp", "clusterName")]
    (no_region,) = cfn.check(Recording("s", False, (bad,), {}))
    assert (no_region.path, no_region.value) == ("", "(no region)")
    assert "names no region" in no_region.rule
