from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from encyclopedia import services
from encyclopedia.models import CatalogueVersion, Entry
from plumbing.problems import ApplicationError
from rootcause.jsonvalue import JSONObject


class EntryForm(forms.ModelForm):
    class Meta:
        model = Entry
        fields = ["data"]
        widgets = {"data": forms.Textarea(attrs={"rows": 40, "cols": 120})}

    def clean_data(self) -> JSONObject:
        try:
            return services.clean_entry_data(entry=self.instance, data=self.cleaned_data["data"])
        except ApplicationError as exc:
            raise forms.ValidationError(exc.detail) from None


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):
    """Edit an entry's JSON; saving goes through services.update_entry (validation, version)."""

    form = EntryForm
    list_display = ["slug", "title", "category", "severity", "updated_at"]
    list_filter = ["category", "severity"]
    search_fields = ["slug", "title"]
    readonly_fields = ["slug", "title", "category", "severity", "tags", "updated_at"]
    fields = ["slug", "title", "category", "severity", "tags", "updated_at", "data"]

    # Entries come from the catalogue files (load_catalogue adds and removes them); the admin only
    # corrects existing ones, and the next load from the files overwrites such corrections.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Entry | None = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: Entry, form: forms.ModelForm[Entry], change: bool
    ) -> None:
        services.update_entry(entry=obj, data=form.cleaned_data["data"])


@admin.register(CatalogueVersion)
class CatalogueVersionAdmin(admin.ModelAdmin):
    list_display = ["version", "created_at", "entry_count", "reason"]
    readonly_fields = ["version", "created_at", "entry_count", "reason"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: CatalogueVersion | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: CatalogueVersion | None = None
    ) -> bool:
        return False
