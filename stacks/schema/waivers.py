"""`waivers`: a stack's written exemptions, each from one policy rule for one resource.

As cdk-nag's suppressions: a waiver names the rule, the resource (its logical name, as the plan shows it) and a
reason a reviewer can judge, and who owns it, until when, and for which environment. The plan lists every waiver
in its policy review and its risks; a waiver of a critical rule, of a rule the pack does not have, of a floor in
prod, of another environment, expiring more than a year ahead, or that matches no violation is refused
(policies/waivers.py, the same code in the pack and the offline review), and an expired one exempts nothing, so
waivers cannot pile up unseen, follow a file into prod, or outlive what they excuse.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Self

from pydantic import BeforeValidator, Field, model_validator

from stacks.schema.base import Email, Environment, Spec

# A reason is a sentence, not a token: at least this many characters and words.
MIN_REASON_CHARS = 30
MIN_REASON_WORDS = 5


def _quoted_day(value: object) -> object:
    """A day written as quoted text: an unquoted 2027-06-30 reaches the program under Pulumi as Go's text of a
    time ('2027-06-30 00:00:00 +0000 UTC'; stacks/reader.py), so only the quoted form reads the same everywhere."""
    if isinstance(value, date):
        raise ValueError(
            f"{value.isoformat()} is unquoted: Pulumi (Go yaml.v3) reads it as a time and passes on "
            f"'{value.isoformat()} 00:00:00 +0000 UTC'; quote it: \"{value.isoformat()}\""
        )
    if isinstance(value, str) and not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise ValueError(f'{value!r} is not a day as YYYY-MM-DD, such as "2027-06-30"')
    return value


Day = Annotated[date, BeforeValidator(_quoted_day)]


class WaiverSpec(Spec):
    """One rule waived for one resource, with the reason."""

    rule: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$", description="The policy rule's id, e.g. nat-per-az.")
    resource: str = Field(
        min_length=1,
        description="The logical name of the one resource the waiver covers (the last part of its URN, as the "
        "plan's policy review shows it), e.g. gpu-eval-ng.",
    )
    reason: str = Field(
        description=f"Why the rule does not apply here, for the reviewer: at least {MIN_REASON_WORDS} words and "
        f"{MIN_REASON_CHARS} characters (what compensates, and why it cannot be fixed now)."
    )
    owner: Email = Field(
        description="Who answers for the waiver and renews or removes it: an e-mail address, e.g. "
        "ml-platform@example.com."
    )
    expires: Day = Field(
        description="The last day (UTC) the waiver applies, as YYYY-MM-DD, at most a year ahead; after it the "
        "waiver exempts nothing and the plan names it (waiver-expired)."
    )
    environment: Environment = Field(
        description="The environment the waiver was granted for; it must be the stack's own, so a waiver never "
        "follows a copied file into another environment. Prod waives no floor."
    )

    @model_validator(mode="after")
    def _reason_is_written(self) -> Self:
        text = " ".join(self.reason.split())
        if len(text) < MIN_REASON_CHARS or len(text.split()) < MIN_REASON_WORDS:
            raise ValueError(
                f"waiver of {self.rule} on {self.resource}: the reason {self.reason!r} is too short; write why the "
                f"rule does not apply here in at least {MIN_REASON_WORDS} words ({MIN_REASON_CHARS} characters)"
            )
        return self
