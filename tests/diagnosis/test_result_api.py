"""The typed result through the API and the pages: what is stored reads back through one type,
rows stored before it still render, and the OpenAPI document describes the result with the
type's own JSON Schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from diagnosis import selectors
from diagnosis.models import Diagnosis
from rootcause.result import DiagnosisResult, as_json, result_from_json
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"
RECORD = {
    "id",
    "status",
    "progress",
    "kind",
    "filename",
    "size_bytes",
    "job",
    "run_url",
    "commit",
    "labels",
    "created_at",
    "finished_at",
}
RESULT = set(DiagnosisResult.__dataclass_fields__)

# What the pipeline stored before the result was typed: the engine's dict, remediation added by
# stage 3, and the masking counts only in their own column.
STORED_BEFORE: dict[str, Any] = {
    "outcome": "diagnosed",
    "failure": {
        "slug": "optimizer-state-oom",
        "title": "Optimizer State Memory Explosion",
        "category": "memory",
        "confidence": 0.97,
    },
    "root_cause": "Adam's states do not fit. First error: torch.OutOfMemoryError: CUDA out of memory.",
    "initiating_rank": None,
    "ranks": [],
    "collateral": [],
    "evidence": [{"line": 18, "text": "torch.OutOfMemoryError: CUDA out of memory."}],
    "missing_facts": [],
    "encyclopedia_url": "/encyclopedia/optimizer-state-oom/",
    "catalogue_version": "0123456789ab",
    "remediation": {
        "steps": ["Shard the optimizer states."],
        "command": "deepspeed --zero_stage 2 train.py",
        "verification_command": "nvidia-smi --query-gpu=memory.used --format=csv",
        "verification_expect": "below 70 GiB",
    },
}


def _post(client: Any, body: bytes) -> Any:
    return client.post(URL, data=body, content_type="text/plain")


@pytest.fixture
def stored_before(acme: Any) -> Diagnosis:
    return Diagnosis.objects.create(
        organization=acme,
        source="api",
        size_bytes=2048,
        status=Diagnosis.Status.DONE,
        progress=100,
        outcome="diagnosed",
        failure_slug="optimizer-state-oom",
        result=STORED_BEFORE,
        masking_counts={"EMAIL_ADDRESS": 2},
        catalogue_version="0123456789ab",
        finished_at=timezone.now(),
    )


def test_a_finished_diagnosis_is_its_record_and_its_stored_result(
    acme_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        location = _post(acme_api, OOM_LOG.encode())["Location"]

    body = acme_api.get(location).json()

    # an organisation's, of a class; `hang` only for a bundle of per-rank files (issue 30)
    assert set(body) == RECORD | (RESULT - {"hang"}) | {"recurrence"}
    row = Diagnosis.objects.get(id=body["id"])
    # stage 3 stored the complete result, masking counts included
    assert row.result == {k: v for k, v in body.items() if k in RESULT}
    assert row.result["masking"] == row.masking_counts
    assert result_from_json(body) == selectors.diagnosis_result(row)


def test_a_row_stored_before_the_typed_result_renders_as_it_did(acme_api, stored_before):
    body = acme_api.get(f"{URL}/{stored_before.id}").json()

    # the words of its confidence, which it lacked, come from its figure (0.97: certain)
    worded = {
        **STORED_BEFORE["failure"],
        "confidence_level": "certain",
        "confidence_words": "certain",
    }
    assert {k: body[k] for k in STORED_BEFORE} == {**STORED_BEFORE, "failure": worded}
    assert body["masking"] == {"EMAIL_ADDRESS": 2}
    assert body["status"] == "done"


def test_and_so_does_its_page(client, alice, stored_before):
    client.force_login(alice)

    page = client.get(f"/diagnoses/{stored_before.id}/").content.decode()

    assert "Optimizer State Memory Explosion" in page
    assert "deepspeed --zero_stage 2 train.py" in page
    assert "EMAIL_ADDRESS \u00d7 2" in page  # a multiplication sign
    assert '<span id="confidence-words">(certain)</span>' in page


def _worded(confidence: float, level: str, words: str) -> dict[str, Any]:
    failure = {**STORED_BEFORE["failure"], "confidence": confidence}
    return {
        **STORED_BEFORE,
        "failure": {**failure, "confidence_level": level, "confidence_words": words},
    }


def test_the_api_and_the_page_say_a_low_confidence_in_words_with_what_would_decide_it(
    acme_api, client, alice, stored_before
):
    words = "possible — confirm with this check: Count trainable parameters: `n = 1`"
    Diagnosis.objects.filter(id=stored_before.id).update(result=_worded(0.41, "possible", words))

    failure = acme_api.get(f"{URL}/{stored_before.id}").json()["failure"]
    client.force_login(alice)
    page = client.get(f"/diagnoses/{stored_before.id}/").content.decode()

    assert (failure["confidence"], failure["confidence_level"]) == (0.41, "possible")
    assert failure["confidence_words"] == words
    assert '<strong id="confidence">0.41</strong>' in page
    # beside the figure, the check's code as code
    assert (
        '<span id="confidence-words">(possible — confirm with this check: Count trainable '
        "parameters: <code>n = 1</code>)</span>"
    ) in page


def test_a_new_diagnosis_has_its_confidence_in_words(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        location = _post(acme_api, OOM_LOG.encode())["Location"]

    failure = acme_api.get(location).json()["failure"]

    assert failure["confidence_level"] in ("certain", "likely", "possible")
    assert failure["confidence_words"].startswith(failure["confidence_level"])


@pytest.mark.parametrize(
    ("status", "extra"),
    [(Diagnosis.Status.QUEUED, set()), (Diagnosis.Status.FAILED, {"failure_reason"})],
)
def test_an_unfinished_diagnosis_has_only_its_record(acme_api, acme, status, extra):
    row = Diagnosis.objects.create(
        organization=acme, source="api", size_bytes=1, status=status, failure_reason="boom"
    )

    body = acme_api.get(f"{URL}/{row.id}").json()

    assert set(body) == RECORD | extra


def test_a_result_without_its_fix_leaves_remediation_out(acme_api, stored_before):
    without = {k: v for k, v in STORED_BEFORE.items() if k != "remediation"}
    Diagnosis.objects.filter(id=stored_before.id).update(result=without)

    body = acme_api.get(f"{URL}/{stored_before.id}").json()

    assert "remediation" not in body


def test_the_openapi_document_describes_the_result_with_its_own_schema(tmp_path):
    path = tmp_path / "openapi.json"
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                 "--file", str(path))  # fmt: skip

    schemas = json.loads(path.read_text())["components"]["schemas"]
    for name in ("DiagnosisResult", "Failure", "RankRow", "CollateralFailure", "EvidenceLine"):
        assert name in schemas
    assert set(schemas["DiagnosisResult"]["properties"]) == RESULT
    diagnosis = schemas["Diagnosis"]
    assert set(diagnosis["properties"]) == RECORD | RESULT | {
        "failure_reason",
        "expires_at",
        "access_key",
        "recurrence",
    }
    assert set(diagnosis["required"]) <= RECORD
    assert diagnosis["properties"]["failure"] == {
        "allOf": [{"$ref": "#/components/schemas/Failure"}],
        "nullable": True,
    }
    assert schemas["EvidenceLine"]["required"] == ["line", "text"]
    failure = schemas["Failure"]["properties"]
    # drf-spectacular names the enum as a component of its own
    assert failure["confidence_level"]["allOf"] == [
        {"$ref": "#/components/schemas/ConfidenceLevelEnum"}
    ]
    assert schemas["ConfidenceLevelEnum"]["enum"] == ["certain", "likely", "possible"]
    assert "possible — confirm with" in failure["confidence_words"]["description"]


def test_the_stored_json_is_the_types_json(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        location = _post(acme_api, OOM_LOG.encode())["Location"]
    row = Diagnosis.objects.get(id=location.rsplit("/", 1)[-1])

    result = selectors.stored_result(row)

    assert result is not None
    assert as_json(result) == row.result
