from pathlib import Path

import pytest

from rootcause.cli import diagnose_path
from rootcause.engine import get_engine
from rootcause.evidence import parse_line
from rootcause.ranks import (
    Basis,
    CrossRankEvidence,
    FirstError,
    initiating_rank,
    mirrored_reason,
    rank_answer,
    spawn_exit,
)


def fe(line, ts=None, source=0, signal="sig"):
    return FirstError(ts, (source, line), line, f"line {line}", signal)


def test_by_timestamp_when_every_rank_has_one():
    rank, reason = initiating_rank(
        root_errors={0: fe(10, ts=5.0), 2: fe(50, ts=1.0)},
        collateral_errors={1: fe(60, ts=9.0)},
        evidence=CrossRankEvidence(),
    )
    assert rank == 2
    assert "time" in reason


def test_by_order_when_a_timestamp_is_missing():
    rank, _ = initiating_rank(
        root_errors={0: fe(10, ts=5.0), 2: fe(50)},
        collateral_errors={1: fe(60)},
        evidence=CrossRankEvidence(),
    )
    assert rank == 0


def test_root_error_beats_earlier_collateral():
    rank, _ = initiating_rank(
        root_errors={3: fe(90)},
        collateral_errors={0: fe(1), 1: fe(2)},
        evidence=CrossRankEvidence(),
    )
    assert rank == 3


def observe(lines):
    evidence = CrossRankEvidence()
    for rank, text in lines:
        evidence.observe(rank, text)
    return evidence


def test_seqnum_outlier():
    ev = observe(
        [
            (
                r,
                f"[Rank {r}] Watchdog caught: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, Timeout(ms)=1)",
            )
            for r, s in [(0, 9), (1, 9), (2, 8), (3, 9)]
        ]
    )
    assert initiating_rank(root_errors={}, collateral_errors={}, evidence=ev)[0] == 2


def test_optype_outlier():
    ev = observe(
        [
            (r, f"WorkNCCL(SeqNum=9, OpType={op}, Timeout(ms)=1)")
            for r, op in [(0, "ALLREDUCE"), (1, "BROADCAST"), (2, "ALLREDUCE")]
        ]
    )
    assert ev.suspect() is not None
    assert ev.suspect()[0] == 1


def test_no_outlier_when_all_agree():
    ev = observe([(r, "WorkNCCL(SeqNum=9, OpType=ALLREDUCE)") for r in range(4)])
    assert ev.suspect() is None


def test_last_enqueued_outlier():
    ev = observe(
        [
            (
                r,
                f"detected by watchdog at work: 9, last enqueued NCCL work: {e}, last completed NCCL work: 8",
            )
            for r, e in [(0, 12), (1, 12), (2, 9)]
        ]
    )
    assert ev.suspect()[0] == 2


def test_collective_mismatch_report_names_the_odd_rank():
    a = "CollectiveFingerPrint(SequenceNumber=104, OpType=ALLREDUCE, TensorShape=[64])"
    b = "CollectiveFingerPrint(SequenceNumber=104, OpType=ALLREDUCE, TensorShape=[40])"
    ev = observe(
        [
            (
                0,
                f"Detected mismatch. Rank 1 is running collective: {b}, but Rank 0 is running collective: {a}",
            ),
            (
                2,
                f"Detected mismatch. Rank 2 is running collective: {a}, but Rank 1 is running collective: {b}",
            ),
            (
                1,
                f"Detected mismatch. Rank 1 is running collective: {b}, but Rank 3 is running collective: {a}",
            ),
        ]
    )
    rank, _ = initiating_rank(
        root_errors={0: fe(1), 1: fe(2), 2: fe(3)}, collateral_errors={}, evidence=ev
    )
    assert rank == 1


def test_monitored_barrier_names_the_rank():
    ev = observe([(0, "RuntimeError: Rank 2 failed to pass monitoredBarrier in 300000 ms")])
    assert initiating_rank(root_errors={}, collateral_errors={0: fe(1)}, evidence=ev)[0] == 2


def test_first_pg_to_dump():
    ev = observe([(3, "[PG 0 Rank 3] First PG on this rank to signal dumping.")])
    assert ev.suspect() == (3, "first process group on this rank to signal a dump")


def test_first_pg_to_dump_is_not_first_when_another_rank_timed_out_on_its_own():
    # hiyouga/LlamaFactory#8261: rank 0 signals the dump, rank 2's own watchdog caught the
    # same collective (SeqNum=2847) at the same moment
    ev = observe(
        [
            (0, "[PG ID 1 PG GUID 1 Rank 0] First PG on this rank to signal dumping."),
            (
                2,
                "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2847, "
                "OpType=ALLREDUCE, NumelIn=197140480, NumelOut=197140480, Timeout(ms)=600000)",
            ),
        ]
    )
    assert ev.suspect() is None


def test_an_optype_cut_by_the_paste_is_not_a_different_collective():
    # Picotron tutorial thread (huggingface/picotron_tutorial#6): the last watchdog line of the
    # paste ends inside "OpType=ALLREDUC"
    full = "[Rank {}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=120000)"
    ev = observe(
        [
            (1, full.format(1)),
            (7, full.format(7)),
            (
                2,
                "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUC",
            ),
        ]
    )
    assert ev.suspect() is None
    # a whole different name still singles its rank out
    ev = observe(
        [
            (1, full.format(1)),
            (7, full.format(7)),
            (2, full.format(2).replace("ALLREDUCE", "BROADCAST")),
        ]
    )
    suspect = ev.suspect()
    assert suspect is not None
    assert suspect[0] == 2


def test_a_rank_whose_own_watchdog_caught_the_failure_is_not_silent():
    # hiyouga/LlamaFactory#8261: rank 0 reports only "failure detected by watchdog at work
    # sequence id" (no fingerprint line); rank 2 timed out. Rank 0 did not hang in silence.
    ev = observe(
        [
            (
                0,
                "[PG ID 1 PG GUID 1 Rank 0]  failure detected by watchdog at work sequence id: "
                "2847 PG status: last enqueued work: 2855, last completed work: 2846",
            )
        ]
    )
    rank, _ = initiating_rank(
        root_errors={}, collateral_errors={2: fe(4)}, evidence=ev, ranks_seen={0, 2}
    )
    assert rank is None
    # without that line rank 0 is the one rank that said nothing: the others waited for it
    rank, _ = initiating_rank(
        root_errors={},
        collateral_errors={2: fe(4)},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 2},
    )
    assert rank == 0


def test_launcher_root_cause_is_weak_evidence():
    ev = CrossRankEvidence(launcher_root=1)
    # nothing else to go on: the launcher's word is taken
    rank, reason = initiating_rank(root_errors={}, collateral_errors={1: fe(3)}, evidence=ev)
    assert rank == 1
    assert "weak" in reason
    # every rank timed out: the first exit the launcher saw is arbitrary
    rank, reason = initiating_rank(
        root_errors={}, collateral_errors={0: fe(1), 1: fe(2), 2: fe(3)}, evidence=ev
    )
    assert rank is None
    assert "launcher saw rank 1" in reason
    ev.observe(2, "WorkNCCL(SeqNum=3, OpType=ALLREDUCE)")
    ev.observe(0, "WorkNCCL(SeqNum=4, OpType=ALLREDUCE)")
    ev.observe(1, "WorkNCCL(SeqNum=4, OpType=ALLREDUCE)")
    assert initiating_rank(root_errors={}, collateral_errors={}, evidence=ev)[0] == 2


def test_same_error_on_every_rank_names_no_rank():
    rank, reason = initiating_rank(
        root_errors={0: fe(5), 1: fe(2)},
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
    )
    assert rank is None
    assert "every rank" in reason
    # different errors on the two ranks: the first one is the initiator
    rank, _ = initiating_rank(
        root_errors={0: fe(5, signal="remote-error"), 1: fe(2, signal="system-error")},
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1},
    )
    assert rank == 1
    # with a third rank that only lost its peer, the first of the two is the initiator
    rank, _ = initiating_rank(
        root_errors={0: fe(5), 1: fe(2)},
        collateral_errors={2: fe(9)},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1, 2},
    )
    assert rank == 1


def test_silent_rank():
    rank, _ = initiating_rank(
        root_errors={},
        collateral_errors={1: fe(5), 2: fe(6)},
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1, 2},
    )
    assert rank == 0


def test_nothing_to_go_on():
    rank, _ = initiating_rank(
        root_errors={}, collateral_errors={0: fe(1), 1: fe(2)}, evidence=CrossRankEvidence()
    )
    assert rank is None


def test_two_ranks_that_accuse_each_other_name_no_rank():
    a = "CollectiveFingerPrint(SequenceNumber=31, OpType=ALLREDUCE, TensorShape=[1024])"
    b = "CollectiveFingerPrint(SequenceNumber=31, OpType=ALLREDUCE, TensorShape=[1000])"
    ev = observe(
        [
            (
                0,
                f"Mismatch. Rank 0 is running collective: {a}, but Rank 1 is running collective: {b}",
            ),
            (
                1,
                f"Mismatch. Rank 1 is running collective: {b}, but Rank 0 is running collective: {a}",
            ),
        ]
    )
    assert ev.suspect() is None
    rank, _ = initiating_rank(root_errors={0: fe(1), 1: fe(2)}, collateral_errors={}, evidence=ev)
    assert rank is None


def test_a_rank_that_crashed_with_a_signal_is_not_silent():
    ev = CrossRankEvidence(launcher_root=1, crashed={0, 1})
    rank, reason = initiating_rank(
        root_errors={}, collateral_errors={1: fe(5)}, evidence=ev, ranks_seen={0, 1}
    )
    assert rank is None
    assert "crashed" in reason


def test_a_rank_dead_of_a_crash_signal_comes_before_a_silent_one():
    # rank 3 crashed, 0, 1 and 4 lost a peer, 2 printed nothing: the agent stopped rank 2 before
    # it noticed (bench/realruns/corpus/fresh's 4-rank SIGFPE run has that shape)
    ev = CrossRankEvidence(crashed={3})
    rank, _ = initiating_rank(
        root_errors={},
        collateral_errors={0: fe(1), 1: fe(2), 4: fe(3)},
        evidence=ev,
        ranks_seen={0, 1, 2, 3, 4},
    )
    assert rank == 3


def test_silent_rank_skips_one_that_crashed_after_losing_its_peer():
    # rank 3 crashed too, but after reporting a lost peer of its own: a victim, not the cause
    ev = CrossRankEvidence(crashed={3})
    rank, _ = initiating_rank(
        root_errors={},
        collateral_errors={0: fe(1), 1: fe(2), 3: fe(4), 4: fe(3)},
        evidence=ev,
        ranks_seen={0, 1, 2, 3, 4},
    )
    assert rank == 2


def test_a_rank_reporting_absent_peers_is_a_witness():
    text = "DistStoreError: Timed out after 1801 seconds waiting for clients. 3/4 clients joined."
    rank, _ = initiating_rank(
        root_errors={0: FirstError(None, (0, 1), 1, text, "store")},
        collateral_errors={},
        evidence=CrossRankEvidence(),
        ranks_seen={0},
    )
    assert rank is None


def test_the_one_rank_dead_of_a_crash_signal_is_the_one_the_others_lost():
    # torchrun's summary: rank 2 died of SIGSEGV printing nothing; ranks 0 and 1 lost their peer
    ev = CrossRankEvidence(crashed={2}, launcher_root=0)
    rank, reason = initiating_rank(
        root_errors={}, collateral_errors={0: fe(1), 1: fe(2)}, evidence=ev, ranks_seen={0, 1, 2}
    )
    assert rank == 2
    assert "crash signal" in reason
    assert "ranks 0, 1 only lost a peer" in reason


def test_a_rank_that_crashed_after_reporting_a_lost_peer_is_a_victim_too():
    ev = CrossRankEvidence(crashed={1})
    rank, _ = initiating_rank(
        root_errors={}, collateral_errors={0: fe(1), 1: fe(2)}, evidence=ev, ranks_seen={0, 1}
    )
    assert rank is None


def test_spawns_report_of_a_process_dead_of_a_signal_is_the_launchers_word():
    assert spawn_exit(
        "torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal "
        "SIGSEGV"
    ) == (2, -11)
    assert spawn_exit("ProcessExitedException: process 1 terminated with exit code 3") == (1, 3)
    assert spawn_exit("process 1 terminated with signal SIGSEGV") is None


# Real runs (bench/realruns/programs/train.py --fault child-exit, torch 2.13.0+cpu): one rank dies
# of a crash signal at step 3, printing nothing; the others lose their peer or are stopped.
RUNS = Path(__file__).with_name("runs")


@pytest.mark.parametrize(
    ("log", "rank"),
    [
        # torchrun, 2 ranks: rank 0 SIGSEGV, rank 1's gloo "Connection reset by peer"
        ("torchrun_rank0_sigsegv_rank1_lost_peer.log", 0),
        # mp.spawn, 2 processes: "ProcessExitedException: process 1 terminated with signal SIGSEGV"
        ("spawn_process1_sigsegv.log", 1),
    ],
)
def test_a_real_run_names_the_rank_that_died_of_a_crash_signal(log: str, rank: int) -> None:
    result = diagnose_path(str(RUNS / log), get_engine())

    assert result.failure is not None
    assert result.failure.slug == "elastic-child-failed"
    assert result.initiating_rank == rank


def test_a_rank_that_exited_on_its_own_without_a_word_is_the_one_the_others_lost():
    # torchrun --tee, 4 ranks (generate.py --round 3's child-exit): rank 3 exits with code 1 and
    # prints nothing, ranks 0 and 2 lose their peer, rank 1 is SIGTERMed by the agent before it
    # says anything; the agent's first failure is rank 3 ("failed (exitcode: 1) local_rank: 3")
    ev = CrossRankEvidence(launcher_root=3, launcher_failed=(3, 1))
    rank, reason = initiating_rank(
        root_errors={}, collateral_errors={0: fe(1), 2: fe(2)}, evidence=ev, ranks_seen={0, 1, 2, 3}
    )
    assert rank == 3
    assert "exited with code 1" in reason


@pytest.mark.parametrize(
    ("launcher_failed", "collateral"),
    [
        # SIGTERM (-15) or SIGKILL (-9) is a signal someone sent, not the rank's own end
        ((3, -15), {0: fe(1), 2: fe(2)}),
        ((3, -9), {0: fe(1), 2: fe(2)}),
        # the first exit reported its lost peer first: a victim
        ((3, 1), {0: fe(1), 3: fe(2)}),
    ],
)
def test_a_quiet_exit_needs_an_exit_of_its_own_and_no_word_of_a_lost_peer(
    launcher_failed: tuple[int, int], collateral: dict[int, FirstError]
) -> None:
    ev = CrossRankEvidence(launcher_root=3, launcher_failed=launcher_failed)
    rank, _ = initiating_rank(
        root_errors={}, collateral_errors=collateral, evidence=ev, ranks_seen={0, 1, 2, 3}
    )
    assert rank is None


LOST = "RuntimeError: [pair.cc:537] Read error [127.0.0.1]:2988: Connection reset by peer."
TIMED_OUT = "RuntimeError: [pair.cc:446] Timed out waiting 6000ms for recv operation to complete"


def lost(line: int, text: str = LOST) -> FirstError:
    return FirstError(None, (0, line), line, text, "sig")


def test_a_rank_that_aborted_without_a_word_while_the_others_lost_it_is_named():
    # torchrun, 4 ranks (generate.py's child-exit abort): rank 1 calls abort() and prints
    # nothing, ranks 0 and 2 lose their peer, rank 3 is SIGTERMed by the agent before it says
    # anything (two silent ranks); the agent's first failure is rank 1 ("exitcode: -6")
    ev = CrossRankEvidence(launcher_root=1, launcher_failed=(1, -6))
    answer = rank_answer(
        root_errors={},
        collateral_errors={0: lost(1), 2: lost(2)},
        evidence=ev,
        ranks_seen={0, 1, 2, 3},
    )
    assert answer.rank == 1
    assert answer.basis is Basis.QUIET_EXIT
    assert "aborted (SIGABRT" in answer.reason


@pytest.mark.parametrize(
    ("collateral", "watchdog"),
    [
        # a rank that timed out waiting: the abort may be NCCL's watchdog ending a victim
        ({0: lost(1), 2: lost(2, TIMED_OUT)}, set()),
        # the aborted rank's own watchdog caught a failed collective: a victim
        ({0: lost(1), 2: lost(2)}, {1}),
        # an error that is neither a lost peer nor a timeout says nothing of whom they lost
        ({0: lost(1), 2: lost(2, "RuntimeError: something else")}, set()),
    ],
)
def test_an_abort_is_taken_only_when_the_others_only_lost_their_peer(
    collateral: dict[int, FirstError], watchdog: set[int]
) -> None:
    ev = CrossRankEvidence(launcher_root=1, launcher_failed=(1, -6), watchdog=watchdog)
    answer = rank_answer(
        root_errors={}, collateral_errors=collateral, evidence=ev, ranks_seen={0, 1, 2, 3}
    )
    # (with rank 1's watchdog line, rank 3 is the one rank that said nothing: the silent rule's)
    assert answer.rank != 1
    assert answer.basis is not Basis.QUIET_EXIT


@pytest.mark.parametrize(
    ("log", "slug", "rank"),
    [
        # a real 4-rank torchrun run (generate.py --round 8, hand-reduced: library frames and the
        # first steps taken out): rank 1 aborted, ranks 0 and 2 lost their peer, rank 3 was
        # SIGTERMed
        ("torchrun_rank1_sigabrt_two_lost_peers_one_sigtermed.log", "elastic-child-failed", 1),
        # a real 4-rank mp run (generate.py --round 9, hand-reduced: the first steps taken out):
        # rank 3 ran a long evaluation; ranks 0 and 2 timed out in gloo, rank 1 lost its peer
        # before their reports (a rank that timed out had left), rank 3 lost its peers after
        # every timeout
        ("mp_rank3_stalled_two_timed_out_two_lost_peers.log", "gloo-timeout", 3),
    ],
)
def test_a_real_run_names_the_rank_the_others_only_lost(log: str, slug: str, rank: int) -> None:
    result = diagnose_path(str(RUNS / log), get_engine())

    assert result.failure is not None
    assert result.failure.slug == slug
    assert result.initiating_rank == rank


def test_a_dataloader_workers_reraised_traceback_keeps_the_rank_above_it():
    # mp.spawn (generate.py --round 3's collate run): rank 1's logging header, then its traceback
    # with the DataLoader worker's "Original Traceback" inside, then spawn's copy of the same
    # traceback under "-- Process 1 terminated": one rank raised it, twice printed
    worker = [
        "Traceback (most recent call last):",
        '  File "train.py", line 325, in run',
        "    for x, tokens, y in loader:",
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.",
        "Original Traceback (most recent call last):",
        '  File "torch/utils/data/_utils/collate.py", line 275, in collate_tensor_fn',
        "    return torch.stack(batch, 0, out=out)",
        "RuntimeError: stack expects each tensor to be equal size, but got [16] at entry 0 and "
        "[19] at entry 3",
    ]
    text = "\n".join(
        [
            "2026-12-07 09:35:11.064 INFO [rank1] train: started rank 1 of 2",
            "2026-12-07 09:35:11.065 INFO [rank0] train: started rank 0 of 2",
            "2026-12-07 09:35:16.910 ERROR [rank1] train: training failed",
            *worker,
            "",
            "torch.multiprocessing.spawn.ProcessRaisedException: ",
            "",
            "-- Process 1 terminated with the following error:",
            *worker,
        ]
    )
    result = get_engine().diagnose([text + "\n"])

    assert result.failure is not None
    assert result.failure.slug == "collate-size-mismatch"
    assert result.initiating_rank == 1


# programs/launch.py-style mp runs: a child's traceback under multiprocessing's header, rank 1's
# in-place error, and the other ranks' lost peer
MP_FRAMES = [
    "Traceback (most recent call last):",
    '  File "multiprocessing/process.py", line 314, in _bootstrap',
    "    self.run()",
]
MP_INPLACE = (
    "RuntimeError: one of the variables needed for gradient computation has been modified "
    "by an inplace operation: [torch.FloatTensor [8, 24]], which is output 0 of Sigmoid, "
    "is at version 2; expected version 0 instead."
)
MP_LOST = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
    "peer [127.0.0.1]:43436. This is typically caused by a remote worker crashing."
)


def _rank_of_inplace(text: str) -> int | None:
    result = get_engine().diagnose([text + "\n"])
    assert result.failure is not None
    assert result.failure.slug == "inplace-modification"
    return result.initiating_rank


def _mp_inplace_log(between: list[str]) -> str:
    # generate.py --round 4's in-place run: rank 1's child prints multiprocessing's header, then
    # its traceback; `between` comes in between, and the two other ranks only lose their peer
    lost, frames = MP_LOST, MP_FRAMES
    return "\n".join(
        [
            "rank 0: started rank 0 of 3",
            "rank 1: started rank 1 of 3",
            "rank 2: started rank 2 of 3",
            "rank 0: step 2/12 loss 1.6581 grad_norm 1.042",
            "rank 1: step 2/12 loss 1.8780 grad_norm 1.042",
            "Process SpawnProcess-2:",
            *between,
            *frames,
            '  File "train.py", line 432, in run',
            "    loss.backward()",
            MP_INPLACE,
            "Process SpawnProcess-1:",
            *frames,
            lost,
            "Process SpawnProcess-3:",
            *frames,
            lost,
            "worker processes failed: [(0, 1), (1, 1), (2, 1)]",
        ]
    )


@pytest.mark.parametrize(
    "between",
    [
        [],
        # another rank's stdout line, and a blank one, between the child's header and traceback
        ["", "rank 2: step 2/12 loss 1.7370 grad_norm 1.042"],
        ["rank 2: step 2/12 loss 1.7370 grad_norm 1.042"],
        # one line of each other rank, and a blank one (dev_r5's 4-rank run put ranks 2, 0, 3)
        [
            "rank 2: step 3/12 loss 1.8025 grad_norm 1.817",
            "",
            "rank 0: step 3/12 loss 1.8221 grad_norm 1.817",
        ],
    ],
)
def test_a_rank_line_between_a_childs_header_and_its_traceback_does_not_take_it(
    between: list[str],
) -> None:
    assert _rank_of_inplace(_mp_inplace_log(between)) == 1


def test_a_childs_header_far_above_a_traceback_does_not_name_its_rank() -> None:
    # the converse: a traceback under a line of another kind (here a frame-less message of rank 2)
    # is not the header's, which is more than the interleaving's few lines above
    text = _mp_inplace_log(
        [
            "rank 2: step 2/12 loss 1.7370 grad_norm 1.042",
            "rank 2: step 3/12 loss 1.6012 grad_norm 1.020",
            "rank 2: step 4/12 loss 1.5501 grad_norm 1.007",
            "rank 2: step 5/12 loss 1.4999 grad_norm 0.998",
        ]
    )
    result = get_engine().diagnose([text + "\n"])

    assert result.initiating_rank == 2


GLOO_TIMEOUT = "RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 6000ms"
GLOO_LOST = "RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:1"


def said(line: int, text: str, ts: float | None = None) -> FirstError:
    return FirstError(ts, (0, line), line, text, "sig")


@pytest.mark.parametrize("world", [2, 3, 4])
def test_the_rank_that_lost_its_peers_after_the_others_timed_out_is_the_one_they_waited_for(
    world: int,
) -> None:
    # a gloo hang under multiprocessing (dev_r6): rank 1 stalls in an evaluation, the others
    # time out waiting for it and exit, and rank 1, back at the collective, finds them gone
    # (no launcher stopped it); the interleaved tracebacks of the ranks that timed out may leave
    # one of them without a rank of its own, so it is not taken for a silent one
    others = [r for r in range(world) if r != 1]
    collateral = {others[0]: said(10, GLOO_TIMEOUT), 1: said(90, GLOO_LOST)}
    answer = rank_answer(
        root_errors={},
        collateral_errors=collateral,
        evidence=CrossRankEvidence(),
        ranks_seen=set(range(world)),
    )
    assert (answer.rank, answer.basis) == (1, Basis.WAITED_FOR)


def test_a_peer_lost_before_the_timeouts_is_a_crash_not_the_rank_waited_for() -> None:
    # rank 2 crashed: rank 1 lost it at once, rank 0 timed out later; rank 1 is not the cause
    collateral = {1: said(10, GLOO_LOST), 0: said(90, GLOO_TIMEOUT)}
    answer = rank_answer(
        root_errors={},
        collateral_errors=collateral,
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1, 2},
    )
    assert answer.rank != 1
    # and by time when every error has one, whatever their order in the log
    timed = {1: said(90, GLOO_LOST, ts=5.0), 0: said(10, GLOO_TIMEOUT, ts=9.0)}
    answer = rank_answer(root_errors={}, collateral_errors=timed, evidence=CrossRankEvidence())
    assert answer.basis is not Basis.WAITED_FOR


def test_two_ranks_that_lost_peers_do_not_say_which_was_waited_for() -> None:
    collateral = {0: said(10, GLOO_TIMEOUT), 1: said(80, GLOO_LOST), 2: said(90, GLOO_LOST)}
    answer = rank_answer(
        root_errors={},
        collateral_errors=collateral,
        evidence=CrossRankEvidence(),
        ranks_seen={0, 1, 2},
    )
    assert answer.basis is not Basis.WAITED_FOR


def test_children_raising_together_take_their_headers_in_order() -> None:
    # two children print their headers in a run, then their tracebacks in the same order
    # (dev_r6's 2-rank collective mismatch under mp): rank 1's in-place error is the first
    # traceback below the run although rank 0's header is the nearest line above it
    text = "\n".join(
        [
            "rank 0: started rank 0 of 2",
            "rank 1: started rank 1 of 2",
            "rank 1: step 2/12 loss 1.8780 grad_norm 1.042",
            "Process SpawnProcess-2:",
            "Process SpawnProcess-1:",
            *MP_FRAMES,
            MP_INPLACE,
            *MP_FRAMES,
            MP_LOST,
            "worker processes failed: [(0, 1), (1, 1)]",
        ]
    )
    assert _rank_of_inplace(text) == 1


@pytest.mark.parametrize("glued_to", [0, 2])
def test_a_childs_header_glued_to_another_ranks_line_is_still_its_header(glued_to: int) -> None:
    # the child's stderr header came before another rank's stdout newline (dev_r7's 2-rank dtype
    # run under mp: `rank 0: step 4/12 ... grad_norm 1.895Process SpawnProcess-2:`): rank 1's
    # traceback under it is rank 1's, not the rank whose line the header ends
    text = "\n".join(
        [
            "rank 0: started rank 0 of 3",
            "rank 1: started rank 1 of 3",
            "rank 2: started rank 2 of 3",
            "rank 1: step 2/12 loss 1.8780 grad_norm 1.042",
            f"rank {glued_to}: step 2/12 loss 1.6581 grad_norm 1.042Process SpawnProcess-2:",
            *MP_FRAMES,
            '  File "train.py", line 432, in run',
            "    loss.backward()",
            MP_INPLACE,
            "",
            "Process SpawnProcess-1:",
            *MP_FRAMES,
            MP_LOST,
            "Process SpawnProcess-3:",
            *MP_FRAMES,
            MP_LOST,
            "worker processes failed: [(0, 1), (1, 1), (2, 1)]",
        ]
    )
    assert _rank_of_inplace(text) == 1


def test_a_header_inside_a_line_is_not_a_childs_header() -> None:
    # only a header that ends the line is one: a message naming a process is text
    info = parse_line("rank 0: waiting for Process SpawnProcess-2: to join, then saving")
    assert info.rank == 0
    assert info.text.endswith("SpawnProcess-2: to join, then saving")


def test_two_ranks_that_report_each_others_collective_name_no_rank_but_say_what_decides_it():
    # a real 2-rank mp run (generate.py --round 4, hand-reduced: the first steps taken out) under
    # TORCH_DISTRIBUTED_DEBUG=DETAIL: rank 0 all-reduces 5 elements at train.py:376, rank 1 three
    # at train.py:379, and each rank's report names the other; with two ranks no majority says
    # which left the common sequence, so no rank is named, and the answer quotes both call sites
    result = diagnose_path(
        str(RUNS / "mp_two_ranks_collective_mismatch_mirrored.log"), get_engine()
    )

    assert result.failure is not None
    assert result.failure.slug == "collective-mismatch"
    assert result.initiating_rank is None
    assert result.root_cause is not None
    assert "rank 0 ran ALLREDUCE of [5] (called at train.py:376 in run)" in result.root_cause
    assert "rank 1 ran ALLREDUCE of [3] (called at train.py:379 in run)" in result.root_cause
    decide = result.missing_facts[0]
    assert decide.startswith("what would decide the rank: ranks 0 and 1 disagree")
    assert "rank 0's train.py:376 in run or rank 1's train.py:379 in run" in decide
    assert "flight recorder" in decide
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in decide
    sites = [e.text for e in result.evidence if "train.py" in e.text]
    assert sites == [
        'File "/work/rc/bench/realruns/programs/train.py", line 379, in run',
        'File "/work/rc/bench/realruns/programs/train.py", line 376, in run',
    ]


def test_a_mismatch_with_a_majority_is_not_mirrored():
    # three ranks: ranks 0 and 2 report rank 1's collective; rank 1 reports rank 0's
    evidence = CrossRankEvidence()
    ours = "CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE, TensorShape=[3])"
    odd = "CollectiveFingerPrint(SequenceNumber=4, OpType=BROADCAST, TensorShape=[3])"
    for reporter, mine, other, theirs in ((0, ours, 1, odd), (2, ours, 1, odd), (1, odd, 0, ours)):
        text = (
            f"RuntimeError: Detected mismatch between collectives on ranks. Rank {reporter} is "
            f"running collective: {mine}, but Rank {other} is running collective: {theirs}."
        )
        evidence.observe(reporter, text)
        evidence.note_mismatch(text, 0, None)

    assert evidence.mirrored() == []
    assert evidence.suspect() == (1, "rank 1 ran a different collective from the other ranks")


def test_mirrored_reports_keep_each_ranks_collective_and_call_site():
    evidence = CrossRankEvidence()
    fp = "CollectiveFingerPrint(SequenceNumber=0, OpType={op}, TensorShape=[3], TensorDtypes=Float)"
    for reporter, other, op, theirs in (
        (0, 1, "BROADCAST", "ALLREDUCE"),
        (1, 0, "ALLREDUCE", "BROADCAST"),
    ):
        text = (
            f"RuntimeError: Detected mismatch between collectives on ranks. Rank {reporter} is "
            f"running collective: {fp.format(op=op)}, but Rank {other} is running collective: "
            f"{fp.format(op=theirs)}."
        )
        evidence.observe(reporter, text)
        # the logger's copy of the report first (no call site), then torchrun's with one
        evidence.note_mismatch(text, 0, None)
        evidence.note_mismatch(
            text, 0, (10 + reporter, f'File "/x/train.py", line {7 + reporter}, in run')
        )

    sides = evidence.mirrored()
    assert [(s.rank, s.collective, s.line) for s in sides] == [
        (0, "BROADCAST of [3]", 10),
        (1, "ALLREDUCE of [3]", 11),
    ]
    assert mirrored_reason(sides) == (
        "ranks 0 and 1 each report the other's collective: rank 0 ran BROADCAST of [3] (called at "
        "train.py:7 in run), rank 1 ran ALLREDUCE of [3] (called at train.py:8 in run); with two "
        "ranks nothing in the log says which left the common sequence"
    )


def test_mirrored_reports_without_tracebacks_ask_for_each_ranks_call_site():
    # only the two exception lines: no frame says where either rank called its collective
    log = Path(__file__).parents[1] / "logs/collective-mismatch/two_ranks_accuse_each_other.log"
    result = diagnose_path(str(log), get_engine())

    assert result.initiating_rank is None
    assert result.root_cause is not None
    assert "rank 0 ran ALLREDUCE of [1024], rank 1 ran ALLREDUCE of [1000]" in result.root_cause
    decide = result.missing_facts[0]
    assert "each rank's full traceback shows the line of the program that called it" in decide


def test_a_real_mp_run_names_the_stalled_rank_the_last_to_lose_its_peers():
    # a real 4-rank mp run (generate.py --round 9, hand-reduced: the first steps taken out):
    # rank 3 ran a long evaluation; ranks 0 and 2 timed out in gloo, rank 1 lost its peer before
    # their reports (a rank that timed out had left), rank 3 lost its peers after every timeout
    result = diagnose_path(
        str(RUNS / "mp_rank3_stalled_two_timed_out_two_lost_peers.log"), get_engine()
    )

    assert result.failure is not None
    assert result.failure.slug == "gloo-timeout"
    assert result.initiating_rank == 3


LOST = "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:50847"
TIMED_OUT = "RuntimeError: [unbound_buffer.cc:78] Timed out waiting 6000ms for recv operation"


def lost_or_timed_out(kinds: dict[int, str]) -> dict[int, FirstError]:
    return {
        r: FirstError(None, (0, 10 * i), 10 * i, text, "sig")
        for i, (r, text) in enumerate(kinds.items())
    }


def waited_for(kinds: dict[int, str], ranks_seen: set[int]) -> tuple[int | None, Basis]:
    """The rank answer's rank and basis when every rank's error is a lost peer or a timeout."""
    answer = rank_answer(
        root_errors={},
        collateral_errors=lost_or_timed_out(kinds),
        evidence=CrossRankEvidence(),
        ranks_seen=ranks_seen,
    )
    return answer.rank, answer.basis


def test_two_lost_peers_name_the_one_after_every_timeout_only_when_every_rank_spoke():
    kinds = {1: LOST, 0: TIMED_OUT, 2: TIMED_OUT, 3: LOST}
    assert waited_for(kinds, {0, 1, 2, 3}) == (3, Basis.WAITED_FOR)
    # a fifth rank seen that said nothing may be a crash the others lost: not this rule's
    assert waited_for(kinds, {0, 1, 2, 3, 4})[1] is not Basis.WAITED_FOR
    # two ranks that lost their peers after every timeout: neither is singled out by this rule
    kinds = {0: TIMED_OUT, 2: TIMED_OUT, 1: LOST, 3: LOST}
    assert waited_for(kinds, {0, 1, 2, 3})[1] is not Basis.WAITED_FOR


OOM_ON = (
    "| WARNING | fairseq.trainer | OOM: Ran out of memory with exception: CUDA out of memory.\n"
    "Traceback (most recent call last):\n"
    '  File "/env/site-packages/fairseq/optim/adam.py", line 210, in step\n'
    '    denom = exp_avg_sq.sqrt().add_(group["eps"])\n'
    "RuntimeError: CUDA out of memory. Tried to allocate 3.02 GiB ({gpu}; 23.70 GiB total "
    "capacity; 16.92 GiB already allocated; 1019.69 MiB free; 21.03 GiB reserved in total by "
    "PyTorch)\n"
)


def test_an_oom_on_another_gpu_than_the_first_says_which_rank_it_may_be():
    # no line names a rank: the GPU is a local rank only in a job of one process per GPU, so no
    # rank is named, and the answer says what the device suggests and what would tell
    result = get_engine().diagnose([OOM_ON.format(gpu="GPU 1")])

    assert result.failure is not None
    assert result.initiating_rank is None
    fact = next(f for f in result.missing_facts if "GPU 1" in f)
    assert "local rank 1" in fact
    assert "one process spreading a model" in fact


def test_an_oom_on_gpu_0_or_in_a_ranked_log_adds_no_device_fact():
    # GPU 0 is a lone process's and rank 0's alike; where ranks are named they speak for
    # themselves (torch >= 2.1's wording read as well)
    first = get_engine().diagnose([OOM_ON.format(gpu="GPU 0")])
    newer = OOM_ON.replace("({gpu}; 23.70 GiB total capacity", ". {gpu} has a total capacity")
    ranked = get_engine().diagnose(
        ["".join(f"[rank1]: {line}\n" for line in newer.format(gpu="GPU 3").splitlines())]
    )

    assert not any("no line names a rank" in f for f in first.missing_facts)
    assert ranked.initiating_rank == 1
    assert not any("no line names a rank" in f for f in ranked.missing_facts)
    newer_alone = get_engine().diagnose([newer.format(gpu="GPU 3")])
    assert any("GPU 3" in f and "local rank 3" in f for f in newer_alone.missing_facts)
