"""Staff tools: approve or decline evaluation requests, issue codes, look at evaluations and quotas.

Codes are never added through a plain add form (it would store an unusable digest); they are
issued by the "Issue codes" page, which shows them once.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone

from billing_tiers import services
from billing_tiers.models import (
    Evaluation,
    EvaluationCode,
    EvaluationRequest,
    QuotaCharge,
    QuotaUsage,
)
from billing_tiers.tiers import evaluation_tier
from plumbing.problems import ApplicationError


class IssueCodesForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=services.MAX_CODES_PER_BATCH, initial=1)
    days = forms.IntegerField(min_value=1, max_value=365)
    daily_limit = forms.IntegerField(min_value=1, label="Diagnoses a day")
    redeem_by = forms.DateField(help_text="Last UTC day to redeem (YYYY-MM-DD).")
    note = forms.CharField(max_length=200, required=False, help_text="For staff: who it is for.")


class DeclineForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 70}),
        help_text="The requester reads this in an e-mail and on the evaluation page.",
    )


@admin.register(EvaluationCode)
class EvaluationCodeAdmin(admin.ModelAdmin):
    change_list_template = "admin/billing_tiers/evaluationcode/change_list.html"
    list_display = ("id", "days", "daily_limit", "redeem_by", "note", "created_at", "redeemed_at")
    list_filter = (("redeemed_at", admin.EmptyFieldListFilter),)
    readonly_fields = (
        "id",
        "days",
        "daily_limit",
        "redeem_by",
        "note",
        "created_at",
        "created_by",
        "redeemed_at",
        "redeemed_by",
    )
    exclude = ("digest",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        issue = path(
            "issue/",
            self.admin_site.admin_view(self.issue_view),
            name="billing_tiers_evaluationcode_issue",
        )
        return [issue, *super().get_urls()]

    def issue_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm("billing_tiers.add_evaluationcode"):
            raise PermissionDenied
        issued: list[services.IssuedCode] = []
        today = timezone.now().date()
        form = IssueCodesForm(
            request.POST or None,
            initial={
                "count": 1,
                "days": settings.EVALUATION_DAYS,
                "daily_limit": evaluation_tier().daily_diagnoses,
                "redeem_by": today + timedelta(days=settings.EVALUATION_CODE_VALID_DAYS),
            },
        )
        if request.method == "POST" and form.is_valid():
            try:
                issued = services.issue_evaluation_codes(
                    count=form.cleaned_data["count"],
                    days=form.cleaned_data["days"],
                    daily_limit=form.cleaned_data["daily_limit"],
                    redeem_by=form.cleaned_data["redeem_by"],
                    note=form.cleaned_data["note"],
                    created_by=request.user,  # type: ignore[arg-type]
                )
            except ApplicationError as exc:
                form.add_error(None, exc.detail)
        # admin_view marks the page never_cache: the codes on it are not kept by any cache.
        return TemplateResponse(
            request,
            "admin/billing_tiers/evaluationcode/issue.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": "Issue evaluation codes",
                "form": form,
                "codes": [item.code for item in issued],
            },
        )


@admin.register(EvaluationRequest)
class EvaluationRequestAdmin(admin.ModelAdmin):
    list_display = ("organization", "status", "team_size", "requested_by", "created_at")
    list_filter = ("status",)
    search_fields = ("organization__name", "training")
    list_select_related = ("organization", "requested_by")
    readonly_fields = (
        "id",
        "organization",
        "requested_by",
        "training",
        "team_size",
        "status",
        "decline_reason",
        "code",
        "created_at",
        "decided_at",
        "decided_by",
    )
    actions = ["approve_requests", "decline_requests"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Approve: issue a code and e-mail it to the requester")
    def approve_requests(self, request: HttpRequest, queryset: QuerySet[EvaluationRequest]) -> None:
        approved = 0
        for item in queryset:
            try:
                services.approve_evaluation_request(
                    request_id=item.id,
                    decided_by=request.user,  # type: ignore[arg-type]
                )
            except ApplicationError as exc:
                self.message_user(request, f"{item.organization}: {exc.detail}", messages.WARNING)
            else:
                approved += 1
        if approved:
            self.message_user(request, f"Approved {approved}; the codes were e-mailed.")

    @admin.action(description="Decline with a reason")
    def decline_requests(
        self, request: HttpRequest, queryset: QuerySet[EvaluationRequest]
    ) -> TemplateResponse | None:
        form = DeclineForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            declined = 0
            for item in queryset:
                try:
                    services.decline_evaluation_request(
                        request_id=item.id,
                        decided_by=request.user,  # type: ignore[arg-type]
                        reason=form.cleaned_data["reason"],
                    )
                except ApplicationError as exc:
                    self.message_user(
                        request, f"{item.organization}: {exc.detail}", messages.WARNING
                    )
                else:
                    declined += 1
            if declined:
                self.message_user(request, f"Declined {declined}; the requesters were told why.")
            return None
        context: dict[str, object] = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Decline evaluation requests",
            "form": form,
            "requests": queryset,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(
            request, "admin/billing_tiers/evaluationrequest/decline.html", context
        )


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ("organization", "starts_at", "ends_at", "daily_limit", "ending_notice_sent_at")
    list_select_related = ("organization",)
    search_fields = ("organization__name",)
    # Staff may shorten or lengthen a running evaluation; the tier follows the window.
    readonly_fields = ("id", "organization", "code", "redeemed_by", "starts_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(QuotaUsage)
class QuotaUsageAdmin(admin.ModelAdmin):
    list_display = ("subject", "day", "used")
    search_fields = ("subject",)
    list_filter = ("day",)
    readonly_fields = ("subject", "day", "used")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(QuotaCharge)
class QuotaChargeAdmin(admin.ModelAdmin):
    list_display = ("subject", "day", "tier", "reference", "created_at", "refunded_at")
    search_fields = ("subject", "reference")
    readonly_fields = (
        "subject",
        "day",
        "tier",
        "reference",
        "idempotency_key",
        "created_at",
        "refunded_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
