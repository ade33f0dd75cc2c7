import pytest

from rootcause.evidence import ChunkLines, LineContext, clean_line, parse_line, parse_timestamp


@pytest.mark.parametrize(
    ("line", "rank", "host", "text"),
    [
        ("[rank3]: RuntimeError: boom", 3, None, "RuntimeError: boom"),
        ("[default3]:RuntimeError: boom", 3, None, "RuntimeError: boom"),
        ("3: RuntimeError: boom", 3, None, "RuntimeError: boom"),
        ("12: Traceback (most recent call last):", 12, None, "Traceback (most recent call last):"),
        ("node-2: [rank9]: RuntimeError: boom", 9, "node-2", "RuntimeError: boom"),
        ("<HOST_1>: [rank9]: RuntimeError: boom", 9, "<HOST_1>", "RuntimeError: boom"),
        ("[1,3]<stderr>:RuntimeError: boom", 3, None, "RuntimeError: boom"),
        ("trainer-1  | RuntimeError: boom", None, "trainer-1", "RuntimeError: boom"),
        ("worker-2 | [rank5]: RuntimeError: boom", 5, "worker-2", "RuntimeError: boom"),
        ("[rank0]:[rank0]: RuntimeError: boom", 0, None, "RuntimeError: boom"),
        ("[rank0]: 50%|#### | 5/10[rank3]: RuntimeError: boom", 3, None, "RuntimeError: boom"),
        ("worker-1: RuntimeError: boom", None, "worker-1", "RuntimeError: boom"),
        (
            "<IP_2>: Traceback (most recent call last):",
            None,
            "<IP_2>",
            "Traceback (most recent call last):",
        ),
        ("WARNING: not a host", None, None, "WARNING: not a host"),
        ("Epoch 1: 100%", None, None, "Epoch 1: 100%"),
        ("RuntimeError: boom", None, None, "RuntimeError: boom"),
    ],
)
def test_rank_prefixes(line, rank, host, text):
    info = parse_line(line)
    assert (info.rank, info.host, info.text) == (rank, host, text)
    assert info.explicit is (rank is not None)


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("[E1130 12:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught", 1),
        ("2026-12-01 00:26:25.122 rank=2 ERROR tab_ddp: rank 2: training aborted", 2),
        ("[rank 3] step 5 loss 8.77", 3),
        ("[rank: 1] Seed set to 42", 1),
        ("[2024-05-01 12:00:00,123] [RANK 7] loss 2.0", 7),
        ("failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: python", 3),
        ("epoch 0: running evaluation on 4 ranks", None),
    ],
)
def test_ranks_named_inside_the_line(line, rank):
    info = parse_line(line)
    assert info.rank == rank
    assert not info.explicit


def test_timestamps_glog_and_iso_compare():
    glog = parse_timestamp("E1130 23:04:25.836000 17562 torch/distributed/run.py:1]")
    iso = parse_timestamp("2026-11-30 23:04:25,900 - INFO - x")
    iso_t = parse_timestamp("[2026-11-30T23:04:26] x")
    under = parse_timestamp("  time      : 2026-11-30_23:04:24")
    assert glog is not None
    assert iso is not None
    assert iso_t is not None
    assert under is not None
    assert under < glog < iso < iso_t
    assert parse_timestamp("no time here 12:30") is None
    assert parse_line("[rank0]:[E1130 23:04:25.836 ProcessGroupNCCL.cpp:1] x").ts == glog - 0.000


def test_pasting_leftovers_are_removed():
    assert clean_line("> [rank1]: RuntimeError: x") == "[rank1]: RuntimeError: x"
    bar = "train:  46%|████▍     | 23/50 [00:12<00:13,  2.01it/s][rank 4] step 25 loss 6.96"
    assert clean_line(bar) == "[rank 4] step 25 loss 6.96"
    assert clean_line("50%|###  | 5/10 [00:01<00:01]\rRuntimeError: x") == "RuntimeError: x"
    rich = parse_line("│ /site-packages/torch/optim/adamw.py:123 in step                │")
    assert rich.text == "  /site-packages/torch/optim/adamw.py:123 in step"


CHAINED = [
    "2026-01-01 10:00:01.000 rank=2 ERROR train: aborted",
    "Traceback (most recent call last):",
    '  File "loader.py", line 3, in load',
    "KeyError: 'x'",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "train.py", line 9, in <module>',
    "RuntimeError: could not load",
    "2026-01-01 10:00:02.000 rank=3 INFO train: fine",
]


def test_unprefixed_traceback_inherits_rank_and_time():
    ctx = LineContext(CHAINED)
    last = ctx.resolve(9)
    assert last.rank == 2
    assert last.ts == parse_timestamp("2026-01-01 10:00:01.000")
    assert ctx.resolve(10).rank == 3


def test_frames_of_a_chained_traceback():
    frames = LineContext(CHAINED).frames(9)
    assert '  File "train.py", line 9, in <module>' in frames
    assert '  File "loader.py", line 3, in load' in frames
    assert "During handling of the above exception, another exception occurred:" in frames


def test_frames_skip_an_interleaved_rank():
    lines = [
        "[rank0]: Traceback (most recent call last):",
        "[rank1]: Traceback (most recent call last):",
        '[rank0]:   File "adamw.py", line 1, in step',
        '[rank1]:   File "linear.py", line 1, in forward',
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory",
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory",
    ]
    ctx = LineContext(lines)
    assert '  File "adamw.py", line 1, in step' in ctx.frames(4)
    assert all("linear.py" not in f for f in ctx.frames(4))
    assert all("adamw.py" not in f for f in ctx.frames(5))


def test_launcher_block_lines_take_the_entry_rank():
    lines = [
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-30_23:04:25",
        "  rank      : 2 (local_rank: 2)",
        "  exitcode  : -9 (pid: 17567)",
        "  traceback : Signal 9 (SIGKILL) received by PID 17567",
    ]
    ctx = LineContext(lines)
    assert ctx.resolve(5).rank == 2
    assert ctx.resolve(4).rank == 2


def test_chunk_lines_decode_on_demand():
    data = "a\nbé\n\nd".encode()
    lines = ChunkLines(["t0", "t1"], data, {0: 0, 3: data.rindex(b"\n") + 1})
    assert len(lines) == 6
    assert list(lines) == ["t0", "t1", "a", "bé", "", "d"]
    assert lines[-1] == "d"
    assert lines[3] == "bé"
    assert lines[-3:] == ["bé", "", "d"]
    fresh = ChunkLines([], data, {0: 0})
    assert fresh[2] == ""  # reached by walking forward from the first line


def test_tail_of_a_chunk_reads_lazily():
    data = "\n".join(f"line {n}" for n in range(10)).encode()
    lines = ChunkLines([], data, {0: 0})
    tail = lines.last(3)
    assert list(tail) == ["line 7", "line 8", "line 9"]
    assert tail[-1] == "line 9"
    nxt = ChunkLines(tail, b"next", {0: 0})
    assert list(nxt) == ["line 7", "line 8", "line 9", "next"]
    assert list(nxt.last(10)) == ["line 7", "line 8", "line 9", "next"]


def test_deepspeed_log_dist_rank_is_the_printer_not_the_subject():
    # deepspeedai/DeepSpeed#2069: every rank prints "Grad overflow on iteration 9"; log_dist
    # prints the summary on rank 0 only, tagged "[Rank 0]" whatever rank it is about
    line = (
        "[2022-07-05 16:30:10,797] [INFO] [logging.py:69:log_dist] [Rank 0] Overflow detected. "
        "Skipping step. Attempted loss scale: 8388608.0, reducing to 4194304.0"
    )
    assert parse_line(line).rank is None
    # a logging header's own [Rank N] still names N
    assert parse_line("[Rank 1] Overflow detected. Skipping step.").rank == 1


def test_loss_scale_at_its_floor_on_every_rank_names_no_rank():
    from rootcause.engine import get_engine

    overflow = (
        "[2022-07-05 16:30:10,796] [INFO] [fused_optimizer.py:382:_update_scale] \n"
        "Grad overflow on iteration 9\n"
    )
    text = (
        overflow
        * 4
        + "[2022-07-05 16:30:10,797] [INFO] [fused_optimizer.py:383:_update_scale] Reducing "
        "dynamic loss scale from 1 to 1\n"
        * 4
        + "[2022-07-05 16:30:10,797] [INFO] [logging.py:69:log_dist] [Rank 0] Overflow "
        "detected. Skipping step. Attempted loss scale: 1, reducing to 1\n"
    ) * 3
    result = get_engine().diagnose([text])

    assert result.failure is not None
    assert result.failure.slug == "fp16-loss-scale-underflow"
    assert result.initiating_rank is None


def test_spawns_process_exited_report_names_the_process_index():
    line = (
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
        "SIGKILL"
    )
    assert parse_line(line).rank == 1
    assert parse_line("process 1 terminated with signal SIGKILL").rank is None
    # spawn's own "Terminating process 12390 via signal SIGTERM" is a pid, not an index
    assert parse_line("Terminating process 12390 via signal SIGTERM").rank is None
