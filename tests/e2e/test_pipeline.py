"""The whole pipeline through Redis and a separately started worker process."""

from __future__ import annotations

import pytest
from django.test import Client

from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS
from tests.e2e.diagnoses import all_database_text, all_redis_bytes, big_log, wait_for_status
from tests.worker import wait_for_output

pytestmark = pytest.mark.e2e

URL = "/api/v1/diagnoses"


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

    diagnosis = wait_for_status(response.json()["id"], until=("done", "failed"))

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    result = acme_api.get(response["Location"]).content.decode()
    page_client = Client()
    page_client.force_login(alice)
    page = page_client.get(f"/diagnoses/{diagnosis.id}/")
    assert page.status_code == 200
    database, keys, worker_log = all_database_text(), all_redis_bytes(), real_worker.output()
    assert "optimizer-state-oom" in database  # the dump really holds the result
    for name, secret in CANARIES.items():
        assert secret not in database, name
        assert secret.encode() not in keys, name
        assert secret not in worker_log, name
        assert secret not in result, name
        assert secret not in page.content.decode(), name


def test_a_worker_killed_mid_diagnosis_loses_nothing_and_finishes_once(
    real_worker, catalogue, acme_api
):
    response = acme_api.post(URL, data=big_log(20), content_type="text/plain")
    assert response.status_code == 202
    diagnosis_id = response.json()["id"]

    wait_for_status(diagnosis_id, until=("masking", "matching"), timeout=60)
    real_worker.kill()
    killed_in = Diagnosis.objects.get(id=diagnosis_id).status
    assert killed_in in ("masking", "matching"), "the kill came too late to test anything"

    real_worker.start()  # a new worker process; Redis redelivers the unacknowledged task
    diagnosis = wait_for_status(diagnosis_id, until=("done", "failed"), timeout=120)

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.failure_slug == "optimizer-state-oom"
    assert diagnosis.attempts > 3  # one stage ran twice
    done_line = f"diagnosis {diagnosis_id} done"
    wait_for_output(real_worker, done_line, timeout=30)
    real_worker.wait_idle()  # a second completion, were there one, would be logged by now
    assert real_worker.output().count(done_line) == 1
    assert Diagnosis.objects.count() == 1
