"""What is a text log: the one rule the service's intake and the command line both apply.

Judged on the first bytes of the (decompressed) input. NUL bytes mean binary by their share, not
their presence: a binary format has them everywhere (in many separate places), while a log whose
writer crashed holds a stray NUL or one run of them where a block was never written, and is
still a log. The signatures of the binaries people upload by mistake mean binary too. Invalid
UTF-8 alone does not: logs carry a stray Latin-1 byte, a cp437 progress bar
or a half-written character, and masking and matching read them with replacement characters.
Only a head that is mostly undecodable is refused, since little of it could be read: a Russian
log in cp1251 is (each letter is an invalid byte); a Chinese one in GBK with English tracebacks is
not, and is diagnosed on the lines that can be read. Control characters other than those a
terminal's output carries (tab, line breaks, form feed, backspace, escape) mean binary by their
share too: compressed or encrypted data holds one byte in ten of them, a log almost none.
"""

from __future__ import annotations

import re

SNIFF_BYTES = 8192
# gzip (a second layer, once the intake has unpacked the first), zip, ELF (binaries, core dumps)
_BINARY_SIGNATURES = (b"\x1f\x8b", b"PK\x03\x04", b"\x7fELF")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Above this share of undecodable bytes in the head the input is refused as not UTF-8.
MAX_UNDECODABLE = 0.5
# Above this many separate places with NUL bytes per byte of the head, the input is binary (an
# ELF or a pickle has one every few bytes; a crashed writer's log, one or a few per 8 KiB).
MAX_NUL_RUNS_SHARE = 0.01
_NUL_RUN_RE = re.compile(rb"\x00+")
# Above this share of the head in control bytes that no terminal output carries, the input is
# binary (random or compressed bytes: about 10 %; a log: none, or a stray one).
MAX_CONTROL_SHARE = 0.03
_CONTROL_BYTES = bytes([*range(0x01, 0x08), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])


def not_a_log(head: bytes) -> str | None:
    """Why input starting with `head` is not a text log, as the end of a sentence about the
    file ("<file> is ..."); None for a log. `head` may be any length; SNIFF_BYTES are read."""
    sample = head[:SNIFF_BYTES]
    if sample.startswith(_UTF16_BOMS):
        return "is UTF-16 text; convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"
    if (
        sample.startswith(_BINARY_SIGNATURES)
        or nul_runs_share(sample) > MAX_NUL_RUNS_SHARE
        or control_share(sample) > MAX_CONTROL_SHARE
    ):
        return "looks like a binary file, not a text log"
    if sample and undecodable_share(sample) > MAX_UNDECODABLE:
        return (
            "is not UTF-8 text: most of its first bytes cannot be decoded; convert it first "
            "(iconv -f <its encoding> -t UTF-8)"
        )
    return None


def nul_runs_share(data: bytes) -> float:
    """Places where NUL bytes occur (a run of them counts once), per byte of `data`."""
    if b"\x00" not in data:
        return 0.0
    return len(_NUL_RUN_RE.findall(data)) / len(data)


def control_share(data: bytes) -> float:
    """The share of `data`'s bytes that are control characters no terminal output carries."""
    # Counted by deleting them (C, a byte at a time): a regular expression's findall took about
    # 4 % of a submission's instructions on an 8 KiB head (docs/benchmarks.md, 2026-12-07).
    return (len(data) - len(data.translate(None, _CONTROL_BYTES))) / len(data) if data else 0.0


def undecodable_share(data: bytes) -> float:
    """The share of `data`'s bytes that are not part of valid UTF-8.

    A character cut at the end of `data` counts as undecodable: at most 3 bytes of a sample.
    """
    try:
        data.decode("utf-8")
        return 0.0  # the usual case, at C speed
    except UnicodeDecodeError:
        pass
    # surrogateescape turns each undecodable byte into one lone surrogate, so they can be counted
    text = data.decode("utf-8", "surrogateescape")
    bad = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    return bad / len(data) if data else 0.0
