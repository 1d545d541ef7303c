"""Explicit providers. Default providers are disabled in every stack file
(`pulumi:disable-default-providers: ["*"]`), so every resource names one of these and nothing lands in
whatever AWS profile or kubeconfig happens to be active."""

from __future__ import annotations

import pulumi_aws as aws


def aws_provider(name: str, region: str, tags: dict[str, str]) -> aws.Provider:
    """The AWS provider for the stack's region, with the global tags as default_tags."""
    return aws.Provider(
        name,
        aws.ProviderArgs(
            region=region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=tags),
        ),
    )
