"""Sign-in throttling with django-axes: per account and address together, per address, and a
lockout that ends; a stranger's guesses never lock the owner out at their own address."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def _try(client: Client, email: str, password: str, address: str = "10.0.0.1") -> Any:
    return client.post(LOGIN, {"username": email, "password": password}, REMOTE_ADDR=address)


@override_settings(AXES_FAILURE_LIMIT=3)
def test_an_account_is_locked_at_the_address_that_guessed_at_it(alice: Any) -> None:
    client = Client()
    for _ in range(2):
        assert _try(client, alice.email, "wrong", "10.0.0.5").status_code == 200
    # The third failure from that address reaches the limit: it and every try after it are refused
    # there, the right password included.
    response = _try(client, alice.email, "wrong", "10.0.0.5")
    assert response.status_code == 429
    assert "Too many failed sign-ins" in response.content.decode()
    assert int(response["Retry-After"]) > 0
    assert _try(Client(), alice.email, _password(alice), "10.0.0.5").status_code == 429


def test_a_strangers_failures_do_not_lock_the_owner_out_at_another_address(alice: Any) -> None:
    # The default limit, through real sign-in requests: ten wrong passwords from one address...
    from django.conf import settings

    attacker = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _try(attacker, alice.email, "wrong", "203.0.113.7")
    assert _try(attacker, alice.email, _password(alice), "203.0.113.7").status_code == 429

    # ...and alice, at hers, signs in, and her session works.
    owner = Client()
    assert _try(owner, alice.email, _password(alice), "198.51.100.20").status_code == 302
    assert owner.get("/settings/").status_code == 200
    # The attacker's address stays locked out: her sign-in cleared only her own address' count.
    assert _try(attacker, alice.email, _password(alice), "203.0.113.7").status_code == 429


@override_settings(AXES_FAILURE_LIMIT=3)
def test_failures_at_other_addresses_do_not_add_up_for_an_account(alice: Any) -> None:
    for n in range(6):
        assert _try(Client(), alice.email, "wrong", f"10.1.0.{n}").status_code == 200
    assert _try(Client(), alice.email, _password(alice), "10.1.0.99").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_an_address_is_locked_after_too_many_failed_sign_ins(alice: Any, charlie: Any) -> None:
    client = Client()
    for n in range(3):
        _try(client, f"nobody{n}@example.com", "wrong", "10.0.0.7")
    assert _try(client, charlie.email, "wrong", "10.0.0.7").status_code == 429


@override_settings(AXES_FAILURE_LIMIT=3, AXES_COOLOFF_TIME=timedelta(seconds=1))
def test_a_lockout_ends_after_the_cool_off(alice: Any) -> None:
    client = Client()
    for _ in range(4):
        _try(client, alice.email, "wrong")
    assert _try(client, alice.email, "wrong").status_code == 429
    time.sleep(1.2)
    assert _try(Client(), alice.email, _password(alice), "10.0.0.3").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3, AXES_COOLOFF_TIME=timedelta(seconds=2))
def test_guessing_on_during_a_lockout_does_not_extend_it(alice: Any) -> None:
    attacker = Client()
    for _ in range(3):
        _try(attacker, alice.email, "wrong", "10.6.6.6")
    locked_at = time.monotonic()
    # The attacker keeps guessing through most of the cool-off, from the locked address.
    while time.monotonic() - locked_at < 1.5:
        assert _try(attacker, alice.email, "wrong", "10.6.6.6").status_code == 429
        time.sleep(0.2)
    time.sleep(max(0.0, 2.2 - (time.monotonic() - locked_at)))

    # Two seconds after the lockout began, not after the last guess, alice is let in even from
    # that address (a shared one, say).
    assert _try(Client(), alice.email, _password(alice), "10.6.6.6").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_a_successful_sign_in_clears_the_failures_before_it(alice: Any) -> None:
    client = Client()
    for _ in range(2):
        assert _try(client, alice.email, "wrong").status_code == 200
    assert _try(client, alice.email, _password(alice)).status_code == 302
    client.logout()
    for _ in range(2):
        assert _try(client, alice.email, "wrong").status_code == 200

    # Four failures in all, but only two since the last sign-in: under the limit of three.
    assert _try(client, alice.email, _password(alice)).status_code == 302


def _password(user: Any) -> str:
    return f"pw-{user.username}-123"  # tests/conftest.py


def test_the_cool_off_is_bounded_by_settings() -> None:
    from django.conf import settings

    assert settings.AXES_COOLOFF_TIME.total_seconds() > 0
    # Never the account alone: that would let anyone lock anyone out.
    assert "username" not in settings.AXES_LOCKOUT_PARAMETERS
    assert ["username", "ip_address"] in settings.AXES_LOCKOUT_PARAMETERS
