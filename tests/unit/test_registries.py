"""Where registries serve layers from (stacks/registries.py), and the S3 gateway endpoint statement built from it
(components/network/network.py public_registry_layer_objects)."""

from __future__ import annotations

import pytest

from components.network.network import public_registry_layer_objects, s3_gateway_endpoint_policy
from stacks.regions import AVAILABILITY_ZONES
from stacks.registries import (
    DOCKER_HUB,
    ECR_HOST,
    image_registry,
    k8s_registry_bucket,
    registry_facts,
)


# distribution/reference normalize.go (ParseNormalizedNamed): a first component is a host when it has a dot or a
# colon or is `localhost`; everything else is Docker Hub (its test normalize_test.go, TestParseNormalizedNamed).
@pytest.mark.parametrize(
    ("image", "host"),
    [
        ("busybox", "docker.io"),
        ("library/busybox:1.37", "docker.io"),
        ("mpioperator/mpi-operator:0.5", "docker.io"),
        ("docker.io/grafana/grafana:12.3.1", "docker.io"),
        ("index.docker.io/library/busybox", "docker.io"),
        ("registry-1.docker.io/library/busybox:1.37", "docker.io"),
        ("busybox:1.37", "docker.io"),
        ("localhostx/foo", "docker.io"),
        ("localhost/foo:bar", "localhost"),
        ("localhost:5000/foo", "localhost:5000"),
        ("registry.k8s.io/kueue/kueue:v0.14.8", "registry.k8s.io"),
        (
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20",
            "602401143452.dkr.ecr.us-west-2.amazonaws.com",
        ),
    ],
)
def test_image_registry_normalises_like_the_runtime(image: str, host: str) -> None:
    assert image_registry(image) == host


def test_every_aws_region_has_a_registry_k8s_io_bucket_and_an_unknown_one_has_none() -> None:
    # kubernetes/registry.k8s.io buckets_test.go TestRegionToAWSRegionToHostURL: every AWS region but GovCloud
    # (and the EU sovereign cloud) has a bucket; a made-up region gets the default (here: None, the CDN).
    for region in AVAILABILITY_ZONES:
        if region.startswith("us-gov-"):
            continue
        assert k8s_registry_bucket(region) is not None, region
    assert k8s_registry_bucket("nonsensical-region") is None


@pytest.mark.parametrize(
    ("region", "bucket", "bucket_region"),
    [
        ("us-east-1", "prod-registry-k8s-io-us-east-1", "us-east-1"),
        ("eu-central-1", "prod-registry-k8s-io-eu-central-1", "eu-central-1"),
        ("eu-west-2", "767373bbdcb8270361b96548387bf2a9ad0d48758c35-eu-west-2", "eu-west-2"),
        ("ap-east-2", "prod-registry-k8s-io-ap-east-1", "ap-east-1"),
        ("me-south-1", "prod-registry-k8s-io-me-central-1", "me-central-1"),
    ],
)
def test_registry_k8s_io_buckets_follow_archeio(region: str, bucket: str, bucket_region: str) -> None:
    assert k8s_registry_bucket(region) == (bucket, bucket_region)


def test_private_ecr_layers_come_from_the_registrys_region() -> None:
    facts = registry_facts("602401143452.dkr.ecr.us-west-2.amazonaws.com", "us-east-1")
    assert facts.ecr_region == "us-west-2"
    [store] = facts.stores
    assert (store.bucket, store.bucket_region) == ("prod-us-west-2-starport-layer-bucket", "us-west-2")
    assert ECR_HOST.match("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com")
    assert not ECR_HOST.match("public.ecr.aws")


def test_internet_registries_have_no_bucket_and_unknown_ones_no_facts() -> None:
    for host in ("public.ecr.aws", "quay.io", "ghcr.io", "nvcr.io"):
        [store] = registry_facts(host, "us-east-1").stores
        assert store.bucket is None and store.source
    assert registry_facts("registry.example.com", "us-east-1").stores == ()
    assert len(registry_facts(DOCKER_HUB, "us-east-1").stores) == 2  # a CDN, and docker-images-prod for AWS


def test_the_endpoint_reads_only_layer_objects_of_buckets_in_its_own_region() -> None:
    assert public_registry_layer_objects("aws", "us-east-1") == [
        "arn:aws:s3:::prod-registry-k8s-io-us-east-1/containers/images/*",
        "arn:aws:s3:::docker-images-prod/*",
    ]
    assert public_registry_layer_objects("aws", "eu-central-1") == [
        "arn:aws:s3:::prod-registry-k8s-io-eu-central-1/containers/images/*"
    ]
    # ap-east-2's registry.k8s.io bucket is in ap-east-1: not reached through this region's endpoint.
    assert public_registry_layer_objects("aws", "ap-east-2") == []
    statements = s3_gateway_endpoint_policy("aws", "ap-east-2", "123456789012")["Statement"]
    assert "PublicRegistryImageLayers" not in {s["Sid"] for s in statements}


def test_the_registry_statement_grants_reads_only() -> None:
    statements = s3_gateway_endpoint_policy("aws", "us-east-1", "123456789012")["Statement"]
    [registry] = [s for s in statements if s["Sid"] == "PublicRegistryImageLayers"]
    assert registry["Action"] == "s3:GetObject" and registry["Effect"] == "Allow"
    assert all(arn.endswith("/*") and ":::" in arn for arn in registry["Resource"])


def test_registry_k8s_io_layers_come_from_the_bucket_archeio_redirects_the_region_to() -> None:
    facts = registry_facts("registry.k8s.io", "me-south-1")
    [store] = facts.stores
    assert facts.ecr_region is None and store.key_prefix == "containers/images/"
    assert (store.bucket, store.bucket_region) == ("prod-registry-k8s-io-me-central-1", "me-central-1")
    assert store.description == "S3 bucket prod-registry-k8s-io-me-central-1 (me-central-1)"
    assert store.object_arn("aws") == "arn:aws:s3:::prod-registry-k8s-io-me-central-1/containers/images/sha256:0"


def test_registry_k8s_io_from_a_region_without_a_bucket_is_its_cdn() -> None:
    [store] = registry_facts("registry.k8s.io", "us-gov-west-1").stores
    assert store.bucket is None and store.bucket_region is None
    assert store.description == "registry.k8s.io's default layer CDN" and "buckets.go" in store.source


def test_docker_hub_layers_come_from_its_cdn_or_its_us_east_1_bucket_from_any_region() -> None:
    for region in ("us-east-1", "eu-west-1"):
        cdn, bucket = registry_facts(DOCKER_HUB, region).stores
        assert cdn.bucket is None and "CDN" in cdn.description
        assert (bucket.bucket, bucket.bucket_region, bucket.key_prefix) == ("docker-images-prod", "us-east-1", "")
        assert bucket.object_arn("aws") == "arn:aws:s3:::docker-images-prod/sha256:0"


def test_private_ecr_layers_in_another_partition() -> None:
    [store] = registry_facts("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn", "cn-north-1").stores
    assert store.object_arn("aws-cn") == "arn:aws-cn:s3:::prod-cn-north-1-starport-layer-bucket/sha256:0"
    assert store.description == "S3 bucket prod-cn-north-1-starport-layer-bucket (cn-north-1)"
