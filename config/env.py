"""Typed helpers that read settings from environment variables and fail loudly on bad values."""

from __future__ import annotations

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_site_url(port: int) -> str:
    """SITE_URL, or SITE_ROOT (its former name), or the address `make run` serves on this port.

    Only http(s) with a host: every e-mailed and alerted link is built on it, and a value missing
    its scheme would give links that go nowhere.
    """
    raw = os.environ.get("SITE_URL") or os.environ.get("SITE_ROOT") or ""
    if not raw.strip():
        return f"http://127.0.0.1:{port}"
    value = raw.strip().rstrip("/")
    scheme, _, rest = value.partition("://")
    if scheme not in ("http", "https") or not rest or rest.startswith("/"):
        raise ImproperlyConfigured(f"SITE_URL={raw!r} must be an http:// or https:// address")
    return value


def env_networks(name: str, default: list[str]) -> list[str]:
    """A comma-separated list of addresses or CIDR networks (`10.0.0.0/8, ::1`), normalised;
    an empty value is an empty list, a malformed item fails loudly."""
    networks = []
    for item in env_list(name, default):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an address or network") from None
    return networks
