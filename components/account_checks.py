"""The account's state, checked by the program itself before it registers anything: a real `pulumi preview` or
`pulumi up` stops at once, with the line `python -m trainstack preflight` prints for the same fact (both judge with
stacks/account_rules.py; docs/preflight.md, "During a real `pulumi preview` and `up`").

What pulumi-aws's read functions can answer, one synchronous invoke each through the stack's provider (preflight's
check ids):

- `identity.account`, `identity.caller-is-admin`: aws:index/getCallerIdentity. A caller outside eks.admin_role_arns
  fails `pulumi up` but only warns in a preview, which often runs as a read-only role (.github/workflows/plan.yml).
- `identity.principal.<key>`, `identity.autoscaling-role`: aws:iam/getRoles (aws:iam/getUsers for a user ARN), the
  principals in the caller's account.
- `compute.offering.<group>`, `compute.offering.system`: aws:ec2/getInstanceTypeOfferings per instance type.
- `compute.quota.<class>[-spot]`: aws:servicequotas/getServiceQuota, the accelerator vCPU quotas at max size.
- `compute.reservation.<group>`: aws:ec2/getCapacityBlockReservation, for a group on a Capacity Block, and
  aws:ec2/getInstances for the stack's own nodes already in it (a day-2 `pulumi up`).
- `eks.version`: aws:eks/getClusterVersions.

Left to preflight, which asks the APIs directly: On-Demand Capacity Reservations (pulumi-aws 7.51 has no data source
for one), add-on builds (aws:eks/getAddonVersion answers only the default or newest build, not whether a pinned one
exists), AMI releases, the system nodes' Standard quota and what already runs outside the stack, the secrets key
(the CLI opens it before the program starts), an existing VPC's free addresses, HyperPod's training plan.

An invoke that fails (access denied, throttled past the provider's retries) leaves its check "not checked" with a
warning rather than stopping the deployment; a Capacity Block the provider cannot find is a failure. Under the mock
engine (the offline plan) the invokes are made and trainstack/mocks.py answers them, which sees no account: nothing
is judged, and every check is "not checked (offline)".
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import pulumi
import pulumi_aws as aws

from stacks.account_rules import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_ROLE_PATH,
    EKS_CLUSTER_TAG,
    NOT_CHECKED_OFFLINE,
    QUOTA_CLASSES,
    Reservation,
    account_of,
    account_problem,
    autoscaling_role_problem,
    caller_admin_problem,
    eks_version_problem,
    offering_problem,
    principal_problem,
    principals,
    quota_check_id,
    quota_demands,
    quota_problem,
    reservation_problems,
    stack_accounts,
)
from stacks.schema import CapacityType, StackConfig

PASSED = "passed"
FAILED = "failed"
WARNING = "warning"
ODCR_NOT_ASKED = "not checked: pulumi-aws has no data source for an On-Demand Capacity Reservation"
# How the provider says a Capacity Block does not exist: EC2's error code, or the provider's own wording for a
# singular data source that matched nothing.
_NOT_FOUND = re.compile(r"NotFound|not found|couldn't find|no matching|empty result", re.IGNORECASE)

T = TypeVar("T")


@dataclass
class _Checks:
    """Each check's status, and every problem found; nothing is judged under the mock engine."""

    judge: bool
    preview: bool
    statuses: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def record(self, check_id: str, problems: Iterable[str | None]) -> None:
        found = [p for p in problems if p]
        if not self.judge:
            self.statuses[check_id] = NOT_CHECKED_OFFLINE
            return
        self.statuses[check_id] = FAILED if found else PASSED
        self.problems.extend(found)

    def warn(self, check_id: str, problem: str | None, why: str) -> None:
        """A problem that stops `pulumi up` but only warns in a preview."""
        if not self.preview or not self.judge:
            self.record(check_id, [problem])
        elif problem is not None:
            self.statuses[check_id] = WARNING
            pulumi.log.warn(f"{problem} ({why})")
        else:
            self.statuses[check_id] = PASSED

    def ask(self, check_ids: Iterable[str], invoke: Callable[[], T]) -> T | None:
        """The invoke's answer, or None when it failed: those checks are then not checked, with a warning."""
        try:
            return invoke()
        except Exception as error:  # the SDK raises a bare Exception for a failed invoke
            if not self.judge:
                raise  # under the mock engine a failed invoke is a gap in trainstack/mocks.py, not the account's
            self.unchecked(check_ids, str(error))
            return None

    def unchecked(self, check_ids: Iterable[str], why: str) -> None:
        ids = list(check_ids)
        for check_id in ids:
            self.statuses[check_id] = f"not checked: {why}"
        pulumi.log.warn(f"account check {', '.join(ids)} not made: {why}; `python -m trainstack preflight` asks")


def check_account(stack: StackConfig, provider: pulumi.ProviderResource, *, judge: bool) -> dict[str, str]:
    """Ask the account what `pulumi up` of `stack` needs and raise one RunError naming every problem; return each
    check's status by preflight's id. `judge` is False under the mock engine, whose answers are no account's."""
    opts = pulumi.InvokeOptions(provider=provider)
    checks = _Checks(judge=judge, preview=pulumi.runtime.is_dry_run())
    caller = checks.ask(["identity.account", "identity.caller-is-admin"], lambda: aws.get_caller_identity(opts=opts))
    if caller is not None:
        checks.record("identity.account", [account_problem(caller.account_id, stack_accounts(stack))])
        if checks.problems:  # every other answer would be another account's
            _fail(stack, checks)
        checks.warn(
            "identity.caller-is-admin",
            caller_admin_problem(caller.arn, stack.eks.admin_role_arns),
            "`pulumi up` must run as one of them; a preview may run as a read-only role",
        )
        # Only the caller's account can be read; offline there is no caller, and the stack's account stands for it.
        home = caller.account_id if judge else next(iter(stack_accounts(stack)), caller.account_id)
        _principals(stack, home, opts, checks)
    _offerings(stack, opts, checks)
    _quotas(stack, opts, checks)
    _capacity_blocks(stack, opts, checks)
    _eks_version(stack, opts, checks)
    if checks.problems:
        _fail(stack, checks)
    return checks.statuses


def _fail(stack: StackConfig, checks: _Checks) -> None:
    lines = "\n".join(f"  - {p}" for p in checks.problems)
    raise pulumi.RunError(
        f"the account cannot take stack {stack.name} in {stack.region}: {len(checks.problems)} problem(s), "
        f"found before anything was created (`python -m trainstack preflight` shows each with what to do):\n{lines}"
    )


def _principals(stack: StackConfig, caller_account: str, opts: pulumi.InvokeOptions, checks: _Checks) -> None:
    """Each role or user the stack names in the caller's account exists under exactly that ARN, and so does the Auto
    Scaling service-linked role: one ListRoles (and ListUsers) for all of them. Others' accounts cannot be read."""
    first_key: dict[str, str] = {}
    for key, arn in principals(stack):
        first_key.setdefault(arn, key)
    mine = [(key, arn) for arn, key in first_key.items() if account_of(arn) == caller_account]
    role_ids = [f"identity.principal.{key}" for key, arn in mine if ":role/" in arn]
    user_ids = [f"identity.principal.{key}" for key, arn in mine if ":role/" not in arn]
    roles = checks.ask([*role_ids, "identity.autoscaling-role"], lambda: aws.iam.get_roles(opts=opts))
    users = checks.ask(user_ids, lambda: aws.iam.get_users(opts=opts)) if user_ids else None
    for key, arn in mine:
        listed = roles if ":role/" in arn else users
        if listed is None:
            continue
        name = arn.rsplit("/", 1)[-1]
        found = next((a for a in listed.arns if a.rsplit("/", 1)[-1] == name), None)
        checks.record(f"identity.principal.{key}", [principal_problem(key, arn, found)])
    if roles is not None:
        autoscaling = f":role{AUTOSCALING_ROLE_PATH}{AUTOSCALING_ROLE_NAME}"
        exists = any(a.endswith(autoscaling) for a in roles.arns)
        checks.record("identity.autoscaling-role", [autoscaling_role_problem(exists)])


def _offerings(stack: StackConfig, opts: pulumi.InvokeOptions, checks: _Checks) -> None:
    """Each GPU group's type is offered in its AZ, the system type in every AZ of the network (AZ names map to
    different zones in each account: only the account's own answer counts)."""
    system = stack.eks.system_node_group.instance_type
    wanted: dict[str, list[str]] = {}
    for group in stack.gpu_node_groups:
        wanted.setdefault(group.instance_type, []).append(f"compute.offering.{group.name}")
    wanted.setdefault(system, []).append("compute.offering.system")
    offered: dict[str, list[str]] = {}
    for instance_type, ids in wanted.items():
        answer = checks.ask(
            ids,
            lambda instance_type=instance_type: aws.ec2.get_instance_type_offerings(
                location_type="availability-zone",
                filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=[instance_type])],
                opts=opts,
            ),
        )
        if answer is not None:
            offered[instance_type] = list(answer.locations)
    for i, group in enumerate(stack.gpu_node_groups):
        if (zones := offered.get(group.instance_type)) is not None:
            key = f"gpu_node_groups[{i}].availability_zone"
            problem = offering_problem(key, group.instance_type, group.availability_zone, zones)
            checks.record(f"compute.offering.{group.name}", [problem])
    if (zones := offered.get(system)) is not None:
        key = "eks.system_node_group.instance_type"
        problems = [offering_problem(key, system, az, zones) for az in stack.network.availability_zones]
        checks.record("compute.offering.system", problems)


def _quotas(stack: StackConfig, opts: pulumi.InvokeOptions, checks: _Checks) -> None:
    """The accelerator vCPU quotas cover every On-Demand and Spot group at max size (the system nodes' Standard
    quota and what already runs outside the stack are preflight's: they need DescribeInstances)."""
    classes = {found.label: found for _, found in QUOTA_CLASSES}
    for (label, spot), demand in sorted(quota_demands(stack, system_vcpus=None).items()):
        found_class = classes[label]
        name, code = (
            (found_class.spot_name, found_class.spot_code)
            if spot
            else (found_class.on_demand_name, found_class.on_demand_code)
        )
        check_id = quota_check_id(label, spot)
        quota = checks.ask(
            [check_id],
            lambda code=code: aws.servicequotas.get_service_quota(service_code="ec2", quota_code=code, opts=opts),
        )
        if quota is None:
            continue
        if quota.quota_name != name:  # a wrong code in the table must not judge another quota
            checks.unchecked([check_id], f"quota {code} is '{quota.quota_name}' in this account, not '{name}'")
            continue
        checks.record(check_id, [quota_problem(name, code, quota.value, demand, None)])


def _capacity_blocks(stack: StackConfig, opts: pulumi.InvokeOptions, checks: _Checks) -> None:
    """Each Capacity Block a group launches into exists, is active and fits the group (type, AZ, free instances,
    tenancy, platform, placement group); an On-Demand Capacity Reservation is left to preflight."""
    for i, group in enumerate(stack.gpu_node_groups):
        capacity, check_id = group.capacity, f"compute.reservation.{group.name}"
        if not capacity.reserved or capacity.reservation_id is None:
            continue
        if capacity.type is not CapacityType.CAPACITY_BLOCK:
            checks.statuses[check_id] = ODCR_NOT_ASKED
            continue
        key, rid = f"gpu_node_groups[{i}].capacity", capacity.reservation_id
        try:
            block = aws.ec2.get_capacity_block_reservation(id=rid, opts=opts)
        except Exception as error:  # the SDK raises a bare Exception for a failed invoke
            if not checks.judge:
                raise
            if not _NOT_FOUND.search(str(error)):
                checks.unchecked([check_id], str(error))
                continue
            found = None
        else:
            found = Reservation(
                id=block.id,
                instance_type=block.instance_type,
                availability_zone=block.availability_zone,
                state=block.state,
                reservation_type=block.reservation_type,
                total=int(block.instance_count),
                available=int(block.available_instance_count),
                tenancy=block.tenancy,
                platform=block.instance_platform,
                start=_when(block.start_date),
                end=_when(block.end_date),
                placement_group_arn=block.placement_group_arn or None,
            )
        running = 0
        if found is not None:
            nodes = checks.ask([check_id], lambda rid=rid: _stack_nodes(stack, rid, opts))
            if nodes is None:
                continue
            running = nodes
        problems = reservation_problems(
            key,
            group.instance_type,
            group.availability_zone,
            True,
            capacity.reservation_placement_group,
            group.desired_size,
            found,
            rid,
            running,
        )
        checks.record(check_id, problems)


def _stack_nodes(stack: StackConfig, reservation_id: str, opts: pulumi.InvokeOptions) -> int:
    """This stack's pending and running nodes in the reservation: on a day-2 `pulumi up` they hold it for the
    group, so they count as the group's, not as taken."""
    return len(
        aws.ec2.get_instances(
            instance_tags={EKS_CLUSTER_TAG: stack.name},
            instance_state_names=["pending", "running"],
            filters=[aws.ec2.GetInstancesFilterArgs(name="capacity-reservation-id", values=[reservation_id])],
            opts=opts,
        ).ids
    )


def _when(value: str | None) -> datetime.datetime | None:
    """An RFC 3339 date as the provider returns it, or None."""
    return datetime.datetime.fromisoformat(value) if value else None


def _eks_version(stack: StackConfig, opts: pulumi.InvokeOptions, checks: _Checks) -> None:
    version = stack.eks.version
    answer = checks.ask(
        ["eks.version"], lambda: aws.eks.get_cluster_versions(cluster_versions_onlies=[version], opts=opts)
    )
    if answer is not None:
        row = next((v for v in answer.cluster_versions if v.cluster_version == version), None)
        status = row.version_status if row is not None else ""
        checks.record("eks.version", [eks_version_problem(version, stack.region, status)])
