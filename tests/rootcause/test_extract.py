"""Big logs: the evidence the client extracts gives the service's engine the same diagnosis."""

import gzip
import json
import random
import re
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.cli import client, inputs
from rootcause.engine import get_engine
from rootcause.extract import EXTRACT_ABOVE, HEAD_LINES, TAIL_LINES, extract
from rootcause.masking import Masker, mask_log
from rootcause.result import as_json
from tests.rootcause.fake_service import FakeService

LOGS = Path(__file__).resolve().parents[1] / "logs"
CASES = sorted(LOGS.glob("*/*.log"))
RANK_RE = re.compile(r"\[rank(\d+)\]")


@cache
def healthy(ranks: tuple[int, ...], n: int, seed: int) -> str:
    """n healthy training lines: steps, Trainer dicts and logging lines, per rank if any."""
    rnd = random.Random(seed)
    out = []
    for step in range(n):
        prefix = f"[rank{ranks[step % len(ranks)]}]: " if ranks else ""
        loss = rnd.uniform(1, 3)
        out.append(
            [
                f"{prefix}step {step} | loss {loss:.4f} | lr 3.0e-04 | grad_norm 0.81 | "
                "152.3 TFLOPS | mem 41.2 GiB",
                f"{prefix}{{'loss': {loss:.4f}, 'grad_norm': 0.81, 'learning_rate': 4.9e-05, "
                f"'epoch': {step / 1e5:.2f}}}",
                f"{prefix}2026-05-01 12:00:{step % 60:02d},123 - INFO - trainer.py:220 - "
                "throughput 1234.5 samples/s, data time 0.012 s",
            ][step % 3]
        )
    return "\n".join(out) + "\n"


def padded(log: str, lines: int = 9_000) -> str:
    """The log after hours of healthy training (about a megabyte), and more in its middle."""
    ranks = tuple(sorted({int(r) for r in RANK_RE.findall(log)}))
    own = log.splitlines(keepends=True)
    if own and not own[-1].endswith("\n"):
        own[-1] += "\n"
    middle = len(own) // 2
    return (
        healthy(ranks, lines, 1)
        + "".join(own[:middle])
        + healthy(ranks, lines // 4, 2)
        + "".join(own[middle:])
    )


def masked(text: str, analyzer=None):
    """As the service masks a log: learn the names first, then mask. With the Hyperscan
    recognizers alone by default (the same masked text as the service's Presidio analyzer for
    the types they cover, tests/rootcause/test_masking_presidio.py, and much faster)."""
    return mask_log(lambda: [text.encode("utf-8", "surrogatepass")], Masker(analyzer=analyzer))


def service_view(text: str) -> dict:
    """What the service concludes from an upload (masking counts aside: fewer lines, fewer)."""
    result = as_json(get_engine().diagnose(masked(text)))
    result.pop("masking")
    return result


def sent(text: str) -> str:
    return "".join(extract([text.encode("utf-8", "surrogatepass")], get_engine()).text())


# 184 corpus logs padded, extracted and diagnosed twice each: 40 s of CPU, a sweep for make test
@pytest.mark.heavy
@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_the_evidence_of_a_padded_log_is_diagnosed_as_the_whole_log(path):
    whole = padded(path.read_text(encoding="utf-8", errors="replace"))

    found = extract([whole.encode()], get_engine())
    upload = "".join(found.text())

    assert service_view(upload) == service_view(whole)
    assert found.kept_bytes < len(whole) / 10
    # line numbers are those of the whole log: evidence cites the same lines
    assert upload.count("\n") == whole.count("\n")


def test_the_head_the_tail_and_each_ranks_last_lines_are_kept():
    ranks = [f"[rank{r}]: step {{}} loss 1.0" for r in range(4)]
    lines = [ranks[n % 4].format(n) for n in range(4000)]
    # rank 3 stops printing at line 1000 (a hang); the others carry on
    lines = [line for n, line in enumerate(lines) if not (n > 1000 and line.startswith("[rank3]"))]
    text = "\n".join(lines) + "\n"

    found = extract([text.encode()], get_engine())

    kept = found.kept
    assert all(n in kept for n in range(HEAD_LINES))
    assert all(n in kept for n in range(len(lines) - TAIL_LINES, len(lines)))
    last_rank3 = max(n for n, line in enumerate(lines) if line.startswith("[rank3]"))
    assert kept[last_rank3] == lines[last_rank3]
    assert len(kept) < len(lines) / 5


def test_a_private_key_cut_by_the_extraction_is_not_sent():
    key = ["-----BEGIN PRIVATE KEY-----"]
    key += [f"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{n:04d}secretkeymaterial" for n in range(20)]
    key += ["-----END PRIVATE KEY-----"]
    text = (
        healthy((), 3000, 1)
        + "\n".join(key)
        + "\nTraceback (most recent call last):\n"
        + '  File "train.py", line 3, in <module>\n'
        + "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
        + healthy((), 3000, 2)
    )

    upload = sent(text)

    assert "RuntimeError: mat1 and mat2" in upload
    assert "secretkeymaterial" not in upload


def test_a_name_the_service_learns_from_a_left_out_line_is_still_learned():
    text = (
        healthy((), 3000, 1)
        + "Loading data from /home/janedoe/data/train.bin\n"
        + healthy((), 3000, 2)
        + "RuntimeError: cannot open shard 3 of janedoe: Permission denied\n"
    )

    upload = sent(text)

    assert "janedoe" in upload
    assert "janedoe" not in "".join(masked(upload))


def test_a_big_log_is_sent_as_its_evidence_and_diagnosed_as_the_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "POLL_FIRST", 0.01)
    log = CASES[0].parent / "rank3_oom_earlier_than_rank0_enospc_by_time.log"
    big = tmp_path / "train.log"
    big.write_text(padded(log.read_text(), lines=60_000))
    assert big.stat().st_size > EXTRACT_ABOVE

    with FakeService(get_engine()) as fake:
        result = CliRunner().invoke(
            rootcause.cli.app,
            ["diagnose", str(big), "--json"],
            env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": None},
        )
        upload = fake.posts[0].files["file"]

    assert result.exit_code == 1, result.output
    assert "sending the evidence only" in result.stderr
    assert "--full sends everything" in result.stderr
    assert upload[0] == "train.log"
    assert upload[1].startswith(b"\x1f\x8b")  # gzip: the service unpacks it
    assert len(upload[1]) < big.stat().st_size / 50
    row = json.loads(result.stdout)
    whole = service_view(big.read_text())
    assert {k: row[k] for k in whole} == whole


def test_full_sends_a_big_log_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "POLL_FIRST", 0.01)
    big = tmp_path / "train.log"
    big.write_text(healthy((0, 1), 60_000, 3))

    with FakeService(get_engine()) as fake:
        result = CliRunner().invoke(
            rootcause.cli.app,
            ["diagnose", str(big), "--full"],
            env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": None},
        )
        upload = fake.posts[0].files["file"]

    assert result.exit_code == 0, result.output
    assert "evidence" not in result.stderr
    assert upload[1] == big.read_bytes()


def test_a_big_log_on_standard_input_or_gzipped_is_extracted_too(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "POLL_FIRST", 0.01)
    text = padded((LOGS / "shape-mismatch/view_hardcoded_batch_last_batch.log").read_text(), 60_000)
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))

    with FakeService(get_engine()) as fake:
        result = CliRunner().invoke(
            rootcause.cli.app,
            ["diagnose", "-", str(packed), "--json"],
            env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": None},
            input=text,
        )
        uploads = [p.files["file"][1] for p in fake.posts]

    assert result.exit_code == 1, result.output
    assert result.stderr.count("sending the evidence only") == 2
    assert all(len(u) < len(text) / 50 for u in uploads)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["failure"]["slug"] for r in rows] == ["shape-mismatch"] * 2


def test_when_most_of_a_log_is_evidence_it_is_sent_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "POLL_FIRST", 0.01)
    monkeypatch.setattr(inputs, "EXTRACT_ABOVE", 1000)
    monkeypatch.setattr("rootcause.extract.WORTH_IT", 0.0)
    log = tmp_path / "train.log"
    log.write_text(healthy((), 200, 1))

    with FakeService(get_engine()) as fake:
        result = CliRunner().invoke(
            rootcause.cli.app,
            ["diagnose", str(log)],
            env={"ROOTCAUSE_URL": fake.url, "ROOTCAUSE_TOKEN": None},
        )
        upload = fake.posts[0].files["file"]

    assert result.exit_code == 0, result.output
    assert "sending it whole" in result.stderr
    assert upload[1] == log.read_bytes()


def test_the_traceback_read_after_a_message_is_kept():
    # the OOM message printed before its traceback (hpcaitech/ColossalAI#3509's shape), the
    # deciding frame further below it than the context kept around an error
    frames = "".join(
        f'  File "/env/site-packages/coati/trainer/layer{n}.py", line {n}, in call{n}\n'
        f"    return self.call{n + 1}()\n"
        for n in range(12)
    )
    log = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.12 GiB (GPU 5; "
        "23.70 GiB total capacity; 22.00 GiB already allocated; 292.56 MiB free; 22.29 GiB "
        "reserved in total by PyTorch)\n"
        "wandb: Waiting for W&B process to finish... (failed 1).\n"
        "Traceback (most recent call last):\n"
        + frames
        + '  File "/env/site-packages/colossalai/zero/sharded_optim/low_level_optim.py", line '
        "480, in step\n"
        "    self._update_fp32_params()\n"
    )
    # healthy lines after it too: the log's last lines are kept anyway
    whole = healthy((), 9_000, 1) + log + "wandb: Run history:\n" + healthy((), 600, 2)

    upload = sent(whole)

    failure = get_engine().diagnose(masked(whole)).failure
    assert failure is not None
    assert failure.slug == "optimizer-state-oom"
    assert service_view(upload) == service_view(whole)
