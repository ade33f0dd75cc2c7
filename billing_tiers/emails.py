"""The e-mails of evaluations: a request arrived (to staff), a code issued, a request declined,
an evaluation ending soon."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse

from billing_tiers.models import Evaluation, EvaluationRequest
from plumbing.links import absolute_url, site_url


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


def staff_addresses() -> list[str]:
    """Who answers evaluation requests: the active staff accounts (they decide in the admin),
    and the addresses of STAFF_NOTIFICATION_EMAILS."""
    staff = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return [*staff.values_list("email", flat=True), *settings.STAFF_NOTIFICATION_EMAILS]


def send_request_arrived(*, request: EvaluationRequest) -> int:
    """Staff learn of a new request at once, with the link to decide it in the admin."""
    admin = reverse("admin:billing_tiers_evaluationrequest_change", args=[request.pk])
    return _send(
        "request_arrived",
        {"request": request, "admin_link": absolute_url(admin)},
        staff_addresses(),
    )
