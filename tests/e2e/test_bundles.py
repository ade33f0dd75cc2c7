"""A bundle through Redis and a separately started worker process: the real pipeline (mask,
hang analysis, remediation) on a real hung job's files, and canaries planted in the files reach
no table, no Redis key and no worker log."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from billing_tiers.models import QuotaCharge
from tests.diagnosis.test_bundles import DATALOADER, WITH_PICKLES, files_of
from tests.e2e.diagnoses import all_database_text, all_redis_bytes, wait_for_status
from tests.e2e.test_pipeline import URL

pytestmark = pytest.mark.e2e

CANARIES = {
    "user": "mkowalski",
    "host": "gpu-node-23.corp.acme.internal",
    "email": "m.kowalski@acme-research.example",
    "ip": "10.20.30.40",
}


def _post(client, files):
    uploads = [SimpleUploadedFile(name, data) for name, data in files]
    response = client.post(URL, {"file": uploads}, format="multipart")
    assert response.status_code == 202, response.content
    return response


def test_a_bundle_is_masked_and_analysed_by_the_worker_and_names_the_culprit(
    real_worker, catalogue, acme_api
):
    planted = (
        f"\nrsync /home/{CANARIES['user']}/ckpt {CANARIES['host']}:/ckpt ({CANARIES['ip']}) "
        f"for {CANARIES['email']}\n"
    ).encode()
    files = [(f"run/{name}", data + planted) for name, data in files_of(DATALOADER)]

    response = _post(acme_api, files)
    diagnosis = wait_for_status(response.json()["id"], until=("done", "failed"))

    assert diagnosis.status == "done", diagnosis.failure_reason
    assert diagnosis.kind == "bundle"
    body = acme_api.get(response["Location"]).json()
    assert body["failure"]["slug"] == "rank-stalled-before-collective"
    assert body["initiating_rank"] == 2
    assert [c["rank"] for c in body["hang"]["culprits"]] == [2]
    assert body["remediation"]["verification_command"]  # the shipped catalogue's entry
    assert diagnosis.attempts == 3  # masking, analysing, remediating: one claim each
    assert QuotaCharge.objects.count() == 1
    database, keys, worker_log = all_database_text(), all_redis_bytes(), real_worker.output()
    assert "rank-stalled-before-collective" in database
    for name, secret in CANARIES.items():
        assert secret not in database, name
        assert secret.encode() not in keys, name
        assert secret not in worker_log, name
        assert secret not in str(body), name


def test_an_archive_with_flight_recorder_pickles_is_diagnosed_by_the_worker(
    real_worker, catalogue, acme_api
):
    response = _post(acme_api, [(WITH_PICKLES.name, WITH_PICKLES.read_bytes())])
    diagnosis = wait_for_status(response.json()["id"], until=("done", "failed"))

    assert diagnosis.status == "done", diagnosis.failure_reason
    body = acme_api.get(response["Location"]).json()
    assert body["initiating_rank"] == 1
    assert body["hang"]["artefacts"]["fr"] >= 1
    assert body["hang"]["verdict"] == "rank-stalled-before-collective"
