"""Class kinds of issue 32 still missed after round 9, one test each.

Run logs are reduced by hand from runs of bench/realruns/programs (paths, pids and ports changed)
and live in tests/rootcause/runs: a new file under tests/logs would redraw the masking corpus.
"""

from pathlib import Path

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult

RUNS = Path(__file__).resolve().parent / "runs"


def diagnose_run(name: str, replace: tuple[str, str] | None = None) -> DiagnosisResult:
    text = (RUNS / name).read_text(encoding="utf-8")
    if replace is not None:
        text = text.replace(*replace)
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


def test_a_spawned_rank_that_exits_quietly_is_the_launchers_exit_not_its_peers_loss():
    # mp.spawn, 2 ranks (`--fault child-exit --variant 3`'s kind): rank 1 calls sys.exit(2)
    # printing nothing; rank 0's gloo recv, printed first, reports the lost peer
    result = diagnose_run("spawn_rank1_exit2_rank0_lost_peer.log")

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 1
    assert [(c.slug, c.ranks) for c in result.collateral] == [("gloo-timeout", [0])]


def test_a_spawned_rank_stopped_by_a_signal_it_did_not_raise_leaves_the_peer_loss_leading():
    # the same job where the launcher saw rank 1 end by SIGTERM (sent to it, not its own exit)
    result = diagnose_run(
        "spawn_rank1_exit2_rank0_lost_peer.log",
        replace=("terminated with exit code 2", "terminated with signal SIGTERM"),
    )

    assert slug(result) == "gloo-timeout"
