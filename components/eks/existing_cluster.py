"""`ExistingCluster`: an EKS cluster trainstack does not own, read back, with a Kubernetes provider for it.

Platform-only mode (`existing_cluster`): the cluster, its node groups, add-ons and access belong to someone else
(a platform team, or SageMaker HyperPod's EKS orchestrator). trainstack reads the cluster (EKS DescribeCluster
through `aws.eks.get_cluster`: endpoint, CA, cluster security group, OIDC issuer) and creates only a Kubernetes
provider for it; the program then puts its Kubernetes layer and the teams' IAM on it. It exposes what the program
reads from `EksCluster`, so the layer above is the same code on both.

The deployer must be able to reach the API (an access entry on the cluster with cluster-admin) and the cluster
must run the EKS Pod Identity agent (the teams' roles are Pod Identity associations): docs/existing-infra.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.eks.eks import _oidc_issuer, kubeconfig
from components.naming import child_name


@dataclass
class ExistingClusterArgs:
    name: str
    """The EKS cluster's name."""
    region: str


class ExistingCluster(pulumi.ComponentResource):
    """An existing EKS cluster as the program needs it: names, endpoint, CA, security group, a provider."""

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:eks:ExistingCluster", name, None, opts)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        cluster = aws.eks.get_cluster_output(name=args.name, opts=invoke)
        self.account_id = aws.get_caller_identity_output(opts=invoke).account_id
        self.cluster_name: pulumi.Output[str] = cluster.name
        self.cluster_arn: pulumi.Output[str] = cluster.arn
        self.cluster_endpoint: pulumi.Output[str] = cluster.endpoint
        self.cluster_certificate_authority: pulumi.Output[str] = cluster.certificate_authorities.apply(
            lambda authorities: authorities[0].data if authorities else ""
        )
        self.cluster_security_group_id: pulumi.Output[str] = cluster.vpc_config.cluster_security_group_id
        self.oidc_issuer_url: pulumi.Output[str] = cluster.identities.apply(_oidc_issuer)
        self.kubeconfig = pulumi.Output.all(cluster.name, cluster.endpoint, self.cluster_certificate_authority).apply(
            lambda v: json.dumps(kubeconfig(v[0], v[1], v[2], args.region))
        )
        self.k8s_provider = k8s.Provider(
            child_name(name, "k8s"),
            k8s.ProviderArgs(kubeconfig=self.kubeconfig, enable_server_side_apply=True, cluster_identifier=cluster.arn),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Nothing of the cluster is trainstack's: no add-ons, system nodes or node dependencies to wait on.
        self.addons: dict[str, pulumi.Resource] = {}
        self.system_node_group: pulumi.Resource | None = None
        self.node_dependencies: Sequence[pulumi.Resource] = ()
        self.register_outputs({"cluster_name": self.cluster_name, "cluster_arn": self.cluster_arn})
