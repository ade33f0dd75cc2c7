"""The history page's failure classes (moved from tests/diagnosis/test_alert_pages.py)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from diagnosis.models import Diagnosis
from tests.pages import signed_in

pytestmark = pytest.mark.django_db


# --- The history page's failure classes ---------------------------------------------------------


def _done(organization: Any, slug: str, days_ago: float) -> Diagnosis:
    row = Diagnosis.objects.create(
        organization=organization,
        source="api",
        size_bytes=1,
        status="done",
        outcome="diagnosed",
        failure_slug=slug,
    )
    Diagnosis.objects.filter(id=row.id).update(created_at=timezone.now() - timedelta(days=days_ago))
    return row


def test_the_history_page_shows_each_classs_recurrence_of_this_organisation_only(
    acme, umbrella, alice
):
    for days in (0.1, 2, 20):
        _done(acme, "optimizer-state-oom", days)
    _done(acme, "nccl-timeout", 40)
    for _ in range(3):
        _done(umbrella, "optimizer-state-oom", 1)

    text = signed_in(alice).get("/diagnoses/").content.decode()

    rows = dict(re.findall(r'<tr data-class="([a-z-]+)">(.*?)</tr>', text, flags=re.S))
    assert set(rows) == {"optimizer-state-oom", "nccl-timeout"}
    counts = re.findall(r'<td class="num">(\d+)</td>', rows["optimizer-state-oom"])
    assert counts == ["2", "3"]  # 7 and 30 days: Umbrella's three are not counted
    assert re.findall(r'<td class="num">(\d+)</td>', rows["nccl-timeout"]) == ["0", "0"]
