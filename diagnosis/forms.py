from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile

from diagnosis.pipeline.stage import status_choices
from diagnosis.selectors import MAX_SEARCH_CHARS, HistoryFilters


class _Files(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one name (Django's documented way): a list, empty when none."""

    widget = _Files

    # the widget's value: one file, a list of them, or nothing
    def clean(self, data: object, initial: object = None) -> list[UploadedFile]:
        one = super().clean
        if isinstance(data, (list, tuple)):
            return [one(d, initial) for d in data]
        return [one(data, initial)] if data else []


class DiagnoseForm(forms.Form):
    log_text = forms.CharField(
        label="Paste the log",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
    )
    # One log, or the files of one job's bundle (several files, or one archive).
    log_file = MultipleFileField(label="or upload a file (.log, .txt, .gz)", required=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("log_text") and not data.get("log_file"):
            raise forms.ValidationError("Paste a log or choose a file.")
        if data.get("log_text") and data.get("log_file"):
            raise forms.ValidationError("Paste a log or choose a file, not both.")
        return data


class HistoryFilterForm(forms.Form):
    """The history page's filters, named like the API's query parameters."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=MAX_SEARCH_CHARS,
        widget=forms.SearchInput(attrs={"placeholder": "file, job or root cause"}),
    )
    failure = forms.ChoiceField(label="Failure", required=False)
    # Called when the form is made: the stage table's statuses (diagnosis/pipeline/table.py).
    status = forms.ChoiceField(
        label="Status", required=False, choices=lambda: [("", "any"), *status_choices()]
    )
    created_after = forms.DateField(
        label="On or after", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    created_before = forms.DateField(
        label="Before", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    # Django's form arguments, passed on unchanged
    def __init__(self, *args: Any, failures: Iterable[tuple[str, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["failure"].choices = [("", "any"), *failures]  # type: ignore[attr-defined]

    def filters(self) -> HistoryFilters:
        """The filters of a valid form; dates are UTC days."""
        data = self.cleaned_data

        def start_of(day: date | None) -> datetime | None:
            return None if day is None else datetime.combine(day, time.min, tzinfo=UTC)

        return HistoryFilters(
            failure=data["failure"],
            status=data["status"],
            created_after=start_of(data["created_after"]),
            created_before=start_of(data["created_before"]),
            q=data["q"],
        )
