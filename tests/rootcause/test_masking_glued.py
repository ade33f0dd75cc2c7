"""Regressions of the masking misses the property test and the regenerated corpus exposed.

- A value glued to a date (the property test plants "value: <ip>" before a line that starts
  with its timestamp): the greedy last octet took the date's first digits and the address was
  dropped for a digit after it; an e-mail address's TLD ran into the date the same way.
- An address after a comparison ("err == 10.1.2.3") was taken for a pinned version
  ("pkg==9.1.0.70").
- A phone number followed by a number that is not one ("0x7f3a...") was dropped whole instead
  of cut after its last group.
- The assignment patterns (password=, token:, host :, aws_secret_access_key=, Bearer) stay on
  their line: a line ending in one no longer masks the first word of the next line.
- Presidio's phone recognizer reads a window that stops at a column gap (two blanks), so it
  masks the same number as the Hyperscan recognizers ("+49 30 55913771  0/5005"), and stops
  at any two separators in a row: phonenumbers read "+49 30 12345678. 0.7163" (a sentence's
  full stop, then a figure) as one longer number and Presidio masked ". 0.7163" with it.
- Presidio's phone findings are bounded as ours are (``validators.phone_bounds_ok``): a number
  glued to more digits ("(212) 555-0143.0.7163", "...-0143-120/2400") is part of a longer
  one on both paths, not a phone number on one and a masked piece on the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

from rootcause.masking import Masker


def mask(text: str, analyzer: AnalyzerEngine | None = None) -> str:
    return Masker(secret=b"k", analyzer=analyzer).mask(text)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "value: 24.217.165.1562026-12-01 03:10:00,100 - train - INFO",
            "value: <IP_1>2026-12-01 03:10:00,100 - train - INFO",
        ),
        ("value: 63.247.164.922026-12-01 03:21:55,018", "value: <IP_1>2026-12-01 03:21:55,018"),
        ("value: 10.0.0.52026-12-01 03:21:55", "value: <IP_1>2026-12-01 03:21:55"),
        ("peer 3.150.128.612025-01-17 04:51:22", "peer <IP_1>2025-01-17 04:51:22"),
        (
            "value: jdoe-x@acme.com2026-12-01 19:10:41.500 INFO",
            "value: <EMAIL_1>2026-12-01 19:10:41.500 INFO",
        ),
        ("assert err == 108.107.149.157, got 0", "assert err == <IP_1>, got 0"),
    ],
)
def test_an_address_glued_to_a_date_or_after_a_comparison_is_masked(
    line: str, expected: str
) -> None:
    assert mask(line + "\n") == expected + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "cudnn 8.9.2.262026-12-01",  # a version glued to a date stays a version
        "10.1.2.3004 samples",  # a longer number, no date after it
        "nvidia-cudnn-cu12==9.1.0.70",
        "torch>= 1.2.3.4",
        "ckpt 1.2.3.42026",  # digits, not a date
        "x jdoe@acme.com2",
    ],
)
def test_versions_and_longer_numbers_stay(line: str) -> None:
    assert mask(line + "\n") == line + "\n"


def test_a_phone_number_before_a_hex_number_is_cut_after_its_last_group() -> None:
    line = "tel: +86 130 8423 0184 0xd29db0d9b3f4 1562, in _call_impl\n"
    assert mask(line) == "tel: <PHONE> 0xd29db0d9b3f4 1562, in _call_impl\n"


@pytest.mark.parametrize(
    ("line", "follows"),
    [
        ("password=", "hello world"),
        ("  token: ", "RuntimeError: CUDA out of memory."),
        ("host :", "RuntimeError: boom"),
        ("  host      :", "step 2 loss 1.9"),
        ("aws_secret_access_key=", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"),
        ("Authorization: Bearer", "abcdefghijklmnopqrstuvwxyz0123"),
    ],
)
def test_an_assignment_at_the_end_of_a_line_does_not_reach_the_next(
    line: str, follows: str
) -> None:
    text = f"{line}\n{follows}\n"
    assert mask(text) == text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("password = hunter2x", "password = <SECRET>"),
        ("password=\t's3cr3t pass'", "password=\t'<SECRET>'"),
        ("host: gpu-node-7", "host: <HOST_1>"),
        (
            "aws_secret_access_key = AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
            "aws_secret_access_key = <AWS_SECRET_KEY>",
        ),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "Authorization: Bearer <SECRET>"),
    ],
)
def test_assignments_on_one_line_are_still_masked(line: str, expected: str) -> None:
    assert mask(line + "\n") == expected + "\n"


def test_presidio_masks_a_phone_before_a_column_gap_as_the_hyperscan_recognizers() -> None:
    pytest.importorskip("presidio_analyzer")
    from rootcause.masking.recognizer import shared_analyzer

    line = "Epoch: [0][  ALERT: paging on-call +49 30 55913771  0/5005]\tTime 14.382\n"
    expected = "Epoch: [0][  ALERT: paging on-call <PHONE>  0/5005]\tTime 14.382\n"
    assert mask(line) == expected
    assert mask(line, shared_analyzer()) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "Example 7: reach the front desk at +49 30 12345678. 0.7163, 'learning_rate': 1e-05",
            "Example 7: reach the front desk at <PHONE>. 0.7163, 'learning_rate': 1e-05",
        ),
        ("tel: +49 30 12345678. 120/2400", "tel: <PHONE>. 120/2400"),
        ("on-call +49 30 12345678 - 12 retries", "on-call <PHONE> - 12 retries"),
        ("on-call +49 30 12345678- 3 left", "on-call <PHONE>- 3 left"),
        ("on-call +49 30 12345678 -0.7163", "on-call <PHONE> -0.7163"),
        ("on-call +49 30 12345678... 0.7163", "on-call <PHONE>... 0.7163"),
        ("on-call +44 (0)20 7946 0393. 12", "on-call <PHONE>. 12"),
    ],
)
def test_presidio_stops_a_phone_at_two_separators_as_the_hyperscan_recognizers(
    line: str, expected: str
) -> None:
    pytest.importorskip("presidio_analyzer")
    from rootcause.masking.recognizer import shared_analyzer

    assert mask(line + "\n") == expected + "\n"
    assert mask(line + "\n", shared_analyzer()) == expected + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "loss at (212) 555-0143.0.7163 after warmup",
        "step (212) 555-0143-120/2400 done",
        "lr 212-555-0143.1e-05 now",
        "seen +1 212 555 0143.2026-12-07 first",
        "seen 1-212-555-0143.12 first",
    ],
)
def test_presidio_keeps_a_phone_glued_to_more_digits_as_the_hyperscan_recognizers(
    line: str,
) -> None:
    pytest.importorskip("presidio_analyzer")
    from rootcause.masking.recognizer import shared_analyzer

    assert mask(line + "\n") == line + "\n"
    assert mask(line + "\n", shared_analyzer()) == line + "\n"


PHONES = [
    "(212) 555-0143",
    "212-555-0143",
    "212.555.0143",
    "1-212-555-0143",
    "+1 212 555 0143",
    "+33 6 12 34 56 78",
    "+86 138 1234 5678",
]
VARIABLE_LENGTH = ["+49 30 12345678", "+49 30 5591377", "+44 20 7946 0393", "+91 98765 43210"]
FOLLOWERS = ["0.7163", "12", "120/2400", "3, 'learning_rate'", "1e-05", "2026-12-07"]


def test_client_and_server_mask_phones_before_punctuation_and_figures_alike() -> None:
    """Every phone shape before two separators, and the fixed-length shapes glued to more
    digits by one, with the figures a log holds after them: the same text on both paths.
    (A variable-length number glued to digits, "+49 30 12345678.0.7163", still differs:
    phonenumbers reads the digits as its own.)"""
    pytest.importorskip("presidio_analyzer")
    from rootcause.masking.recognizer import shared_analyzer

    before_punctuation = [
        f"reach the front desk at {phone}{sep}{figure}"
        for phone in PHONES + VARIABLE_LENGTH
        for sep in [". ", " - ", "- ", " -", " . ", ".  ", ". - ", " .", "... ", ") "]
        for figure in FOLLOWERS
    ]
    lines = before_punctuation + [
        f"tel: {p}{sep}{f}" for p in PHONES for sep in ".-" for f in FOLLOWERS
    ]
    # one line a text: a chunk dense with phone numbers is the density guard's (density.py)
    light = Masker(secret=b"k", analyzer=None)
    server = Masker(secret=b"k", analyzer=shared_analyzer())
    differ = [
        (line, a, b)
        for line in lines
        if (a := light.mask(line + "\n")) != (b := server.mask(line + "\n"))
    ]
    assert differ == []
    assert all("<PHONE>" in light.mask(line + "\n") for line in before_punctuation)
