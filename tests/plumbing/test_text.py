"""Names and short texts made safe to show (plumbing/text.py): no controls, no direction-changing
or invisible characters."""

from __future__ import annotations

import pytest

from plumbing.text import one_line, several_lines

# Each of these shows nothing, or shows something else than it is, or breaks a line.
HIDDEN = [
    *map(chr, range(0x00, 0x20)),
    "\x7f",
    *map(chr, range(0x80, 0xA0)),
    *map(chr, range(0x200B, 0x2010)),  # zero-width space, non-joiner, joiner; LRM, RLM
    *map(chr, range(0x202A, 0x202F)),  # embeddings and overrides
    *map(chr, range(0x2066, 0x206A)),  # isolates
    "\u2028",
    "\u2029",
    "\ufeff",
    "\u00ad",
    "\u061c",
    "\U000e0041",  # a tag character: invisible "A"
]


@pytest.mark.parametrize("char", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
def test_no_hidden_character_survives(char: str) -> None:
    cleaned = one_line(f"ab{char}cd")
    assert cleaned in ("abcd", "ab cd")
    assert char not in several_lines(f"ab{char}cd") or char in "\n\t"


def test_a_spoofed_file_name_reads_as_what_it_is() -> None:
    assert one_line("invoice\u202etxt.exe") == "invoicetxt.exe"
    assert one_line("\u2066report\u2069.pdf\u200b.sh") == "report.pdf.sh"


def test_a_forged_second_line_stays_on_the_first() -> None:
    assert one_line("3f2a9c0\r\nX-Injected: yes") == "3f2a9c0 X-Injected: yes"
    assert one_line("  a \t\t b  ") == "a b"


def test_several_lines_keep_their_lines_and_lose_the_rest() -> None:
    text = "Line one\r\nline two\rline\tthree\x1b[31m\u202eend\n"
    assert several_lines(text) == "Line one\nline two\nline\tthree [31mend"


def test_ordinary_text_is_left_alone() -> None:
    for text in ("résumé-train.log", "日本語のジョブ", "gpu=a100", "مرحبا", "emoji ❤️ ok"):
        assert one_line(text) == text
