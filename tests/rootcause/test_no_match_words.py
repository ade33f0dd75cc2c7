"""What a log that matches no failure is told: the lines shown are the errors found, and "no
traceback or error line" only when there is none, glog's [E…] lines of c10d and NCCL included."""

from __future__ import annotations

from pathlib import Path

from rootcause.cli import diagnose_path
from rootcause.engine import get_engine

GLOG = (
    "[I1201 04:00:00.000 53136 ProcessGroupNCCL.cpp:100] [Rank 0] ProcessGroupNCCL initialized\n"
    "step 3 loss 0.41\n"
    "[rank1]:[E1201 04:01:00.100 53137 ProcessGroupNCCL.cpp:2222] [Rank 1] a complaint "
    "no catalogue entry knows\n"
    "[E1201 04:01:01.100 53136 ProcessGroupNCCL.cpp:2223] [Rank 0] another one\n"
)


def _diagnose(tmp_path: Path, text: str):
    path = tmp_path / "train.log"
    path.write_text(text)
    return diagnose_path(str(path), get_engine())


def test_nccl_error_lines_are_shown_and_not_called_absent(tmp_path):
    result = _diagnose(tmp_path, GLOG)

    assert result.outcome == "no_match"
    assert [e.line for e in result.evidence] == [3, 4]
    assert "ProcessGroupNCCL.cpp:2222" in result.evidence[0].text
    facts = " ".join(result.missing_facts)
    assert "no traceback or error line" not in facts
    assert "[E…] lines" in facts


def test_a_log_without_any_error_says_so_and_shows_no_lines(tmp_path):
    result = _diagnose(tmp_path, "epoch 1 step 3 loss 0.1\nepoch 1 step 4 loss 0.09\n")

    assert result.outcome == "no_match"
    assert result.evidence == []
    assert any("no traceback or error line" in fact for fact in result.missing_facts)
