"""``diagnose --offline`` masks only what it prints (rootcause/masking/printed.py): the lines it
reads to learn the names a printed line mentions must teach every such name the learning pass
over the whole log would."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.masking_corpus.cluster import dense_log
from rootcause.masking import Masker, iter_line_chunks, printed
from rootcause.masking.printed import mentioned_names, teaching_lines

LOGS = Path(__file__).resolve().parents[2] / "tests" / "logs"


def _learned_by_the_whole_pass(data: bytes) -> set[bytes]:
    masker = Masker(b"k", analyzer=None)
    for chunk in iter_line_chunks([data], 1 << 16):
        masker.learn(chunk)
    return set(masker._learned)


def _check(data: bytes, printed: list[str]) -> int:
    whole = _learned_by_the_whole_pass(data)
    names = mentioned_names(printed)
    lazy = Masker(b"k", analyzer=None)
    for lines in teaching_lines([data[:1000], data[1000:]], names):  # a cut mid-line
        lazy.learn_lines(lines)
    missed = (whole & names) - set(lazy._learned)
    assert not missed, missed
    return len(whole & names)


def test_every_name_a_printed_line_mentions_is_learned_on_the_cluster_log() -> None:
    data = b"".join(dense_log(256 * 1024))
    lines = data.decode().splitlines()
    # every line printed: the names it mentions, learned from the lines that teach them
    assert _check(data, lines[::7]) > 50


def test_every_name_a_printed_line_mentions_is_learned_on_the_test_logs() -> None:
    checked = 0
    for path in sorted(LOGS.rglob("*.log")):
        data = path.read_bytes()
        checked += _check(data, data.decode("utf-8", "replace").splitlines()[::3])
    assert checked > 5


def test_the_lines_come_in_batches_of_bounded_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name on every line of a big log: its lines come a batch at a time, each line once a
    batch, every line of the log in one of them."""
    monkeypatch.setattr(printed, "_BATCH", 4096)
    log = b"".join(b"gpu-node-17 step %d\n" % i for i in range(2000)) + b"gpu-node-17 step 1999\n"
    batches = list(teaching_lines([log[:7777], log[7777:]], {b"gpu-node-17"}))
    assert len(batches) > 5
    assert all(len(b) < 4096 + 64 for b in batches)
    assert sum(b.count(b"\n") for b in batches) == 2000  # the last line repeats one of a batch


def test_names_are_sequences_of_whole_atoms_with_any_separator() -> None:
    names = mentioned_names(["pod trainjob-Declan-Murphy-worker-1 on gpu-node-17:"])
    assert {b"declan-murphy", b"gpu-node-17", b"trainjob-declan-murphy-worker-1"} <= names
    assert b"ecla" not in names  # not a whole atom
    log = b"x\nreading /home/declan.murphy/data\ny\nGPU-NODE-17 up\n"
    assert list(teaching_lines([log], names)) == [
        b"reading /home/declan.murphy/data\nGPU-NODE-17 up\n"
    ]
    # no atom of four letters: only the name with its separator finds the line that teaches it
    names = mentioned_names(["pod trainjob-jo-ng-worker-1 OOMKilled"])
    lines = b"".join(teaching_lines([b"step 1\nreading /home/jo.ng/data\n"], names))
    assert lines == b"reading /home/jo.ng/data\n"
    masker = Masker(b"k", analyzer=None)
    masker.learn_lines(lines)
    assert masker.mask_apart("pod trainjob-jo-ng-worker-1 OOMKilled") == (
        "pod trainjob-<USER>-worker-1 OOMKilled"
    )
