"""Moving the alerts' and the follow-up questions' models out of diagnosis keeps their rows: from
main's schema (diagnosis/0010, before alerts and questions had apps) with rows in every moved
table, migrating to today's finds the same rows through the new models. The move is state only,
so going back and forth touches no table (on SQLite and on PostgreSQL alike)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from alerts.models import DeliveryAttempt, Webhook, WebhookDelivery
from diagnosis.models import Diagnosis
from questions.models import DiagnosisQuestion

# The schema on main before the move.
BEFORE = [
    ("diagnosis", "0010_fewer_indexes_on_diagnosis"),
    ("alerts", None),
    ("questions", None),
]


def _migrate(targets: list[tuple[str, str | None]] | None = None) -> Any:
    """Migrates to `targets` (None: the latest) and returns the apps of that state."""
    executor = MigrationExecutor(connection)
    state = executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return state.apps


@pytest.mark.django_db(transaction=True)
def test_the_rows_of_the_moved_models_are_kept(acme: Any, alice: Any) -> None:
    diagnosis = Diagnosis.objects.create(organization=acme, source="api", size_bytes=1)
    try:
        old = _migrate(BEFORE)
        webhook = old.get_model("diagnosis", "Webhook").objects.create(
            organization_id=acme.pk,
            channel="email",
            secret="",
            failure_slug="nccl-timeout",
            min_confidence=0.5,
        )
        webhook.recipients.add(alice.pk)
        delivery = old.get_model("diagnosis", "WebhookDelivery").objects.create(
            organization_id=acme.pk,
            webhook_id=webhook.pk,
            diagnosis_id=diagnosis.pk,
            event_type="diagnosis.done",
            payload={"type": "diagnosis.done"},
        )
        attempt = old.get_model("diagnosis", "DeliveryAttempt").objects.create(
            organization_id=acme.pk, delivery_id=delivery.pk, status_code=503
        )
        question = old.get_model("diagnosis", "DiagnosisQuestion").objects.create(
            organization_id=acme.pk, diagnosis_id=diagnosis.pk, question="why?", answer="…"
        )
        old_type = ContentType.objects.filter(app_label="diagnosis", model="webhook").first()
    finally:
        _migrate()

    kept = Webhook.objects.get(pk=webhook.pk)
    assert (kept.organization_id, kept.channel, kept.failure_slug, kept.min_confidence) == (
        acme.pk,
        "email",
        "nccl-timeout",
        0.5,
    )
    assert list(kept.recipients.all()) == [alice]
    assert list(WebhookDelivery.objects.filter(webhook=kept).values_list("pk", flat=True)) == [
        delivery.pk
    ]
    assert DeliveryAttempt.objects.get(pk=attempt.pk).status_code == 503
    assert list(diagnosis.questions.values_list("pk", "question")) == [(question.pk, "why?")]
    assert DiagnosisQuestion.objects.get(pk=question.pk).organization_id == acme.pk
    # The content type (and any permission on it) followed the model.
    if old_type is not None:
        ContentType.objects.clear_cache()
        assert ContentType.objects.get_for_model(Webhook).pk == old_type.pk
