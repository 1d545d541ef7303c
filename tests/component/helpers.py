"""Builders for component tests: a provider and spec objects as __main__.py would make them."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s


def aws_opts(protect: bool = False) -> pulumi.ResourceOptions:
    provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
    return pulumi.ResourceOptions(provider=provider, protect=protect)


def k8s_opts() -> pulumi.ResourceOptions:
    provider = k8s.Provider("k8s", k8s.ProviderArgs(kubeconfig="{}"))
    return pulumi.ResourceOptions(provider=provider)
