"""Capacity that follows the work: the cluster autoscaler's settings and a Capacity Block's window.

Self-contained on purpose: `gpu.py` (node groups) and `kubernetes.py` (the platform) each take one field
from here, so the node-group schema can grow without touching these rules.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Self

from pydantic import AwareDatetime, Field, model_validator

from stacks.schema.base import Spec

# cluster-autoscaler chart 9.59.0 (kubernetes/autoscaler tag cluster-autoscaler-chart-9.59.0,
# cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml) is the newest chart; its appVersion is 1.35.0, so the
# image tag is set to the 1.36 release (tag cluster-autoscaler-1.36.1): cluster-autoscaler's minor follows the
# Kubernetes minor it was built and tested against (cluster-autoscaler FAQ, "Releases").
CLUSTER_AUTOSCALER_CHART_VERSION = "9.59.0"
# The newest release tag of each minor eks.version takes (kubernetes/autoscaler tags cluster-autoscaler-1.x.y, as
# mirrored 2026-08-22): the image a stack runs when it pins none, so an EKS upgrade moves the autoscaler with it.
CLUSTER_AUTOSCALER_RELEASES: dict[str, str] = {
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
    "1.36": "v1.36.1",
}

# Capacity Blocks start and end at 11:30 UTC; EC2 starts terminating the block's instances 30 minutes before the
# end time (EC2 User Guide, "Capacity Blocks for ML": "How Capacity Blocks work" and "Terminate instances").
CAPACITY_BLOCK_CLOCK = time(11, 30, tzinfo=UTC)
CAPACITY_BLOCK_TERMINATION_LEAD = timedelta(minutes=30)
# Durations EC2 sells: 1 to 14 days in 1-day steps, then up to 182 days in 7-day steps (same guide).
CAPACITY_BLOCK_MAX_DAYS = 182


class ClusterAutoscalerSpec(Spec):
    """kubernetes/autoscaler's cluster-autoscaler (chart `cluster-autoscaler` from
    https://kubernetes.github.io/autoscaler), installed when a GPU node group can grow (min_size < max_size) or runs on
    a Capacity Block (whose queue's provisioning check it answers); never on an existing cluster."""

    chart_version: str = Field(
        default=CLUSTER_AUTOSCALER_CHART_VERSION,
        pattern=r"^\d+\.\d+\.\d+$",
        examples=["9.59.0"],
        description="cluster-autoscaler Helm chart version (no leading v).",
    )
    image_tag: str | None = Field(
        default=None,
        pattern=r"^v\d+\.\d+\.\d+$",
        examples=["v1.36.1"],
        description="cluster-autoscaler image tag. Left out: the newest release of eks.version's minor ("
        + ", ".join(f"{k}: {v}" for k, v in CLUSTER_AUTOSCALER_RELEASES.items())
        + "); set, its minor must equal eks.version's or be one behind while upgrading (the autoscaler's minor "
        "follows the Kubernetes minor).",
    )
    max_node_provision_time_s: int = Field(
        default=900,
        ge=60,
        le=3600,
        description="Seconds the autoscaler waits for a new node to register before it gives up on the scale-up "
        "(`--max-node-provision-time`, upstream default 15m): the longest a gang job waits for one attempt.",
    )
    scale_down_unneeded_time_s: int = Field(
        default=600,
        ge=60,
        le=86400,
        description="Seconds a GPU node stays empty before the autoscaler removes it (`--scale-down-unneeded-time`, "
        "upstream default 10m).",
    )

    def image_for(self, kubernetes_version: str) -> str:
        """The image tag the stack runs on `kubernetes_version` (a minor such as "1.36")."""
        return self.image_tag or CLUSTER_AUTOSCALER_RELEASES[kubernetes_version]

    @property
    def minor(self) -> str | None:
        """The Kubernetes minor a pinned image is for, e.g. "1.36"; None when none is pinned."""
        return None if self.image_tag is None else ".".join(self.image_tag.removeprefix("v").split(".")[:2])


class ReservationWindow(Spec):
    """When a Capacity Block's instances can run: from `starts_at` to `ends_at` (both at 11:30 UTC)."""

    starts_at: AwareDatetime = Field(
        examples=["2026-10-01T11:30:00Z"], description="The block's start (ISO 8601 with a zone), 11:30 UTC."
    )
    ends_at: AwareDatetime = Field(
        examples=["2026-10-08T11:30:00Z"], description="The block's end (ISO 8601 with a zone), 11:30 UTC."
    )

    @model_validator(mode="after")
    def _window(self) -> Self:
        problems: list[str] = []
        for key, value in (("starts_at", self.starts_at), ("ends_at", self.ends_at)):
            clock = value.astimezone(UTC).timetz()
            if clock != CAPACITY_BLOCK_CLOCK:
                problems.append(f"{key} {value.isoformat()} is not at 11:30 UTC: Capacity Blocks start and end then")
        days = (self.ends_at - self.starts_at) / timedelta(days=1)
        if not 1 <= days <= CAPACITY_BLOCK_MAX_DAYS:
            problems.append(f"window of {days:g} days; Capacity Blocks last 1 to {CAPACITY_BLOCK_MAX_DAYS} days")
        elif days != int(days) or (days > 14 and int(days) % 7):
            problems.append(f"window of {days:g} days; Capacity Blocks last whole days, and weeks past 14 days")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def last_instance_at(self) -> datetime:
        """When EC2 starts terminating the block's instances (30 minutes before the end)."""
        return self.ends_at - CAPACITY_BLOCK_TERMINATION_LEAD

    def state(self, now: datetime) -> str:
        """ "future", "active" or "ended" at `now`."""
        if now < self.starts_at:
            return "future"
        return "active" if now < self.ends_at else "ended"
