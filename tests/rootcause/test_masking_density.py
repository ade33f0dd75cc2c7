"""Work per megabyte stays bounded whatever the input's shape (density.py), and the command
line's Presidio-when-needed masker masks exactly as Presidio on every chunk does.

Cost is counted, not timed: Hyperscan callbacks (every scan of the masking databases and the
engine's matcher) and confirmations (the Python work behind a candidate), so that a loaded
machine cannot make these tests fail or pass.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootcause.engine import get_engine
from rootcause.masking import Masker, iter_line_chunks, mask_log
from rootcause.masking import scanner as scanner_module
from rootcause.masking.density import BYTES_PER_HIT, DENSE_ENTITY, dense_regions
from rootcause.masking.masker import WHEN_NEEDED
from rootcause.masking.scanner import MAX_PRIVATE_KEY_BYTES, Database

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "logs"
CORPUS = ROOT / "bench" / "masking_corpus" / "corpus.jsonl"
SHARED = ROOT.parent / "shared" / "corpus"
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
MIB = 1 << 20
# A confirmation costs about what four callbacks do (measured: ~2 us against ~0.4 us).
CONFIRM_WEIGHT = 4
# The bound the guard promises: the recognizers get at most about two candidates per
# BYTES_PER_HIT bytes (a segment's budget), each confirmed in the learning and the masking pass,
# and the guard's own scans stop at twice their budgets (the whole chunk, each segment, a few
# more where a run ends). Ordinary logs cost about 16,000 units per MiB; a log with
# a real finding on every short line, about a million (masked one by one, as it should be).
BOUND_PER_MIB = 48 * MIB // BYTES_PER_HIT


@dataclass
class Work:
    callbacks: int = 0
    confirms: int = 0

    @property
    def cost(self) -> int:
        return self.callbacks + CONFIRM_WEIGHT * self.confirms


class _CountingDatabase:
    """The engine's compiled database, counting the callbacks of its scans."""

    def __init__(self, db: Any, work: Work) -> None:
        self.db, self.work = db, work

    def scan(self, data: bytes, match_event_handler: Any, scratch: Any = None) -> Any:
        def counted(*args: Any) -> Any:
            self.work.callbacks += 1
            return match_event_handler(*args)

        return self.db.scan(data, match_event_handler=counted, scratch=scratch)


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Work:
    counted = Work()
    scan, until, confirm = Database.scan, Database.scan_until, scanner_module.confirm_one
    raw_until = Database.scan_raw_until

    def counting_scan(self: Database, buf: bytes) -> list[tuple[int, int, int]]:
        hits = scan(self, buf)
        counted.callbacks += len(hits)
        return hits

    def counting_until(self: Database, buf: bytes, on_match: Any) -> bool:
        def callback(*args: Any) -> bool:
            counted.callbacks += 1
            return bool(on_match(*args))

        return until(self, buf, callback)

    def counting_raw_until(self: Database, buf: bytes, on_match: Any) -> bool:
        def callback(*args: Any) -> bool:
            counted.callbacks += 1
            return bool(on_match(*args))

        return raw_until(self, buf, callback)

    def counting_confirm(*args: Any) -> Any:
        counted.confirms += 1
        return confirm(*args)

    matcher = get_engine().scanner.matcher
    matcher.scan(b"warm up\n")  # the thread's scratch space, made from the real database
    monkeypatch.setattr(Database, "scan", counting_scan)
    monkeypatch.setattr(Database, "scan_until", counting_until)
    monkeypatch.setattr(Database, "scan_raw_until", counting_raw_until)
    monkeypatch.setattr(scanner_module, "confirm_one", counting_confirm)
    monkeypatch.setattr(matcher, "database", _CountingDatabase(matcher.database, counted))
    return counted


def _repeat(unit: bytes, size: int) -> bytes:
    return (unit * (size // len(unit) + 1))[:size]


def _benign(size: int) -> bytes:
    return _repeat(b"".join(p.read_bytes() for p in sorted(LOGS.glob("*/*.log"))), size)


def _mask_and_diagnose(data: bytes, masker: Masker | None = None) -> tuple[str, Masker, Any]:
    masker = masker or Masker(secret=b"k", analyzer=None)
    masked = list(mask_log(lambda: [data], masker))
    return "".join(masked), masker, get_engine().diagnose(masked)


def _cost_per_mib(work: Work, data: bytes, masker: Masker | None = None) -> float:
    before = work.cost
    _mask_and_diagnose(data, masker)
    return (work.cost - before) * MIB / len(data)


# The shapes of issue 14 and their relatives: a candidate on every byte or two, on one long line
# or on many short ones, runs of separators, digits, brackets and colons, unterminated blocks.
HOSTILE = {
    "1.": b"1.",
    "1:": b"1:",
    "colons": b":",
    "a@": b"a@",
    "fe80:": b"fe80:",
    "x@y": b"x@y ",
    "ipv4 list": b"10.0.0.1 ",
    "e-mails": b"a@b.com ",
    "host=": b"host=a ",
    "home paths": b"/home/a/",
    "phones": b"212-555-0143 ",
    "cards": b"4111 1111 1111 1111 ",
    "1. lines": b"1." * 40 + b"\n",
    "short lines": b"1:\n",
    "digits": b"0123456789",
    "brackets": b"[]",
    "separators": b"-_.,;/=",
    "unterminated keys": b"-----BEGIN PRIVATE KEY-----\nMIIEv\n",
    "exceptions": b"RuntimeError: x\n",
}


def test_ordinary_logs_never_reach_the_guard() -> None:
    paths = sorted(LOGS.rglob("*.log"))
    if SHARED.is_dir():
        paths += sorted(SHARED.rglob("*.log"))
    assert paths
    for path in paths:
        with path.open("rb") as f:
            for chunk in iter_line_chunks(f):
                regions, _ = dense_regions(chunk.encode("utf-8", "surrogatepass"))
                assert regions == [], path


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.slow  # a timing test
def test_hostile_shapes_cost_a_bounded_amount_per_megabyte(work: Work, name: str) -> None:
    benign = _cost_per_mib(work, _benign(MIB))
    hostile = _cost_per_mib(work, _repeat(HOSTILE[name], MIB))
    assert hostile <= max(3 * benign, BOUND_PER_MIB), (name, hostile, benign)


@pytest.mark.parametrize("name", ["1.", "a@", "phones"])
def test_the_service_path_is_bounded_too(work: Work, name: str) -> None:
    """With Presidio's analyzer (the worker's masker): the guard runs before any recognizer."""
    pytest.importorskip("presidio_analyzer")
    benign = _cost_per_mib(work, _benign(MIB // 4), Masker(secret=b"k"))
    hostile = _cost_per_mib(work, _repeat(HOSTILE[name], MIB // 4), Masker(secret=b"k"))
    assert hostile <= max(3 * benign, BOUND_PER_MIB), (name, hostile, benign)


_UNITS = st.sampled_from(
    [b"1.", b"1:", b":", b"a@", b"fe80:", b"10.0.0.1 ", b"[", b"]", b"(", b")", b"-", b"=",
     b"0", b"9", b".", b"/", b"@", b"x", b" ", b"hf_", b"sk-", b"AKIA", b"/home/", b"+49 ",
     b"-----BEGIN PRIVATE KEY-----", b"tokens/s", b"password=", b"host ", b"host :", b"token: "]
)  # fmt: skip
# "password=", "host :": the assignment patterns stay on their line, so a line ending in one
# does not make the next line's first word (the OOM after the run) a secret or a host name.


@st.composite
def _hostile_logs(draw: st.DrawFn) -> bytes:
    """Runs of a few units, lines from a few bytes to one line of the whole input."""
    units = draw(st.lists(_UNITS, min_size=1, max_size=4))
    line = draw(st.sampled_from([2, 16, 80, 1000, 0]))  # 0: one long line
    run = b"".join(units)
    body = _repeat(run, 256 * 1024)
    if line:
        step = max(line, len(run))
        body = b"\n".join(body[i : i + step] for i in range(0, len(body), step))
    return body + b"\n" + OOM


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_hostile_logs())
@pytest.mark.slow  # a timing test
def test_any_run_of_hostile_units_costs_a_bounded_amount(work: Work, data: bytes) -> None:
    before = work.cost
    masked, _, result = _mask_and_diagnose(data)
    per_mib = (work.cost - before) * MIB / len(data)
    assert per_mib <= BOUND_PER_MIB, per_mib
    assert masked.count("\n") == data.count(b"\n")  # line numbers are kept
    if b"-----BEGIN" not in data[-MAX_PRIVATE_KEY_BYTES - 4096 :]:
        # the error after the run survives it (an unterminated key block takes 32 KiB after it)
        assert OOM.decode() in masked
        assert result.failure is not None


def test_a_dense_stretch_is_masked_whole_and_the_error_after_it_survives() -> None:
    lines = [b"step 1 loss 2.0\n", *([b"1." * 40 + b"\n"] * 5000), b"step 2 loss 1.9\n", OOM]
    data = b"".join(lines)
    masked, masker, result = _mask_and_diagnose(data)
    out = masked.splitlines()
    assert out[0] == "step 1 loss 2.0"
    assert out[1] == "<DENSE_LINE>"  # the first line of the dense stretch; the rest empty
    assert set(out[2:4998]) == {""}
    # the end of the run is judged line by line: a line within a piece's budget may stay
    assert sum(1 for line in out if "1.1.1." in line) <= 2
    assert len(out) == len(lines)
    assert out[-2] == "step 2 loss 1.9"
    assert OOM.decode().strip() in out
    assert masker.counts[DENSE_ENTITY] >= 4998
    assert result.failure is not None


def test_ordinary_lines_before_a_dense_stretch_keep_their_masking() -> None:
    data = b"ssh jdoe@gpu-node-17 ok\n" * 3 + b"1:" * 50_000 + b"\n" + OOM
    masked, masker, _ = _mask_and_diagnose(data)
    assert masked.startswith("ssh <USER>@<HOST_1> ok\n" * 3)
    assert "jdoe" not in masked
    assert masker.counts[DENSE_ENTITY] == 1


def _records() -> Iterator[str]:
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        yield json.loads(line)["text"] + "\n"


def test_presidio_when_needed_masks_as_presidio_on_every_chunk() -> None:
    """The labelled corpus (planted cards, IBANs, phones and wallets among the rest) and every
    test log: the same text and the same counts, Presidio imported or not."""
    pytest.importorskip("presidio_analyzer")
    for text in _records():
        assert Masker(b"k", analyzer=WHEN_NEEDED).mask(text) == Masker(b"k").mask(text), text
    for path in sorted(LOGS.rglob("*.log")):
        read: Callable[[], list[bytes]] = functools.partial(list, [path.read_bytes()])
        lazy, eager = Masker(b"k", analyzer=WHEN_NEEDED), Masker(b"k")
        assert list(mask_log(read, lazy)) == list(mask_log(read, eager))
        assert lazy.counts == eager.counts, path


def test_presidio_when_needed_skips_presidio_where_it_cannot_change_anything() -> None:
    pytest.importorskip("presidio_analyzer")
    # A wandb key looks like a wallet and a card number to the prefilters, but is a key.
    plain = "wandb: W&B API key is configured (11da71d9bfafaa749cbe95cbceda0e9e3eb6031a)\n"
    lazy = Masker(b"k", analyzer=WHEN_NEEDED)
    assert "<WANDB_API_KEY>" in lazy.mask(plain)
    assert lazy._analyzer is None
    iban = "payout to DE89370400440532013000 failed\n"
    assert "DE89370400440532013000" not in lazy.mask(iban)
    assert lazy._analyzer is not None  # an IBAN needs Presidio's recognizer


# Wallet-looking windows: commit hashes and keys starting with 1 or 3, real addresses (P2PKH,
# P2SH, one with a character changed), and the shapes Presidio's pattern takes case-blind.
_WALLETS = [
    b" 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2 ",
    b"=3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy,",
    b"(1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa)",
    b" 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb ",
    b"[196e541d8e955a181f53681f6a95296c332e965b]",
    b" 3dc34917385c7754de6a96775e2ec737642e998f\n",
    b" 1111111111111111111114oLvT2 ",
    b" BC1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq ",
    b" bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq ",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(list(b"13abcfxyzIOl0BCKMNPQRSTUVWXYZ-_.=")), min_size=20, max_size=90
    ).map(bytes)
)
def test_a_wallet_window_is_skipped_only_where_presidio_finds_nothing(window: bytes) -> None:
    """``wallet_possible`` (the command line's reason not to import Presidio for a commit hash)
    never says no where Presidio's wallet recognizer would report something."""
    pytest.importorskip("presidio_analyzer")
    from presidio_analyzer.predefined_recognizers import CryptoRecognizer

    from rootcause.masking.prefilters import wallet_possible

    recognizer = CryptoRecognizer()
    for text in [window, *_WALLETS]:
        found = recognizer.analyze(text.decode(), ["CRYPTO"], None)
        if found:
            assert wallet_possible(text), text
    assert not wallet_possible(_WALLETS[4])
    assert not wallet_possible(_WALLETS[5])
    assert wallet_possible(_WALLETS[0])
    assert not wallet_possible(_WALLETS[3])


def test_presidio_when_needed_is_not_imported_for_commit_hashes() -> None:
    """A commit hash that starts with 1 or 3 is a wallet to the prefilter, never to Presidio's
    checksum: the command line masks it without Presidio, as Presidio would."""
    pytest.importorskip("presidio_analyzer")
    text = (
        "[commit 196e541d8e955a181f53681f6a95296c332e965b] ssh jdoe@gpu-node-17 ok\n"
        "[commit 3dc34917385c7754de6a96775e2ec737642e998f] step 53057/500000\n"
    )
    lazy = Masker(b"k", analyzer=WHEN_NEEDED)
    assert lazy.mask(text) == Masker(b"k").mask(text)
    assert lazy._analyzer is None
    wallet = "tip jar 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2 ok\n"
    assert lazy.mask(wallet) == Masker(b"k").mask(wallet)
    assert lazy._analyzer is not None  # a real address: Presidio's recognizer decides


def _seconds(data: bytes) -> float:
    best = float("inf")
    for _ in range(2):  # the best of two: a scheduler hiccup is not a regression
        start = time.perf_counter()
        _mask_and_diagnose(data)
        best = min(best, time.perf_counter() - start)
    return best


# The shapes issue 14 names, whose cost per MB was 15 to 75 times the benign log's.
TIMED = ["1.", "1:", "colons", "a@", "1. lines", "short lines", "brackets", "unterminated keys"]


@pytest.mark.slow
@pytest.mark.parametrize("name", TIMED)
def test_hostile_shapes_take_less_than_three_times_a_benign_log(name: str) -> None:
    _mask_and_diagnose(b"warm up\n")
    benign = _seconds(_benign(MIB))
    hostile = _seconds(_repeat(HOSTILE[name], MIB))
    assert hostile < 3 * benign + 0.05, (name, hostile, benign)


def _counting_every_hit(db: Database, buf: bytes, limit: int, specs: int) -> tuple[Any, bool]:
    """density.bounded_scan as it was before it only kept the first hits: every hit counted."""
    from rootcause.masking.density import PREFILTER_WEIGHT

    hits: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    cost = 0

    def on_match(pid: int, start: int, end: int, flags: int, context: object) -> bool:
        nonlocal cost
        hits.append((pid, start, end))
        if (pid, start) not in seen:
            seen.add((pid, start))
            cost += PREFILTER_WEIGHT if pid >= specs else 1
        return cost > limit or len(hits) > 2 * limit

    return hits, db.scan_until(buf, on_match)


def test_the_bounded_scan_stops_where_counting_every_hit_stops() -> None:
    """bounded_scan keeps the hits it cannot be over the limit with and counts from then on:
    the same hits and the same verdict as counting every hit, for every limit around where it
    stops, with the guard's database (prefilters weigh two) and the main one (all weigh one)."""
    from bench.masking_corpus.cluster import dense_log
    from rootcause.masking.density import bounded_scan, guard_database
    from rootcause.masking.patterns import SPECS
    from rootcause.masking.scanner import main_database

    dense = b"".join(dense_log(16 * 1024))
    shapes = [dense, b"1." * 3000, b"a@b " * 800, b"phone +44 20 7946 0958 ip 10.0.0.1\n" * 90]
    for db, specs in ((guard_database(), len(SPECS)), (main_database(), 1 << 30)):
        for buf in shapes:
            total = len(_counting_every_hit(db, buf, 1 << 40, specs)[0])
            for limit in sorted({0, 1, 2, 3, total // 4, total // 2 - 1, total // 2, total}):
                expected = _counting_every_hit(db, buf, limit, specs)
                assert bounded_scan(db, buf, limit, specs) == expected, (limit, total)
