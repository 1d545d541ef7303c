"""An AWS account for preflight to ask: moto's server (a real AWS API emulator over HTTP, in this process) for every
call it implements, and botocore's Stubber (requests and responses checked against the service model) for the
calls moto 5.2 lacks: capacity reservations and Capacity Block offerings, Service Quotas for EC2 (moto has only
VPC's), EKS cluster and add-on versions, SSM's public AMI parameters and SageMaker training plans.

- `Moto`: the server, started once per session on a free localhost port (see conftest.py); `moto.reset()` between
  tests gives every test an empty emulator.
- `seed(moto, stack, stack_name)`: credentials for a session of the stack's first admin role in its account (moto
  keeps one account per assumed role's account id) and every principal, the Auto Scaling service-linked role and
  the secrets-provider alias the stack needs.
- `KeyedStubber`: botocore's Stubber answering each operation from its own queue, so a whole preflight run can be
  answered without copying the order of its calls into the test.
- The canned answers (`addon_versions`, `cluster_versions`, `quota`, `capacity_reservation`, ...) follow the
  response syntax of each operation in the AWS API references, and the Stubber refuses them unless they fit
  botocore's model of that operation.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
from botocore.stub import ANY, Stubber

from stacks import account_rules
from stacks.account_rules import QUOTA_CLASSES, account_of, role_name
from stacks.schema import StackConfig
from trainstack.preflight import compute, eks
from trainstack.preflight.aws import Account
from trainstack.preflight.capacity import FAMILY as CAPACITY
from trainstack.preflight.eks import installed_addons

if TYPE_CHECKING:  # imported where the server starts: the gate's preflight tests never pay for moto (0.3 CPU-s)
    from moto.server import ThreadedMotoServer

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
SECRET = "moto-secret"  # moto accepts any secret; the access key id decides the account


@dataclass
class Moto:
    server: ThreadedMotoServer
    url: str

    def reset(self) -> None:
        """Every backend back to empty (moto's own reset endpoint)."""
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST"), timeout=10)


def start() -> Moto:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return Moto(server, f"http://{host}:{port}")


@functools.cache
def _loader() -> Any:
    """One botocore data loader for every test session: the service models are parsed once per process (the EC2
    model alone costs about 0.3 CPU-s per new session)."""
    return botocore.session.get_session().get_component("data_loader")


def session(
    access_key: str = "AKIAIOSFODNN7EXAMPLE", secret: str = SECRET, token: str | None = None, region: str = "us-east-1"
) -> boto3.Session:
    core = botocore.session.get_session()
    core.register_component("data_loader", _loader())
    return boto3.Session(
        aws_access_key_id=access_key,
        aws_secret_access_key=secret,
        aws_session_token=token,
        region_name=region,
        botocore_session=core,
    )


def assume(moto: Moto, role_arn: str, region: str) -> boto3.Session:
    """A session of `role_arn` (moto lets any role be assumed: the account is the ARN's)."""
    sts = session().client("sts", endpoint_url=moto.url, region_name=region)
    credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName="preflight")["Credentials"]
    return session(credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"], region)


def seed(
    moto: Moto,
    stack: StackConfig,
    stack_name: str,
    *,
    principals: bool = True,
    autoscaling: bool = True,
    secrets_alias: bool = True,
) -> boto3.Session:
    """The stack's account as a deploy needs it; returns a session of eks.admin_role_arns[0]."""
    admin = stack.eks.admin_role_arns[0]
    caller = assume(moto, admin, stack.region)
    iam = caller.client("iam", endpoint_url=moto.url)
    if principals:
        for _key, arn in account_rules.principals(stack):
            if account_of(arn) != account_of(admin):
                continue
            path = "/" + arn.split(":", 5)[5].split("/", 1)[1].rsplit("/", 1)[0] + "/" if arn.count("/") > 1 else "/"
            try:
                if ":role/" in arn:
                    iam.create_role(RoleName=role_name(arn), Path=path, AssumeRolePolicyDocument="{}")
                else:
                    iam.create_user(UserName=arn.rsplit("/", 1)[-1], Path=path)
            except iam.exceptions.EntityAlreadyExistsException:
                pass
    if autoscaling:
        iam.create_service_linked_role(AWSServiceName="autoscaling.amazonaws.com")
    if secrets_alias:
        kms = caller.client("kms", endpoint_url=moto.url)
        key = kms.create_key(Description="pulumi secrets")["KeyMetadata"]["KeyId"]
        kms.create_alias(AliasName=f"alias/trainstack-{stack_name}", TargetKeyId=key)
    return caller


class KeyedStubber(Stubber):
    """botocore's Stubber, each operation answered from its own queue (FIFO per operation): the first answer queued
    for exactly these parameters, else the first queued without any (so an answer for any call never takes one
    meant for a particular call)."""

    def _assert_expected_call_order(self, model: Any, params: Any) -> None:
        mine = [(i, item) for i, item in enumerate(self._queue) if item["operation_name"] == model.name]
        exact = [(i, item) for i, item in mine if _matches(item["expected_params"], params)]
        found = exact or [(i, item) for i, item in mine if item["expected_params"] is None]
        if found:
            index, item = found[0]
            del self._queue[index]
            self._queue.appendleft(item)
        super()._assert_expected_call_order(model, params)


def _matches(expected: dict[str, Any] | None, params: dict[str, Any]) -> bool:
    if expected is None:
        return False
    return expected.keys() == params.keys() and all(v is ANY or params[k] == v for k, v in expected.items())


def stubbed(service: str, region: str) -> tuple[Any, KeyedStubber]:
    client = session().client(service, region_name=region)
    stubber = KeyedStubber(client)
    stubber.activate()
    return client, stubber


# ---------------------------------------------------------------------------------------------- answers


def cluster_versions(version: str, status: str = "STANDARD_SUPPORT") -> dict[str, Any]:
    """DescribeClusterVersions (EKS API Reference, ClusterVersionInformation); 1.36's dates from the EKS release
    calendar as the stack files cite them (released 2026-06-02, standard support until 2027-08-02)."""
    return {
        "clusterVersions": [
            {
                "clusterVersion": version,
                "clusterType": "eks",
                "defaultPlatformVersion": "eks.3",
                "defaultVersion": False,
                "releaseDate": datetime.datetime(2026, 6, 2, tzinfo=datetime.UTC),
                "endOfStandardSupportDate": datetime.datetime(2027, 8, 2, tzinfo=datetime.UTC),
                "endOfExtendedSupportDate": datetime.datetime(2028, 8, 2, tzinfo=datetime.UTC),
                "status": status.lower().replace("_", "-"),
                "versionStatus": status,
            }
        ]
    }


def addon_versions(addon: str, version: str, builds: Iterable[str]) -> dict[str, Any]:
    """DescribeAddonVersions (EKS API Reference, AddonInfo / AddonVersionInfo / Compatibility)."""
    return {
        "addons": [
            {
                "addonName": addon,
                "type": "networking",
                "addonVersions": [
                    {
                        "addonVersion": build,
                        "architecture": ["amd64", "arm64"],
                        "compatibilities": [
                            {"clusterVersion": version, "platformVersions": ["*"], "defaultVersion": i == 0}
                        ],
                        "requiresConfiguration": False,
                    }
                    for i, build in enumerate(builds)
                ],
                "publisher": "eks",
                "owner": "aws",
            }
        ]
    }


def quota(code: str, name: str, value: float) -> dict[str, Any]:
    """GetServiceQuota / GetAWSDefaultServiceQuota (Service Quotas API Reference, ServiceQuota)."""
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:us-east-1:111122223333:ec2/{code}",
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


def capacity_reservation(
    reservation_id: str,
    instance_type: str,
    availability_zone: str,
    *,
    count: int,
    available: int | None = None,
    state: str = "active",
    reservation_type: str = "default",
    start: datetime.datetime | None = None,
    end: datetime.datetime | None = None,
    placement_group: str | None = None,
) -> dict[str, Any]:
    """One CapacityReservation (EC2 API Reference, CapacityReservation), as DescribeCapacityReservations lists it."""
    item: dict[str, Any] = {
        "CapacityReservationId": reservation_id,
        "OwnerId": "444455556666",
        "CapacityReservationArn": f"arn:aws:ec2:us-east-1:444455556666:capacity-reservation/{reservation_id}",
        "InstanceType": instance_type,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": availability_zone,
        "Tenancy": "default",
        "TotalInstanceCount": count,
        "AvailableInstanceCount": count if available is None else available,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": state,
        "StartDate": start or datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
        "EndDateType": "limited" if end else "unlimited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": datetime.datetime(2026, 10, 30, tzinfo=datetime.UTC),
        "ReservationType": reservation_type,
    }
    if end is not None:
        item["EndDate"] = end
    if placement_group is not None:
        item["PlacementGroupArn"] = f"arn:aws:ec2:us-east-1:444455556666:placement-group/{placement_group}"
    return {"CapacityReservations": [item]}


def answer_everything(
    stack: StackConfig, *, quota_vcpus: float = 100_000
) -> tuple[dict[tuple[str, str], Any], list[KeyedStubber]]:
    """Stubbed clients that answer every call moto lacks for a whole preflight of `stack`, the way a healthy
    account would: each reservation active and big enough, every pinned build offered, quotas of `quota_vcpus`."""
    region, version = stack.region, stack.eks.version
    ec2, reservations = stubbed("ec2", region)
    quotas, quota_stub = stubbed("service-quotas", region)
    eks_client, eks_stub = stubbed("eks", region)
    ssm, ssm_stub = stubbed("ssm", region)
    for group in stack.gpu_node_groups:
        if group.capacity.reservation_id is not None:
            block = group.capacity.type.value == "capacity_block"
            reservations.add_response(
                "describe_capacity_reservations",
                capacity_reservation(
                    group.capacity.reservation_id,
                    group.instance_type,
                    group.availability_zone,
                    count=group.max_size,
                    reservation_type="capacity-block" if block else "default",
                    placement_group=group.capacity.reservation_placement_group,
                ),
                {"CapacityReservationIds": [group.capacity.reservation_id]},
            )
    for _prefixes, found in QUOTA_CLASSES:
        for code, name in ((found.on_demand_code, found.on_demand_name), (found.spot_code, found.spot_name)):
            quota_stub.add_response(
                "get_service_quota", quota(code, name, quota_vcpus), {"ServiceCode": "ec2", "QuotaCode": code}
            )
    eks_stub.add_response("describe_cluster_versions", cluster_versions(version), {"clusterVersions": [version]})
    for addon, (_key, build) in installed_addons_of(stack).items():
        eks_stub.add_response(
            "describe_addon_versions",
            addon_versions(addon, version, [build]),
            {"addonName": addon, "kubernetesVersion": version},
        )
    overrides = {
        (compute.RESERVATIONS, "ec2"): ec2,
        (compute.FAMILY, "service-quotas"): quotas,
        (eks.FAMILY, "eks"): eks_client,
        (eks.FAMILY, "ssm"): ssm,
        (CAPACITY, "ec2"): ec2,
    }
    return overrides, [reservations, quota_stub, eks_stub, ssm_stub]


def installed_addons_of(stack: StackConfig) -> dict[str, tuple[str, str]]:
    class _Ctx:
        pass

    ctx = _Ctx()
    ctx.stack = stack  # type: ignore[attr-defined]
    return installed_addons(ctx)  # type: ignore[arg-type]


def account(moto: Moto, caller: boto3.Session, region: str, overrides: dict[tuple[str, str], Any]) -> Account:
    return Account(region, session=caller, overrides=overrides)


__all__ = ["ANY", "NOW", "Moto", "account", "account_of", "answer_everything", "assume", "seed", "start", "stubbed"]
