"""History pages by cursor: stable while new diagnoses arrive, and no COUNT over a long history."""

from __future__ import annotations

from plumbing.pagination import CursorPagination


class HistoryPagination(CursorPagination):
    ordering = "-created_at"  # served by the index diagnosis_org_history
    page_size = 50
