"""The e-mails of evaluations: a code issued, a request declined, an evaluation ending soon."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.mail import send_mail
from django.template.loader import render_to_string

from billing_tiers.models import Evaluation, EvaluationRequest
from plumbing.links import site_url


def _send(template: str, context: dict[str, object], recipients: Iterable[str]) -> int:
    to = sorted({address for address in recipients if address})
    if not to:
        return 0
    context = {"site_url": site_url(), **context}
    subject = render_to_string(f"billing_tiers/email/{template}_subject.txt", context)
    body = render_to_string(f"billing_tiers/email/{template}.txt", context)
    return send_mail(" ".join(subject.split()), body, None, to, fail_silently=False)


def send_evaluation_code(*, request: EvaluationRequest, code: str, recipients: list[str]) -> int:
    """The code in clear goes to the requester here and nowhere else: it is stored hashed."""
    assert request.code is not None
    return _send(
        "code_issued",
        {"request": request, "code": code, "evaluation_code": request.code},
        recipients,
    )


def send_request_declined(*, request: EvaluationRequest, recipients: list[str]) -> int:
    return _send("request_declined", {"request": request}, recipients)


def send_evaluation_ending(*, evaluation: Evaluation, recipients: list[str]) -> int:
    return _send("evaluation_ending", {"evaluation": evaluation}, recipients)
