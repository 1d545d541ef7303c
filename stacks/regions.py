"""AWS regions and the availability-zone letters each can have, so a typo (`us-east-1z`, `us-esat-1`) fails
the plan instead of `pulumi up`.

Source: AWS "Regions and Availability Zones" (docs.aws.amazon.com/global-infrastructure/latest/regions/
aws-regions.html and aws-availability-zones.html) for the region codes and the number of AZs per region.
(verify) This table was written from that page's content as known, not re-read against the live page on
2026-11-30 (no network here): a region or AZ added since is refused until it is added here.
AZ *names* are mapped to physical zones per account, and a few regions give accounts a subset
of their letters (us-west-1 shows two of a-c; ap-northeast-1 shows a, c and d to accounts made since 2012;
ca-central-1 has a, b and d). The letters below are every name an account can see, so the rule refuses only
names that cannot exist; `aws ec2 describe-availability-zones` says which ones your account has. Opt-in
regions are included (enable them in the account first).
"""

from __future__ import annotations

from typing import Final

_ABC = "abc"

AVAILABILITY_ZONES: Final[dict[str, str]] = {
    # North America
    "us-east-1": "abcdef",
    "us-east-2": _ABC,
    "us-west-1": _ABC,
    "us-west-2": "abcd",
    "ca-central-1": "abd",
    "ca-west-1": _ABC,
    "mx-central-1": _ABC,
    # South America
    "sa-east-1": _ABC,
    # Europe
    "eu-west-1": _ABC,
    "eu-west-2": _ABC,
    "eu-west-3": _ABC,
    "eu-central-1": _ABC,
    "eu-central-2": _ABC,
    "eu-north-1": _ABC,
    "eu-south-1": _ABC,
    "eu-south-2": _ABC,
    # Asia Pacific
    "ap-east-1": _ABC,
    "ap-east-2": _ABC,
    "ap-south-1": _ABC,
    "ap-south-2": _ABC,
    "ap-northeast-1": "abcd",
    "ap-northeast-2": "abcd",
    "ap-northeast-3": _ABC,
    "ap-southeast-1": _ABC,
    "ap-southeast-2": _ABC,
    "ap-southeast-3": _ABC,
    "ap-southeast-4": _ABC,
    "ap-southeast-5": _ABC,
    "ap-southeast-7": _ABC,
    # Middle East and Africa
    "il-central-1": _ABC,
    "me-central-1": _ABC,
    "me-south-1": _ABC,
    "af-south-1": _ABC,
    # AWS GovCloud (US) and China partitions
    "us-gov-west-1": _ABC,
    "us-gov-east-1": _ABC,
    "cn-north-1": _ABC,
    "cn-northwest-1": _ABC,
}
