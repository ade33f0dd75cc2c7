"""`rootcause watch FILE|DIR`: log files another process writes, followed as they grow."""

from __future__ import annotations

import os
import signal
import time

import pytest

from rootcause.engine import get_engine
from rootcause.live.follow import Follower
from rootcause.live.monitor import Monitor
from tests.live.watching import start

OOM = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 88, in <module>\n'
    "[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 15.78 GiB "
    "total capacity; 13.50 GiB already allocated; 1.20 GiB free; 14.00 GiB reserved in total "
    "by PyTorch)\n"
)


@pytest.fixture
def monitor():
    return Monitor(engine=get_engine(), name="watched", stall_after=0)


def texts(monitor: Monitor) -> dict[str, str]:
    return {name: src.text() for name, src in monitor.sources.items()}


def test_a_file_is_followed_as_it_grows_from_its_start(tmp_path, monitor):
    log = tmp_path / "slurm-42.out"
    log.write_text("step 1\n")
    follower = Follower([str(log)], monitor)
    follower.poll()
    with log.open("a") as out:
        out.write("step 2\npartial")
    follower.poll()
    assert texts(monitor)[str(log)] == "step 1\nstep 2\npartial\n"


def test_truncation_and_rotation_are_followed(tmp_path, monitor):
    log = tmp_path / "train.log"
    log.write_text("before truncation, a long line\n")
    follower = Follower([str(log)], monitor)
    follower.poll()
    log.write_text("after\n")  # truncated (shorter) and rewritten, as `> train.log` does
    follower.poll()
    assert any("truncated" in n for n in follower.notes)
    with log.open("a") as out:
        out.write("old file's last line\n")
    os.rename(log, tmp_path / "train.log.1")  # rotated: the old file renamed, a new one created
    log.write_text("new file\n")
    follower.poll()
    assert any("rotated" in n for n in follower.notes)
    text = texts(monitor)[str(log)]
    assert text.splitlines() == [
        "before truncation, a long line",
        "after",
        "old file's last line",
        "new file",
    ]


def test_files_appearing_later_in_a_directory_are_followed_with_their_ranks(tmp_path, monitor):
    run = tmp_path / "logs" / "run_1" / "attempt_0"
    follower = Follower([str(tmp_path / "logs")], monitor)
    follower.poll()
    assert monitor.sources == {}
    for rank in range(2):
        (run / str(rank)).mkdir(parents=True)
        (run / str(rank) / "stdout.log").write_text(f"training step 1 on {rank}\n")
    follower.poll()
    assert sorted(monitor.default_ranks.values()) == [0, 1]
    (run / "1" / "stderr.log").write_text(OOM.replace("[rank1]: ", ""))
    follower.poll()
    found = monitor.diagnose()
    assert found.decides
    assert found.result.initiating_rank == 1


def test_watch_reports_the_first_failure_and_exits_1_when_idle(tmp_path):
    log = tmp_path / "slurm-7.out"
    log.write_text("[rank0]: step 1 loss 1.0\n[rank1]: step 1 loss 1.0\n")
    watch = start(["watch", "--offline", "--until-idle", "4", "--poll", "0.2", str(log)])
    time.sleep(1.5)
    with log.open("a") as out:
        out.write(OOM)
    written = time.monotonic()
    header = watch.wait_for("rootcause: failure diagnosed while the job runs", timeout=30)
    assert header is not None, watch.text()
    assert header.at - written < 5
    assert watch.finish(timeout=60) == 1
    assert "initiating rank: 1" in watch.text("err")


def test_watch_stall_reports_last_lines_per_rank_and_what_a_bundle_would_add(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text("step 5 loss 0.3\n")
    (logs / "rank1.log").write_text("step 4 loss 0.3\n")
    watch = start(["watch", "--offline", "--stall-after", "1", "--poll", "0.2", str(logs)])
    stalled = watch.wait_for("rootcause: no progress", timeout=30)
    watch.proc.send_signal(signal.SIGINT)
    code = watch.finish(timeout=30)
    assert stalled is not None, watch.text()
    assert code == 0  # stopped when told, nothing diagnosed
    err = watch.text("err")
    assert "rank 1, last lines:" in err
    assert "step 4 loss 0.3" in err
    assert "would add each rank's stack" in err
    assert "Traceback" not in err
