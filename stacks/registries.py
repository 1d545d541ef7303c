"""Where container registries serve image layers from, as nodes in an AWS region meet them: facts with sources.

A pull is two kinds of request. The registry API (tokens, manifests) goes to the registry's host; the layers
(blobs) are answered with a redirect to storage somewhere else. From a private subnet the route of each request
decides who judges it: a request to an S3 bucket in the VPC's own region leaves through the S3 gateway endpoint
when the subnet's route table has it, so the endpoint's policy decides (VPC User Guide, "Gateway endpoints for
Amazon S3": the route uses the region's S3 prefix list; "Control access to VPC endpoints using endpoint
policies"); a bucket in another region, and every other host, goes through the NAT gateway.

`components/network/network.py` allows the layer buckets below in the S3 gateway endpoint's policy, and the deploy
journey (`trainstack/journeys/images.py`) follows every image the plan pulls through these facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
K8S_REGISTRY = "registry.k8s.io"

# kubernetes/registry.k8s.io at 093d55a (2026-08-06), cmd/archeio/internal/app/buckets.go `awsRegionToHostURL`:
# the bucket a blob request from an AWS IP in each region is redirected to (when the blob is there; else the
# upstream Artifact Registry); cmd/archeio/docs/request-handling.md. Every bucket is `prod-registry-k8s-io-<its
# region>` except London's. Regions without a bucket of their own are sent to a neighbour's; a region not listed
# goes to the default URL (a CDN), not to S3.
_K8S_BUCKET_REGION: dict[str, str] = {
    **{
        region: region
        for region in (
            "af-south-1",
            "ap-east-1",
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-northeast-3",
            "ap-southeast-1",
            "ap-southeast-2",
            "ap-southeast-3",
            "ap-southeast-4",
            "ap-southeast-5",
            "ap-southeast-6",
            "ap-southeast-7",
            "ap-south-1",
            "ap-south-2",
            "ca-central-1",
            "ca-west-1",
            "eu-central-1",
            "eu-central-2",
            "eu-north-1",
            "eu-south-1",
            "eu-south-2",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "il-central-1",
            "me-central-1",
            "mx-central-1",
            "sa-east-1",
            "us-east-1",
            "us-east-2",
            "us-west-1",
            "us-west-2",
        )
    },
    "ap-east-2": "ap-east-1",
    "cn-north-1": "ap-east-1",
    "cn-northwest-1": "ap-east-1",
    "me-south-1": "me-central-1",
}
_K8S_BUCKET_NAME_EXCEPTIONS = {"eu-west-2": "767373bbdcb8270361b96548387bf2a9ad0d48758c35-eu-west-2"}
K8S_LAYER_PREFIX = "containers/images/"
K8S_SOURCE = (
    "kubernetes/registry.k8s.io@093d55a cmd/archeio/internal/app/buckets.go (awsRegionToHostURL), "
    "cmd/archeio/docs/request-handling.md; kubernetes/k8s.io#4214 (an endpoint policy's 403)"
)
# Private ECR: the registry API in its region (ecr.api for tokens, ecr.dkr for manifests) and layers from the
# region's S3 bucket `prod-<region>-starport-layer-bucket` (ECR User Guide, "Amazon ECR interface VPC endpoints
# (AWS PrivateLink)", section "Create the Amazon S3 gateway endpoint": the minimum endpoint policy).
ECR_HOST = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
ECR_SOURCE = (
    'ECR User Guide, "Amazon ECR interface VPC endpoints (AWS PrivateLink)", "Create the Amazon S3 gateway endpoint"'
)
# Docker Hub: sources disagree. Docker's allowlist (docs.docker.com, "Allowlist for Docker Desktop") names only
# CDN hosts (production.cloudflare.docker.com, production.cloudfront.docker.com, an R2 bucket host); JFrog's
# knowledge base (article 000004313, 2025) and reports from AWS users (moby/moby#34185, docker/hub-feedback#1318,
# aws-samples/aws-blockchain-node-runners#3, 2023) show requests from AWS going straight to the S3 bucket
# `docker-images-prod` (us-east-1), refused by an S3 endpoint policy that does not allow it. Both are kept.
DOCKER_HUB_AWS_BUCKET = "docker-images-prod"
DOCKER_HUB_AWS_BUCKET_REGION = "us-east-1"
DOCKER_SOURCE = (
    "docs.docker.com Allowlist for Docker Desktop (CDN hosts); JFrog KB 000004313 and moby/moby#34185, "
    "docker/hub-feedback#1318 (S3 bucket docker-images-prod for AWS clients)"
)


@dataclass(frozen=True)
class LayerStore:
    """Where a registry's layers come from for a node in one region."""

    description: str
    source: str
    bucket: str | None = None  # an S3 bucket (else hosts on the internet, reached through NAT)
    bucket_region: str | None = None
    key_prefix: str = ""  # where the layers are under the bucket

    def object_arn(self, partition: str) -> str:
        """An object ARN of a layer in the bucket (what an endpoint policy sees for GetObject)."""
        return f"arn:{partition}:s3:::{self.bucket}/{self.key_prefix}sha256:0"


@dataclass(frozen=True)
class RegistryFacts:
    """One registry: the host of its API, its private-ECR region (the API's endpoints), where layers come from."""

    host: str
    stores: tuple[LayerStore, ...]  # empty: a registry with no recorded facts
    ecr_region: str | None = None


def image_registry(image: str) -> str:
    """The registry host of an image reference, normalised as the container runtime does (distribution/reference
    normalize.go: a first component with a dot or a colon, or `localhost`, is a host; else Docker Hub).

    >>> image_registry("mpioperator/mpi-operator:0.5"), image_registry("registry.k8s.io/kueue/kueue:v0.14.8")
    ('docker.io', 'registry.k8s.io')
    """
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return "docker.io" if first in ("index.docker.io", "registry-1.docker.io") else first
    return DOCKER_HUB


def k8s_registry_bucket(region: str) -> tuple[str, str] | None:
    """(bucket, bucket's region) registry.k8s.io sends blob requests from `region` to, or None (its CDN)."""
    bucket_region = _K8S_BUCKET_REGION.get(region)
    if bucket_region is None:
        return None
    return _K8S_BUCKET_NAME_EXCEPTIONS.get(bucket_region, f"prod-registry-k8s-io-{bucket_region}"), bucket_region


def ecr_layer_bucket(region: str) -> str:
    return f"prod-{region}-starport-layer-bucket"


def _internet(description: str, source: str) -> LayerStore:
    return LayerStore(description, source)


def registry_facts(host: str, node_region: str) -> RegistryFacts:
    """Where `host` serves layers from for nodes in `node_region`; no stores for a registry not recorded here."""
    ecr = ECR_HOST.match(host)
    if ecr is not None:
        region = ecr["region"]
        store = LayerStore(
            f"S3 bucket {ecr_layer_bucket(region)} ({region})",
            ECR_SOURCE,
            bucket=ecr_layer_bucket(region),
            bucket_region=region,
        )
        return RegistryFacts(host, (store,), ecr_region=region)
    if host == K8S_REGISTRY:
        found = k8s_registry_bucket(node_region)
        if found is None:
            return RegistryFacts(host, (_internet("registry.k8s.io's default layer CDN", K8S_SOURCE),))
        bucket, bucket_region = found
        return RegistryFacts(
            host,
            (
                LayerStore(
                    f"S3 bucket {bucket} ({bucket_region})",
                    K8S_SOURCE,
                    bucket=bucket,
                    bucket_region=bucket_region,
                    key_prefix=K8S_LAYER_PREFIX,
                ),
            ),
        )
    if host == DOCKER_HUB:
        return RegistryFacts(
            host,
            (
                _internet("Docker Hub's CDN (Cloudflare, CloudFront)", DOCKER_SOURCE),
                LayerStore(
                    f"S3 bucket {DOCKER_HUB_AWS_BUCKET} ({DOCKER_HUB_AWS_BUCKET_REGION})",
                    DOCKER_SOURCE,
                    bucket=DOCKER_HUB_AWS_BUCKET,
                    bucket_region=DOCKER_HUB_AWS_BUCKET_REGION,
                ),
            ),
        )
    internet = _INTERNET_REGISTRIES.get(host)
    return RegistryFacts(host, (internet,) if internet is not None else ())


# Registries whose layers come from hosts outside the VPC's S3 (a CDN), so through NAT.
_INTERNET_REGISTRIES: dict[str, LayerStore] = {
    "public.ecr.aws": _internet(
        "ECR Public's CloudFront distributions",
        "EKS Anywhere docs, domains to allow (d2glxqk2uabbnd.cloudfront.net, d5l0dvt14r5h8.cloudfront.net); "
        "docker/sbx-releases#525",
    ),
    "quay.io": _internet(
        "quay.io's CDN (cdn.quay.io, cdn01-06.quay.io, on CloudFront)",
        "Red Hat OpenShift docs, Configuring your firewall (quay.io, cdn*.quay.io); Red Hat OCPPLAN-7367",
    ),
    "ghcr.io": _internet(
        "GitHub's package CDN (pkg-containers.githubusercontent.com)",
        'GitHub Docs, "Working with the Container registry" and the domains GitHub Packages uses',
    ),
    "nvcr.io": _internet(
        "NVIDIA NGC's own hosts (no AWS S3 bucket documented)",
        "NVIDIA NGC Catalog / container registry user guide (nvcr.io)",
    ),
}
