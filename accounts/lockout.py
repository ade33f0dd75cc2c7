"""Sign-in lockouts (django-axes): what a locked-out sign-in is answered with.

Axes counts failed sign-ins per account and address together, and per address alone
(config/settings.py, `AXES_*`), and, past the limit, refuses further tries from that address until
the cool-off has passed. Someone guessing at another person's account locks out only their own
address: the owner signs in from theirs, and every lockout ends.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.actors import client_address
from accounts.forms import LoginForm


def lockout_message() -> str:
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return (
        "Too many failed sign-ins from this address. "
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}, or reset your password."
    )


def signin_locked(
    request: HttpRequest, original_response: object = None, credentials: object = None
) -> HttpResponse:
    """The sign-in page again, with the reason on it, as 429 (AXES_LOCKOUT_CALLABLE)."""
    messages.error(request, lockout_message())
    response = render(
        request, "accounts/login.html", {"form": LoginForm(request), "next": ""}, status=429
    )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response


def axes_client_ip(request: HttpRequest) -> str:
    """The address axes counts, as for every other per-address limit (AXES_CLIENT_IP_CALLABLE)."""
    return client_address(request)
