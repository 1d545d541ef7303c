"""The AWS layer's promises: read-only in code, retries on throttling, one line for every way AWS cannot answer."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator

import botocore.session
import pytest
from botocore import xform_name
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)

from stacks.load import stack_file
from tests.conftest import stack_config
from tests.preflight import helpers as h
from trainstack import cli
from trainstack.preflight import compute, runner
from trainstack.preflight.aws import (
    MAX_ATTEMPTS,
    READ_ONLY,
    Account,
    AskFailed,
    CannotAsk,
    ReadOnlyViolation,
    error_code,
)


def test_every_allowed_call_exists_and_only_reads() -> None:
    core = botocore.session.get_session()
    for service, operation in sorted(READ_ONLY):
        model = core.get_service_model(service)
        assert operation in model.operation_names, (service, operation)
        assert re.match(r"^(Describe|Get|List)[A-Z]", operation), (service, operation)


@pytest.mark.e2e
def test_a_call_that_would_change_the_account_is_refused_before_it_is_sent(moto: h.Moto) -> None:
    caller = h.seed(moto, stack_config("dev"), "dev")
    account = Account("us-east-1", session=caller)
    iam = account.client("identity", "iam")
    with pytest.raises(ReadOnlyViolation, match="iam:CreateRole is not a read-only call"):
        iam.create_role(RoleName="made-by-preflight", AssumeRolePolicyDocument="{}")
    with pytest.raises(ReadOnlyViolation):
        account.client("compute", "ec2").run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)
    # Nothing reached the emulator: the role does not exist there.
    roles = caller.client("iam", endpoint_url=moto.url).list_roles()["Roles"]
    assert "made-by-preflight" not in {r["RoleName"] for r in roles}
    # A client handed in (the tests' stubbed ones) is guarded the same way.
    ec2, _ = h.stubbed("ec2", "us-east-1")
    guarded = Account("us-east-1", session=caller, overrides={("reservations", "ec2"): ec2})
    with pytest.raises(ReadOnlyViolation, match="PurchaseCapacityBlock"):
        guarded.client("reservations", "ec2").purchase_capacity_block(
            CapacityBlockOfferingId="cb-0123456789abcdef0", InstancePlatform="Linux/UNIX"
        )


@pytest.mark.usefixtures("aws_env")
def test_no_credentials_is_one_line_and_exit_7(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["preflight", "--stack", "dev"]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: AWS could not be asked: no usable AWS credentials")


@pytest.mark.usefixtures("aws_env")
def test_credentials_aws_refuses_stop_preflight() -> None:
    sts, stub = h.stubbed("sts", "us-east-1")
    stub.add_client_error(
        "get_caller_identity", "ExpiredToken", "The security token included in the request is expired"
    )
    account = Account("us-east-1", session=h.session(), overrides={("identity", "sts"): sts})
    with pytest.raises(CannotAsk, match="ExpiredToken"):
        runner.run(stack_config("dev"), "dev", account, now=h.NOW)


@pytest.mark.e2e
def test_access_denied_is_an_error_check_and_the_others_go_on(
    moto: h.Moto, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = stack_config("prod")
    caller = h.seed(moto, stack, "prod")
    overrides, _ = h.answer_everything(stack)
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_client_error(
        "describe_capacity_reservations",
        "UnauthorizedOperation",
        "You are not authorized to perform this operation.",
        http_status_code=403,
    )
    overrides[(compute.RESERVATIONS, "ec2")] = ec2
    monkeypatch.setattr("trainstack.preflight.aws.boto3.Session", lambda: caller)
    real = Account.__init__

    def with_overrides(self: Account, region: str, **kwargs: object) -> None:
        real(self, region, session=caller, overrides=overrides)

    monkeypatch.setattr(Account, "__init__", with_overrides)
    assert cli.main(["preflight", "--stack", "prod", "--format", "json"]) == 7
    out = capsys.readouterr().out
    assert '"status": "error"' in out and "ec2:DescribeCapacityReservations was denied (UnauthorizedOperation)" in out
    assert '"verdict": "error"' in out and '"id": "eks.version"' in out  # the families after it still ran


class _Throttling(http.server.BaseHTTPRequestHandler):
    """STS over HTTP that throttles the first `throttle` requests, then answers GetCallerIdentity."""

    throttle = 0
    seen = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen += 1
        if type(self).seen <= type(self).throttle:
            body, status = (
                (
                    b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded"
                    b"</Message></Error><RequestId>1</RequestId></ErrorResponse>"
                ),
                400,
            )
        else:
            body, status = (
                (
                    b"<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:sts::111122223333:"
                    b"assumed-role/ml-platform-admin/x</Arn><UserId>AROA:x</UserId><Account>111122223333"
                    b"</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>2</RequestId>"
                    b"</ResponseMetadata></GetCallerIdentityResponse>"
                ),
                200,
            )
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def throttling(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Throttling]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Throttling)
    # serve_forever polls for shutdown every 0.5 s by default: each teardown would wait that long.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    _Throttling.seen = 0
    try:
        yield _Throttling
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits botocore's retry handler asks for between attempts (botocore/endpoint.py sleeps for what the
    standard mode's handler returns), recorded instead of slept: up to a second each for a throttled first retry."""
    waits: list[float] = []
    monkeypatch.setattr("botocore.endpoint.time.sleep", waits.append)
    return waits


@pytest.mark.usefixtures("aws_env")
def test_throttling_is_retried_with_backoff(throttling: type[_Throttling], backoff: list[float]) -> None:
    throttling.throttle = 1
    account = Account("us-east-1", session=h.session(), max_attempts=2)
    assert runner.whoami(account)[0] == "111122223333"
    assert throttling.seen == 2  # throttled once, answered on the retry
    assert len(backoff) == 1 and 0 <= backoff[0] <= 1  # standard mode: random up to base 1 s x 2^0 when throttled


@pytest.mark.usefixtures("aws_env")
def test_throttling_past_the_retries_is_one_line(throttling: type[_Throttling], backoff: list[float]) -> None:
    throttling.throttle = 99
    account = Account("us-east-1", session=h.session(), max_attempts=2)
    with pytest.raises(AskFailed, match=r"still throttled \(Throttling\) after 2 attempts"):
        account.ask("identity", "sts", "GetCallerIdentity")
    assert throttling.seen == 2
    assert len(backoff) == 1  # a wait between the two attempts, none after the last


@pytest.mark.usefixtures("aws_env")
def test_an_unreachable_endpoint_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", h.SECRET)
    monkeypatch.setattr("trainstack.preflight.aws.MAX_ATTEMPTS", 1)  # no backoff to wait through
    assert cli.main(["preflight", "--config", str(stack_file("dev"))]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach sts in us-east-1" in err[0]


@pytest.mark.usefixtures("aws_env")
def test_a_region_without_the_service_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    account = Account("us-east-1", session=h.session(), max_attempts=1)
    monkeypatch.setattr(account.session, "get_available_regions", lambda service: ["eu-west-1"])
    with pytest.raises(AskFailed, match=r"^sagemaker is not offered in us-east-1"):
        account.ask("sagemaker", "sagemaker", "DescribeTrainingPlan", TrainingPlanName="p")


# ------------------------------------------------------------------------- each promise alone, no emulator


def _failing(service: str, operation: str, error: Exception) -> Account:
    """An account whose `service` client (stubbed, for family "f") raises `error` from inside the call, as botocore
    raises a credentials error while signing and a connection error while sending."""
    client, stub = h.stubbed(service, "us-east-1")
    stub.add_response(xform_name(operation), {})  # never returned: the error comes before it

    def raise_it(**_: object) -> None:
        raise error

    client.meta.events.register(f"before-parameter-build.{service}.{operation}", raise_it)
    return Account("us-east-1", session=h.session(), overrides={("f", service): client}, max_attempts=1)


@pytest.mark.usefixtures("aws_env")
def test_a_write_is_refused_on_clients_the_account_makes_and_reads_go_through() -> None:
    account = Account("us-east-1", session=h.session())
    with pytest.raises(ReadOnlyViolation, match=r"^ec2:RunInstances is not a read-only call preflight makes; refused"):
        account.client("compute", "ec2").run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)
    sts, stub = h.stubbed("sts", "us-east-1")
    stub.add_response("get_caller_identity", {"Account": "111122223333", "Arn": "arn:aws:iam::111122223333:root"})
    guarded = Account("us-east-1", session=h.session(), overrides={("identity", "sts"): sts})
    assert guarded.ask("identity", "sts", "GetCallerIdentity")["Account"] == "111122223333"
    with pytest.raises(ReadOnlyViolation, match="sts:AssumeRole"):
        sts.assume_role(RoleArn="arn:aws:iam::111122223333:role/x", RoleSessionName="x")


@pytest.mark.usefixtures("aws_env")
def test_an_account_retries_in_standard_mode_six_times_unless_told() -> None:
    account = Account("us-east-1")
    assert account.max_attempts == MAX_ATTEMPTS == 6
    assert account.config.retries == {"mode": "standard", "total_max_attempts": 6}
    assert Account("us-east-1", max_attempts=2).config.retries == {"mode": "standard", "total_max_attempts": 2}
    assert (account.config.connect_timeout, account.config.read_timeout) == (5, 30)
    assert account.config.user_agent_extra == "trainstack-preflight"


@pytest.mark.usefixtures("aws_env")
def test_clients_are_one_per_service_and_region_and_an_override_only_for_its_family() -> None:
    ec2, _ = h.stubbed("ec2", "us-east-1")
    account = Account("us-east-1", session=h.session(), overrides={("reservations", "ec2"): ec2})
    assert account.client("reservations", "ec2") is ec2
    made = account.client("compute", "ec2")
    assert made is not ec2 and account.client("network", "ec2") is made  # shared by families
    assert made.meta.region_name == "us-east-1" and made.meta.config.retries["total_max_attempts"] == 6
    west = account.client("compute", "ec2", "us-west-2")
    assert west is not made and west.meta.region_name == "us-west-2"
    assert account.client("reservations", "ec2", "us-west-2") is ec2  # an override answers in any region


@pytest.mark.usefixtures("aws_env")
def test_no_region_at_all_cannot_be_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    account = Account(None, session=h.session(region=None))  # pyrefly: ignore[bad-argument-type]
    with pytest.raises(CannotAsk, match=r"^no region for ec2$"):
        account.client("compute", "ec2")


@pytest.mark.usefixtures("aws_env")
def test_a_paginated_question_is_read_to_the_last_page() -> None:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    page = {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone"}
    stub.add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": [page | {"Location": "us-east-1a"}], "NextToken": "more"},
        {"LocationType": "availability-zone"},
    )
    stub.add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": [page | {"Location": "us-east-1c"}]},
        {"LocationType": "availability-zone", "NextToken": "more"},
    )
    account = Account("us-east-1", session=h.session(), overrides={("compute", "ec2"): ec2})
    found = account.ask("compute", "ec2", "DescribeInstanceTypeOfferings", LocationType="availability-zone")
    assert [o["Location"] for o in found["InstanceTypeOfferings"]] == ["us-east-1a", "us-east-1c"]
    stub.assert_no_pending_responses()


@pytest.mark.usefixtures("aws_env")
@pytest.mark.parametrize(
    ("error", "says"),
    [
        (NoCredentialsError(), "no usable AWS credentials (Unable to locate credentials); preflight uses the standard"),
        (PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY"), "no usable AWS credentials"),
        (CredentialRetrievalError(provider="sso", error_msg="expired"), "no usable AWS credentials"),
        (TokenRetrievalError(provider="sso", error_msg="expired"), "SSO (aws sso login) or an instance role"),
        (SSOError(), "the SSO session cannot give credentials (An unspecified error"),
    ],
)
def test_credentials_that_cannot_be_had_stop_preflight(error: Exception, says: str) -> None:
    with pytest.raises(CannotAsk) as raised:
        _failing("sts", "GetCallerIdentity", error).ask("f", "sts", "GetCallerIdentity")
    assert says in str(raised.value)


def _refused(code: str, message: str = " Not today. ") -> Account:
    sts, stub = h.stubbed("sts", "us-east-1")
    stub.add_client_error("get_caller_identity", code, message, http_status_code=403)
    return Account("us-east-1", session=h.session(), overrides={("f", "sts"): sts}, max_attempts=3)


@pytest.mark.usefixtures("aws_env")
def test_each_kind_of_refusal_is_told_apart_by_its_code() -> None:
    with pytest.raises(CannotAsk, match=r"^AWS refused the credentials \(InvalidClientTokenId: Not today.\); renew"):
        _refused("InvalidClientTokenId").ask("f", "sts", "GetCallerIdentity")
    with pytest.raises(AskFailed, match=r"^sts:GetCallerIdentity was denied \(AccessDenied\); give the caller read"):
        _refused("AccessDenied").ask("f", "sts", "GetCallerIdentity")
    with pytest.raises(AskFailed, match=r"still throttled \(ThrottlingException\) after 3 attempts with backoff"):
        _refused("ThrottlingException").ask("f", "sts", "GetCallerIdentity")
    with pytest.raises(ClientError) as other:  # a NotFound is the check's to read
        _refused("NoSuchEntity").ask("f", "sts", "GetCallerIdentity")
    assert error_code(other.value) == "NoSuchEntity"


def test_an_error_without_a_code_has_an_empty_one() -> None:
    assert error_code(ClientError({}, "GetRole")) == ""
    assert error_code(ClientError({"Error": {"Code": "NoSuchEntity"}}, "GetRole")) == "NoSuchEntity"


@pytest.mark.usefixtures("aws_env")
@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://ec2.us-east-1.amazonaws.com/"),
        ConnectTimeoutError(endpoint_url="https://ec2.us-east-1.amazonaws.com/"),
        ReadTimeoutError(endpoint_url="https://ec2.us-east-1.amazonaws.com/"),
        ConnectionClosedError(endpoint_url="https://ec2.us-east-1.amazonaws.com/"),
    ],
)
def test_an_endpoint_that_does_not_answer_is_one_check_error(error: Exception) -> None:
    with pytest.raises(AskFailed, match=r"^cannot reach ec2 in us-west-2: .*ec2\.us-east-1\.amazonaws\.com"):
        _failing("ec2", "DescribeVpcs", error).ask("f", "ec2", "DescribeVpcs", region="us-west-2")


@pytest.mark.usefixtures("aws_env")
def test_sts_is_never_said_to_be_missing_from_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    account = _failing("sts", "GetCallerIdentity", EndpointConnectionError(endpoint_url="https://sts.amazonaws.com"))
    monkeypatch.setattr(account.session, "get_available_regions", lambda service: ["eu-west-1"])
    with pytest.raises(AskFailed, match=r"^cannot reach sts in us-east-1"):
        account.ask("f", "sts", "GetCallerIdentity")
    account = _failing("ec2", "DescribeVpcs", EndpointConnectionError(endpoint_url="https://ec2"))
    monkeypatch.setattr(account.session, "get_available_regions", lambda service: ["us-east-1"])
    with pytest.raises(AskFailed, match=r"^cannot reach ec2 in us-east-1"):  # offered here: only unreachable
        account.ask("f", "ec2", "DescribeVpcs")
