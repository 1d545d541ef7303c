"""trainstack: the composition root. Load and validate the stack config, build the explicit providers,
compose the components, export what exists. Every decision lives in `stacks/` (what) or `components/`
(how); this file only wires them together."""

import pulumi

from components.naming import default_tags
from components.providers import aws_provider
from stacks.load import ConfigError, validate_object
from stacks.schema import CONFIG_KEY, CONFIG_NAMESPACE

try:
    cluster = validate_object(pulumi.Config(CONFIG_NAMESPACE).require_object(CONFIG_KEY), f"stack {pulumi.get_stack()}")
except ConfigError as error:
    raise pulumi.RunError(error.render()) from None

tags = default_tags(
    project=pulumi.get_project(),
    environment=cluster.environment.value,
    cost_center=cluster.tags.cost_center,
    owner=cluster.tags.owner,
    extra=cluster.tags.extra,
)
aws = aws_provider(f"{cluster.name}-aws", cluster.region, tags)

# [network-eks-gpu]

# [data-layer]

# [kubernetes-platform]

# [sagemaker]

pulumi.export("environment", cluster.environment.value)
pulumi.export("region", cluster.region)
