"""Extract the facts of every pinned chart's values and every CRD trainstack writes objects of.

Reads each upstream file at its tag from a local bare mirror of the repository
(`<mirror>/<owner>+<name>/repo`, as the project's research tooling brings them) with `git show TAG:PATH`, and
writes our own facts to `trainstack/contracts/facts/` (see `trainstack/contracts/facts.py` for the format).
Nothing upstream is copied: only key paths, types, enums, required keys, bounds and CEL rules.

It also renders each chart, as its project publishes it (`Published`), with Helm's own engine and records its
workloads under `facts/workloads/` (scripts/chart_workloads.py): images, pod labels, ports, and the values that
switch them on or change them. That needs the `facts` dependency group (`.tools/bin/uv sync --group facts`);
`--skip-workloads` extracts values and CRDs only.

To pin a new chart or operator version: add its row to CHARTS or CRDS below, run
`.venv/bin/python scripts/extract_contract_facts.py`, review the diff, and bump the pin in the stack files.
`tests/unit/test_contract_facts.py` fails while a pin has no facts or a row has no file.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.chart_workloads import (
    RENDERER,
    Renderer,
    chart_workloads,
    condition_defaults,
    missing_subcharts,
    operand_assets,
)
from trainstack.contracts.facts import (
    ANY_KEY,
    CHARTS_DIR,
    CRDS_DIR,
    ITEM,
    chart_file,
    child,
    crd_file,
    join,
    json_type,
    write_json,
)

DEFAULT_MIRROR = Path("/work/.mirror")
TRANSITION = re.compile(r"\boldSelf\b")


@dataclass(frozen=True)
class Published:
    """What a project's release packaging changes in the chart before it publishes it, so the facts describe the
    chart Helm pulls, not the one in git: values set (dotted path -> value) and Chart.yaml fields."""

    source: str  # the packaging script or workflow at the tag
    values: tuple[tuple[str, str], ...] = ()
    chart_yaml: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subchart:
    """A dependency the chart fetches at packaging time (not in git): vendored from its own repository's tag."""

    name: str
    repository: str
    tag: str
    directory: str
    published: Published | None = None


@dataclass(frozen=True)
class ChartRow:
    """A chart at a version: its values.yaml (and values.schema.json, if any) at a repository tag."""

    chart: str
    version: str
    repository: str
    tag: str
    directory: str  # the chart's directory in the repository
    published: Published | None = None
    subcharts: tuple[Subchart, ...] = ()
    open_maps: tuple[str, ...] = ()
    """Maps with defaults whose keys the templates range over (so any key is valid), beside the empty maps."""
    install_values: tuple[tuple[str, str], ...] = ()
    """Values every install sets, without which the chart renders no workload (dotted path -> a stand-in value):
    set for the workload render only, and recorded beside the workloads."""


@dataclass(frozen=True)
class CrdRow:
    """A CRD file at a repository tag, and which chart (or manifest) at which version installs it."""

    repository: str
    tag: str
    path: str
    installed_by: str  # "<chart>@<version>": the release whose install brings this CRD


# Every chart trainstack installs, at the version the stacks pin. A chart whose Chart.yaml in git carries a
# placeholder version (the GPU Operator's is set at release time) is matched by its release tag.
CHARTS: tuple[ChartRow, ...] = (
    ChartRow(
        "gpu-operator",
        "v25.3.4",
        "NVIDIA/gpu-operator",
        "v25.3.4",
        "deployments/gpu-operator",
        # NVIDIA's release sets the chart's version and appVersion (git holds v1.0.0-devel / devel-ubi8); the
        # operator and validator images take their tag from appVersion (templates/operator.yaml, clusterpolicy.yaml).
        Published(
            "NVIDIA release of chart gpu-operator v25.3.4",
            chart_yaml=(("version", "v25.3.4"), ("appVersion", "v25.3.4")),
        ),
    ),
    # eks-charts tags the whole repository; v0.0.238 is the first tag whose chart is v0.5.29.
    ChartRow("aws-efa-k8s-device-plugin", "v0.5.29", "aws/eks-charts", "v0.0.238", "stable/aws-efa-k8s-device-plugin"),
    ChartRow(
        "kueue",
        "0.14.8",
        "kubernetes-sigs/kueue",
        "v0.14.8",
        "charts/kueue",
        Published(
            "kubernetes-sigs/kueue v0.14.8 hack/helm-chart-package.sh (promoted tags use registry.k8s.io/kueue)",
            values=(
                ("controllerManager.manager.image.repository", "registry.k8s.io/kueue/kueue"),
                ("controllerManager.manager.image.tag", "v0.14.8"),
                ("kueueViz.backend.image.repository", "registry.k8s.io/kueue/kueueviz-backend"),
                ("kueueViz.backend.image.tag", "v0.14.8"),
                ("kueueViz.frontend.image.repository", "registry.k8s.io/kueue/kueueviz-frontend"),
                ("kueueViz.frontend.image.tag", "v0.14.8"),
            ),
            chart_yaml=(("appVersion", "v0.14.8"),),
        ),
    ),
    ChartRow(
        "kubeflow-trainer",
        "2.1.0",
        "kubeflow/trainer",
        "v2.1.0",
        "charts/kubeflow-trainer",
        Published(
            "kubeflow/trainer v2.1.0 .github/workflows/publish-helm-charts.yaml (appVersion from the tag)",
            chart_yaml=(("appVersion", "v2.1.0"),),
        ),
        # Chart.yaml: jobset 0.10.1 from oci://registry.k8s.io/jobset/charts, packaged from jobset's v0.10.1.
        (
            Subchart(
                "jobset",
                "kubernetes-sigs/jobset",
                "v0.10.1",
                "charts/jobset",
                Published(
                    "kubernetes-sigs/jobset v0.10.1 hack/helm-chart-package.sh (promoted tags: registry.k8s.io/jobset)",
                    values=(("image.repository", "registry.k8s.io/jobset/jobset"), ("image.tag", "v0.10.1")),
                    chart_yaml=(("appVersion", "v0.10.1"),),
                ),
            ),
        ),
    ),
    # kubernetes/autoscaler tags each chart release; 9.59.0's appVersion is 1.35.0 and trainstack sets the 1.36
    # image tag in its values (stacks/schema/capacity.py), so the published image is overridden, not changed.
    ChartRow(
        "cluster-autoscaler",
        "9.59.0",
        "kubernetes/autoscaler",
        "cluster-autoscaler-chart-9.59.0",
        "cluster-autoscaler/charts/cluster-autoscaler",
        # templates/deployment.yaml renders the Deployment only with a discovery source or static groups.
        install_values=(("autoDiscovery.clusterName", "cluster"),),
        # templates/deployment.yaml turns every extraArgs key into a `--<key>=<value>` flag.
        open_maps=("extraArgs",),
    ),
    # The HyperPod dependencies chart (components/sagemaker/hyperpod_dependencies.py): Chart.yaml stays 0.1.0 at
    # every tag, so the tag is the real pin; the release's chart is the local checkout's directory, HyperPodHelmChart.
    ChartRow("hyperpod-helm-chart", "0.1.0", "aws/sagemaker-hyperpod-cli", "v3.9.0", "helm_chart/HyperPodHelmChart"),
    # metrics-server (components/k8s/metrics_server.py): the repository tags each chart release
    # metrics-server-helm-chart-<version>; the chart publishes as is (image tag v<appVersion>).
    ChartRow(
        "metrics-server",
        "3.13.1",
        "kubernetes-sigs/metrics-server",
        "metrics-server-helm-chart-3.13.1",
        "charts/metrics-server",
    ),
    # The fleet-health charts (components/health/observability.py); each repository tags per chart release.
    ChartRow("grafana", "10.5.15", "grafana/helm-charts", "grafana-10.5.15", "charts/grafana"),
    ChartRow(
        "kube-state-metrics",
        "8.4.0",
        "prometheus-community/helm-charts",
        "kube-state-metrics-8.4.0",
        "charts/kube-state-metrics",
    ),
    ChartRow(
        "prometheus-node-exporter",
        "4.56.1",
        "prometheus-community/helm-charts",
        "prometheus-node-exporter-4.56.1",
        "charts/prometheus-node-exporter",
    ),
    ChartRow(
        "prometheus-yet-another-cloudwatch-exporter",
        "0.47.0",
        "prometheus-community/helm-charts",
        "prometheus-yet-another-cloudwatch-exporter-0.47.0",
        "charts/prometheus-yet-another-cloudwatch-exporter",
    ),
)

# Every CRD trainstack writes objects of (Kueue queues, Trainer runtimes and jobs, MPIJob for the MPI Operator).
CRDS: tuple[CrdRow, ...] = (
    *(
        CrdRow(
            "kubernetes-sigs/kueue",
            "v0.14.8",
            f"config/components/crd/bases/kueue.x-k8s.io_{plural}.yaml",
            "kueue@0.14.8",
        )
        for plural in (
            "resourceflavors",
            "clusterqueues",
            "localqueues",
            "admissionchecks",
            "provisioningrequestconfigs",
        )
    ),
    *(
        CrdRow(
            "kubeflow/trainer",
            "v2.1.0",
            f"manifests/base/crds/trainer.kubeflow.org_{plural}.yaml",
            "kubeflow-trainer@2.1.0",
        )
        for plural in ("trainjobs", "clustertrainingruntimes")
    ),
    # Kueue creates ProvisioningRequests; trainstack installs the CRD from the autoscaler's tag (cluster_autoscaler.py).
    CrdRow(
        "kubernetes/autoscaler",
        "cluster-autoscaler-1.36.1",
        "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
        "provisioning-request-crd@1.36.1",
    ),
    CrdRow("kubeflow/mpi-operator", "v0.8.0", "manifests/base/kubeflow.org_mpijobs.yaml", "mpi-operator@0.8.0"),
    # The ENIConfig of VPC CNI custom networking (network.pod_network): the vpc-cni add-on v1.22.4-eksbuild.N
    # packages amazon-vpc-cni-k8s v1.22.4, whose chart carries the CRD.
    CrdRow(
        "aws/amazon-vpc-cni-k8s",
        "v1.22.4",
        "charts/aws-vpc-cni/crds/customresourcedefinition.yaml",
        "vpc-cni@1.22.4",
    ),
)

# Schema keywords kept as facts (JSON-schema / Kubernetes structural-schema names -> our names).
_KEPT = {
    "enum": "enum",
    "required": "required",
    "pattern": "pattern",
    "minimum": "minimum",
    "maximum": "maximum",
    "minItems": "min_items",
    "maxItems": "max_items",
    "minLength": "min_length",
    "maxLength": "max_length",
    "nullable": "nullable",
    "format": "format",
    "x-kubernetes-list-type": "list_type",
    "x-kubernetes-list-map-keys": "list_map_keys",
}


def git_show(mirror: Path, repository: str, tag: str, path: str) -> str | None:
    git_dir = mirror / repository.replace("/", "+") / "repo"
    result = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{tag}:{path}"], capture_output=True, text=True, check=False
    )
    return result.stdout if result.returncode == 0 else None


def flatten_values(values: Any, path: str, out: dict[str, str], free: set[str]) -> None:
    """Every key path of a values.yaml with its default's type; empty maps take any key; lists are leaves
    (Helm replaces a list whole)."""
    out[path] = json_type(values) if path else "object"
    if isinstance(values, dict):
        if not values and path:
            free.add(path)
        for key, value in values.items():
            flatten_values(value, child(path, str(key)), out, free)


def flatten_schema(node: dict[str, Any], path: str, out: dict[str, dict[str, Any]]) -> None:
    """Every field path of an openAPI v3 (structural) schema with its type, enum, required keys, bounds and
    CEL rules: those that need no old object, and apart from them the transition rules (run on update only)."""
    fact: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string") or {s.get("type") for s in node.get("anyOf", [])} == {
        "integer",
        "string",
    }:
        fact["type"] = "int-or-string"
    elif "type" in node:
        fact["type"] = node["type"]
    for key, name in _KEPT.items():
        if key in node:
            fact[name] = node[key]
    if node.get("x-kubernetes-preserve-unknown-fields"):
        fact["preserve_unknown"] = True
    if node.get("x-kubernetes-embedded-resource"):
        fact["embedded_resource"] = True
    # A rule naming `oldSelf` is a transition rule: it runs on update only, with the stored value as `oldSelf`
    # (Kubernetes, "Transition rules"); recorded apart, for the day-2 journey (trainstack/journeys/day2.py).
    for key, transition in (("rules", False), ("transition_rules", True)):
        rules = [
            {"rule": " ".join(v["rule"].split()), "message": v.get("message", "")}
            | ({"optional_old_self": True} if v.get("optionalOldSelf") else {})
            for v in node.get("x-kubernetes-validations", [])
            if bool(TRANSITION.search(v["rule"])) is transition
        ]
        if rules:
            fact[key] = rules
    out[path] = fact
    for key, sub in (node.get("properties") or {}).items():
        flatten_schema(sub, child(path, key), out)
    if isinstance(node.get("items"), dict):
        flatten_schema(node["items"], join(path, ITEM), out)
    if isinstance(node.get("additionalProperties"), dict):
        flatten_schema(node["additionalProperties"], join(path, ANY_KEY), out)


def source(repository: str, tag: str, path: str) -> dict[str, str]:
    return {"repository": repository, "tag": tag, "path": path}


def extract_chart(mirror: Path, row: ChartRow) -> dict[str, Any]:
    values_path = f"{row.directory}/values.yaml"
    text = git_show(mirror, row.repository, row.tag, values_path)
    if text is None:
        raise SystemExit(f"error: {row.repository}@{row.tag}:{values_path} not found in {mirror}")
    chart_yaml = yaml.safe_load(git_show(mirror, row.repository, row.tag, f"{row.directory}/Chart.yaml") or "{}")
    if chart_yaml.get("name") != row.chart:
        raise SystemExit(f"error: {row.repository}@{row.tag}:{row.directory} is chart {chart_yaml.get('name')!r}")
    git_version = str(chart_yaml.get("version", ""))
    if "devel" not in git_version and git_version.removeprefix("v") != row.version.removeprefix("v"):
        raise SystemExit(f"error: {row.chart} at {row.tag} is version {git_version}, not {row.version}")
    values: dict[str, str] = {}
    free: set[str] = set()
    flatten_values(yaml.safe_load(text) or {}, "", values, free)
    data: dict[str, Any] = {
        "chart": row.chart,
        "version": row.version,
        "source": source(row.repository, row.tag, values_path),
        "values": values,
        "free_maps": sorted(free | set(row.open_maps)),
    }
    schema_path = f"{row.directory}/values.schema.json"
    schema_text = git_show(mirror, row.repository, row.tag, schema_path)
    if schema_text is not None:
        fields: dict[str, dict[str, Any]] = {}
        flatten_schema(json.loads(schema_text), "", fields)
        data["schema"] = {"source": source(row.repository, row.tag, schema_path), "fields": fields}
    return data


WORKLOADS_DIR = CHARTS_DIR.parent / "workloads"


def workloads_file(chart: str, version: str) -> Path:
    return WORKLOADS_DIR / f"{chart}@{version}.json"


def export_directory(mirror: Path, repository: str, tag: str, directory: str, dest: Path) -> Path:
    """`directory` of the repository at `tag`, written under `dest` (git archive: the tree as tagged)."""
    git_dir = mirror / repository.replace("/", "+") / "repo"
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "--format=tar", tag, directory], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise SystemExit(f"error: {repository}@{tag}:{directory} not found in {mirror}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / directory


def _set(tree: dict[str, Any], dotted_path: str, value: str) -> None:
    *parents, last = dotted_path.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def apply_published(chart_dir: Path, published: Published | None) -> None:
    """The release packaging's edits, applied to the exported chart (values.yaml and Chart.yaml)."""
    if published is None:
        return
    for name, edits in (("values.yaml", published.values), ("Chart.yaml", published.chart_yaml)):
        if not edits:
            continue
        path = chart_dir / name
        tree = yaml.safe_load(path.read_text()) or {}
        for dotted_path, value in edits:
            _set(tree, dotted_path, value)
        path.write_text(yaml.safe_dump(tree, sort_keys=False))


def drop_stale_local_subcharts(chart_dir: Path) -> None:
    """A `file://` dependency is the directory beside it: `helm dependency update` (make hyperpod-chart) packages
    the directory into charts/<name>-<version>.tgz over any archive left in git, so an archive in git is stale."""
    chart_yaml = yaml.safe_load((chart_dir / "Chart.yaml").read_text()) or {}
    for dep in chart_yaml.get("dependencies") or []:
        repository = str(dep.get("repository", ""))
        if repository.startswith("file://") and (chart_dir / repository.removeprefix("file://")).is_dir():
            for stale in (chart_dir / "charts").glob(f"{dep['name']}-*.tgz"):
                stale.unlink()


def extract_workloads(mirror: Path, row: ChartRow) -> dict[str, Any]:
    """The chart as published, rendered: its workloads, their images, pod labels and ports (chart_workloads)."""
    with tempfile.TemporaryDirectory() as tmp:
        chart_dir = export_directory(mirror, row.repository, row.tag, row.directory, Path(tmp) / "chart")
        apply_published(chart_dir, row.published)
        apply_published(
            chart_dir, Published("install values", values=row.install_values) if row.install_values else None
        )
        for sub in row.subcharts:
            sub_dir = export_directory(mirror, sub.repository, sub.tag, sub.directory, Path(tmp) / sub.name)
            apply_published(sub_dir, sub.published)
            (chart_dir / "charts").mkdir(exist_ok=True)
            sub_dir.rename(chart_dir / "charts" / sub.name)
        drop_stale_local_subcharts(chart_dir)
        assets: dict[str, dict[str, Any]] = {}
        if row.chart == "gpu-operator":
            assets = operand_assets(lambda r, t, p: git_show(mirror, r, t, p), row.repository, row.tag)
        chart_yaml = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
        render = Renderer(chart_dir, assets)
        found = chart_workloads(render)
        missing = missing_subcharts(chart_yaml, chart_dir)
        defaults = condition_defaults(render.values, found, missing)
    published = [p for p in (row.published, *(s.published for s in row.subcharts)) if p is not None]
    return {
        "chart": row.chart,
        "version": row.version,
        "app_version": str(chart_yaml.get("appVersion", "")),
        "source": source(row.repository, row.tag, row.directory),
        "subcharts": [source(s.repository, s.tag, s.directory) | {"name": s.name} for s in row.subcharts],
        **({"install_values": dict(row.install_values)} if row.install_values else {}),
        "published": [
            {"source": p.source, "values": dict(p.values), "chart_yaml": dict(p.chart_yaml)} for p in published
        ],
        "rendered_with": RENDERER,
        "renders": render.renders,
        "workloads": found,
        "condition_defaults": defaults,
        "missing_subcharts": missing,
    }


def extract_crd(mirror: Path, row: CrdRow) -> list[tuple[Path, dict[str, Any]]]:
    text = git_show(mirror, row.repository, row.tag, row.path)
    if text is None:
        raise SystemExit(f"error: {row.repository}@{row.tag}:{row.path} not found in {mirror}")
    crd = yaml.safe_load(text)
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    found: list[tuple[Path, dict[str, Any]]] = []
    for version in crd["spec"]["versions"]:
        if not version.get("served", False):
            continue
        fields: dict[str, dict[str, Any]] = {}
        flatten_schema(version["schema"]["openAPIV3Schema"], "", fields)
        data = {
            "group": group,
            "kind": kind,
            "version": version["name"],
            "scope": crd["spec"]["scope"],
            "installed_by": row.installed_by,
            "source": source(row.repository, row.tag, row.path),
            "fields": fields,
        }
        found.append((crd_file(group, kind, version["name"], row.tag), data))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="directory of <owner>+<name>/repo mirrors")
    parser.add_argument(
        "--skip-workloads", action="store_true", help="values and CRDs only (no Helm renders: no `facts` group needed)"
    )
    args = parser.parse_args(argv)
    written: set[Path] = set()
    for chart in CHARTS:
        path = chart_file(chart.chart, chart.version)
        write_json(path, extract_chart(args.mirror, chart))
        written.add(path)
        if not args.skip_workloads:
            path = workloads_file(chart.chart, chart.version)
            write_json(path, extract_workloads(args.mirror, chart))
            written.add(path)
    for crd in CRDS:
        for path, data in extract_crd(args.mirror, crd):
            write_json(path, data)
            written.add(path)
    kept = {*CHARTS_DIR.glob("*.json"), *CRDS_DIR.glob("*.json")}
    if not args.skip_workloads:
        kept |= set(WORKLOADS_DIR.glob("*.json"))
    for stale in kept - written:
        stale.unlink()
    print(f"wrote {len(written)} facts files under {CHARTS_DIR.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
