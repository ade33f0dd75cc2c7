"""A submission's API token, read with its organisation's submission facts (tier, masking rules,
today's quota use) in one statement (diagnosis.selectors.token_with_submission_facts): the API
view asks for it before DRF authenticates the request, and hands the facts to the submission,
which then need not read them again."""

from __future__ import annotations

from functools import partial

from django.utils import timezone
from rest_framework.request import Request

from accounts.authentication import TOKEN_LOOKUP
from accounts.models import ApiToken
from billing_tiers.selectors import utc_day
from diagnosis.selectors import SubmissionFacts, token_with_submission_facts

# Where the token's lookup leaves the facts, on the request.
SUBMISSION_FACTS = "_rootcause_submission_facts"


def read_with_token(request: Request) -> None:
    """Before `request` authenticates: its API token, if it has one, is looked up with its
    organisation's facts (accounts.authentication.TOKEN_LOOKUP)."""
    setattr(request, TOKEN_LOOKUP, partial(_token_with_facts, request))


def read_facts(request: Request) -> SubmissionFacts | None:
    """The facts read with the request's API token; None if none were (no token, a session)."""
    facts: SubmissionFacts | None = getattr(request, SUBMISSION_FACTS, None)
    return facts


def _token_with_facts(request: Request, secret: str) -> ApiToken | None:
    found = token_with_submission_facts(secret, day=utc_day(timezone.now()))
    if found is None:
        return None
    token, facts = found
    setattr(request, SUBMISSION_FACTS, facts)
    return token
