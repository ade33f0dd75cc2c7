"""Staff review verdicts here: the queue of pending ones, the evidence beside each, and actions
to accept or reject them (accepted ones are what `export_feedback --accepted-only` writes)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join

from diagnosis.selectors import stored_result
from feedback.models import Feedback
from feedback.services import review_feedback


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "verdict",
        "diagnosed_slug",
        "correct_slug",
        "review",
        "organization",
    )
    list_filter = ("review", "verdict", "diagnosed_slug")
    search_fields = ("diagnosed_slug", "correct_slug", "note", "diagnosis__id")
    ordering = ("review", "-created_at")
    readonly_fields = (
        "diagnosis",
        "organization",
        "given_by",
        "verdict",
        "diagnosed_slug",
        "correct_slug",
        "note",
        "evidence",
        "reviewed_by",
        "reviewed_at",
        "created_at",
        "updated_at",
    )
    fields = (*readonly_fields[:8], "review", *readonly_fields[8:])
    actions = ("accept", "reject")

    @admin.display(description="masked evidence")
    def evidence(self, feedback: Feedback) -> str:
        result = stored_result(feedback.diagnosis)
        if result is None:
            return "—"
        return format_html_join(
            "\n", "<code>{}: {}</code><br>", ((e.line, e.text) for e in result.evidence)
        )

    @admin.action(description="Accept: a right label for the corpus")
    def accept(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> None:
        count = review_feedback(feedback=list(queryset), reviewer=request.user, accepted=True)
        self.message_user(request, f"{count} accepted.", messages.SUCCESS)

    @admin.action(description="Reject: neither exported nor counted")
    def reject(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> None:
        count = review_feedback(feedback=list(queryset), reviewer=request.user, accepted=False)
        self.message_user(request, f"{count} rejected.", messages.SUCCESS)
