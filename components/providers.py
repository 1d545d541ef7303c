"""Explicit providers. Default providers are disabled in every stack file
(`pulumi:disable-default-providers: ["*"]`), so every resource names one of these and nothing lands in
whatever AWS profile or kubeconfig happens to be active."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws


def aws_provider(name: str, region: str, tags: dict[str, str], aliases: Sequence[pulumi.Alias] = ()) -> aws.Provider:
    """The AWS provider for the stack's region, with the global tags as default_tags.

    `aliases`: names it had before; every resource's state refers to its provider by URN, so a provider renamed
    without an alias would make Pulumi see every AWS resource move to a new provider.
    """
    return aws.Provider(
        name,
        aws.ProviderArgs(
            region=region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=tags),
        ),
        opts=pulumi.ResourceOptions(aliases=list(aliases)),
    )
