"""Every Kubernetes object the program writes itself passes, in strict mode, the schemas of the Kubernetes version
its stack pins (kubernetes-validate ships schemas up to 1.37).

Manifests are rebuilt from the recorded inputs of whole-program runs: core objects (Namespaces,
ResourceQuotas, Jobs, Services, PVs, PVCs) are validated as they are; the pod templates inside the custom
resources we write (TrainJob runtimes, MPIJobs) are validated as `v1/PodTemplate`s, since the CRD schemas
themselves are not available offline. Kueue objects have no offline schema; tests/unit/test_queue_quotas.py
covers their shape.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest

from tests.conftest import STACKS, recording, stack_config

pytestmark = pytest.mark.slow  # every committed stack's whole-program recording


@pytest.fixture(autouse=True, scope="module")
def _schema_files_read_once() -> Iterator[None]:
    """kubernetes-validate parses the version's 1.6 MB definitions file again for every object it validates
    (`utils.schema_contents`, read at 1.37.0); the files do not change, and the validator only reads what it
    is given, so each is parsed once here."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            kubernetes_validate.utils, "schema_contents", functools.cache(kubernetes_validate.utils.schema_contents)
        )
        yield


CORE_TYPES = {
    "kubernetes:core/v1:Namespace": ("v1", "Namespace"),
    "kubernetes:core/v1:ResourceQuota": ("v1", "ResourceQuota"),
    "kubernetes:core/v1:Service": ("v1", "Service"),
    "kubernetes:core/v1:PersistentVolume": ("v1", "PersistentVolume"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("v1", "PersistentVolumeClaim"),
    "kubernetes:core/v1:ConfigMap": ("v1", "ConfigMap"),
    "kubernetes:batch/v1:Job": ("batch/v1", "Job"),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("storage.k8s.io/v1", "StorageClass"),
}


def _ints(value: Any) -> Any:
    """The engine's protobuf Struct carries every number as a double; the provider sends integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _pod_templates(spec: Any, path: str = "spec") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every `template` holding a pod spec (one with `containers`) nested in a custom resource's spec."""
    if isinstance(spec, dict):
        template = spec.get("template")
        if isinstance(template, dict) and "containers" in (template.get("spec") or {}):
            yield path + ".template", template
        for key, value in spec.items():
            yield from _pod_templates(value, f"{path}.{key}")
    elif isinstance(spec, list):
        for i, item in enumerate(spec):
            yield from _pod_templates(item, f"{path}[{i}]")


def manifests(stack: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for resource in recording(stack).resources:
        inputs = _ints(resource.inputs)
        if resource.type in CORE_TYPES:
            api_version, kind = CORE_TYPES[resource.type]
            body = {k: v for k, v in inputs.items() if k not in ("apiVersion", "kind")}
            found.append((resource.name, {"apiVersion": api_version, "kind": kind, **body}))
        elif resource.type.startswith("kubernetes:") and resource.custom:
            group = resource.type.split(":")[1]
            if group.startswith(("trainer.kubeflow.org", "kubeflow.org")):
                for where, template in _pod_templates(inputs.get("spec")):
                    found.append(
                        (
                            f"{resource.name} {where}",
                            {
                                "apiVersion": "v1",
                                "kind": "PodTemplate",
                                "metadata": {"name": "check"},
                                "template": template,
                            },
                        )
                    )
    return found


def k8s_version(stack: str) -> str:
    """The Kubernetes minor version the stack's EKS cluster runs: the API server its manifests will meet."""
    version = stack_config(stack).eks.version
    assert f"{version}.0" in kubernetes_validate.utils.all_versions(), f"no offline schema for {version}"
    return version


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_object_passes_the_strict_schema(stack: str) -> None:
    objects, version = manifests(stack), k8s_version(stack)
    assert objects, f"{stack} writes no Kubernetes objects"
    problems = []
    for name, manifest in objects:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{name}: {str(error).splitlines()[0]}")
    assert not problems, "\n".join(problems)


def test_the_checked_set_includes_jobs_quotas_and_nested_pod_templates() -> None:
    kinds = [m["kind"] for _, m in manifests("prod")]
    assert {"Namespace", "ResourceQuota", "Job", "PodTemplate"} <= set(kinds)
    assert kinds.count("PodTemplate") >= 2  # launcher and worker of the NCCL runtime


def test_a_broken_manifest_is_caught() -> None:
    manifest = next(m for _, m in manifests("prod") if m["kind"] == "Job")
    broken = {**manifest, "spec": {**manifest["spec"], "completionsTypo": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, k8s_version("prod"), strict=True)


def test_mpijob_pod_templates_pass_the_strict_schema() -> None:
    from components.k8s.validation_jobs import mpijob_spec, nccl_plan

    cluster = stack_config("prod")
    validation = cluster.kubernetes.validation
    assert validation is not None
    group = cluster.gpu_node_groups[0]
    spec = mpijob_spec(nccl_plan(validation, group), group, validation.nccl_tests_image)
    templates = list(_pod_templates(spec))
    assert len(templates) == 2
    for _, template in templates:
        pod_template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "check"}, "template": template}
        kubernetes_validate.validate(pod_template, k8s_version("prod"), strict=True)
