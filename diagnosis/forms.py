from __future__ import annotations

from django import forms


class DiagnoseForm(forms.Form):
    log_text = forms.CharField(
        label="Paste the log",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
    )
    log_file = forms.FileField(label="or upload a file (.log, .txt, .gz)", required=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("log_text") and not data.get("log_file"):
            raise forms.ValidationError("Paste a log or choose a file.")
        if data.get("log_text") and data.get("log_file"):
            raise forms.ValidationError("Paste a log or choose a file, not both.")
        return data
