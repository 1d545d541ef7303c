"""EKS add-on builds that a public source ties to a Kubernetes minor version.

A pinned add-on build is "confirmed" for a cluster version when a public source shows that build on that
version; anything else is a pin the plan cannot vouch for, and the report lists it as a risk (verify with
`aws eks describe-addon-versions --kubernetes-version <v> --addon-name <name>` before deploying). The sources are
the ones the stack files cite beside their pins (stacks/Pulumi.prod.yaml, eks.addons).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DEFAULTS_136 = (
    "the builds a 1.36 cluster resolved to as EKS defaults on 2026-09-16, in a public AWS GPU/EFA EKS template's "
    "compatibility matrix"
)
_TERRAFORM_136 = "pinned next to eks_version 1.36 in a public Terraform config"

# (Kubernetes minor, add-on name, build) -> the source that shows the build on that minor.
CONFIRMED: Mapping[tuple[str, str, str], str] = MappingProxyType(
    {
        ("1.36", "vpc-cni", "v1.22.4-eksbuild.3"): _DEFAULTS_136,
        ("1.36", "coredns", "v1.14.3-eksbuild.16"): _DEFAULTS_136,
        ("1.36", "kube-proxy", "v1.36.0-eksbuild.21"): _DEFAULTS_136,
        ("1.36", "eks-pod-identity-agent", "v1.3.10-eksbuild.3"): _DEFAULTS_136,
        ("1.36", "aws-ebs-csi-driver", "v1.63.1-eksbuild.1"): _TERRAFORM_136,
    }
)

# What is known about pins that are not confirmed, when something is (add-on name -> note).
KNOWN_GAPS: Mapping[str, str] = MappingProxyType(
    {
        "aws-fsx-csi-driver": "no public source ties a build to 1.36; v1.7.0-eksbuild.1 is the newest build a public "
        "AWS source names (amazon-eks-user-guide PR 1215), and the add-on was missing on 1.33 at launch "
        "(aws/containers-roadmap#2625)",
    }
)


def unconfirmed(kubernetes_version: str, addons: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(add-on, build, why) for every pinned build no recorded source ties to `kubernetes_version`."""
    found: list[tuple[str, str, str]] = []
    for name, build in sorted(addons.items()):
        if (kubernetes_version, name, build) not in CONFIRMED:
            why = KNOWN_GAPS.get(name, f"no recorded public source shows {build} on Kubernetes {kubernetes_version}")
            found.append((name, build, why))
    return found


def risk_title(addon: str, build: str, kubernetes_version: str) -> str:
    """The plan's risk title for an unconfirmed pin; preflight names the same risk when it settles it."""
    return f"unconfirmed pin: {addon} {build} on Kubernetes {kubernetes_version}"
