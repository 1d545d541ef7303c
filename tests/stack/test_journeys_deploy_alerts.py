"""The deploy and alerts journeys on what the program builds: every journey holds on the committed stacks and the
examples, and one edit of the recording (or of the stack) breaks the named step.

Edits are made on a copy of the recording (dataclasses.replace), so each stays in the gate; the examples are
planned whole (e2e)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.network.network import s3_gateway_endpoint_policy
from stacks.load import load_file
from tests.conftest import ROOT, program_recording, recording, stack_config
from trainstack.engine import Recording
from trainstack.journeys import DEPLOY, Journey, Trip, alerts, images

EXAMPLES = sorted((ROOT / "stacks" / "examples").glob("*.yaml"))
SCRAPER = "aws:amp/scraper:Scraper"
RELEASE = "kubernetes:helm.sh/v3:Release"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def walked(rec: Recording, stack: str) -> list[Journey]:
    trip = Trip(rec, stack_config(stack))
    return [*images.walk(trip), *alerts.walk(trip)]


def edited(rec: Recording, type_: str, name: str | None, edit: Callable[[dict[str, Any]], None]) -> Recording:
    """The recording with `edit` applied to the inputs of the resources of `type_` (named `name`, if given)."""
    resources = []
    for resource in rec.resources:
        if resource.type == type_ and name in (None, resource.name):
            inputs = copy.deepcopy(resource.inputs)
            edit(inputs)
            resource = dataclasses.replace(resource, inputs=inputs)
        resources.append(resource)
    return dataclasses.replace(rec, resources=tuple(resources))


def journey(found: list[Journey], subject_start: str) -> Journey:
    [match] = [j for j in found if j.subject.startswith(subject_start)]
    return match


def broken_at(found: list[Journey], subject_start: str) -> str:
    step = journey(found, subject_start).broken_step
    assert step is not None, f"{subject_start} holds"
    return step.name


def test_every_deploy_and_alerts_journey_holds_on_every_committed_stack(stack_name: str) -> None:
    found = walked(recording(stack_name), stack_name)
    assert {j.kind for j in found} >= {DEPLOY}
    assert [(j.subject, j.broken_step) for j in found if not j.holds] == []
    # Every workload pulls something, and every step names where its rule comes from.
    assert all(j.steps and all(s.source for s in j.steps) for j in found)


def test_values_unknown_in_preview_never_break_a_step() -> None:
    found = walked(recording("prod", preview=True), "prod")
    assert found and [(j.subject, j.broken_step) for j in found if not j.holds] == []


@pytest.mark.e2e
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_deploy_and_alerts_journey_holds_on_every_example(example: Any) -> None:
    stack = load_file(example)
    rec = program_recording(stack, stack.environment)
    found = [*images.walk(Trip(rec, stack)), *alerts.walk(Trip(rec, stack))]
    broken = [j.subject for j in found if not j.holds]
    # The one known gap (docs/contracts.md, "Known gaps"): the Neuron chart's default pin has no workload facts,
    # so its release's images cannot be walked; nothing else may break.
    neuron = [s for s in broken if s.startswith("Helm release neuron-plugin-release (neuron-helm-chart 1.9.0")]
    assert neuron == ([broken[0]] if example.name == "peer-tfeks-efa-trn1n.yaml" else [])
    assert broken == neuron, [(j.subject, j.broken_step) for j in found if not j.holds]


# ---------------------------------------------------------------------------------------------------- deploy


def _without_registry_layers(inputs: dict[str, Any]) -> None:
    if inputs.get("vpcEndpointType") == "Gateway":
        policy = json.loads(inputs["policy"])
        policy["Statement"] = [s for s in policy["Statement"] if s["Sid"] != "PublicRegistryImageLayers"]
        inputs["policy"] = json.dumps(policy)


def test_the_endpoint_policy_before_the_fix_breaks_every_registry_k8s_io_release() -> None:
    rec = edited(recording("prod"), "aws:ec2/vpcEndpoint:VpcEndpoint", None, _without_registry_layers)
    found = walked(rec, "prod")
    bucket = "S3 bucket prod-registry-k8s-io-us-east-1 (us-east-1)"
    assert (
        broken_at(found, "Helm release scheduling-kueue")
        == f"registry.k8s.io/kueue/kueue:v0.14.8: layers arrive from {bucket}"
    )
    assert broken_at(found, "Helm release kube-state-metrics").startswith("registry.k8s.io/kube-state-metrics/")
    assert broken_at(found, "Helm release scheduling-trainer").startswith("registry.k8s.io/jobset/jobset:v0.10.1")
    assert broken_at(found, "Helm release gpu-operator-release").startswith(
        "registry.k8s.io/nfd/node-feature-discovery"
    )
    assert broken_at(found, "Helm release grafana").startswith("docker.io/grafana/grafana")
    assert journey(found, "ClusterTrainingRuntime trainstack-torch").holds  # ECR Public: through NAT


def test_the_endpoint_policy_is_what_the_network_component_writes() -> None:
    [endpoint] = [
        e
        for e in recording("prod").by_type("aws:ec2/vpcEndpoint:VpcEndpoint")
        if e.inputs["vpcEndpointType"] == "Gateway"
    ]
    assert json.loads(endpoint.inputs["policy"]) == s3_gateway_endpoint_policy("aws", "us-east-1", "123456789012")


def test_without_nat_nothing_from_the_internet_arrives() -> None:
    rec = recording("prod")
    rec = dataclasses.replace(
        rec, resources=tuple(r for r in rec.resources if not r.name.startswith("network-private-default"))
    )
    found = walked(rec, "prod")
    assert broken_at(found, "Helm release gpu-operator-release").endswith(
        "registry API reachable through the NAT gateway"
    )
    # This region's ECR keeps working through its interface endpoints and the gateway endpoint.
    assert journey(found, "EKS add-ons").holds


def test_a_team_namespace_refuses_an_image_outside_the_allowlist() -> None:
    def only_nvcr(inputs: dict[str, Any]) -> None:
        [validation] = inputs["spec"]["validations"]
        validation["expression"] = "variables.images.all(image, image.startsWith('nvcr.io/nvidia/'))"

    rec = edited(
        recording("prod"),
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
        "tenancy-registries",
        only_nvcr,
    )
    found = walked(rec, "prod")
    step = broken_at(found, "ClusterTrainingRuntime trainstack-torch-p5-train")
    assert step.startswith("pretraining: registry admission admits public.ecr.aws/")
    # The validation namespace is not bound: its runtime's pods are not judged.
    assert journey(found, "ClusterTrainingRuntime trainstack-nccl-all-reduce").holds


def test_an_image_from_a_registry_without_facts_is_refused() -> None:
    def unknown_registry(inputs: dict[str, Any]) -> None:
        job = inputs["spec"]["template"]["spec"]["replicatedJobs"][0]
        job["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/nccl:1"

    # The validation namespace is not bound by the registry policy: the pull itself is what fails.
    rec = edited(recording("prod"), RUNTIME, "validation-nccl-runtime", unknown_registry)
    step = broken_at(walked(rec, "prod"), "ClusterTrainingRuntime trainstack-nccl-all-reduce")
    assert step == "registry.example.com/nccl:1: where registry.example.com serves layers from is known"
    # In a team namespace the admission policy refuses it first.
    rec = edited(recording("prod"), RUNTIME, "training-runtimes-p5-train-torch", unknown_registry)
    step = broken_at(walked(rec, "prod"), "ClusterTrainingRuntime trainstack-torch-p5-train")
    assert step == "pretraining: registry admission admits registry.example.com/nccl:1"


def test_a_subchart_whose_images_are_not_recorded_is_refused() -> None:
    def cert_manager(inputs: dict[str, Any]) -> None:
        inputs["values"]["cert-manager"] = {"enabled": True}

    rec = edited(recording("staging"), RELEASE, "hyperpod-dependencies-release", cert_manager)
    step = journey(walked(rec, "staging"), "Helm release hyperpod-dependencies").broken_step
    assert step is not None and step.name == "the images of chart hyperpod-helm-chart 0.1.0 are known"
    assert "cert-manager" in step.detail


def test_the_release_values_decide_the_image() -> None:
    def mirror(inputs: dict[str, Any]) -> None:
        inputs["values"] = {"image": {"registry": "quay.io"}}

    rec = edited(recording("prod"), RELEASE, "health-kube-state-metrics", mirror)
    found = journey(walked(rec, "prod"), "Helm release kube-state-metrics")
    assert found.holds
    assert any(s.name.startswith("quay.io/kube-state-metrics/kube-state-metrics:") for s in found.steps)


# ---------------------------------------------------------------------------------------------------- alerts


def _scrape(
    rec: Recording, edit: Callable[[dict[str, Any]], None], dump: Callable[[Any], str] = yaml.safe_dump
) -> Recording:
    def apply(inputs: dict[str, Any]) -> None:
        config = yaml.safe_load(inputs["scrapeConfiguration"])
        edit(config)
        inputs["scrapeConfiguration"] = dump(config)

    return edited(rec, SCRAPER, None, apply)


def _job(config: dict[str, Any], name: str) -> dict[str, Any]:
    [job] = [j for j in config["scrape_configs"] if j["job_name"] == name]
    return job


def test_a_node_relabel_on_kube_state_metrics_breaks_the_node_alerts() -> None:
    node = {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"}
    rec = _scrape(recording("prod"), lambda c: _job(c, "kube-state-metrics")["relabel_configs"].append(node))
    found = walked(rec, "prod")
    assert broken_at(found, "alert NodeNotReady") == "kube_node_status_condition keeps its `node` label"
    assert broken_at(found, "alert GpuFallenOffBus") == "kube_node_status_capacity keeps its `node` label"
    assert journey(found, "alert GpuHardwareXid").holds  # DCGM runs on every GPU node: its pod's node is right


def test_the_yace_label_the_chart_does_not_set_breaks_the_lustre_alerts() -> None:
    def old_selector(config: dict[str, Any]) -> None:
        _job(config, "yace")["relabel_configs"][0]["regex"] = "yet-another-cloudwatch-exporter"

    found = walked(_scrape(recording("prod"), old_selector), "prod")
    assert broken_at(found, "alert LustreThroughputSaturated") == "the collector scrapes yace's pods"


def test_yace_without_search_tags_or_with_another_file_system_breaks_the_lustre_alerts() -> None:
    def config_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        def apply(inputs: dict[str, Any]) -> None:
            config = yaml.safe_load(inputs["values"]["config"])
            edit(config["discovery"]["jobs"][0])
            inputs["values"]["config"] = yaml.safe_dump(config)

        return apply

    untagged = edited(recording("prod"), RELEASE, "health-yace", config_edit(lambda job: job.pop("searchTags")))
    step = journey(walked(untagged, "prod"), "alert LustreThroughputSaturated").broken_step
    assert (
        step is not None and step.name == "aws_fsx_data_read_bytes_sum is exported by YACE for this stack's file system"
    )
    assert "every file system in the region" in step.detail
    renamed = edited(
        recording("prod"), "aws:fsx/lustreFileSystem:LustreFileSystem", None, lambda i: i.update(tags={"Name": "other"})
    )
    step = journey(walked(renamed, "prod"), "alert LustreThroughputSaturated").broken_step
    assert step is not None and "do not match YACE's searchTags" in step.detail


def test_a_release_value_that_renames_the_exporters_pods_is_not_guessed() -> None:
    rec = edited(
        recording("prod"), RELEASE, "health-kube-state-metrics", lambda i: i.update(values={"nameOverride": "ksm"})
    )
    step = journey(walked(rec, "prod"), "alert NodeNotReady").broken_step
    assert step is not None and step.name == "the collector scrapes kube-state-metrics's pods"
    assert "nameOverride" in step.detail


def test_kueue_without_its_resource_metrics_flag_breaks_the_queue_alert() -> None:
    def flag_off(inputs: dict[str, Any]) -> None:
        manager = inputs["values"]["managerConfig"]
        config = yaml.safe_load(manager["controllerManagerConfigYaml"])
        config["metrics"].pop("enableClusterQueueResources")
        manager["controllerManagerConfigYaml"] = yaml.safe_dump(config)

    rec = edited(recording("prod"), RELEASE, "scheduling-kueue", flag_off)
    step = broken_at(walked(rec, "prod"), "alert WorkloadsPendingDespiteQuota")
    assert step == "kueue_cluster_queue_resource_usage is exported by kueue"


def test_a_dcgm_field_left_out_of_the_exporters_list_breaks_its_alert() -> None:
    def drop_xid(inputs: dict[str, Any]) -> None:
        config = inputs["values"]["dcgmExporter"]["config"]
        config["data"] = "".join(line for line in config["data"].splitlines(True) if "XID" not in line)

    rec = edited(recording("prod"), RELEASE, "gpu-operator-release", drop_xid)
    assert (
        broken_at(walked(rec, "prod"), "alert GpuHardwareXid") == "DCGM_FI_DEV_XID_ERRORS is exported by dcgm-exporter"
    )


def test_yaml_aliases_in_the_scrape_configuration_are_refused() -> None:
    def shared(config: dict[str, Any]) -> None:
        relabel = _job(config, "dcgm-exporter")["relabel_configs"][-1]
        _job(config, "node-exporter")["relabel_configs"][-1] = relabel  # one object twice: safe_dump aliases it

    found = walked(_scrape(recording("prod"), shared), "prod")
    assert broken_at(found, "alert NodeNotReady") == "the collector's configuration is plain YAML"
