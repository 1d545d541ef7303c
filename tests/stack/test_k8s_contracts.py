"""The Kubernetes side of the contract tier: Helm values, custom resources and version pairings, checked against
the recorded facts of the pinned versions on every plan."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from stacks.load import ConfigError
from tests.conftest import STACKS, edited_config, recording
from trainstack import cli
from trainstack.cli import EXIT_CONTRACT, main
from trainstack.contracts import ContractViolation, check, compatibility, crds, helm_values
from trainstack.engine import Recording


def edited(rec: Recording, type_token: str, name_part: str, edit: Callable[[dict[str, Any]], None]) -> Recording:
    """`rec` with the inputs of the one resource of `type_token` whose name holds `name_part` edited."""
    resources = []
    hits = 0
    for r in rec.resources:
        if r.type == type_token and name_part in r.name:
            inputs = copy.deepcopy(r.inputs)
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
            hits += 1
        resources.append(r)
    assert hits == 1, f"{hits} {type_token} named *{name_part}*"
    return dataclasses.replace(rec, resources=tuple(resources))


def only(found: list[ContractViolation] | tuple[ContractViolation, ...]) -> ContractViolation:
    assert len(found) == 1, [f"{v.name} {v.path}: {v.rule}" for v in found]
    return found[0]


RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_meet_every_kubernetes_contract(stack: str) -> None:
    rec = recording(stack)
    assert rec.by_type(RELEASE) and [r for r in rec.resources if crds.custom_resource_kind(r)]
    assert check(rec) == ()


def test_a_misspelled_values_key_is_refused_with_the_chart_source() -> None:
    rec = edited(recording("prod"), RELEASE, "gpu-operator", lambda i: i["values"]["driver"].update(enabeld=False))
    found = only(list(helm_values.check(rec)))
    assert found.path == "values.driver.enabeld" and "did you mean `driver.enabled`" in found.rule
    assert found.source == "NVIDIA/gpu-operator@v25.3.4:deployments/gpu-operator/values.yaml"


def test_a_misplaced_values_key_and_a_wrong_type_are_refused() -> None:
    def edit(inputs: dict[str, Any]) -> None:
        inputs["values"]["enabled"] = True  # belongs under a component, not at the top
        inputs["values"]["gfd"]["enabled"] = "yes"

    rec = edited(recording("prod"), RELEASE, "gpu-operator", edit)
    rules = {v.path: v.rule for v in helm_values.check(rec)}
    assert "not a key of the chart's values.yaml" in rules["values.enabled"]
    assert "must be boolean" in rules["values.gfd.enabled"]


def test_free_maps_take_any_key_and_lists_are_replaced_whole() -> None:
    # nodeSelector is an empty map in the EFA chart; tolerations a list: neither is refused for its contents.
    def edit(inputs: dict[str, Any]) -> None:
        inputs["values"]["nodeSelector"] = {"anything.example.com/key": "v"}
        inputs["values"]["tolerations"] = [{"key": "k", "operator": "Exists"}]

    assert list(helm_values.check(edited(recording("prod"), RELEASE, "efa-plugin", edit))) == []


def test_a_chart_version_without_facts_is_refused() -> None:
    rec = edited(recording("dev"), RELEASE, "kueue", lambda i: i.update(version="0.14.3"))
    found = only([v for v in helm_values.check(rec) if v.path == "version"])
    assert "no recorded values contract for chart kueue 0.14.3" in found.rule


def test_a_custom_resource_field_its_crd_lacks_is_refused() -> None:
    # Kueue < 0.14.5 writes podSpecOverrides: Trainer 2.1.0's CRD prunes it.
    rec = edited(
        recording("prod"),
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob",
        "nccl",
        lambda i: i["spec"].update(podSpecOverrides=[]),
    )
    found = only(list(crds.check(rec)))
    assert found.path == "spec.podSpecOverrides" and "prunes it" in found.rule
    assert "kubeflow/trainer@v2.1.0:manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml" in found.source


def test_enum_required_and_cel_rules_of_a_crd_are_checked() -> None:
    def edit(inputs: dict[str, Any]) -> None:
        inputs["spec"]["queueingStrategy"] = "FIFO"
        inputs["spec"]["resourceGroups"][0]["coveredResources"].append("example.com/extra")

    rules = {v.path: v.rule for v in crds.check(edited(recording("prod"), crds_type("ClusterQueue"), "p5", edit))}
    assert "must be one of ['StrictFIFO', 'BestEffortFIFO']" in rules["spec.queueingStrategy"]
    assert "size(x.resources) == size(self.coveredResources)" in rules["spec.resourceGroups[0]"]
    flavor = edited(
        recording("prod"), crds_type("ResourceFlavor"), "p5", lambda i: i["spec"]["tolerations"][0].pop("key")
    )
    assert "x.operator == 'Exists'" not in " ".join(v.rule for v in crds.check(flavor))  # Exists without key: fine
    cq = edited(
        recording("prod"), crds_type("ClusterQueue"), "p5", lambda i: i["spec"]["resourceGroups"][0].pop("flavors")
    )
    assert any(v.path == "spec.resourceGroups[0].flavors" and "is required" in v.rule for v in crds.check(cq))


def crds_type(kind: str) -> str:
    return f"kubernetes:kueue.x-k8s.io/v1beta1:{kind}"


def test_a_cel_rule_that_fails_is_refused() -> None:
    def edit(inputs: dict[str, Any]) -> None:
        inputs["spec"]["tolerations"][0] = {"operator": "Equal", "value": "x", "effect": "NoSchedule"}

    found = [v for v in crds.check(edited(recording("prod"), crds_type("ResourceFlavor"), "p5", edit))]
    assert any("!has(x.key) ? x.operator == 'Exists'" in v.rule for v in found), found


def test_kueue_writing_a_field_trainer_lacks_is_a_broken_pairing() -> None:
    rec = edited(recording("prod"), RELEASE, "scheduling-kueue", lambda i: i.update(version="0.14.3"))
    found = only(list(compatibility.check(rec)))
    assert "spec.podSpecOverrides" in found.rule and found.name.endswith("scheduling-kueue")
    assert "kubeflow/trainer@v2.1.0" in found.source


def test_the_schema_refuses_the_broken_kueue_trainer_pin() -> None:
    with pytest.raises(ConfigError) as error:
        edited_config("prod", lambda raw: raw["kubernetes"]["kueue"].update(chart_version="0.14.3"))
    assert "kubernetes.kueue.chart_version" in error.value.render() and "0.14.5" in error.value.render()


def test_the_schema_refuses_a_kube_proxy_newer_than_the_cluster() -> None:
    with pytest.raises(ConfigError) as error:
        edited_config("prod", lambda raw: raw["eks"]["addons"].update(kube_proxy="v1.37.0-eksbuild.3"))
    assert "eks.addons.kube_proxy" in error.value.render() and "skew" in error.value.render()
    edited_config("prod", lambda raw: raw["eks"]["addons"].update(kube_proxy="v1.35.0-eksbuild.3"))  # older: allowed


def test_an_operator_owned_driver_on_an_eks_nvidia_ami_is_a_broken_pairing() -> None:
    rec = edited(recording("prod"), RELEASE, "gpu-operator", lambda i: i["values"]["driver"].update(enabled=True))
    found = only(list(compatibility.check(rec)))
    assert found.path == "values.driver.enabled" and "ships the NVIDIA driver" in found.rule


def test_a_broken_contract_fails_the_plan_naming_resource_path_and_source(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = edited(recording("dev"), RELEASE, "gpu-operator", lambda i: i["values"].update(toolkit={"enable": False}))
    monkeypatch.setattr(cli, "run_program", lambda stack, *, stack_name, preview=False: bad)
    assert main(["plan", "--stack", "dev", "--format", "json"]) == EXIT_CONTRACT
    found = json.loads(capsys.readouterr().out)["trainstack"]["contracts"]
    assert any(
        c["path"] == "values.toolkit.enable" and "gpu-operator-release" in c["urn"] and "values.yaml" in c["source"]
        for c in found
    )


def test_the_mpijob_meets_the_mpi_operator_crd() -> None:
    from components.k8s.validation_jobs import mpijob_spec, nccl_plan
    from trainstack.contracts.facts import crd_facts

    cluster = edited_config("prod", lambda raw: raw["kubernetes"]["training_operator"].update(kind="mpi_operator"))
    validation, target = cluster.kubernetes.validation, cluster.gpu_node_groups[0]
    assert validation is not None
    (facts,) = crd_facts("kubeflow.org/v2beta1", "MPIJob")
    body = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "nccl-all-reduce"},
        "spec": mpijob_spec(nccl_plan(validation, target), target, validation.nccl_tests_image),
    }
    assert crds.schema_problems(facts.fields, body) == []
    body["spec"]["mpiImplementation"] = "OpenMpi"
    assert [p.path for p in crds.schema_problems(facts.fields, body)] == ["spec.mpiImplementation"]
