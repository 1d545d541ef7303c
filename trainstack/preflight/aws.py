"""The only way preflight talks to AWS: read-only clients, retries with backoff, failures as one line.

- **Read-only, enforced.** Every client preflight uses refuses, before anything is sent, any operation not in
  `READ_ONLY` (the Describe/Get/List calls the checks make, each declared next to its check): a botocore
  `provide-client-params` hook, the first event of every API call. Nothing preflight runs can change the account.
- **Retries.** botocore's standard retry mode (exponential backoff with jitter on throttling and transient
  errors); a call still throttled after the last attempt becomes that check's `error`, not a traceback.
- **Failures.** No credentials (or credentials AWS refuses) stop preflight with one line (`CannotAsk`, exit 7);
  access denied, throttling, an unreachable endpoint or a region without the service end one check as `error`
  (`AskFailed`) and the others go on. Any other AWS error (a NotFound) is the check's to read.

Credentials and region follow the standard chain (environment, profile, SSO, instance role); an endpoint
override (`AWS_ENDPOINT_URL`, as the tests point at moto's server) is botocore's own setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import boto3
from botocore import xform_name
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)
from botocore.model import OperationModel

# Every call preflight may make, (botocore service name, operation). Describe/Get/List only; a test holds each
# against the service model (it exists, and its name says it reads) and against the calls the checks make.
READ_ONLY: frozenset[tuple[str, str]] = frozenset(
    {
        ("sts", "GetCallerIdentity"),
        ("iam", "GetRole"),
        ("iam", "GetUser"),
        ("kms", "DescribeKey"),
        ("ec2", "DescribeVpcs"),
        ("ec2", "DescribeSubnets"),
        ("ec2", "DescribeVpcEndpoints"),
        ("ec2", "DescribeInstanceTypeOfferings"),
        ("ec2", "DescribeInstanceTypes"),
        ("ec2", "DescribeInstances"),
        ("ec2", "DescribeCapacityReservations"),
        ("ec2", "DescribeCapacityBlockOfferings"),
        ("service-quotas", "GetServiceQuota"),
        ("service-quotas", "GetAWSDefaultServiceQuota"),
        ("eks", "DescribeClusterVersions"),
        ("eks", "DescribeAddonVersions"),
        ("ssm", "GetParameter"),
        ("sagemaker", "DescribeTrainingPlan"),
    }
)

# Error codes that mean the credentials themselves are refused: nothing else can be asked.
REJECTED = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "AuthFailure",
        "SignatureDoesNotMatch",
        "InvalidToken",
    }
)
DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException", "AuthorizationError"}
)
THROTTLED = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
    }
)
MAX_ATTEMPTS = 6  # the first call and five retries, standard mode's backoff (up to 20 s between attempts)


class CannotAsk(Exception):
    """Nothing can be asked (no credentials, credentials refused): preflight stops with this one line."""


class AskFailed(Exception):
    """One call could not be made (denied, throttled, unreachable, not in the region): its check is an error."""


class ReadOnlyViolation(Exception):
    """An operation outside READ_ONLY was about to be sent; refused before it left the process."""


def refuse_writes(model: OperationModel, **_: Any) -> None:
    """botocore `provide-client-params` hook: only READ_ONLY operations may be sent."""
    service = model.service_model.service_name
    if (service, model.name) not in READ_ONLY:
        raise ReadOnlyViolation(
            f"{service}:{model.name} is not a read-only call preflight makes; refused before it was sent"
        )


class Account:
    """Clients for one region with the caller's credentials, guarded and retried.

    `overrides` gives a check family its own client for a service (the tests hand a family a client with
    botocore's Stubber where moto's server lacks the calls); every client handed out is guarded the same way.
    """

    def __init__(
        self,
        region: str,
        session: boto3.Session | None = None,
        overrides: Mapping[tuple[str, str], Any] | None = None,
        max_attempts: int | None = None,
    ) -> None:
        self.region = region
        self.session = session if session is not None else boto3.Session()
        self.overrides = dict(overrides or {})
        self.max_attempts = max_attempts if max_attempts is not None else MAX_ATTEMPTS
        self.config = Config(
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            connect_timeout=5,
            read_timeout=30,
            user_agent_extra="trainstack-preflight",
        )
        self._clients: dict[tuple[str, str], Any] = {}
        for client in self.overrides.values():
            guard(client)

    def client(self, family: str, service: str, region: str | None = None) -> Any:
        override = self.overrides.get((family, service))
        if override is not None:
            return override
        where = region or self.region
        key = (service, where)
        if key not in self._clients:
            try:
                client = self.session.client(service, region_name=where, config=self.config)  # pyrefly: ignore[no-matching-overload]
            except NoRegionError:
                raise CannotAsk(f"no region for {service}") from None
            self._clients[key] = guard(client)
        return self._clients[key]

    def ask(self, family: str, service: str, operation: str, region: str | None = None, **params: Any) -> Any:
        """Call `operation` (its API name, e.g. DescribeSubnets) and return the parsed response; paginated
        operations are read to the end. AWS errors other than the ones above are raised for the check to read."""
        client = self.client(family, service, region)
        method = xform_name(operation)
        where = region or self.region
        try:
            if client.can_paginate(method):
                return client.get_paginator(method).paginate(**params).build_full_result()
            return getattr(client, method)(**params)
        except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError, TokenRetrievalError) as error:
            raise CannotAsk(
                f"no usable AWS credentials ({error}); preflight uses the standard chain: AWS_PROFILE, "
                "environment variables, SSO (aws sso login) or an instance role"
            ) from None
        except SSOError as error:
            raise CannotAsk(f"the SSO session cannot give credentials ({error}): run aws sso login") from None
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            message = str(error.response.get("Error", {}).get("Message", "")).strip()
            if code in REJECTED:
                raise CannotAsk(f"AWS refused the credentials ({code}: {message}); renew them") from None
            if code in DENIED:
                raise AskFailed(
                    f"{service}:{operation} was denied ({code}); give the caller read access to it "
                    "(AWS's ReadOnlyAccess policy covers every call preflight makes)"
                ) from None
            if code in THROTTLED:
                raise AskFailed(
                    f"{service}:{operation} was still throttled ({code}) after {self.max_attempts} attempts with "
                    "backoff; run preflight again in a minute"
                ) from None
            raise
        except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError) as error:
            offered = self.session.get_available_regions(service) if service != "sts" else []
            if offered and where not in offered:
                raise AskFailed(f"{service} is not offered in {where} (botocore's endpoint data)") from None
            raise AskFailed(f"cannot reach {service} in {where}: {error}") from None


def guard(client: Any) -> Any:
    """Register the read-only refusal first on a client's `provide-client-params` event."""
    client.meta.events.register_first("provide-client-params", refuse_writes, unique_id="trainstack-read-only")
    return client


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
