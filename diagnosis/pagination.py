"""History pages by cursor: stable while new diagnoses arrive, and no COUNT over a long history."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination


class HistoryPagination(CursorPagination):
    ordering = "-created_at"  # served by the index diagnosis_org_history
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 100
