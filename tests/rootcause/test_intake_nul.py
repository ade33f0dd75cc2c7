"""A stray NUL in an otherwise textual log: still a log, on the command line (offline).

Crashing writers leave NUL bytes in logs (owncloud/core#40099: "Sometimes the test log will
contain null bytes"; roborescue/rcrs-server#25: "Log files have arbitrary zero bytes at the
beginning"); binary is judged by the share of places that hold them, not by one being there.
"""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.cli import diagnose_path
from rootcause.engine import get_engine

LOG = (
    Path(__file__).resolve().parents[1]
    / "logs/activation-oom/cuda-error-out-of-memory-in-forward.log"
)


def _with_nuls(tmp_path: Path, *, block: bool) -> Path:
    text = LOG.read_bytes()
    cut = text.index(b"\n", len(text) // 3) + 1
    nuls = b"\x00" * (4096 if block else 1)
    path = tmp_path / "crashed-worker.log"
    path.write_bytes(text[:cut] + nuls + text[cut:])
    return path


def test_a_stray_nul_is_diagnosed_by_the_command_line(tmp_path):
    path = _with_nuls(tmp_path, block=False)

    result = CliRunner().invoke(rootcause.cli.app, ["diagnose", str(path), "--offline", "--json"])

    assert result.exit_code != 2, result.output  # 2 is the usage error of a refused file
    row = json.loads(result.output)
    assert row["failure"]["slug"] == "activation-oom"
    assert "\x00" not in result.output
    assert "\\u0000" not in result.output


def test_a_block_of_nuls_is_read_past(tmp_path):
    result = diagnose_path(str(_with_nuls(tmp_path, block=True)), get_engine())

    assert result.failure is not None
    assert result.failure.slug == "activation-oom"
    assert all("\x00" not in e.text for e in result.evidence)


def test_a_file_full_of_nuls_is_still_refused(tmp_path):
    binary = tmp_path / "weights.bin"
    binary.write_bytes(b"".join(bytes([i, 0, 0, 0]) for i in range(1, 256)) * 40)

    result = CliRunner().invoke(rootcause.cli.app, ["diagnose", str(binary), "--offline"])

    assert result.exit_code == 2
    assert "looks like a binary file" in result.output


def test_the_engine_shows_evidence_without_nul_bytes():
    # the engine's own callers (not the chunk reader, which drops them) may pass NULs through
    text = LOG.read_text()
    at = text.rindex("\n", 0, text.index("out of memory")) + 1  # the error line's start
    result = get_engine().diagnose([text[:at] + "\x00" + text[at:]])

    assert result.failure is not None
    assert any("out of memory" in e.text for e in result.evidence)
    assert all("\x00" not in e.text for e in result.evidence)
    assert "\x00" not in (result.root_cause or "")


REALRUN = (
    Path(__file__).resolve().parents[2]
    / "bench/realruns/corpus/dev/run-dataloader-worker-died__torchrun-tee_w3_rank2_sig11.log"
)


@pytest.mark.skipif(not REALRUN.is_file(), reason="bench/realruns corpus not generated")
def test_a_run_whose_crashing_worker_wrote_a_nul_is_diagnosed():
    # run-produced (make realruns): rank 2's DataLoader worker killed by SIGSEGV left one NUL in
    # the captured output; it was refused as binary before
    assert b"\x00" in REALRUN.read_bytes()

    result = diagnose_path(str(REALRUN), get_engine())

    assert result.failure is not None
    assert result.failure.slug == "dataloader-worker-died"
    assert result.initiating_rank == 2
