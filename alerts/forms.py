from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms


class AlertFiltersForm(forms.Form):
    """The filters an alert (webhook or e-mail) shares: empty or zero means any."""

    category = forms.ChoiceField(label="Category", required=False)
    failure_slug = forms.ChoiceField(label="Failure class", required=False)
    min_confidence = forms.FloatField(
        label="Minimum confidence", required=False, min_value=0.0, max_value=1.0, initial=0.0
    )
    first_occurrence_only = forms.BooleanField(
        label="Only the first time a class is seen", required=False
    )

    # The page holds a webhook form and an e-mail alert form with the same filters: each form's
    # element ids start with its own prefix, so that every label points at its own field.
    id_prefix = "alert"

    def __init__(
        self,
        *args: Any,  # Django's form arguments, passed on unchanged
        failures: Iterable[tuple[str, str]] = (),
        categories: Iterable[str] = (),
        **kwargs: Any,  # as above
    ):
        kwargs.setdefault("auto_id", f"{self.id_prefix}-%s")
        super().__init__(*args, **kwargs)
        self.fields["failure_slug"].choices = [("", "any"), *failures]  # type: ignore[attr-defined]
        self.fields["category"].choices = [  # type: ignore[attr-defined]
            ("", "any"),
            *((c, c) for c in categories),
        ]


class WebhookForm(AlertFiltersForm):
    id_prefix = "webhook"
    url = forms.URLField(
        label="Endpoint URL", max_length=500, assume_scheme="https", widget=forms.URLInput
    )
    payload_format = forms.ChoiceField(
        label="Payload",
        choices=[
            ("standard", "Standard Webhooks event (JSON)"),
            ("slack", "Slack-compatible message (text and blocks)"),
        ],
        initial="standard",
    )
    field_order = ["url", "payload_format"]


class EmailAlertForm(AlertFiltersForm):
    id_prefix = "email-alert"
    recipients = forms.MultipleChoiceField(
        label="Members to e-mail", widget=forms.CheckboxSelectMultiple
    )
    field_order = ["recipients"]

    # Django's form arguments, passed on unchanged
    def __init__(self, *args: Any, members: Iterable[tuple[str, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["recipients"].choices = list(members)  # type: ignore[attr-defined]
