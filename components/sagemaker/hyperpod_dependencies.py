"""`HyperPodDependencies`: the HyperPod dependencies Helm chart on the EKS cluster a HyperPod cluster joins.

SageMaker Developer Guide, "Installing packages on the Amazon EKS cluster using Helm": when the HyperPod cluster
is created through the API (as here), this chart is required, and without it the cluster may not work or its
creation may fail. It carries the health-monitoring agent, the deep-health-check machinery and job auto-restart
that `NodeRecovery: Automatic` and the on-start deep health checks rely on.

Where it comes from: AWS publishes the chart only as a directory of its HyperPod CLI repository
(`HYPERPOD_CLI_REPOSITORY` at `HYPERPOD_CLI_TAG`, path `CHART_PATH`), with local subcharts, not in a Helm
repository or as an EKS add-on. So the chart is never copied here: `make hyperpod-chart` fetches that tag
and resolves its dependencies into `.hyperpod-chart/` before `pulumi up`, and the release points at that
directory. The offline plan cannot fetch it and does not need to (the release is recorded, not rendered).

Values (`hyperpod_dependencies_values`, plain data a Helm-values checker can hold against the chart's values at
the tag): the subcharts that would collide with what trainstack installs itself are off: the NVIDIA and Neuron
device plugins and the GPU Operator (trainstack's GPU Operator and Neuron plugin own the accelerators), the
EFA device plugin (trainstack's EFA plugin already targets HyperPod nodes), and the Kubeflow training operator
(trainstack's scheduling component owns the training operator). The health agent, deep health checks and job
auto-restart stay on, explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.naming import child_name

HYPERPOD_CLI_REPOSITORY = "https://github.com/aws/sagemaker-hyperpod-cli"
HYPERPOD_CLI_TAG = "v3.9.0"  # 2026-06-11; Chart.yaml there names the subcharts and conditions set below
CHART_PATH = "helm_chart/HyperPodHelmChart"  # chart name in its Chart.yaml: hyperpod-helm-chart
CHART_NAME = "hyperpod-helm-chart"
# Chart.yaml's version at the tag. AWS has never bumped it (0.1.0 at every tag), so the tag is the real pin; it
# is set anyway so Helm checks the fetched directory is the chart expected.
CHART_VERSION = "0.1.0"
RELEASE_NAME = "hyperpod-dependencies"  # the guide's release name
NAMESPACE = "kube-system"  # the guide installs it there; the chart creates `aws-hyperpod` itself

# Subchart switches, by the `condition` each has in Chart.yaml at the tag.
OFF_COLLIDING = {
    "nvidia-device-plugin": {"devicePlugin": {"enabled": False}},
    "neuron-device-plugin": {"devicePlugin": {"enabled": False}},
    "aws-efa-k8s-device-plugin": {"devicePlugin": {"enabled": False}},
    "gpu-operator": {"enabled": False},
    "trainingOperators": {"enabled": False},
}
ON_RESILIENCE = {
    "health-monitoring-agent": {"enabled": True},
    "deep-health-check": {"enabled": True},
    "job-auto-restart": {"enabled": True},
}


def hyperpod_dependencies_values() -> dict[str, Any]:
    """The release's values: colliding subcharts off, HyperPod's resilience machinery on."""
    return {**OFF_COLLIDING, **ON_RESILIENCE}


@dataclass
class HyperPodDependenciesArgs:
    chart_dir: str
    """Local directory of the chart at `HYPERPOD_CLI_TAG` (fetched by `make hyperpod-chart`)."""
    after: Sequence[pulumi.Resource] = ()
    """What must exist first: the core add-ons and the system node group its controllers run on."""


class HyperPodDependencies(pulumi.ComponentResource):
    """The HyperPod dependencies chart as one Helm release in kube-system."""

    release: k8s.helm.v3.Release
    """The release, for `depends_on` (the HyperPod cluster waits for it)."""
    values: dict[str, Any]
    """The values the release was given."""

    def __init__(self, name: str, args: HyperPodDependenciesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:sagemaker:HyperPodDependencies", name, None, opts)
        self.values = hyperpod_dependencies_values()
        self.release = k8s.helm.v3.Release(
            child_name(name, "release"),
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE_NAME,
                chart=args.chart_dir,
                version=CHART_VERSION,
                namespace=NAMESPACE,
                values=self.values,
                description=f"{CHART_NAME} from {HYPERPOD_CLI_REPOSITORY} at {HYPERPOD_CLI_TAG} ({CHART_PATH})",
                atomic=True,
                cleanup_on_fail=True,
                timeout=900,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        self.register_outputs({"release": self.release.name, "values": self.values})
