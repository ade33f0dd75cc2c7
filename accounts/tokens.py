"""The API token secret: `rc_live_<30 random base62><6 base62 CRC32 checksum>`.

The fixed prefix and the checksum (the scheme of GitHub's tokens) let secret scanners find our
tokens in pushed code and tell real ones from look-alikes without asking us, and let us refuse a
mistyped or made-up token without touching the database. Only a SHA-256 digest is stored: the
secret has 178 random bits, so a fast hash cannot be brute-forced and needs no salt.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import zlib

TOKEN_PREFIX = "rc_live_"  # noqa: S105  (a public marker of our tokens, not a secret)
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
RANDOM_LENGTH = 30
CHECKSUM_LENGTH = 6  # 62**6 > 2**32: any CRC32 fits
# How much of the secret listings show so people can tell tokens apart (fits ApiToken.prefix).
SHOWN_LENGTH = len(TOKEN_PREFIX) + 4

_FORMAT = re.compile(
    rf"{TOKEN_PREFIX}(?P<random>[0-9A-Za-z]{{{RANDOM_LENGTH}}})"
    rf"(?P<checksum>[0-9A-Za-z]{{{CHECKSUM_LENGTH}}})"
)


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, digit = divmod(number, 62)
        digits.append(BASE62[digit])
    return "".join(reversed(digits)).rjust(width, "0")


def checksum(random_part: str) -> str:
    return _base62(zlib.crc32(random_part.encode("ascii")), CHECKSUM_LENGTH)


def generate_secret() -> str:
    random_part = "".join(secrets.choice(BASE62) for _ in range(RANDOM_LENGTH))
    return f"{TOKEN_PREFIX}{random_part}{checksum(random_part)}"


def is_well_formed(secret: str) -> bool:
    """The prefix, the lengths and the checksum: what can be checked with no database."""
    match = _FORMAT.fullmatch(secret)
    return match is not None and secrets.compare_digest(
        checksum(match["random"]), match["checksum"]
    )


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
