"""The domain errors of tiers, quotas and evaluations; plumbing.problems renders them.

Each carries a stable machine-readable `error` in its problem+json body, so a script can tell a
used code from an expired one without parsing English.
"""

from __future__ import annotations

from rest_framework import status

from plumbing.problems import ApplicationError


class BillingError(ApplicationError):
    error: str = "bad_request"

    def __init__(
        self,
        detail: str,
        *,
        extra: dict[str, object] | None = None,  # as ProblemError's
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail, extra={"error": self.error, **(extra or {})}, headers=headers)


class QuotaExceeded(BillingError):
    """The subject used today's allowance. Carries Retry-After and the RateLimit headers."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    title = "Daily quota exceeded"
    error = "quota_exceeded"


class NotVerifiedWorkplace(BillingError):
    status_code = status.HTTP_403_FORBIDDEN
    title = "Not a verified workplace"
    error = "not_verified_workplace"


class CodeInvalid(BillingError):
    """Wrong: malformed, mistyped (the check symbol) or no such code."""

    title = "Invalid evaluation code"
    error = "code_invalid"


class CodeUsed(BillingError):
    status_code = status.HTTP_409_CONFLICT
    title = "Evaluation code already used"
    error = "code_used"


class CodeExpired(BillingError):
    status_code = status.HTTP_410_GONE
    title = "Evaluation code expired"
    error = "code_expired"


class EvaluationActive(BillingError):
    status_code = status.HTTP_409_CONFLICT
    title = "Evaluation already active"
    error = "evaluation_active"


class RequestAlreadyOpen(BillingError):
    status_code = status.HTTP_409_CONFLICT
    title = "Evaluation request already open"
    error = "request_open"


class RequestAlreadyDecided(BillingError):
    status_code = status.HTTP_409_CONFLICT
    title = "Evaluation request already decided"
    error = "request_decided"
