"""What the tests of the server-rendered pages share: a signed-in browser, and a log diagnosed
through the home page's form."""

from __future__ import annotations

from typing import Any

from django.test import Client


def signed_in(user: Any) -> Client:
    """A browser session of `user`, signed in."""
    client = Client()
    client.force_login(user)
    return client


def diagnosed_on_the_page(client: Client, capture: Any, log: str) -> str:
    """The id of the diagnosis the home page's form made of `log` (its pipeline run at once by
    the `capture` fixture's on-commit callbacks)."""
    with capture(execute=True):
        response = client.post("/", {"log_text": log})
    assert response.status_code == 302, response.content
    return response["Location"].split("/")[2]
