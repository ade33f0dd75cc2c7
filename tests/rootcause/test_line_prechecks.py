"""The cheap pre-checks in front of the engine's slow searches give what the searches alone gave.

The engine reads each flagged line's time and in-text rank (rootcause/evidence.py) and the
figures of a chunk's first and last 4 KB (rootcause/engine/metrics.py) with case-insensitive or
alternation-led regular expressions that cost tens to hundreds of µs a line or window when they
find nothing. Each now runs only where a word or clock every match contains is found; these
tests hold each pre-check to the plain search on texts built from the pieces the patterns look
for, in every case, glued to each other and to unrelated text (hypothesis), and on the corpora.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rootcause import evidence
from rootcause.engine import metrics
from rootcause.engine.scanning import TRAINING_LINE_RE, is_training_line

ROOT = Path(__file__).resolve().parents[2]

# Pieces of what the patterns match (and near misses), in several cases and with look-alike
# characters: the long s and the Kelvin sign that `re` takes for s and k, and a character whose
# lower case is two characters long.
PIECES = [
    "2026-11-30 23:00:10,334",
    "2026-11-30T23:00:10.5Z",
    "I1130 23:13:03.743000",
    "[W1130 23:13:03",
    "11/30/2026 23:13:03",
    "Dec  1 10:41:07",
    "Nov 30 23:00:10",
    "23:00:10",
    "12:00",
    "[rank 3]",
    "[RANK:4]",
    "[Ra\u212ak 5]",
    "rank=2",
    "Rank 7:",
    "[rank1] ",
    "failed (exitcode: 1) local_rank: 3",
    "srun: error: node-1: task 4: ",
    "[PG 0 Rank 2]",
    "on rank 3 at iteration",
    "-- Process 2 terminated with the following error:",
    "ProcessExitedException: process 1 terminated with signal",
    "log_dist] [Rank 0]",
    "loss: 0.74",
    "LOSS = 25237.9",
    "'loss': 3.1",
    "val_loss=2",
    "Lo\u017f\u017f=3",
    "RSS MEM USE: 5.11G",
    "r\u017f\u017f: 4G",
    "cpu mem: 40 GB",
    "Host Memory 3 GiB",
    "RAM usage 12G",
    "ram used: 9 TB",
    "\u0130",
    "\u00e9",
    " ",
    "\n",
    ":",
    "-",
    "/",
    "x",
    "0",
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
# Progress lines and near misses, with the look-alikes re takes for their letters (the long s,
# the dotted and dotless i), and a run long enough to push a word past the 400 characters read.
PROGRESS_PIECES = [
    *PIECES,
    "step 12",
    "Step: 3",
    "EPOCH[2",
    "epoch=7",
    "iter 40",
    "Iteration 9",
    "\u017ftep 4",
    "\u0130ter 5",
    "\u0131ter 6",
    "train_loss=0.3",
    "eval_loss : 1",
    "steps 3",
    "x" * 380,
]
PROGRESS_TEXTS = st.lists(st.sampled_from(PROGRESS_PIECES), max_size=30).map("".join)


def _timestamp_plain(head: str) -> float | None:
    """parse_timestamp as it was: the four forms searched one after the other."""
    m = evidence._ISO_RE.search(head)
    if m:
        _, mo, d, h, mi, s, frac = m.groups()
    elif m := evidence._GLOG_RE.search(head) or evidence._US_RE.search(head):
        mo, d, h, mi, s, frac = m.groups()
    elif m := evidence._SYSLOG_RE.search(head):
        month, d, h, mi, s = m.groups()
        mo, frac = str(evidence._MONTHS.index(month) + 1), None
    else:
        return None
    seconds = ((int(mo) * 32 + int(d)) * 24 + int(h)) * 3600 + int(mi) * 60 + int(s)
    return seconds + (float("0." + frac) if frac else 0.0)


def _same_matches(pattern: re.Pattern[str], text: str) -> None:
    plain = [(m.span(), m.groupdict()) for m in pattern.finditer(text)]
    checked = [(m.span(), m.groupdict()) for m in metrics._finditer(pattern, text)]
    assert checked == plain


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_a_timestamp_is_read_as_the_four_searches_read_it(text: str) -> None:
    assert evidence.parse_timestamp(text) == _timestamp_plain(text)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_a_line_that_names_a_rank_in_its_text_passes_the_precheck(text: str) -> None:
    if evidence._SOFT_RANK_RE.search(text):
        assert evidence._may_name_rank(text)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_the_series_are_found_where_the_plain_search_finds_them(text: str) -> None:
    _same_matches(metrics.LOSS_RE, text)
    _same_matches(metrics.HOST_MEMORY_RE, text)


@settings(max_examples=600, deadline=None)
@given(PROGRESS_TEXTS)
def test_a_progress_line_is_told_as_the_plain_search_tells_it(text: str) -> None:
    assert is_training_line(text) == (TRAINING_LINE_RE.search(text[:400]) is not None)


def test_every_character_re_takes_for_a_letter_of_the_start_words_lowers_to_it() -> None:
    # What _finditer relies on: in the lowered text (the long s made an s) the start words are
    # found wherever the case-insensitive pattern could begin.
    letters = sorted({c for words in metrics._STARTS.values() for w in words for c in w} - {" "})
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for letter in letters:
        for found in re.findall(f"(?i){letter}", everything):
            assert found.lower().replace("\u017f", "s") == letter, (letter, hex(ord(found)))


def test_the_corpora_read_the_same() -> None:
    paths = [
        *sorted((ROOT / "tests").rglob("*.log")),
        *sorted((ROOT / "bench" / "realruns" / "corpus" / "dev").glob("*.log")),
    ]
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        _same_matches(metrics.LOSS_RE, text)
        _same_matches(metrics.HOST_MEMORY_RE, text)
        for line in text.splitlines():
            head = line[: evidence.HEAD_CHARS]
            assert evidence.parse_timestamp(head) == _timestamp_plain(head)
            if evidence._SOFT_RANK_RE.search(head):
                assert evidence._may_name_rank(head)
            assert is_training_line(line) == (TRAINING_LINE_RE.search(line[:400]) is not None)
