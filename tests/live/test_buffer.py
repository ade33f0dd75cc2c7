"""The bounded buffer and what counts as progress (rootcause.live.buffer)."""

from __future__ import annotations

from rootcause.engine import get_engine
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
