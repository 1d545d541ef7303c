"""scripts/chart_workloads.py, without Helm: the operator's image rule, a render's workloads, and the perturbation
that finds conditions, image parts and label keys (run on a small chart written as a Python function, since the
Helm SDK is a `facts` group dependency only the extraction installs)."""

from __future__ import annotations

from typing import Any, ClassVar

from scripts.chart_workloads import (
    NAMESPACE,
    RELEASE,
    chart_workloads,
    condition_defaults,
    image_path,
    leaves,
    workloads,
)


def test_image_path_follows_the_operators_rule() -> None:
    # gpu-operator v25.3.4 api/nvidia/v1/clusterpolicy_types.go imagePath: repository/image:version, `@` for a
    # sha256 digest, the image alone when repository and version are both empty.
    assert image_path({"repository": "nvcr.io/nvidia", "image": "k8s-device-plugin", "version": "v0.17.4"}) == (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.4"
    )
    assert image_path({"repository": "r", "image": "i", "version": "sha256:abc"}) == "r/i@sha256:abc"
    assert image_path({"image": "registry.example/x@sha256:1"}) == "registry.example/x@sha256:1"


DAEMONSET = {
    "kind": "DaemonSet",
    "metadata": {"name": "nvidia-dcgm-exporter"},
    "spec": {
        "template": {
            "metadata": {"labels": {"app": "nvidia-dcgm-exporter"}},
            "spec": {
                "initContainers": [{"name": "toolkit-validation", "image": "FILLED BY THE OPERATOR"}],
                "containers": [
                    {
                        "name": "nvidia-dcgm-exporter",
                        "image": "FILLED",
                        "ports": [{"name": "metrics", "containerPort": 9400}],
                    }
                ],
            },
        }
    },
}


def _policy(enabled: Any) -> str:
    spec = {
        "validator": {
            "repository": "nvcr.io/nvidia/cloud-native",
            "image": "gpu-operator-validator",
            "version": "v25.3.4",
        },
        "dcgmExporter": {
            "repository": "nvcr.io/nvidia/k8s",
            "image": "dcgm-exporter",
            "version": "4.3.1",
            "enabled": enabled,
        },
    }
    return f"apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nspec: {spec}\n"


def test_an_enabled_operand_runs_its_component_image_and_the_validator_in_its_init_containers() -> None:
    assets = {"assets/state-dcgm-exporter/0900_daemonset.yaml": DAEMONSET}
    [found] = workloads({"gpu-operator/templates/clusterpolicy.yaml": _policy(True)}, assets)
    assert found["pod_labels"] == {"app": "nvidia-dcgm-exporter"} and found["namespace"] == NAMESPACE
    images = {c["name"]: c["image"] for c in found["containers"]}
    assert images == {
        "toolkit-validation": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.4",
        "nvidia-dcgm-exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.3.1",
    }
    assert workloads({"t.yaml": _policy(False)}, assets) == []
    assert len(workloads({"t.yaml": _policy(None)}, assets)) == 1  # IsEnabled: unset means on for dcgm-exporter


def test_test_hooks_notes_and_non_pod_objects_are_not_workloads() -> None:
    pod = (
        "kind: Pod\nmetadata: {name: t, annotations: {helm.sh/hook: test}}\nspec: {containers: [{name: c, image: x}]}\n"
    )
    job = (
        "kind: Job\nmetadata: {name: j, annotations: {helm.sh/hook: post-delete}}\n"
        "spec: {template: {spec: {containers: [{name: c, image: y}]}}}\n"
    )
    found = workloads(
        {"a/pod.yaml": pod, "a/NOTES.txt": "not: yaml: at all", "a/job.yaml": job, "a/cm.yaml": "kind: ConfigMap\n"}, {}
    )
    assert [(w["kind"], w["hook"]) for w in found] == [("Job", "post-delete")]


class ToyChart:
    """A chart as a function of its values, standing in for Helm: an exporter Deployment whose sidecar runs
    only with `sidecar.enabled` and `persistence` both on, images from registry/repository/tag values."""

    values: ClassVar[dict[str, Any]] = {
        "global": {"imageRegistry": ""},
        "image": {"registry": "quay.io", "repository": "org/exporter", "tag": ""},
        "sidecar": {"enabled": False, "image": "quay.io/kiwigrid/k8s-sidecar:2.5.0"},
        "persistence": True,
        "nameOverride": "",
    }
    renders = 0

    def __call__(self, changes: dict[tuple[str, ...], Any]) -> list[dict[str, Any]]:
        self.renders += 1
        v = {".".join(k): val for k, val in changes.items()}

        def get(key: str) -> Any:
            node: Any = self.values
            for part in key.split("."):
                node = node[part]
            return v.get(key, node)

        registry = get("global.imageRegistry") or get("image.registry")
        containers = [
            {
                "name": "exporter",
                "init": False,
                "image": f"{registry}/{get('image.repository')}:{get('image.tag') or 'v1.2.3'}",
                "ports": ["http"],
            }
        ]
        if get("sidecar.enabled") and get("persistence"):
            containers.append({"name": "sidecar", "init": False, "image": get("sidecar.image"), "ports": []})
        name = get("nameOverride") or "exporter"
        return [
            {
                "kind": "Deployment",
                "name": f"{RELEASE}-{name}",
                "namespace": NAMESPACE,
                "template": "toy/templates/deployment.yaml",
                "hook": "",
                "pod_labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": RELEASE},
                "containers": containers,
            }
        ]


def test_perturbation_finds_conditions_parts_precedence_and_label_keys() -> None:
    chart = ToyChart()
    [workload] = chart_workloads(chart)  # type: ignore[arg-type]
    assert workload["name"] == "{release}-exporter" and workload["when"] == {}
    assert workload["label_keys"] == ["nameOverride"]
    containers = {c["name"]: c for c in workload["containers"]}
    exporter = containers["exporter"]
    assert exporter["image"] == "quay.io/org/exporter:v1.2.3"
    parts = {p["key"]: p for p in exporter["parts"]}
    assert (parts["image.registry"]["start"], parts["image.registry"]["end"]) == (0, 7)
    assert parts["global.imageRegistry"]["rank"] == 0 and parts["image.registry"]["rank"] == 1
    assert (parts["image.tag"]["start"], parts["image.tag"]["end"]) == (21, 27)  # empty: the default tag's place
    # The sidecar needs two values: one flip switches it on, the other is found from there.
    assert containers["sidecar"]["when"] == {"persistence": True, "sidecar.enabled": True}
    assert condition_defaults(chart.values, [workload], []) == {"persistence": True, "sidecar.enabled": False}


def test_leaves_skip_lists_and_walk_maps() -> None:
    assert dict(leaves({"a": {"b": 1, "c": [1, 2]}, "d": None})) == {("a", "b"): 1, ("d",): None}
