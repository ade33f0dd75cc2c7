"""Second round of unseen log shapes: srun task reports, ranks that printed nothing, ranks that
raised the same error at clearly different times, peers naming the rank they waited for."""

from rootcause.engine import get_engine
from rootcause.evidence import parse_line
from rootcause.ranks import CrossRankEvidence, FirstError, initiating_rank
from rootcause.result import DiagnosisResult


def _slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


def fe(line: int, ts: float | None = None, signal: str = "sig") -> FirstError:
    return FirstError(ts, (0, line), line, f"line {line}", signal)


def test_srun_task_report_speaks_about_that_task():
    assert parse_line("srun: error: gpu-node-17: task 3: Out Of Memory").rank == 3
    assert not parse_line("srun: error: gpu-node-17: task 3: Out Of Memory").explicit
    # a range of tasks names no single rank
    assert parse_line("srun: error: gpu-node-17: tasks 0-3: Terminated").rank is None


def test_same_error_clearly_earlier_on_one_rank_names_it():
    rank, reason = initiating_rank(
        root_errors={0: fe(1, ts=19.9), 1: fe(8, ts=18.5), 2: fe(14, ts=17.1)},
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1, 2},
    )
    assert rank == 2
    assert "time" in reason


def test_same_error_within_a_second_is_still_every_rank():
    rank, reason = initiating_rank(
        root_errors={0: fe(1, ts=10.2), 1: fe(8, ts=10.0)},
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
    )
    assert rank is None
    assert "every rank" in reason


def test_rank_missing_among_timed_out_ranks_is_the_silent_one():
    rank, reason = initiating_rank(
        root_errors={},
        collateral_errors={0: fe(1), 2: fe(2), 3: fe(3)},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 2, 3},
    )
    assert rank == 1
    assert "every rank but 1" in reason
    # a single timed-out rank says nothing about which one it waited for
    rank, _ = initiating_rank(
        root_errors={}, collateral_errors={1: fe(1)}, evidence=CrossRankEvidence(), ranks_seen={1}
    )
    assert rank is None


def test_barrier_peer_names_the_rank_it_waited_for():
    ev = CrossRankEvidence()
    ev.observe(
        1,
        "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while "
        "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.",
    )
    rank, _ = initiating_rank(root_errors={}, collateral_errors={1: fe(5)}, evidence=ev)
    assert rank == 0


def test_mps_and_linear_messages_are_classified():
    engine = get_engine()
    mps = engine.diagnose(
        [
            '  File "/u/m.py", line 9, in forward\n'
            "    return self._conv_forward(input, self.weight, self.bias)\n"
            "RuntimeError: MPS backend out of memory (MPS allocated: 17.62 GB, other "
            "allocations: 412.25 MB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on "
            "private pool.\n"
        ]
    )
    assert _slug(mps) == "activation-oom"
    linear = engine.diagnose(
        [
            "RuntimeError: linear(): input and weight.T shapes cannot be multiplied (32x16 and 4x10)\n"
        ]
    )
    assert _slug(linear) == "shape-mismatch"


def test_more_collector_prefixes_are_taken_off():
    sky = parse_line('(worker1, rank=1, pid=2210, ip=<IP_2>)   File "a.py", line 3, in f')
    assert (sky.rank, sky.explicit, sky.text) == (1, True, '  File "a.py", line 3, in f')
    sm = parse_line("[1,mpirank:3,algo-1]<stderr>:Traceback (most recent call last):")
    assert (sm.rank, sm.explicit, sm.text) == (3, True, "Traceback (most recent call last):")
    pod = parse_line('[pod/sft-master-0/pytorch]   File "a.py", line 3, in f')
    assert (pod.host, pod.text) == ("sft-master-0", '  File "a.py", line 3, in f')
    kaggle = parse_line('31.4s\t42\t  File "a.py", line 3, in f')
    assert kaggle.text == '  File "a.py", line 3, in f'


def test_journald_prefix_keeps_its_time():
    first = parse_line('Dec 01 10:41:02 gpu-box python3[48121]:   File "a.py", line 3, in f')
    later = parse_line("Dec 01 10:41:09 gpu-box python3[48121]: RuntimeError: boom")
    assert first.host == "python3[48121]"
    assert first.text == '  File "a.py", line 3, in f'
    assert first.ts is not None
    assert later.ts is not None
    assert later.ts - first.ts == 7


def test_month_first_logging_dates_are_times():
    a = parse_line("12/03/2024 18:40:21 - ERROR - __main__ - [RANK 1] RuntimeError: x")
    b = parse_line("12/03/2024 18:40:29 - ERROR - __main__ - [RANK 0] RuntimeError: x")
    assert (a.rank, b.rank) == (1, 0)
    assert a.ts is not None
    assert b.ts is not None
    assert b.ts - a.ts == 8


def test_optimizer_frames_read_through_a_collector_prefix():
    tb = [
        "Traceback (most recent call last):",
        '  File "/x/torch/optim/adamw.py", line 627, in _multi_tensor_adamw',
        "    exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.",
    ]
    log = "".join(f"[pod/sft-master-0/pytorch] {line}\n" for line in tb)
    assert _slug(get_engine().diagnose([log])) == "optimizer-state-oom"


CAUGHT_OOM = [
    "Traceback (most recent call last):",
    '  File "/x/model.py", line 61, in forward',
    "    feats = self.backbone(x)",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "step 0: batch 32 ok",
]
WORKER_DIED = [
    "Traceback (most recent call last):",
    '  File "/x/train.py", line 260, in <module>',
    "    for images, labels in loader:",
    "RuntimeError: DataLoader worker (pid(s) 31877) exited unexpectedly",
]


def test_caught_error_that_training_went_on_after_yields_to_the_later_failure():
    progress = [f"step {n} loss 2.{n}" for n in (100, 200, 300)]
    log = "\n".join(CAUGHT_OOM + progress + WORKER_DIED) + "\n"
    assert _slug(get_engine().diagnose([log])) == "dataloader-worker-died"
    # without the progress lines in between, the OOM is not known to be caught: it stays
    log = "\n".join(CAUGHT_OOM + WORKER_DIED) + "\n"
    assert _slug(get_engine().diagnose([log])) == "activation-oom"


def test_windows_paging_file_is_host_memory():
    log = (
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. "
        'Error loading "C:\\\\x\\\\torch\\\\lib\\\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\n'
    )
    assert _slug(get_engine().diagnose([log])) == "host-oom-killed"
