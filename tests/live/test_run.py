"""`rootcause run -- COMMAND` on small Python and shell jobs: output, exit codes, signals,
the first failure diagnosed while the job runs, stalls, posting. The real torchrun jobs are in
test_torch_jobs.py."""

from __future__ import annotations

import gzip
import json
import signal
import sys
import textwrap
import time

import pytest

from rootcause.engine import Engine
from rootcause.live import procs
from tests.live.watching import start
from tests.rootcause.fake_service import FakeService
from tests.rootcause.fixture_catalogue import entries

# Real child jobs, their stalls and grace periods waited out: seconds a test.
pytestmark = pytest.mark.heavy

PY = sys.executable

FAILING_JOB = textwrap.dedent(
    """
    import sys, time
    for step in range(3):
        print(f"[rank0]: step {step} loss 1.0", flush=True)
        print(f"[rank2]: step {step} loss 1.0 owner alice@example.com", flush=True)
        time.sleep(0.2)
    sys.stderr.write(
        "[rank2]: Traceback (most recent call last):\\n"
        '[rank2]:   File "train.py", line 88, in <module>\\n'
        "[rank2]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 2; "
        "15.78 GiB total capacity; 13.50 GiB already allocated; 1.20 GiB free; 14.00 GiB "
        "reserved in total by PyTorch)\\n"
    )
    sys.stderr.flush()
    print("TRACEBACK_DONE", flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 30)
    """
)


@pytest.fixture
def failing_job(tmp_path):
    path = tmp_path / "failing.py"
    path.write_text(FAILING_JOB)
    return path


def test_output_passes_through_byte_for_byte_and_apart_and_the_exit_code_too():
    script = (
        "import sys, os\n"
        "os.write(1, b'\\x1b[32mgreen\\x1b[0m 10%\\r 20%\\r 30%\\n')\n"
        "os.write(2, b'to stderr \\xff not utf-8\\n')\n"
        "os.write(1, b'no newline at the end')\n"
        "sys.exit(7)\n"
    )
    job = start(["run", "--offline", "--", PY, "-c", script])
    code = job.finish(timeout=60)

    assert code == 7
    assert bytes(job.raw["out"]) == b"\x1b[32mgreen\x1b[0m 10%\r 20%\r 30%\nno newline at the end"
    # stderr: the job's bytes, then our report of the failed job (after them, not inside)
    assert bytes(job.raw["err"]).startswith(b"to stderr \xff not utf-8\n")


def test_a_job_killed_by_a_signal_exits_as_a_shell_reports_it():
    job = start(["run", "--offline", "--", "sh", "-c", "kill -9 $$"])
    assert job.finish(timeout=60) == 128 + 9


def test_a_command_that_does_not_exist_is_127():
    job = start(["run", "--offline", "--", "no-such-command-rootcause"])
    assert job.finish(timeout=60) == 127
    assert "cannot run 'no-such-command-rootcause'" in job.text("err")


def test_the_first_root_cause_is_printed_while_the_job_runs_and_masked(failing_job):
    job = start(["run", "--offline", "--stall-after", "0", "--", PY, str(failing_job), "30"])
    try:
        done = job.wait_for("TRACEBACK_DONE", timeout=60)
        header = job.wait_for("rootcause: failure diagnosed while the job runs", timeout=30)
        assert done is not None
        assert header is not None, job.text()
        assert header.at - done.at < 5
        assert job.proc.poll() is None  # the job still runs (it sleeps for 30 s)
        report = job.text("err").split("rootcause: failure diagnosed", 1)[1]
        assert "initiating rank: 2" in report
        assert "class:      activation-oom" in report
        assert "fix:" in report
        # the job's own lines pass through as they are; what rootcause prints is masked
        assert "alice@example.com" in job.text("out")
        assert "alice@example.com" not in report
    finally:
        job.proc.send_signal(signal.SIGTERM)
        job.finish(timeout=30)


DIVERGING_JOB = textwrap.dedent(
    """
    import sys, time
    # a chatty healthy start (more than a figure sample a second), then the loss and the grad
    # norm blow up and the job goes on logging them: no error line, no traceback, ever
    for step in range(6000):
        print(f"[rank{step % 4}]: step {step} loss {2.0 - step / 6000:.4f} grad_norm 1.25")
    sys.stdout.flush()
    time.sleep(0.5)
    step = 6000
    while True:
        print(f"[rank{step % 4}]: step {step} loss {25000.0 + step:.1f} grad_norm 1.2e+06")
        if step == 6000:
            print("DIVERGED", flush=True)
        step += 1
        if step % 100 == 0:
            sys.stdout.flush()
            time.sleep(0.05)
    """
)


def test_a_failure_only_the_logged_figures_show_is_diagnosed_while_the_job_runs(tmp_path):
    path = tmp_path / "diverging.py"
    path.write_text(DIVERGING_JOB)
    job = start(["run", "--offline", "--stall-after", "0", "--", PY, str(path)])
    try:
        diverged = job.wait_for("DIVERGED", timeout=60)
        header = job.wait_for("rootcause: failure diagnosed while the job runs", timeout=30)
        assert diverged is not None
        assert header is not None, job.text("err")
        assert header.at - diverged.at < 5
        assert job.proc.poll() is None  # it never ends by itself
        report = job.text("err").split("rootcause: failure diagnosed", 1)[1]
        assert "class:      loss-divergence" in report
    finally:
        job.proc.send_signal(signal.SIGTERM)
        job.finish(timeout=30)


def test_kill_on_failure_ends_the_job_and_its_children(failing_job, tmp_path):
    # the job starts a grandchild in a session of its own, as torchrun starts its workers
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, {str(failing_job)!r}, '60'], "
        "start_new_session=True)\n"
        "sys.exit(child.wait())\n"
    )
    job = start(
        ["run", "--offline", "--kill-on-failure", "--kill-grace", "2", "--", PY, str(parent)]
    )
    header = job.wait_for("rootcause: failure diagnosed while the job runs", timeout=60)
    assert header is not None, job.text()
    tree = procs.descendants(job.proc.pid)
    code = job.finish(timeout=15)
    assert time.monotonic() - header.at < 10
    assert code != 0
    time.sleep(0.2)
    assert procs.alive(tree) == []


def test_exit_code_diagnosis_uses_the_clis_table(failing_job):
    job = start(["run", "--offline", "--exit-code", "diagnosis", "--", PY, str(failing_job), "0"])
    assert job.finish(timeout=60) == 1  # a failure was diagnosed; the job itself exited 0
    healthy = start(["run", "--offline", "--exit-code", "diagnosis", "--", PY, "-c", "print(1)"])
    assert healthy.finish(timeout=60) == 0


def test_sigint_and_sigterm_are_forwarded_and_the_cli_exits_with_the_jobs_answer(tmp_path):
    script = tmp_path / "handler.py"
    script.write_text(
        "import signal, sys, time\n"
        "def bye(sig, frame):\n"
        "    print(f'job got {signal.Signals(sig).name}', flush=True)\n"
        "    sys.exit(42)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "signal.signal(signal.SIGINT, bye)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    for sig in (signal.SIGINT, signal.SIGTERM):
        job = start(["run", "--offline", "--", PY, str(script)])
        assert job.wait_for("ready", timeout=60) is not None
        job.proc.send_signal(sig)
        assert job.finish(timeout=20) == 42
        assert f"job got {sig.name}" in job.text("out")
        assert "Traceback" not in job.text("err")


def test_a_stalled_job_gets_a_bundle_with_its_stacks_and_last_lines(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(
        "import time\n"
        "def wait_for_the_shard():\n"
        "    time.sleep(120)\n"
        "print('[rank1]: step 1 loss 0.5', flush=True)\n"
        "wait_for_the_shard()\n"
    )
    bundle = tmp_path / "bundle"
    job = start(
        [
            "run",
            "--offline",
            "--stall-after",
            "2",
            "--kill-on-hang",
            "--bundle-dir",
            str(bundle),
            "--",
            PY,
            str(script),
        ]
    )
    stalled = job.wait_for("rootcause: no progress for 2 s", timeout=60)
    assert stalled is not None, job.text()
    assert job.wait_for(f"rootcause: hang bundle in {bundle}", timeout=60) is not None
    job.finish(timeout=30)
    assert "step 1 loss 0.5" in (bundle / "rank1.log").read_text()
    readme = (bundle / "README.txt").read_text()
    assert "flight recorder: no dump yet" in readme
    rows = json.loads((bundle / "processes.json").read_text())
    assert str(script) in rows[0]["cmdline"]
    assert rows[0]["python"] is True
    if procs.pyspy() is None:
        assert "py-spy not found" in readme
    else:
        # no RANK in its environment: the job's one process is not a rank's main process
        assert not list(bundle.glob("pyspy-rank*"))
        assert "wait_for_the_shard" in (bundle / "pyspy-others.txt").read_text()
        assert json.loads((bundle / "pyspy-others.json").read_text())
    # the verdict needs the hang analyser; without it the run says so
    from rootcause.live.bundle import analyser

    if analyser() is None:
        assert "the hang verdict needs the hang analyser" in job.text("err")


def test_without_py_spy_the_bundle_says_it_is_missing(tmp_path, monkeypatch):
    from rootcause.live import bundle as bundles

    monkeypatch.setattr(procs, "pyspy", lambda: None)
    found = bundles.collect_bundle(
        directory=tmp_path / "b", root_pid=None, env={}, last_lines={0: ["step 3"]}
    )
    assert found.notes()[0].startswith("flight recorder")  # no process: nothing to dump
    found = bundles.collect_bundle(
        directory=tmp_path / "c", root_pid=1, env={}, last_lines={0: ["step 3"]}
    )
    assert "py-spy not found" in (tmp_path / "c" / "README.txt").read_text()


def test_a_rank_that_printed_nothing_gets_an_empty_log_and_the_readme_names_it(
    tmp_path, monkeypatch
):
    from rootcause.live import bundle as bundles

    monkeypatch.setattr(procs, "pyspy", lambda: None)
    # a launcher and two ranks' main processes (RANK in their environment), as torchrun's
    launcher = start(
        [
            "run",
            "--offline",
            "--stall-after",
            "0",
            "--",
            PY,
            "-c",
            "import os, subprocess, sys, time\n"
            "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
            " env={**os.environ, 'RANK': str(r)}) for r in (0, 1)]\n"
            "print('[rank1]: step 3', flush=True)\n"
            "time.sleep(60)\n",
        ]
    )
    try:
        assert launcher.wait_for("[rank1]: step 3", timeout=30) is not None
        time.sleep(1)  # the children started
        found = bundles.collect_bundle(
            directory=tmp_path / "b",
            root_pid=launcher.proc.pid,
            env={},
            last_lines={1: ["[rank1]: step 3"]},
        )
    finally:
        launcher.proc.kill()
        launcher.finish(timeout=30)
    assert (tmp_path / "b" / "rank0.log").read_text() == ""
    assert "step 3" in (tmp_path / "b" / "rank1.log").read_text()
    assert found.silent == [0]
    readme = (tmp_path / "b" / "README.txt").read_text()
    assert "no line of output named rank(s) 0" in readme


def test_a_progress_bar_that_advances_is_never_a_stall_and_one_that_redraws_in_place_is(tmp_path):
    script = tmp_path / "bar.py"
    script.write_text(
        "import sys, time\n"
        "advance = sys.argv[1] == 'advance'\n"
        "for i in range(16):\n"
        "    n = i if advance else 3\n"
        "    sys.stdout.write(f'\\r{n * 6}%|{\"#\" * n}| {n}/16 [00:{i:02d}<00:10, {1 + i % 3}.0it/s]')\n"
        "    sys.stdout.flush()\n"
        "    time.sleep(0.5)\n"
    )
    args = ["run", "--offline", "--stall-after", "2", "--", PY, str(script)]
    moving = start([*args, "advance"], cwd=tmp_path)
    stuck = start([*args, "redraw"], cwd=tmp_path)  # its bundle goes to ./rootcause-hang-*
    assert moving.finish(timeout=60) == 0
    assert stuck.finish(timeout=60) == 0
    assert "no progress" not in moving.text("err")
    assert "rootcause: no progress for 2 s" in stuck.text("err")


@pytest.fixture
def fake():
    with FakeService(Engine(entries())) as service:
        yield service


def test_online_the_masked_evidence_is_posted_while_the_job_runs(fake, failing_job):
    job = start(
        [
            "run",
            "--kill-on-failure",
            "--kill-grace",
            "1",
            "--idempotency-key",
            "job-31",
            "--",
            PY,
            str(failing_job),
            "30",
        ],
        env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": "rc_test"},
    )
    posted = job.wait_for(f"rootcause: posted to {fake.url}", timeout=60)
    job.finish(timeout=30)
    assert posted is not None, job.text()
    uploads = [r for r in fake.received if r.method == "POST"]
    assert len(uploads) == 1
    assert uploads[0].headers["idempotency-key"].startswith("job-31:")
    _name, body = uploads[0].files["file"]
    text = gzip.decompress(body).decode()
    assert "RuntimeError: CUDA out of memory" in text
    assert "alice@example.com" not in text  # masked here, before it was sent
    assert "<EMAIL" in text


def test_offline_nothing_is_posted(fake, failing_job):
    job = start(
        ["run", "--offline", "--", PY, str(failing_job), "0"],
        env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": "rc_test"},
    )
    job.finish(timeout=60)
    assert "failure diagnosed" in job.text("err")
    assert fake.received == []
