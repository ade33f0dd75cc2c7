"""Log shapes met on unseen logs: collectors' prefixes, notebook and pasted tracebacks, chains,
recovered errors, and rank evidence that only peers report."""

from rootcause.engine import get_engine
from rootcause.evidence import LineContext, parse_line
from rootcause.ranks import CrossRankEvidence, FirstError, initiating_rank


def test_collector_timestamp_is_taken_off_and_kept_as_time():
    info = parse_line('2024-09-03T11:20:04.771Z [rank2]:   File "x.py", line 3, in f')
    assert info.rank == 2
    assert info.explicit
    assert info.text.startswith('  File "x.py"')
    assert info.ts is not None


def test_ray_worker_prefix_is_a_stream():
    info = parse_line('(RayTrainWorker pid=31101, ip=<IP_1>)   File "a.py", line 1, in f')
    assert info.host == "RayTrainWorker pid=31101, ip=<IP_1>"
    assert info.text.startswith("  File")


def test_ansi_colours_are_removed():
    assert parse_line("\x1b[31mRuntimeError\x1b[0m: boom").text == "RuntimeError: boom"


def test_ipython_frames_read_as_python_frames():
    lines = [
        "File ~/env/lib/python3.10/site-packages/torch/optim/adamw.py:117, in AdamW._init_group(self, g)",
        "--> 117 state['exp_avg'] = torch.zeros_like(",
        "",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB.",
    ]
    frames = LineContext(lines).frames(3)
    assert any("in _init_group" in f for f in frames)
    assert any(f.startswith("    117 state") for f in frames)


def test_code_line_under_an_unindented_frame_stays_in_the_traceback():
    lines = [
        "Traceback (most recent call last):",
        'File "/x/adamw.py", line 509, in _multi_tensor_adamw',
        "exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)",
        "torch.cuda.OutOfMemoryError: CUDA out of memory.",
    ]
    frames = LineContext(lines).frames(3)
    assert any("_multi_tensor_adamw" in f for f in frames)


def test_chained_after_points_at_the_earlier_exception():
    lines = [
        "step 1",
        "Traceback (most recent call last):",
        "EOFError: Ran out of input",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        "RuntimeError: second",
    ]
    ctx = LineContext(lines)
    assert ctx.chained_after(7) == (1 - 7, 4 - 7)
    assert ctx.chained_after(2) is None


def test_odd_collective_named_by_peers_wins_over_order():
    ev = CrossRankEvidence()
    fp = "CollectiveFingerPrint(SequenceNumber=4, OpType={op})"
    for reporter in (1, 2):
        ev.observe(
            reporter,
            f"Rank {reporter} is running collective: {fp.format(op='ALLREDUCE')}, but "
            f"Rank 3 is running collective: {fp.format(op='ALLGATHER')}",
        )
    errors = {r: FirstError(None, (0, r), r, "x", "mismatch") for r in (1, 2)}
    rank, _ = initiating_rank(root_errors=errors, collateral_errors={}, evidence=ev)
    assert rank == 3


def test_a_gap_in_rank_numbers_is_not_every_rank():
    errors = {r: FirstError(None, (0, n), n, "x", "sig") for n, r in ((5, 3), (9, 0))}
    rank, _ = initiating_rank(
        root_errors=errors, collateral_errors={}, evidence=CrossRankEvidence(), ranks_seen={0, 3}
    )
    assert rank == 3
    contiguous = {r: FirstError(None, (0, r), r, "x", "sig") for r in (0, 1)}
    rank, _ = initiating_rank(
        root_errors=contiguous,
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
    )
    assert rank is None


def test_error_after_which_training_went_on_is_recovered():
    caught = "WARNING CUDA out of memory with batch_size=64, retrying with 32\n"
    steps = "".join(f"step {i} loss 0.{i}\n" for i in range(1, 5))
    assert get_engine().diagnose([caught + steps]).outcome == "no_match"
    # the same line at the end of the log is the failure
    assert get_engine().diagnose([steps + caught]).outcome == "diagnosed"


def test_root_error_seen_twice_without_rank_singles_out_nobody():
    collateral = {1: FirstError(None, (0, 40), 40, "failed (exitcode: 1) local_rank: 1", "x")}
    once, _ = initiating_rank(
        root_errors={},
        collateral_errors=collateral,
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
        unranked_roots=1,
    )
    assert once == 0
    twice, reason = initiating_rank(
        root_errors={},
        collateral_errors=collateral,
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
        unranked_roots=2,
    )
    assert twice is None
    assert "without a rank" in reason
