"""The follow-up questions' table. It was created by the diagnosis app and keeps its name
(`db_table`): moving the model here moved no row (migrations questions/0001, diagnosis/0011)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Organization
from diagnosis.models import Diagnosis


class DiagnosisQuestion(models.Model):
    """A follow-up question on a diagnosis and the answer retrieved for it (its thread)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="questions")
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    question = models.CharField(max_length=1000)
    answer = models.TextField()
    # The sections quoted: [{"slug", "section", "title", "link", "score"}], best first.
    citations: models.JSONField[list[dict[str, str | float]]] = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "diagnosis_diagnosisquestion"
        indexes = [
            # The thread of one diagnosis, oldest first.
            models.Index(fields=["diagnosis", "created_at"], name="diagnosis_question_thread"),
        ]

    def __str__(self) -> str:
        return self.question[:60]
