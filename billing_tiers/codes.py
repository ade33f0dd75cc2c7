"""Scale evaluation codes: `SCALE-XXXX-XXXX-XXXX`, eleven random symbols and a check symbol.

The alphabet is Crockford's base 32 (digits and capitals without I, L, O and U), so a code read
aloud or copied from paper cannot be misread; on input O counts as 0 and I and L as 1, case,
spaces and dashes do not matter. The check symbol (Luhn mod 32) catches any single mistyped symbol
and most swaps of neighbours before the database is asked, so a typo gets its own message.
Eleven symbols are 55 random bits: with redemption throttled, guessing is hopeless.

Only a keyed hash is stored (HMAC with SECRET_KEY): a leaked table cannot be brute-forced
offline. Rotating SECRET_KEY therefore invalidates codes not yet redeemed.
"""

from __future__ import annotations

import secrets

from django.utils.crypto import salted_hmac

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PREFIX = "SCALE"
RANDOM_SYMBOLS = 11
_VALUE = {symbol: index for index, symbol in enumerate(ALPHABET)}
_ALIASES = str.maketrans({"O": "0", "I": "1", "L": "1"})


class MalformedCode(ValueError):
    """Not shaped like a code, or its check symbol does not match (a typo)."""


def _luhn_sum(symbols: str, *, double_first: bool) -> int:
    """Luhn mod N over `symbols`, rightmost first; the doubled positions alternate."""
    n = len(ALPHABET)
    total, double = 0, double_first
    for symbol in reversed(symbols):
        addend = _VALUE[symbol] * (2 if double else 1)
        total += addend // n + addend % n
        double = not double
    return total


def check_symbol(payload: str) -> str:
    # The check symbol will sit rightmost, so the payload's rightmost symbol is doubled.
    return ALPHABET[-_luhn_sum(payload, double_first=True) % len(ALPHABET)]


def generate_code() -> str:
    payload = "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_SYMBOLS))
    body = payload + check_symbol(payload)
    return f"{PREFIX}-{body[0:4]}-{body[4:8]}-{body[8:12]}"


def normalize_code(raw: str) -> str:
    """The twelve symbols of a typed code, or MalformedCode."""
    compact = "".join(raw.split()).replace("-", "").upper()
    if len(compact) == len(PREFIX) + RANDOM_SYMBOLS + 1 and compact.startswith(PREFIX):
        compact = compact[len(PREFIX) :]
    body = compact.translate(_ALIASES)
    if len(body) != RANDOM_SYMBOLS + 1 or any(symbol not in _VALUE for symbol in body):
        raise MalformedCode("An evaluation code looks like SCALE-XXXX-XXXX-XXXX.")
    if _luhn_sum(body, double_first=False) % len(ALPHABET) != 0:
        raise MalformedCode("This evaluation code has a typo: check it and try again.")
    return body


def code_digest(raw: str) -> str:
    """The stored form of a code; raises MalformedCode for anything not shaped like one."""
    body = normalize_code(raw)
    return salted_hmac("billing_tiers.evaluation_code", body, algorithm="sha256").hexdigest()
