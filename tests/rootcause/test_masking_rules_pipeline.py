"""An organisation's masking rules through the service: added with the API, run by a real
pipeline (eager Celery), for that organisation's diagnoses only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from diagnosis.models import Diagnosis
from encyclopedia.services import load_catalogue
from tests.catalogue import make_entry
from tests.diagnosis.logs import OOM_LOG
from tests.redis_namespace import delete_run_keys

pytestmark = pytest.mark.django_db

DIAGNOSES = "/api/v1/diagnoses"
RULES = "/api/v1/organization/masking-rules"
# A code name in the line the evidence quotes, and a ticket number beside it.
LOG = OOM_LOG.replace(
    "torch.OutOfMemoryError: CUDA out of memory.",
    "torch.OutOfMemoryError: CUDA out of memory. [Bluebird-7 OPS-20417 ckpt_bluebird_v2]",
)


@pytest.fixture(autouse=True)
def _one_entry_catalogue(db: Any) -> Iterator[None]:
    load_catalogue(
        entries=[
            make_entry(
                "optimizer-state-oom",
                fingerprints={
                    "signals": [
                        {"id": "oom", "pattern": r"CUDA out of memory", "weight": 0.9},
                        {
                            "id": "step",
                            "pattern": r"optimizer\.step\(\)",
                            "weight": 0.2,
                            "kind": "support",
                        },
                    ]
                },
            )
        ]
    )
    yield
    delete_run_keys()


def _diagnose(client: APIClient, capture: Any) -> tuple[str, dict[str, Any]]:
    with capture(execute=True):
        response = client.post(DIAGNOSES, data=LOG.encode(), content_type="text/plain")
    assert response.status_code == 202, response.content
    result = client.get(response["Location"]).json()
    assert result["status"] == "done"
    return response.json()["id"], result


def _stored(diagnosis_id: str) -> str:
    """Every column of the stored row, as text: the evidence, the root cause, the counts…"""
    return str(Diagnosis.objects.filter(id=diagnosis_id).values().get())


def test_a_rule_added_with_the_api_changes_what_the_pipeline_stores(
    acme, alice, acme_api, umbrella_api, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    before_id, before = _diagnose(acme_api, capture)
    assert "Bluebird-7" in str(before["evidence"])

    owner = APIClient()
    owner.force_login(alice)
    for body in (
        {"kind": "term", "value": "bluebird", "label": "project codename"},
        {"kind": "pattern", "value": r"\bOPS-\d{4,6}\b", "label": "ticket"},
    ):
        assert owner.post(RULES, body, format="json").status_code == 201

    after_id, after = _diagnose(acme_api, capture)

    assert "<PROJECT_CODENAME_1>-7 <TICKET_1> ckpt_<PROJECT_CODENAME_1>_v2" in str(
        after["evidence"]
    )
    assert after["masking"]["PROJECT_CODENAME"] == 2
    assert after["masking"]["TICKET"] == 1
    stored = _stored(after_id)
    for value in ("bluebird", "Bluebird", "OPS-20417"):
        assert value not in str(after)
        assert value not in stored
    assert "'PROJECT_CODENAME': 2" in stored  # masking_counts

    # Another organisation's diagnosis of the same log is untouched by Acme's rules.
    other_id, other = _diagnose(umbrella_api, capture)
    assert "Bluebird-7 OPS-20417" in str(other["evidence"])
    assert "PROJECT_CODENAME" not in other["masking"]
    assert "PROJECT_CODENAME" not in _stored(other_id)
    # And Acme's earlier diagnosis stays as it was stored.
    assert "Bluebird-7" in _stored(before_id)


def test_a_visitors_diagnosis_has_no_organisation_rules(
    acme, alice, django_capture_on_commit_callbacks
):
    owner = APIClient()
    owner.force_login(alice)
    assert (
        owner.post(RULES, {"kind": "term", "value": "bluebird"}, format="json").status_code == 201
    )

    visitor = APIClient()
    with django_capture_on_commit_callbacks(execute=True):
        response = visitor.post(DIAGNOSES, data=LOG.encode(), content_type="text/plain")
    assert response.status_code == 202, response.content
    result = visitor.get(response["Location"]).json()

    assert result["status"] == "done"
    assert "ORG_TERM" not in result["masking"]
