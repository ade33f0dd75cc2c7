"""E-mail domains: their normal form, and whether anyone can get an address there."""

from __future__ import annotations

import functools
import re
from pathlib import Path

PUBLIC_PROVIDERS_FILE = Path(__file__).parent / "data" / "public_email_domains.txt"

_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_TOP_LEVEL = re.compile(r"[a-z]{2,63}|xn--[a-z0-9-]{1,59}")


class InvalidDomain(ValueError):
    pass


def normalize_domain(raw: str) -> str:
    """`@Acme.COM.` → `acme.com`; internationalised names in their IDNA (punycode) form."""
    domain = raw.strip().lower().removeprefix("@").rstrip(".")
    if "@" in domain:  # someone pasted a whole address
        domain = domain.rsplit("@", 1)[1]
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        raise InvalidDomain(f"{raw!r} is not a domain name.") from None
    labels = domain.split(".")
    if (
        len(domain) > 253
        or len(labels) < 2
        or not all(_LABEL.fullmatch(label) for label in labels)
        or not _TOP_LEVEL.fullmatch(labels[-1])
    ):
        raise InvalidDomain(f"{raw!r} is not a domain name.")
    return domain


def domain_of(email: str) -> str:
    return email.rsplit("@", 1)[-1].lower()


@functools.cache
def _public_providers() -> tuple[frozenset[str], tuple[str, ...]]:
    exact: set[str] = set()
    any_suffix: list[str] = []
    for line in PUBLIC_PROVIDERS_FILE.read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip().lower()
        if entry.endswith(".*"):
            any_suffix.append(entry[:-1])  # "gmx.*" → "gmx."
        elif entry:
            exact.add(entry)
    return frozenset(exact), tuple(any_suffix)


def is_public_email_domain(domain: str) -> bool:
    """True for a public mail provider (the data file), its subdomains, and `name.*` entries."""
    exact, any_suffix = _public_providers()
    labels = domain.lower().split(".")
    # acme.gmail.com is no more a workplace than gmail.com: check every parent domain too.
    for start in range(len(labels) - 1):
        candidate = ".".join(labels[start:])
        if candidate in exact or _is_name_under_public_suffix(candidate, any_suffix):
            return True
    return False


def _is_name_under_public_suffix(domain: str, names: tuple[str, ...]) -> bool:
    """`gmx.de`, `yahoo.co.uk`, `yandex.com.tr` for `gmx.*`, `yahoo.*`, `yandex.*`.

    The suffix must look like a public suffix (a top-level domain, or a short second-level name
    under a country code), so that `live.acme.com` is not taken for `live.*`.
    """
    for name in names:
        if not domain.startswith(name):
            continue
        suffix = domain[len(name) :].split(".")
        if len(suffix) == 1 or (len(suffix) == 2 and len(suffix[0]) <= 3 and len(suffix[1]) == 2):
            return True
    return False
