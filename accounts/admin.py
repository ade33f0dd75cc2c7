from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts import services
from accounts.models import (
    ApiToken,
    Domain,
    Invitation,
    MaskingRule,
    Membership,
    Organization,
    VerifiedEmail,
)
from plumbing.problems import ApplicationError


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    raw_id_fields = ("user",)


class DomainInline(admin.TabularInline):
    model = Domain
    extra = 0
    fields = ("domain", "created_by", "created_at")
    readonly_fields = ("domain", "created_by", "created_at")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # claims go through the service, which refuses public mail providers


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name", "domains__domain")
    inlines = [MembershipInline, DomainInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """List and revoke. Minting is for owners and admins on /settings/ or the API: a token made
    here would have no secret to show (only its digest is stored)."""

    list_display = (
        "name",
        "organization",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix", "organization__name")
    readonly_fields = (
        "organization",
        "created_by",
        "name",
        "scopes",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    exclude = ("digest",)
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = services.revoke_api_tokens(tokens=queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("email", "organization", "role", "status", "created_at", "expires_at")
    list_filter = ("status",)
    search_fields = ("email", "organization__name")
    readonly_fields = [field.name for field in Invitation._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # an invitation made here would send no e-mail


@admin.register(VerifiedEmail)
class VerifiedEmailAdmin(admin.ModelAdmin):
    list_display = ("email", "user", "verified_at")
    search_fields = ("email",)
    raw_id_fields = ("user",)


class MaskingRuleForm(forms.ModelForm):
    """Checked by the service's rule (accounts.services.check_masking_rule), as the API is."""

    label = forms.CharField(
        required=False, max_length=40, help_text="ORG_TERM or ORG_PATTERN if empty."
    )

    class Meta:
        model = MaskingRule
        fields = ("organization", "kind", "value", "label")

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        organization = data.get("organization")
        if organization is not None and data.get("kind") and data.get("value"):
            try:
                rule = services.check_masking_rule(
                    organization=organization,
                    kind=data["kind"],
                    value=data["value"],
                    label=data.get("label") or "",
                )
            except ApplicationError as exc:
                raise forms.ValidationError(exc.detail) from None
            data["value"], data["label"] = rule.value, rule.label
        return data


@admin.register(MaskingRule)
class MaskingRuleAdmin(admin.ModelAdmin):
    """Add and delete; a rule is not edited in place (delete it and add the new one)."""

    form = MaskingRuleForm
    list_display = ("value", "kind", "label", "organization", "created_at")
    list_filter = ("kind",)
    search_fields = ("value", "label", "organization__name")
    raw_id_fields = ("organization",)

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> tuple[str, ...]:
        if obj is None:
            return ("created_by", "created_at")
        return ("organization", "kind", "value", "label", "created_by", "created_at")

    # As ModelAdmin declares them: its form and request.user are not typed per model.
    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
