"""The whole pipeline through Redis and a separately started worker process."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection

from diagnosis.models import Diagnosis
from tests import redis_namespace
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

pytestmark = pytest.mark.e2e

URL = "/api/v1/diagnoses"


def _wait(diagnosis_id: str, until: tuple[str, ...], timeout: float = 90) -> Diagnosis:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        diagnosis = Diagnosis.objects.get(id=diagnosis_id)
        if diagnosis.status in until:
            return diagnosis
        time.sleep(0.05)
    raise AssertionError(f"diagnosis still {diagnosis.status} after {timeout} s")


def _all_database_text() -> str:
    """Every row of every table of the test database, as text."""
    chunks: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # noqa: S608  (names from the catalog)
            chunks.extend(row[0] for row in cursor.fetchall())
    return "\n".join(chunks)


def _all_redis_bytes() -> bytes:
    """Every key of this run and its value; other runs on the machine hold their own raw logs."""
    client = redis_namespace.client()
    values: list[Any] = []
    for key in redis_namespace.run_keys(client):
        kind = client.type(key)
        if kind == b"string":
            values.append(client.get(key) or b"")
        elif kind == b"list":
            values.extend(client.lrange(key, 0, -1))
        elif kind == b"hash":
            values.extend(v for kv in client.hgetall(key).items() for v in kv)
        elif kind == b"set":
            values.extend(client.smembers(key))
        elif kind == b"zset":
            values.extend(client.zrange(key, 0, -1))
        values.append(key)
    return b"\n".join(values)


def test_planted_secrets_reach_no_table_no_redis_key_no_worker_log(
    real_worker, catalogue, acme_api
):
    response = acme_api.post(URL, data=OOM_LOG.encode(), content_type="text/plain")
    assert response.status_code == 202

    diagnosis = _wait(response.json()["id"], until=("done", "failed"))

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    result = acme_api.get(response["Location"]).content.decode()
    database, keys, worker_log = _all_database_text(), _all_redis_bytes(), real_worker.output()
    assert "optimizer-state-oom" in database  # the dump really holds the result
    for name, secret in PLANTED_SECRETS.items():
        assert secret not in database, name
        assert secret.encode() not in keys, name
        assert secret not in worker_log, name
        assert secret not in result, name


def _big_log(megabytes: int) -> bytes:
    line = (
        "[rank0]: step {i} loss 2.{i:04d} lr 3.0e-04 grad_norm 1.02 tokens/s 51234 "
        "ckpt /home/janedoe/runs/exp/step_{i}.pt host gpu-node-17.contoso-research.com\n"
    )
    lines, size, i = [], 0, 0
    while size < megabytes * 1024 * 1024:
        text = line.format(i=i)
        lines.append(text)
        size += len(text)
        i += 1
    return ("".join(lines) + OOM_LOG).encode()


def test_a_worker_killed_mid_diagnosis_loses_nothing_and_finishes_once(
    real_worker, catalogue, acme_api
):
    response = acme_api.post(URL, data=_big_log(40), content_type="text/plain")
    assert response.status_code == 202
    diagnosis_id = response.json()["id"]

    _wait(diagnosis_id, until=("masking", "matching"), timeout=60)
    real_worker.kill()
    killed_in = Diagnosis.objects.get(id=diagnosis_id).status
    assert killed_in in ("masking", "matching"), "the kill came too late to test anything"

    real_worker.start()  # a new worker process; Redis redelivers the unacknowledged task
    diagnosis = _wait(diagnosis_id, until=("done", "failed"), timeout=120)

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert diagnosis.attempts > 3  # one stage ran twice
    assert real_worker.output().count(f"diagnosis {diagnosis_id} done") == 1
    assert Diagnosis.objects.count() == 1
