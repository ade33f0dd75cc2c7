"""Every answer carries the Content-Security-Policy; the API docs' exceptions stay on that page.
(The pages working under it, in Chromium: tests/browser/test_csp.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from config.apidocs import THIRD_PARTY_LOGO, _bundle

pytestmark = pytest.mark.django_db


def _directives(response: Any) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


@pytest.mark.parametrize("path", ["/", "/encyclopedia/", "/accounts/login/", "/api/v1/me", "/nope"])
def test_pages_api_answers_and_errors_carry_the_policy(client: Any, path: str) -> None:
    policy = _directives(client.get(path))
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]


def test_no_page_has_an_inline_style_or_script(client: Any) -> None:
    for path in ("/", "/encyclopedia/", "/accounts/login/", "/accounts/signup/"):
        html = client.get(path).content.decode()
        assert "<style" not in html, path
        assert " style=" not in html, path
        assert "<script>" not in html, path


def test_the_api_docs_allow_redocs_styles_and_nothing_from_elsewhere(client: Any) -> None:
    response = client.get("/api/v1/docs")
    policy = _directives(response)
    assert policy["style-src"] == ["'self'", "'unsafe-inline'"]
    assert policy["script-src"] == ["'self'"]
    html = response.content.decode()
    assert "googleapis" not in html
    assert "/api/v1/docs/redoc.js" in html
    bundle = client.get("/api/v1/docs/redoc.js")
    assert bundle.status_code == 200
    assert THIRD_PARTY_LOGO not in bundle.content
    assert THIRD_PARTY_LOGO not in _bundle()


@pytest.mark.parametrize("path", ["/", "/api/v1/me", "/nope", "/api/v1/docs"])
def test_the_header_built_once_is_the_one_django_csp_builds(client: Any, path: str) -> None:
    # plumbing/csp.py builds the settings' policy once; django-csp, for every answer.
    ours = client.get(path)["Content-Security-Policy"]
    again = client.get(path)["Content-Security-Policy"]  # from the header built before
    theirs_middleware = [
        "csp.middleware.CSPMiddleware" if name == "plumbing.csp.CSPMiddleware" else name
        for name in django_settings.MIDDLEWARE
    ]
    assert theirs_middleware != django_settings.MIDDLEWARE
    with override_settings(MIDDLEWARE=theirs_middleware):
        theirs = client.get(path)["Content-Security-Policy"]
    assert ours == again == theirs


def test_a_changed_policy_is_built_again(client: Any, settings: Any) -> None:
    before = client.get("/")["Content-Security-Policy"]
    settings.CONTENT_SECURITY_POLICY = {
        "DIRECTIVES": {**settings.CONTENT_SECURITY_POLICY["DIRECTIVES"], "img-src": ["'none'"]}
    }
    after = client.get("/")["Content-Security-Policy"]
    assert "img-src 'self' data:" in before
    assert "img-src 'none'" in after
