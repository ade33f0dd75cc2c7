"""A 100 MB submission in each of the three forms against a real gunicorn (gunicorn.conf.py, one
process): the web process' peak resident memory stays under 300 MB. Read from /proc: the peak
(VmHWM) is reset before each submission (clear_refs), so each form is measured on its own.

The raw body is streamed into Redis; the multipart form's file is held once; a JSON body that
large is refused before it is read (413, naming the other two forms): a 102 MB JSON log once
took a web process from 181 to 740 MB (plumbing/bodies.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e import stack
from tests.worker import worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.heavy]

LOG_BYTES = 100 * 1000 * 1000
RSS_LIMIT = 300 * 1024 * 1024


def _log() -> bytes:
    line = b"step 1200 loss 2.3046 lr 0.0003 grad_norm 1.02\n"
    return line * (LOG_BYTES // len(line))


def _web_process(master_pid: int) -> int:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    assert len(children) == 1, children  # GUNICORN_WORKERS=1
    return int(children[0])


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux 4.0)


@pytest.fixture
def web(tmp_path: Path, transactional_db: Any) -> Iterator[tuple[str, int]]:
    own_redis = stack.OwnRedis(tmp_path)  # 100 MB logs stay out of the run's shared Redis
    own_redis.start()
    env = worker_environment(
        GUNICORN_WORKERS="1",
        REDIS_URL=own_redis.url,
        UPLOAD_TIMEOUT_SECONDS="600",
    )
    port = stack.free_port()
    process = stack.gunicorn(env, tmp_path / "web.log", port)
    process.start()
    base = f"http://127.0.0.1:{port}"
    try:
        stack.wait_until_serving(base, process, timeout=120)  # a loaded machine boots slowly
        assert process.process is not None
        yield base, _web_process(process.process.pid)
    finally:
        process.stop()
        own_redis.kill()


def _peak_during(pid: int, send: Any) -> tuple[httpx.Response, int]:
    _reset_peak(pid)
    response = send()
    return response, _status_kib(pid, "VmHWM") * 1024


def test_a_100_mb_submission_in_each_form_stays_under_300_mb_of_web_process_memory(
    web: tuple[str, int], acme_token: str
) -> None:
    base, pid = web
    url = f"{base}/api/v1/diagnoses"
    auth = {"Authorization": f"Bearer {acme_token}"}
    log = _log()
    # One small submission first: the process has imported and connected what it serves with.
    assert httpx.post(url, content=log[:4096], headers=auth, timeout=60).status_code == 202
    idle = _status_kib(pid, "VmRSS") * 1024

    raw, raw_peak = _peak_during(
        pid,
        lambda: httpx.post(
            url, content=log, headers={**auth, "Content-Type": "text/plain"}, timeout=300
        ),
    )
    form, form_peak = _peak_during(
        pid,
        lambda: httpx.post(url, files={"file": ("train.log", log)}, headers=auth, timeout=300),
    )
    document = json.dumps({"log": log.decode()}).encode()
    refused, json_peak = _peak_during(
        pid,
        lambda: httpx.post(
            url, content=document, headers={**auth, "Content-Type": "application/json"}, timeout=300
        ),
    )

    peaks = {"idle": idle, "raw": raw_peak, "multipart": form_peak, "json": json_peak}
    print({form: f"{size / 2**20:.0f} MiB" for form, size in peaks.items()})
    assert raw.status_code == 202, raw.text[:300]
    assert form.status_code == 202, form.text[:300]
    assert refused.status_code == 413, refused.text[:300]
    assert "multipart" in refused.json()["detail"]
    assert max(raw_peak, form_peak, json_peak) < RSS_LIMIT, peaks
    assert os.path.exists(f"/proc/{pid}")  # the same process served all three
