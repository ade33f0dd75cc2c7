"""The bounded buffer and what counts as progress (rootcause.live.buffer)."""

from __future__ import annotations

import msgspec

from rootcause.catalogue import load_entries
from rootcause.engine import Engine, get_engine
from rootcause.live import buffer
from rootcause.live.buffer import Source, Trigger, counter_key, feed


def trigger() -> Trigger:
    return Trigger(get_engine())


def test_a_redraw_with_the_same_step_is_no_progress_and_a_new_step_is():
    src, t = Source("job"), trigger()
    assert feed(src, "out", b"\r 45%|####  | 45/100 [00:10<00:12, 4.5it/s]", t).progress
    same = b"\r 45%|####  | 45/100 [00:11<00:12, 4.1it/s]"
    assert not feed(src, "out", same, t).progress
    assert feed(src, "out", b"\r 46%|####  | 46/100 [00:12<00:11, 4.4it/s]", t).progress
    assert feed(src, "out", b"\nnext line\n", t).progress


def test_the_counter_leaves_out_clocks_and_rates():
    assert counter_key(b"step 3000 [01:02<03:04, 2.5it/s] 12.3s") == (b"3000",)


def test_error_lines_trigger_and_ordinary_ones_do_not():
    t = trigger()
    assert not t(b"epoch 1 step 3 loss 0.25\n")
    assert t(b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert t(b"Traceback (most recent call last):\n")


def test_lines_split_across_blocks_are_joined_before_they_are_read():
    src, t = Source("job"), trigger()
    assert not feed(src, "err", b"RuntimeErr", t).triggered
    assert feed(src, "err", b"or: boom\n", t).triggered
    assert src.text() == "RuntimeError: boom\n"


def test_the_buffer_keeps_the_head_and_a_bounded_tail(monkeypatch):
    monkeypatch.setattr(buffer, "HEAD_BYTES", 100)
    monkeypatch.setattr(buffer, "TAIL_BYTES", 1000)
    src, t = Source("job"), trigger()
    feed(src, "out", b"launcher: world_size=4\n", t)
    for i in range(1000):
        feed(src, "out", f"step {i:05d}\n".encode(), t)
    text = src.text()
    assert text.startswith("launcher: world_size=4\n")
    assert "step 00999" in text
    assert "bytes of output not kept here" in text
    assert len(text) < 1300
    assert src.total_bytes > 11000


HEALTHY = b"".join(b"[rank0]: step %d loss 0.2500 grad_norm 1.25\n" % i for i in range(2000))
DIVERGED = b"[rank0]: step 2000 loss 27275.9 lr 3.0e-04 grad_norm 1.202e+06\n"


def test_a_signal_marked_figure_in_the_catalogue_moves_from_the_block_scan_to_the_sample():
    # `figure: true` on a signal is all it takes: mark the OOM signals of the catalogue figures
    # and an OOM line (no exception name: that alone triggers) stops triggering the block scan and triggers the sample's
    oom = b"[rank1]: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    entries = load_entries()
    marked = [
        msgspec.structs.replace(
            e,
            fingerprints=msgspec.structs.replace(
                e.fingerprints,
                signals=[msgspec.structs.replace(s, figure=True) for s in e.fingerprints.signals],
            ),
        )
        for e in entries
    ]
    before, after = Trigger(Engine(entries)), Trigger(Engine(marked))
    assert before(oom)
    assert not before.figures(oom)
    assert after.figures(oom)
    assert not after(oom)
    assert before.figures(DIVERGED)
    assert not before(DIVERGED)


def test_a_failing_figure_is_read_in_the_sample_not_by_the_block_scan():
    src, t = Source("job"), trigger()
    assert len(HEALTHY) > buffer.FIGURE_SAMPLE
    assert not feed(src, "out", HEALTHY + DIVERGED, t).triggered  # the block scan leaves it
    assert src.figures_due(t, now=100.0)
    # read: nothing fresh until more lines come; after a hit, not again for FIGURE_AFTER_HIT
    assert not src.figures_due(t, now=200.0)
    feed(src, "out", DIVERGED, t)
    assert not src.figures_due(t, now=100.0 + buffer.FIGURE_AFTER_HIT - 1)
    assert src.figures_due(t, now=100.0 + buffer.FIGURE_AFTER_HIT)


def test_healthy_figures_are_read_and_not_a_failure():
    src, t = Source("job"), trigger()
    feed(src, "out", HEALTHY, t)
    assert not src.figures_due(t, now=100.0)


def test_figures_are_read_at_most_every_figure_every_seconds_and_at_the_end():
    src, t = Source("job"), trigger()
    feed(src, "out", HEALTHY[:1000], t)
    assert not src.figures_due(t, now=100.0)
    feed(src, "out", DIVERGED, t)
    assert not src.figures_due(t, now=100.0 + buffer.FIGURE_EVERY / 2)
    assert src.figures_due(t, now=100.0 + buffer.FIGURE_EVERY / 2, ended=True)


def test_a_slow_job_has_every_line_read_for_figures_and_a_chatty_one_its_newest():
    src, t = Source("job"), trigger()
    feed(src, "out", DIVERGED, t)  # a few lines a second: the one figure line is read
    for block in range(10):
        feed(src, "out", b"[rank0]: step %d loss 0.25 grad_norm 1.25\n" % block, t)
    assert src.figures_due(t, now=100.0)
    src = Source("job")
    feed(src, "out", DIVERGED, t)  # more than FIGURE_SAMPLE after it within the second
    feed(src, "out", HEALTHY, t)
    assert not src.figures_due(t, now=100.0)
