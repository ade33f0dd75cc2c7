"""Where Presidio's validated recognizers could find something, without importing Presidio.

The production analyzer (recognizer.py) runs Presidio's card, IBAN, phone and wallet
recognizers only on windows around the hits of a cheap Hyperscan prefilter each. The windows
are computed here, in the light part of the package, so that the command line can tell whether
a chunk needs Presidio at all (``Masker(analyzer=WHEN_NEEDED)``): importing it costs about 1.5 s
(spaCy comes with it), more than masking a 20 MB log.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from hashlib import sha256

import hyperscan

from rootcause.masking.scanner import Candidate, Database

# Where a finding of a recognizer other than the Hyperscan ones falls when two findings tie
# (scanner.resolve: lower wins): after every log pattern, before the names learned from a log.
OTHER_PRIORITY = 13


@dataclass(frozen=True)
class Window:
    """How far around a prefilter hit the wrapped recognizer looks."""

    extend: frozenset[int]  # bytes that may continue the candidate to the right
    max_bytes: int
    not_after: bytes = b""  # a hit right after one of these is no candidate (seed=4111...)
    # every byte the recognizer's findings can start or end with (None: any); see all_windows
    alphabet: frozenset[int] | None = None
    # the continuation stops at two separators in a row (two of ' ', '.', '-'): a column gap
    # or punctuation after the number, never the one separator between two digit groups of our
    # phone patterns. phonenumbers reads "+49 30 55913771  0/5005", and "+49 30 12345678. 0.7163"
    # or "+49 30 12345678 - 12", as one longer number: the window must end with the number.
    # A ')' that closes no '(' of the number ends it too ("(tel +49 30 12345678) 0.7163").
    stop_at_gap: bool = False
    # a hit right after one of these words is no candidate (File <command-1234567890123456>)
    not_after_words: tuple[bytes, ...] = ()
    # the recognizer's pattern ends with \b: a continuation stopped by a letter, a digit or
    # '_' (4427834136823c8c…, the head of a commit hash) holds no candidate
    word_end: bool = False


_DIGITS = frozenset(b"0123456789")
_ALNUM = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WORD = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_UPPER_DIGITS = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_SEPARATORS = frozenset(b" .-")  # between a phone number's digit groups (one at a time)
_GAP = (b" ", b".", b"-")  # a second separator after one: the number has ended
_OPEN, _CLOSE = ord("("), ord(")")  # a ')' with no '(' before it in the number ends it

# recognizer -> (prefilter, window), in the order of recognizer.validated_recognizers.
PREFILTERS: dict[str, tuple[bytes, Window]] = {
    # the issuers' prefixes, as our own card recognizer: seeds and epoch times in ms and ns
    # start with 1 (and are Luhn-valid one time in ten)
    "card": (
        rb"\b(?:4\d|5[1-5]|2[2-7]|3[0-9]|6[045])\d\d[ \-]?\d{4,6}[ \-]?\d{4}",
        Window(
            _DIGITS | frozenset(b" -"),
            24,
            not_after=b"=.x",
            alphabet=_DIGITS,  # a grouped card's blanks and dashes are inside it
            not_after_words=(b"command-",),
            word_end=True,
        ),
    ),
    "iban": (
        rb"\b[A-Z]{2}\d{2} ?[A-Z0-9]{4} ?[A-Z0-9]{4}",
        Window(_ALNUM | frozenset(b" "), 42, alphabet=_UPPER_DIGITS),
    ),
    "phone": (
        rb"\+[1-9]\d{0,2}[ .\-(]{1,2}\d|"
        rb"\(\d{3}\) ?\d{3}[ .\-]\d{4}|\b\d{3}[.\-]\d{3}[.\-]\d{4}",
        # a number phonenumbers finds starts with a digit, '+' or '(' and ends with a digit
        # or ')': the window's boundary bytes outside these are no part of one
        Window(
            _DIGITS | frozenset(b" .-()"),
            24,
            stop_at_gap=True,
            alphabet=_DIGITS | frozenset(b"+()"),
        ),
    ),
    "crypto": (rb"\b(?:bc1|[13])[a-km-zA-HJ-NP-Z1-9]{25}", Window(_ALNUM, 64, alphabet=_ALNUM)),
}


def prefilter_database(pattern: bytes) -> Database:
    return Database([pattern], [hyperscan.HS_FLAG_SOM_LEFTMOST], cache=True)


def windows(db: Database, window: Window, buf: bytes) -> list[tuple[int, int]]:
    """The byte spans (merged, in order) the wrapped recognizer reads: each prefilter hit, its
    continuation to the right, and a character on each side for the word boundaries."""
    return window_spans(db.scan(buf), window, buf)


def window_spans(
    hits: Iterable[tuple[int, int, int]], window: Window, buf: bytes
) -> list[tuple[int, int]]:
    """``windows`` from the prefilter's hits in ``buf`` (in the order of their ends)."""
    spans: list[tuple[int, int]] = []
    for _, start, end in hits:
        if start and buf[start - 1] in window.not_after:
            continue
        if window.not_after_words and buf[max(0, start - 16) : start].endswith(
            window.not_after_words
        ):
            continue
        stop = end
        limit = min(len(buf), start + window.max_bytes)
        while stop < limit and buf[stop] in window.extend:
            if window.stop_at_gap and (
                (buf[stop] in _SEPARATORS and buf[stop + 1 : stop + 2] in _GAP)
                or (buf[stop] == _CLOSE and _OPEN not in buf[start:stop])
            ):
                break
            stop += 1
        if window.word_end and stop < len(buf) and buf[stop] in _WORD - window.extend:
            continue
        lo, hi = max(0, start - 1), min(len(buf), stop + 1)
        while lo > 0 and buf[lo] & 0xC0 == 0x80:  # never inside a UTF-8 sequence
            lo -= 1
        while hi < len(buf) and buf[hi] & 0xC0 == 0x80:
            hi += 1
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hi))
        else:
            spans.append((lo, hi))
    return spans


@lru_cache(maxsize=1)
def _any_database() -> Database:
    patterns = [pattern for pattern, _ in PREFILTERS.values()]
    return Database(patterns, [hyperscan.HS_FLAG_SINGLEMATCH] * len(patterns), cache=True)


@lru_cache(maxsize=1)
def _all_database() -> Database:
    """Every prefilter, ids in the order of PREFILTERS: one scan for all_windows (a pattern's
    matches are the same whatever else its database holds)."""
    patterns = [pattern for pattern, _ in PREFILTERS.values()]
    return Database(patterns, [hyperscan.HS_FLAG_SOM_LEFTMOST] * len(patterns), cache=True)


def trimmed(window: Window, buf: bytes, lo: int, hi: int) -> tuple[int, int]:
    """A window less the bytes at its ends that none of its recognizer's findings can hold
    (the character each side that is there for the word boundaries, when the recognizer's
    pattern has an alphabet); empty (lo == hi) when nothing is left."""
    allowed = window.alphabet
    if allowed is not None:
        while lo < hi and buf[lo] not in allowed:
            lo += 1
        while hi > lo and buf[hi - 1] not in allowed:
            hi -= 1
    return lo, hi


def covered(lo: int, hi: int, spans: list[Candidate], starts: list[int]) -> bool:
    """Whether findings inside [lo, hi) would leave ``spans`` (resolved: ``scanner.resolve``,
    ``starts`` their starts) as they are.

    A finding that lies inside a kept span and is not that span exactly comes after it in
    resolve's order and overlaps it, so it is dropped and changes nothing; one with exactly the
    span of a kept finding would win over it only on priority, which Presidio's findings
    (``OTHER_PRIORITY``) have over the learned names alone. The validated recognizers only ever
    find something inside their (trimmed) windows, so a window covered this way is one they
    cannot change.
    """
    if lo >= hi:
        return True
    i = bisect_right(starts, lo) - 1
    if i < 0:
        return False
    c = spans[i]
    if hi > c.end:
        return False
    return not (lo == c.start and hi == c.end and c.priority >= OTHER_PRIORITY)


# Presidio's CryptoRecognizer: its pattern, read with its PatternRecognizer's default flags.
_WALLET = re.compile(
    rb"(bc1|[13])[a-zA-HJ-NP-Z0-9]{25,59}", re.DOTALL | re.MULTILINE | re.IGNORECASE
)
_BASE58 = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58check(address: bytes) -> bool:
    """Presidio's P2PKH/P2SH check (``CryptoRecognizer.validate_result``), step for step."""
    digits = address.lstrip(b"1")
    n = 0
    for char in digits:
        i = _BASE58.find(char)
        if i == -1:  # Presidio's bytes.index raises ValueError: not valid
            return False
        n = n * 58 + i
    data = n.to_bytes(len(address) - len(digits) + (n.bit_length() + 7) // 8, "big")
    return data[-4:] == sha256(sha256(data[:-4]).digest()).digest()[:4]


def wallet_possible(window: bytes) -> bool:
    """Whether Presidio's wallet recognizer, reading ``window`` (a crypto prefilter window, as
    ``PrefilteredRecognizer`` hands it over), could report anything: its matches are found as
    its regular expression finds them, and each one starting with 1 or 3 is checked as it
    checks them. A commit hash starting with 1 or 3 is the usual window, and fails. Anything
    else (a bc1 address, whose Bech32 check is not repeated here; bytes outside ASCII, where
    case folding could differ) counts as possible."""
    if not window.isascii():
        return True
    for m in _WALLET.finditer(window):
        value = m.group()
        if value[:1] not in b"13" or _base58check(value):
            return True
    return False


def all_windows(buf: bytes, *, skip_impossible_wallets: bool = False) -> list[tuple[int, int]]:
    """Where in ``buf`` a validated recognizer could find something (none: one cheap scan).

    Its windows, less the bytes at their ends that none of its findings can hold (the
    character each side that is there for the word boundaries, when the recognizer's
    pattern has an alphabet: Presidio's card, IBAN and wallet patterns do; a phone number
    found by ``phonenumbers`` starts and ends with a digit, '+' or a parenthesis).
    ``skip_impossible_wallets``: leave out the wallet windows in which Presidio's recognizer
    can find nothing (``wallet_possible``).
    """
    if not _any_database().matches(buf):
        return []
    hits = _all_database().scan(buf)
    spans = []
    for pid, (name, (_, window)) in enumerate(PREFILTERS.items()):
        mine = [h for h in hits if h[0] == pid]
        for lo, hi in window_spans(mine, window, buf):
            if skip_impossible_wallets and name == "crypto" and not wallet_possible(buf[lo:hi]):
                continue
            lo, hi = trimmed(window, buf, lo, hi)
            if lo < hi:
                spans.append((lo, hi))
    return spans
