"""A pattern scanned without start-of-match tracking reports, in every hit, the start Hyperscan's
leftmost start of match gives (rootcause/masking/starts.py, ``Spec.start``): the same hits as the
database compiled with ``HS_FLAG_SOM_LEFTMOST``, on the test logs, the dense cluster log and
random text made of the patterns' own bytes."""

from __future__ import annotations

import random
from pathlib import Path

import hyperscan
import pytest

from bench.masking_corpus.cluster import dense_log
from rootcause.masking.patterns import SPECS
from rootcause.masking.scanner import Database, spec_flags, spec_starts

LOGS = Path(__file__).resolve().parents[1] / "logs"
FOUND_FROM_END = tuple(s for s in SPECS if s.start is not None)


def _databases() -> tuple[Database, Database]:
    with_som = Database(
        [s.hs for s in FOUND_FROM_END],
        [spec_flags(s) | hyperscan.HS_FLAG_SOM_LEFTMOST for s in FOUND_FROM_END],
    )
    from_end = Database(
        [s.hs for s in FOUND_FROM_END],
        [spec_flags(s) for s in FOUND_FROM_END],
        starts=spec_starts(FOUND_FROM_END),
    )
    return with_som, from_end


def _random_texts() -> list[bytes]:
    rng = random.Random(33)
    # the bytes the patterns turn on: name bytes, separators, brackets, digits, line ends
    alphabet = b"aZ9_.-@[],0 \n:/%+"
    texts = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 400))) for _ in range(4000)]
    # and of the patterns' pieces, so that whole matches are frequent
    pieces = [
        *(bytes([c]) for c in alphabet),
        b":12:3 [4]",
        b"[1-3,5]",
        b"@node-1 ",
        b"x.y",
        b".com",
        b"2026-12-01",
        b"%+",
        b"u@d.io",
    ]
    texts += [b"".join(rng.choices(pieces, k=rng.randint(1, 120))) for _ in range(4000)]
    # a name run longer than the first look back (starts._BACK)
    texts += [b"x" * 700 + b"@gpu-node-1 ", b"." * 300 + b"a" * 600 + b"node-[1-3]", b"a@b"]
    return texts


def test_the_patterns_found_from_their_end_are_the_costly_ones() -> None:
    names = {s.name for s in FOUND_FROM_END}
    assert names == {
        "user_at_host_user",
        "user_at_host_host",
        "slurm_hostlist",
        "nccl_prefix",
        "email",
    }
    assert all(not spec_flags(s) & hyperscan.HS_FLAG_SOM_LEFTMOST for s in FOUND_FROM_END)


@pytest.mark.parametrize("source", ["logs", "dense", "random"])
def test_starts_from_the_end_are_hyperscans_leftmost_starts(source: str) -> None:
    if source == "logs":
        texts = [p.read_bytes() for p in sorted(LOGS.rglob("*")) if p.is_file()]
    elif source == "dense":
        texts = [b"".join(dense_log(2 * 1024 * 1024))]
    else:
        texts = _random_texts()
    with_som, from_end = _databases()
    hits = 0
    for text in texts:
        expected = with_som.scan(text)
        assert sorted(from_end.scan(text)) == sorted(expected)
        hits += len(expected)
    # the patterns matched: the comparison compared something (the test logs have few)
    assert hits > (10 if source == "logs" else 1000)
