"""Absolute links to the service, for what is read away from it: e-mails, alerts, install commands.

Built on the one setting SITE_URL (config/settings.py), never on a request's Host header, which a
client chooses.
"""

from __future__ import annotations

from django.conf import settings


def site_url() -> str:
    """The service's public address, without a trailing slash."""
    return str(settings.SITE_URL).rstrip("/")


def absolute_url(path: str) -> str:
    """`path` (from the site's root, e.g. `/diagnoses/<id>/`) as a link on SITE_URL."""
    return f"{site_url()}/{path.lstrip('/')}"
