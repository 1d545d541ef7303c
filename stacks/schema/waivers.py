"""`waivers`: a stack's written exemptions, each from one policy rule for one resource.

As cdk-nag's suppressions: a waiver names the rule, the resource (its logical name, as the plan shows it) and a
reason a reviewer can judge. The plan lists every waiver in its policy review; a waiver of a critical rule, of
a rule the pack does not have, or that matches no violation is refused (trainstack/review.py), so waivers
cannot pile up unseen or outlive what they excuse.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from stacks.schema.base import Spec

# A reason is a sentence, not a token: at least this many characters and words.
MIN_REASON_CHARS = 30
MIN_REASON_WORDS = 5


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
        f"{MIN_REASON_CHARS} characters (who decided, until when, what compensates)."
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
