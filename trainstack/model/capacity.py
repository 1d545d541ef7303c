"""Per GPU group, how capacity follows the work: who scales it, from and to, what a scale-up needs, how long a job
of the group's whole size waits for its nodes in the worst case, and the group's cost at min and at max.

The wait is the critical path of one gang job, from quota reservation to its nodes registered (the pods' own
start, bounded by Kueue's waitForPodsReady, comes after it). Its parts, each from its source:
- cluster-autoscaler re-evaluates the cluster every `--scan-interval`, 10 s by default (cluster-autoscaler-1.36.1
  config/const.go DefaultScanInterval), and gives up on nodes that have not registered after
  `--max-node-provision-time` (kubernetes.cluster_autoscaler.max_node_provision_time_s).
- A failed ProvisioningRequest is retried after Kueue's backoff (the group's ProvisioningRequestConfig
  `retryStrategy`, components/k8s/autoscaling.py), then the workload is deactivated.
- A Capacity Block's nodes launch at its start; the queue's capacity check is retried every `backoffMaxSeconds`,
  so the job may see them up to that long after they registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from components.k8s.autoscaling import Admission, admission, retry_strategy
from stacks.catalog import CATALOG
from stacks.schema import CapacityType, GpuNodeGroupSpec, StackConfig
from trainstack.model.cost import catalog_price

SCAN_INTERVAL = timedelta(seconds=10)

_BUY = {
    CapacityType.ON_DEMAND: "On-Demand",
    CapacityType.SPOT: "Spot",
    CapacityType.RESERVATION: "from reservation",
    CapacityType.CAPACITY_BLOCK: "from Capacity Block",
}


@dataclass(frozen=True)
class GroupCapacity:
    name: str
    scaler: str  # "cluster-autoscaler", "fixed" or "Capacity Block window"
    admission: Admission
    min_size: int
    max_size: int
    scale_up_needs: str
    wait: timedelta | None  # worst case for a job of max_size nodes when capacity is there; None: until a start
    gives_up_after: timedelta | None  # when Kueue deactivates a job whose nodes never come; None: never asks
    window: str  # "" or the block's window and whether it has started
    usd_per_hour_min: float
    usd_per_hour_max: float

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "scaler": self.scaler,
            "admission": self.admission.value,
            "minSize": self.min_size,
            "maxSize": self.max_size,
            "scaleUpNeeds": self.scale_up_needs,
            "worstCaseWaitS": None if self.wait is None else int(self.wait.total_seconds()),
            "givesUpAfterS": None if self.gives_up_after is None else int(self.gives_up_after.total_seconds()),
            "window": self.window,
            "usdPerHourMin": round(self.usd_per_hour_min, 4),
            "usdPerHourMax": round(self.usd_per_hour_max, 4),
        }


def _needs(group: GpuNodeGroupSpec) -> str:
    where = f"{group.availability_zone}" + (", one cluster placement group" if group.uses_placement_group else "")
    return f"{group.max_size - group.min_size} x {group.instance_type} {_BUY[group.capacity.type]} in {where}"


def group_capacity(stack: StackConfig, group: GpuNodeGroupSpec, now: datetime) -> GroupCapacity:
    """One group's line of the capacity plan at `now` (which decides whether a window has started)."""
    kind = admission(group)
    price, _, _ = catalog_price(CATALOG[group.instance_type])
    provision = timedelta(seconds=stack.kubernetes.cluster_autoscaler.max_node_provision_time_s)
    retry = retry_strategy(group)
    attempt = SCAN_INTERVAL + provision
    window = group.capacity.window
    wait: timedelta | None = timedelta(0)
    gives_up: timedelta | None = None
    text = ""
    if kind is Admission.NODES_EXIST:
        scaler, needs = "fixed", "nothing: the nodes exist"
    else:
        scaler = "cluster-autoscaler" if kind is Admission.ATOMIC_SCALE_UP else "Capacity Block window"
        needs = _needs(group) if kind is Admission.ATOMIC_SCALE_UP else f"the block's start ({group.max_size} nodes)"
        wait = attempt + (timedelta(seconds=retry.max_s) if kind is Admission.CHECK_CAPACITY else timedelta(0))
        gives_up = (retry.limit + 1) * attempt + retry.span()
    if group.capacity.type is CapacityType.CAPACITY_BLOCK:
        if window is None:
            text = "window not recorded (capacity.window): the plan cannot say when the nodes appear"
            wait = None
        else:
            state = window.state(now)
            text = f"{window.starts_at.isoformat()} to {window.ends_at.isoformat()} ({state})"
            if state == "future" and wait is not None:
                wait += window.starts_at - now
            elif state == "ended":
                wait = None
    return GroupCapacity(
        name=group.name,
        scaler=scaler,
        admission=kind,
        min_size=group.min_size,
        max_size=group.max_size,
        scale_up_needs=needs,
        wait=wait,
        gives_up_after=gives_up,
        window=text,
        usd_per_hour_min=price.usd * group.min_size,
        usd_per_hour_max=price.usd * group.max_size,
    )


def capacity_plan(stack: StackConfig, now: datetime) -> list[GroupCapacity]:
    return [group_capacity(stack, g, now) for g in stack.gpu_node_groups]
