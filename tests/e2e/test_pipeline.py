"""The whole pipeline through Redis and a separately started worker process."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from django.db import connection
from django.test import Client

from diagnosis.models import Diagnosis
from tests import redis_namespace
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS
from tests.worker import wait_for_output

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
            values.extend(cast(list[bytes], client.lrange(key, 0, -1)))
        elif kind == b"hash":
            fields = cast("dict[bytes, bytes]", client.hgetall(cast(str, key)))
            values.extend(v for kv in fields.items() for v in kv)
        elif kind == b"set":
            values.extend(cast(set[bytes], client.smembers(key)))
        elif kind == b"zset":
            values.extend(cast(list[bytes], client.zrange(key, 0, -1)))
        values.append(key)
    return b"\n".join(values)


# The kinds of issue 13, beside those of the diagnosis tests: every one is a canary too.
CANARIES = {
    **PLANTED_SECRETS,
    "ip_in_path": "10.20.30.40",
    "ip_in_log_name": "10.12.4.77",
    "ipv6": "fd12:3456:789a::17",
    "host_in_log_name": "gpu-node-23.corp.acme.internal",
    "user_at_host": "mkowalski",
    "short_host_mentioned_early": "trainer-box-42",
    "phone": "(212) 555-0143",
    "phone_international": "+49 30 90182063",
    "card_4_6_5": "3751 896817 76744",
    "iban": "DE89370400440532013000",
    "btc_wallet": "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
    "password_punctuated": "%M5hqkSYg1vFoLf%",
    "github_token": "ghp_" + "A1b2C3d4E5" * 4,
    "private_key_body": "MIIEpAIBAAKCAQEAx9rVb8CANARY",
}
CANARY_LOG = (
    "[launcher] trainer-box-42 slow to answer; peer fd12:3456:789a::17 down\n"
    "ssh mkowalski@trainer-box-42 'nvidia-smi' | tee run_10.12.4.77.log\n"
    "writing gpu-node-23.corp.acme.internal.log; ckpt /data/ckpt_10.20.30.40/step_1000.pt\n"
    "sample 3: {'text': 'Call me at (212) 555-0143 or +49 30 90182063', 'label': 1}\n"
    "sample 4: {'text': 'card 3751 896817 76744, iban DE89370400440532013000', 'label': 0}\n"
    "sample 5: {'text': 'tip 1BoatSLRHtKNngkdXEeobR76b53LETtpyT', 'label': 0}\n"
    "config: {'user': 'svc', 'password': '%M5hqkSYg1vFoLf%', 'gh': '"
    + CANARIES["github_token"]
    + "'}\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx9rVb8CANARY\n"
    "-----END RSA PRIVATE KEY-----\n"
    + OOM_LOG
    + "trainer-box-42:18802:18899 [0] NCCL INFO Bootstrap : Using eth0\n"
)


def test_planted_secrets_reach_no_table_no_redis_key_no_worker_log(
    real_worker, catalogue, acme_api, alice
):
    response = acme_api.post(URL, data=CANARY_LOG.encode(), content_type="text/plain")
    assert response.status_code == 202

    diagnosis = _wait(response.json()["id"], until=("done", "failed"))

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    result = acme_api.get(response["Location"]).content.decode()
    page_client = Client()
    page_client.force_login(alice)
    page = page_client.get(f"/diagnoses/{diagnosis.id}/")
    assert page.status_code == 200
    database, keys, worker_log = _all_database_text(), _all_redis_bytes(), real_worker.output()
    assert "optimizer-state-oom" in database  # the dump really holds the result
    for name, secret in CANARIES.items():
        assert secret not in database, name
        assert secret.encode() not in keys, name
        assert secret not in worker_log, name
        assert secret not in result, name
        assert secret not in page.content.decode(), name


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
    response = acme_api.post(URL, data=_big_log(20), content_type="text/plain")
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
    done_line = f"diagnosis {diagnosis_id} done"
    wait_for_output(real_worker, done_line, timeout=30)
    real_worker.wait_idle()  # a second completion, were there one, would be logged by now
    assert real_worker.output().count(done_line) == 1
    assert Diagnosis.objects.count() == 1
