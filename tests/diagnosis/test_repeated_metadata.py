"""CI jobs send the same file name and metadata with every submission. Their validation is
remembered for a valid set (diagnosis/uploads.py, `validated_metadata`), and names a masker found
nothing in are stored as they are without masking them again (diagnosis/services/submission.py,
`_masked_names`): what is stored and answered must be what doing it anew would give."""

from __future__ import annotations

from unittest import mock

import pytest

from accounts.services import create_masking_rule
from diagnosis.models import Diagnosis
from diagnosis.serializers import SubmissionMetadataSerializer
from diagnosis.services import submission
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"


def _submit(client, **headers) -> Diagnosis:
    response = client.post(URL, data=OOM_LOG.encode(), content_type="text/plain", **headers)
    assert response.status_code == 202, response.content
    return Diagnosis.objects.get(pk=response.json()["id"])


@pytest.fixture
def maskers():
    """Counts the maskers made for names."""
    with mock.patch.object(
        submission, "_masker_of_names", wraps=submission._masker_of_names
    ) as made:
        yield made


def test_names_with_nothing_to_mask_are_masked_once_and_stored_as_they_are(acme_api, maskers):
    headers = {
        "HTTP_X_ROOTCAUSE_FILENAME": "runs/unmasked-names-train.log",
        "HTTP_X_ROOTCAUSE_JOB": "nightly-finetune",
        "HTTP_X_ROOTCAUSE_LABELS": "gpu,fp16",
    }

    first, second = _submit(acme_api, **headers), _submit(acme_api, **headers)

    assert maskers.call_count == 1
    for stored in (first, second):
        assert stored.filename == "unmasked-names-train.log"
        assert (stored.job, stored.labels) == ("nightly-finetune", ["gpu", "fp16"])


def test_names_with_something_to_mask_are_masked_every_time(acme_api, maskers):
    job = "train (jane@gpu-node-17.contoso-research.com)"

    jobs = [_submit(acme_api, HTTP_X_ROOTCAUSE_JOB=job).job for _ in range(2)]

    assert maskers.call_count == 2
    for stored in jobs:
        assert stored.startswith("train (")
        assert "contoso-research" not in stored


def test_a_new_rule_masks_a_name_remembered_as_clean(acme, alice, acme_api, maskers):
    name = "falconer-ranking-train.log"
    assert _submit(acme_api, HTTP_X_ROOTCAUSE_FILENAME=name).filename == name

    create_masking_rule(organization=acme, created_by=alice, kind="term", value="falconer")
    masked = _submit(acme_api, HTTP_X_ROOTCAUSE_FILENAME=name).filename

    assert "falconer" not in masked
    assert masked.endswith("-ranking-train.log")
    assert maskers.call_count == 2


def test_a_remembered_name_is_stored_as_masking_it_anew_would_store_it(acme_api):
    headers = {
        "HTTP_X_ROOTCAUSE_FILENAME": "C:\\runs\\bidi\u202etxt.log",
        "HTTP_X_ROOTCAUSE_COMMIT": "abc123",
    }
    first = _submit(acme_api, **headers)
    submission._clean_names.clear()

    second, third = _submit(acme_api, **headers), _submit(acme_api, **headers)

    assert first.filename == second.filename == third.filename
    assert first.commit == second.commit == third.commit == "abc123"


def test_a_valid_set_of_metadata_is_validated_once(acme_api):
    headers = {"HTTP_X_ROOTCAUSE_FILENAME": "validated-once.log", "HTTP_X_ROOTCAUSE_LABELS": "a,b"}
    validate = SubmissionMetadataSerializer.is_valid
    with mock.patch.object(
        SubmissionMetadataSerializer, "is_valid", autospec=True, side_effect=validate
    ) as validated:
        first, second = _submit(acme_api, **headers), _submit(acme_api, **headers)

    assert validated.call_count == 1
    for stored in (first, second):
        assert (stored.filename, stored.labels) == ("validated-once.log", ["a", "b"])


def test_invalid_metadata_is_refused_every_time(acme_api):
    for _ in range(2):
        response = acme_api.post(
            URL,
            data=OOM_LOG.encode(),
            content_type="text/plain",
            HTTP_X_ROOTCAUSE_RUN_URL="javascript:alert(1)",
        )
        assert response.status_code == 400, response.content
        assert "run_url" in response.content.decode()
    assert not Diagnosis.objects.exists()
