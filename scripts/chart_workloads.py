"""What each pinned chart runs: every workload, the images its containers pull, the labels and ports of its pods,
and which values switch it on or change its image. Used by `scripts/extract_contract_facts.py`.

The chart is rendered by Helm's own template engine (the Helm SDK through `helm-python-sdk`, which binds
libhelm_c), never by a reading of the templates here. What depends on values is found by rendering again with
one value changed:
- a boolean flipped that makes a container appear or disappear is a condition of that container (`when`); for
  a container that only appears with a flip, every other flip is tried from there too (conditions that need two);
- a string replaced by a marker that shows up in a container's image is a part of that image (`parts`): where it
  lands in the default image (`start`, `end`), and, when two values land on the same place (a global registry
  and the image's own), which one wins (`rank` 0);
- a string whose marker shows up in a pod's labels is one the labels depend on (`label_keys`).

The release name and namespace are rendered as markers and recorded as `{release}` and `{namespace}`.

The GPU Operator's chart installs the operator and a ClusterPolicy; the operator then runs one DaemonSet per
enabled state (gpu-operator `controllers/state_manager.go`, `isStateEnabled`), from its own manifests under
`assets/` at the same tag, with images it takes from the ClusterPolicy (`api/nvidia/v1/clusterpolicy_types.go`,
`ImagePath`; `controllers/object_controls.go`, the `Transform*` functions). Those DaemonSets are recorded as the
ClusterPolicy's workloads, so the same renders find their conditions and image parts.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RELEASE = "zzrelease"
NAMESPACE = "zznamespace"
POD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet")
RENDERER = "helm-python-sdk 0.2.2 (Helm SDK v4.2.3 through libhelm_c)"

GitShow = Callable[[str, str, str], str | None]  # (repository, tag, path) -> text


@dataclass(frozen=True)
class Operand:
    """A GPU Operator state: the ClusterPolicy component whose image it runs, and its DaemonSet manifest."""

    state: str
    component: str
    asset: str
    sandbox: bool = False  # runs only with sandboxWorkloads.enabled (isStateEnabled: n.sandboxEnabled && ...)


# gpu-operator v25.3.4 controllers/state_manager.go isStateEnabled (the component whose IsEnabled decides each
# state) and assets/<state>/ (the DaemonSet). States without a DaemonSet (operator metrics) are left out.
GPU_OPERATOR_OPERANDS: tuple[Operand, ...] = (
    Operand("state-driver", "driver", "assets/state-driver/0500_daemonset.yaml"),
    Operand("state-container-toolkit", "toolkit", "assets/state-container-toolkit/0500_daemonset.yaml"),
    Operand("state-operator-validation", "validator", "assets/state-operator-validation/0500_daemonset.yaml"),
    Operand("state-device-plugin", "devicePlugin", "assets/state-device-plugin/0500_daemonset.yaml"),
    Operand("state-mps-control-daemon", "devicePlugin", "assets/state-mps-control-daemon/0400_daemonset.yaml"),
    Operand("state-dcgm", "dcgm", "assets/state-dcgm/0400_dcgm.yml"),
    Operand("state-dcgm-exporter", "dcgmExporter", "assets/state-dcgm-exporter/0900_daemonset.yaml"),
    Operand("gpu-feature-discovery", "gfd", "assets/gpu-feature-discovery/0500_daemonset.yaml"),
    Operand("state-mig-manager", "migManager", "assets/state-mig-manager/0600_daemonset.yaml"),
    Operand(
        "state-node-status-exporter", "nodeStatusExporter", "assets/state-node-status-exporter/0700_daemonset.yaml"
    ),
    Operand(
        "state-sandbox-device-plugin",
        "sandboxDevicePlugin",
        "assets/state-sandbox-device-plugin/0500_daemonset.yaml",
        True,
    ),
    Operand("state-kata-manager", "kataManager", "assets/state-kata-manager/0600_daemonset.yaml", True),
    Operand("state-vfio-manager", "vfioManager", "assets/state-vfio-manager/0600_daemonset.yaml", True),
    Operand(
        "state-vgpu-device-manager", "vgpuDeviceManager", "assets/state-vgpu-device-manager/0600_daemonset.yaml", True
    ),
    Operand("state-cc-manager", "ccManager", "assets/state-cc-manager/0500_daemonset.yaml", True),
)
# Components whose IsEnabled() is true when `enabled` is unset (clusterpolicy_types.go); the validator's state
# always runs (isStateEnabled: "state-operator-validation" returns true).
ENABLED_WHEN_UNSET = frozenset({"driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd", "migManager"})


def image_path(spec: dict[str, Any]) -> str:
    """The operator's image for a ClusterPolicy component (clusterpolicy_types.go imagePath): repository/image:
    version, `@` for a sha256 digest, or the image alone when repository and version are both empty."""
    repository, image, version = (str(spec.get(k) or "") for k in ("repository", "image", "version"))
    if not repository and not version:
        return image
    return f"{repository}/{image}{'@' if version.startswith('sha256:') else ':'}{version}"


def _operand_image(container: str, init: bool, spec: dict[str, Any], component: str) -> str:
    """Which ClusterPolicy image a container of an operand runs (object_controls.go): the first container the
    component's own; `config-manager*` the device plugin's (TransformDevicePlugin, transformConfigManager*);
    validation init containers the validator's (TransformValidator*, the toolkit-validation loops)."""
    if container.startswith("config-manager"):
        return image_path(spec.get("devicePlugin") or {})
    if init:
        return image_path(spec.get("validator") or {})
    return image_path(spec.get(component) or {})


def _enabled(spec: dict[str, Any], component: str) -> bool:
    if component == "validator":
        return True
    enabled = (spec.get(component) or {}).get("enabled")
    return component in ENABLED_WHEN_UNSET if enabled is None else bool(enabled)


def _ports(container: dict[str, Any]) -> list[str]:
    return [str(p["name"]) for p in container.get("ports") or [] if p.get("name")]


def _pod_workload(doc: dict[str, Any], template: str) -> dict[str, Any] | None:
    kind = doc.get("kind")
    if kind == "Pod":
        pod = doc
    elif kind in POD_KINDS:
        pod = doc["spec"]["template"]
    elif kind == "CronJob":
        pod = doc["spec"]["jobTemplate"]["spec"]["template"]
    else:
        return None
    meta = doc.get("metadata") or {}
    hook = (meta.get("annotations") or {}).get("helm.sh/hook", "")
    if "test" in hook.split(","):
        return None  # `helm test` pods never run on install
    spec = pod.get("spec") or {}
    containers = [
        {"name": c["name"], "init": init, "image": str(c.get("image", "")), "ports": _ports(c)}
        for init, key in ((True, "initContainers"), (False, "containers"))
        for c in spec.get(key) or []
    ]
    return {
        "kind": kind,
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace") or NAMESPACE,
        "template": template,
        "hook": hook,
        "pod_labels": (pod.get("metadata") or {}).get("labels") or {},
        "containers": containers,
    }


def _operand_workloads(policy: dict[str, Any], assets: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    spec = policy.get("spec") or {}
    sandbox = bool((spec.get("sandboxWorkloads") or {}).get("enabled"))
    for operand in GPU_OPERATOR_OPERANDS:
        asset = assets.get(operand.asset)
        if asset is None or not _enabled(spec, operand.component) or (operand.sandbox and not sandbox):
            continue
        pod = asset["spec"]["template"]
        containers = [
            {
                "name": c["name"],
                "init": init,
                "image": _operand_image(c["name"], init, spec, operand.component),
                "ports": _ports(c),
            }
            for init, key in ((True, "initContainers"), (False, "containers"))
            for c in pod["spec"].get(key) or []
        ]
        yield {
            "kind": asset["kind"],
            "name": asset["metadata"]["name"],
            "namespace": NAMESPACE,  # the operator fills in its own namespace
            "template": f"ClusterPolicy spec.{operand.component} -> operator {operand.asset}",
            "hook": "",
            "pod_labels": (pod.get("metadata") or {}).get("labels") or {},
            "containers": containers,
        }


def workloads(manifests: dict[str, str], assets: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every workload of one render: pod templates of the chart's own objects, and the GPU Operator's operands."""
    found: list[dict[str, Any]] = []
    for template, text in sorted(manifests.items()):
        if not template.endswith((".yaml", ".yml")) or not text.strip():
            continue
        for doc in yaml.safe_load_all(text):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "ClusterPolicy":
                found.extend(_operand_workloads(doc, assets))
                continue
            workload = _pod_workload(doc, template)
            if workload is not None:
                found.append(workload)
    return found


def _key(workload: dict[str, Any], container: dict[str, Any]) -> tuple[str, str, str, str]:
    return (workload["template"], workload["kind"], workload["name"], container["name"])


def _containers(found: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], tuple[dict[str, Any], dict[str, Any]]]:
    return {_key(w, c): (w, c) for w in found for c in w["containers"]}


def leaves(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every scalar under maps (lists are Helm leaves replaced whole: skipped)."""
    if isinstance(values, dict):
        for key, value in values.items():
            yield from leaves(value, (*path, str(key)))
    elif not isinstance(values, list) and path:
        yield path, values


def _with(base: dict[str, Any], changes: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """Values that set each changed leaf (a nested override map Helm merges over the chart's defaults)."""
    out: dict[str, Any] = json.loads(json.dumps(base))
    for path, value in changes.items():
        node = out
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = dict[str, Any]()
            node = nxt
        node[path[-1]] = value
    return out


def dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _placeholders(value: Any) -> Any:
    text = json.dumps(value)
    return json.loads(text.replace(RELEASE, "{release}").replace(NAMESPACE, "{namespace}"))


class Renderer:
    """One chart, rendered under any values (each a full override of nothing but what changes)."""

    def __init__(self, chart_dir: Path, assets: dict[str, dict[str, Any]]) -> None:
        self._helm: Any = importlib.import_module("helm_python")  # the `facts` dependency group; see the module doc
        self._dir = str(chart_dir)
        self.assets = assets
        self.renders = 0
        self._conditions = dependency_conditions(chart_dir)
        self._default: Any = None

    @property
    def values(self) -> dict[str, Any]:
        """The chart's defaults with its subcharts' under their names, as an install coalesces them."""
        with self._helm.Chart.load(self._dir) as chart:
            found: dict[str, Any] = chart.merge_values({})
        return found

    def _chart(self, changes: dict[tuple[str, ...], Any]) -> tuple[Any, bool]:
        """(a loaded chart, whether to close it after the render). Helm drops the subcharts a render's conditions
        turn off from the loaded chart itself (chartutil.ProcessDependencies), so a render that changes a
        condition gets a fresh load; the others share one, whose subcharts the defaults decide every time."""
        if any(dotted(path) in self._conditions for path in changes):
            return self._helm.Chart.load(self._dir), True
        if self._default is None:
            self._default = self._helm.Chart.load(self._dir)
        return self._default, False

    def __call__(self, changes: dict[tuple[str, ...], Any]) -> list[dict[str, Any]] | None:
        """The workloads of one render, or None when Helm refuses the values (a `fail` or `required` in a
        template) or renders YAML that does not parse (a marker where a template expects a number)."""
        self.renders += 1
        chart, close = self._chart(changes)
        try:
            manifests: dict[str, str] = chart.render(
                _with({}, changes), name=RELEASE, namespace=NAMESPACE, is_install=True
            )
            return workloads(manifests, self.assets)
        except Exception:  # the SDK's HelmRenderError, HelmValuesError, or yaml.YAMLError
            if not changes:
                raise
            return None
        finally:
            if close:
                chart.close()


def dependency_conditions(chart_dir: Path) -> frozenset[str]:
    """Every value a dependency's `condition` names, in the chart and (under the subchart's name) its subcharts."""
    found: set[str] = set()
    chart_yaml = yaml.safe_load((chart_dir / "Chart.yaml").read_text()) or {}
    for dep in chart_yaml.get("dependencies") or []:
        found |= {c.strip() for c in str(dep.get("condition") or "").split(",") if c.strip()}
    for sub in (chart_dir / "charts").glob("*/Chart.yaml") if (chart_dir / "charts").is_dir() else []:
        name = str((yaml.safe_load(sub.read_text()) or {}).get("name", sub.parent.name))
        found |= {f"{name}.{c}" for c in dependency_conditions(sub.parent)}
    return frozenset(found)


def _conditions(
    render: Renderer,
    scenario: dict[tuple[str, ...], Any],
    keys: set[tuple[str, str, str, str]],
    flags: list[tuple[tuple[str, ...], bool]],
) -> dict[tuple[str, str, str, str], dict[str, bool]]:
    """For containers present under `scenario`: every boolean whose flip (from the scenario) removes them."""
    when: dict[tuple[str, str, str, str], dict[str, bool]] = {k: {} for k in keys}
    for path, default in flags:
        current = scenario.get(path, default)
        flipped = render({**scenario, path: not current})
        if flipped is None:
            continue
        gone = keys - set(_containers(flipped))
        for key in gone:
            when[key][dotted(path)] = current
    return when


def _same(
    key: tuple[str, str, str, str], present: dict[tuple[str, str, str, str], Any]
) -> tuple[str, str, str, str] | None:
    """The present container a rendered one is: the same key, or (a value that renames the workload, such as
    nameOverride) the only one of the same template, kind and container name."""
    if key in present:
        return key
    same = [k for k in present if (k[0], k[1], k[3]) == (key[0], key[1], key[3])]
    return same[0] if len(same) == 1 else None


def _parts(
    render: Renderer,
    scenario: dict[tuple[str, ...], Any],
    present: dict[tuple[str, str, str, str], tuple[dict[str, Any], dict[str, Any]]],
    strings: list[tuple[tuple[str, ...], Any]],
) -> tuple[dict[tuple[str, str, str, str], list[dict[str, Any]]], dict[tuple[str, str, str, str], list[str]]]:
    """Image parts and label keys of the containers present under `scenario`, one marker render per string."""
    parts: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {k: [] for k in present}
    labels: dict[tuple[str, str, str, str], list[str]] = {k: [] for k in present}
    for index, (path, _) in enumerate(strings):
        marker = f"zzpart{index}zz"
        rendered = render({**scenario, path: marker})
        for found_key, (workload, container) in _containers(rendered or []).items():
            key = _same(found_key, present)
            if key is None:
                continue
            base_container = present[key][1]
            image, base = container["image"], base_container["image"]
            if marker in image:
                start = image.index(marker)
                suffix = image[start + len(marker) :]
                clean = image.count(marker) == 1 and base.startswith(image[:start]) and base.endswith(suffix)
                end = len(base) - len(suffix) if clean else start
                parts[key].append({"key": dotted(path), "start": start, "end": end, "replaces": clean})
            if marker in json.dumps(workload["pod_labels"]) and dotted(path) not in labels[key]:
                labels[key].append(dotted(path))
    # Two values on the same place: render both as markers; the one that shows is the one Helm uses.
    for key, found in parts.items():
        by_span: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for part in found:
            by_span.setdefault((part["start"], part["end"]), []).append(part)
        for same in by_span.values():
            if len(same) < 2:
                same[0]["rank"] = 0
                continue
            markers = {p["key"]: f"zzrank{i}zz" for i, p in enumerate(same)}
            changes = {tuple(k.split(".")): m for k, m in markers.items()}
            both = _containers(render({**scenario, **changes}) or []).get(key)
            image = both[1]["image"] if both else ""
            for part in same:
                part["rank"] = 0 if markers[part["key"]] in image else 1
    return parts, labels


OTHER_REGION = "us-west-2"


def _regional(
    render: Renderer,
    scenario: dict[tuple[str, ...], Any],
    present: dict[tuple[str, str, str, str], tuple[dict[str, Any], dict[str, Any]]],
    strings: list[tuple[tuple[str, ...], Any]],
) -> dict[tuple[str, str, str, str], str]:
    """Containers whose registry follows a `region` value (a chart that picks a regional copy of its image, as
    HyperPod's health agent does by the cluster's region when `region` is empty): the key that moves it."""
    found: dict[tuple[str, str, str, str], str] = {}
    for path, _ in strings:
        if path[-1] != "region":
            continue
        for key, (_, container) in _containers(render({**scenario, path: OTHER_REGION}) or []).items():
            if key in present and OTHER_REGION in container["image"] and OTHER_REGION not in present[key][1]["image"]:
                found.setdefault(key, dotted(path))
    return found


def chart_workloads(render: Renderer) -> list[dict[str, Any]]:
    """Every workload the chart can run, each container with its default image, parts and conditions."""
    values = render.values
    flags = [(p, v) for p, v in leaves(values) if isinstance(v, bool)]
    strings = [(p, v) for p, v in leaves(values) if isinstance(v, str) or v is None]
    scenarios: list[dict[tuple[str, ...], Any]] = [{}]
    seen = set(_containers(render({}) or []))
    for path, default in flags:  # what a single flip switches on
        appeared = set(_containers(render({path: not default}) or [])) - seen
        if appeared:
            scenarios.append({path: not default})
            seen |= appeared
    records: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for scenario in scenarios:
        present = {k: v for k, v in _containers(render(scenario) or []).items() if k not in records}
        if not present:
            continue
        when = _conditions(render, scenario, set(present), flags)
        parts, label_keys = _parts(render, scenario, present, strings)
        regional = _regional(render, scenario, present, strings)
        for key, (workload, container) in present.items():
            records[key] = {
                "workload": workload,
                "container": {
                    **container,
                    "parts": sorted(parts[key], key=lambda p: (p["start"], p["rank"], p["key"])),
                    **({"regional_by": regional[key]} if key in regional else {}),
                },
                "when": dict(sorted(when[key].items())),
                "label_keys": sorted(label_keys[key]),
            }
    grouped: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key in sorted(records):
        record = records[key]
        workload = record["workload"]
        entry = grouped.setdefault(
            key[:3],
            {
                **{k: workload[k] for k in ("kind", "name", "namespace", "template", "hook", "pod_labels")},
                "containers": [],
                "when": {},
                "label_keys": [],
            },
        )
        entry["containers"].append({**record["container"], "when": record["when"]})
        entry["label_keys"] = sorted(set(entry["label_keys"]) | set(record["label_keys"]))
    out: list[dict[str, Any]] = []
    for entry in grouped.values():
        # The workload runs when every condition its containers share holds.
        shared = [c["when"] for c in entry["containers"]]
        entry["when"] = {k: v for k, v in shared[0].items() if all(w.get(k) == v for w in shared)}
        for container in entry["containers"]:
            container["when"] = {k: v for k, v in container["when"].items() if k not in entry["when"]}
        out.append(_placeholders(entry))
    return out


def condition_defaults(
    values: dict[str, Any], found: list[dict[str, Any]], missing: list[dict[str, str]]
) -> dict[str, Any]:
    """The chart's default of every value a `when` or a missing subchart's condition names (a release that does
    not set it gets this one)."""
    keys = {k for w in found for k in w["when"]} | {k for w in found for c in w["containers"] for k in c["when"]}
    keys |= {m["condition"] for m in missing if m["condition"]}
    defaults: dict[str, Any] = {}
    for key in sorted(keys):
        node: Any = values
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        defaults[key] = node
    return defaults


def operand_assets(git_show: GitShow, repository: str, tag: str) -> dict[str, dict[str, Any]]:
    """The GPU Operator's operand DaemonSets at the tag, by asset path."""
    assets: dict[str, dict[str, Any]] = {}
    for operand in GPU_OPERATOR_OPERANDS:
        text = git_show(repository, tag, operand.asset)
        if text is None:
            raise SystemExit(f"error: {repository}@{tag}:{operand.asset} not found")
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "DaemonSet"]
        assets[operand.asset] = docs[0]
    return assets


def missing_subcharts(chart_yaml: dict[str, Any], chart_dir: Path) -> list[dict[str, str]]:
    """Dependencies the chart names but that are not in its directory (remote ones `helm dependency build`
    would fetch): their images are not in the facts, so a release that turns one on cannot be checked. A
    subchart is known by the name in its own Chart.yaml (a directory or an archive under charts/)."""
    present: set[str] = set()
    charts = chart_dir / "charts"
    for entry in charts.glob("*") if charts.is_dir() else []:
        if entry.is_dir() and (entry / "Chart.yaml").exists():
            present.add(str((yaml.safe_load((entry / "Chart.yaml").read_text()) or {}).get("name", entry.name)))
        elif entry.suffix == ".tgz":
            present.add(re.sub(r"-[0-9][^-]*$", "", entry.stem))
    missing: list[dict[str, str]] = []
    for dep in chart_yaml.get("dependencies") or []:
        if str(dep["name"]) in present:
            continue
        missing.append(
            {
                "name": str(dep["name"]),
                "version": str(dep.get("version", "")),
                "repository": str(dep.get("repository", "")),
                "condition": str(dep.get("condition", "")),
            }
        )
    return missing
