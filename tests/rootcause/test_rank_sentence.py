"""The sentence about which rank failed first says what the rank table says, for each shape of
table: one rank, several, none singled out, a rank known only from other lines (the launcher's),
a silent rank the others waited for, and a first rank whose own error is collateral."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootcause.cli import diagnose_path
from rootcause.engine import get_engine
from rootcause.result import RankRow, rank_sentence

LOGS = Path(__file__).resolve().parents[1] / "logs"


def row(rank: int, slug: str = "optimizer-state-oom", *, collateral: bool = False) -> RankRow:
    return RankRow(rank=rank, slug=slug, first_error_line=10 + rank, collateral=collateral)


def timeouts(*ranks: int) -> list[RankRow]:
    return [row(r, "nccl-timeout", collateral=True) for r in ranks]


def test_one_rank_listed_failed_first_and_no_others_are_said_to_follow():
    assert rank_sentence(1, [row(1)]) == "Rank 1 failed first."


def test_several_ranks_the_others_followed_from_the_first():
    sentence = rank_sentence(2, [row(2), *timeouts(0, 1, 3)])

    assert sentence == "Rank 2 failed first; the failures of ranks 0, 1 and 3 followed from it."


def test_many_ranks_are_written_as_ranges():
    sentence = rank_sentence(5, [row(5), *timeouts(*range(5), 6, 7, *range(9, 16))])

    assert "ranks 0-4, 6, 7 and 9-15 followed" in sentence


def test_none_singled_out_names_the_ranks_once_and_says_it_once():
    same = rank_sentence(None, [row(0), row(1)])
    mixed = rank_sentence(None, [row(0), row(1, "nccl-timeout", collateral=True), row(2)])

    assert same == (
        "No rank can be singled out as the first to fail: ranks 0 and 1 each reported the "
        "same failure, optimizer-state-oom."
    )
    assert mixed.startswith("No rank can be singled out as the first to fail: ranks 0, 1 and 2")
    assert same.count("singled out") == mixed.count("singled out") == 1


@pytest.mark.parametrize("rows", [[], [row(0)]])
def test_nothing_to_say_without_ranks_to_tell_apart(rows):
    assert rank_sentence(None, rows) == ""


def test_a_rank_known_only_from_the_launchers_lines_is_said_so():
    sentence = rank_sentence(4, [])

    assert sentence.startswith("Rank 4 most likely failed first")
    assert "launcher" in sentence
    assert "none of its own output" in sentence


def test_a_silent_rank_the_others_waited_for():
    sentence = rank_sentence(1, timeouts(0, 2, 3))

    assert sentence.startswith("Rank 1 reported no error of its own while ranks 0, 2 and 3")
    assert "collateral" in sentence


def test_a_first_rank_whose_own_error_is_collateral_is_not_called_the_cause():
    """The table calls rank 5's row collateral: the words must not say it plainly failed first
    and the others followed from it."""
    sentence = rank_sentence(5, timeouts(0, 1, 5))

    assert "followed from it" not in sentence
    assert not sentence.startswith("Rank 5 failed first")
    assert "its own error (nccl-timeout) is collateral like those of ranks 0 and 1" in sentence


CASES = sorted(LOGS.glob("*/*.log"))


@pytest.mark.heavy  # every test log through the engine
def test_every_logs_root_cause_says_what_its_rank_table_says():
    engine = get_engine()
    for path in CASES:
        result = diagnose_path(str(path), engine)
        cause = result.root_cause or ""
        sentence = rank_sentence(result.initiating_rank, result.ranks)
        assert "singled out: no rank can be singled out" not in cause, path
        assert cause.count("singled out") <= 1, path
        if sentence:
            assert sentence[:-1] in cause, (path, sentence, cause)
        own = [r for r in result.ranks if r.rank == result.initiating_rank]
        if own and own[0].collateral:
            assert "failed first;" not in cause, (path, cause)
        if len(result.ranks) == 1:
            assert "followed from it" not in cause, (path, cause)
