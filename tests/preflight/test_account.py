"""The AWS layer's promises: read-only in code, retries on throttling, one line for every way AWS cannot answer."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator

import botocore.session
import pytest

from stacks.load import stack_file
from tests.conftest import stack_config
from tests.preflight import helpers as h
from trainstack import cli
from trainstack.preflight import compute, runner
from trainstack.preflight.aws import READ_ONLY, Account, AskFailed, CannotAsk, ReadOnlyViolation


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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    _Throttling.seen = 0
    try:
        yield _Throttling
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.usefixtures("aws_env")
def test_throttling_is_retried_with_backoff(throttling: type[_Throttling]) -> None:
    throttling.throttle = 1
    account = Account("us-east-1", session=h.session(), max_attempts=2)
    assert runner.whoami(account)[0] == "111122223333"
    assert throttling.seen == 2  # throttled once, answered on the retry


@pytest.mark.usefixtures("aws_env")
def test_throttling_past_the_retries_is_one_line(throttling: type[_Throttling]) -> None:
    throttling.throttle = 99
    account = Account("us-east-1", session=h.session(), max_attempts=2)
    with pytest.raises(AskFailed, match=r"still throttled \(Throttling\) after 2 attempts"):
        account.ask("identity", "sts", "GetCallerIdentity")
    assert throttling.seen == 2


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
