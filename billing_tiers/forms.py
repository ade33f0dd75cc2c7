from __future__ import annotations

from django import forms


class EvaluationRequestForm(forms.Form):
    training = forms.CharField(
        label="What do you train?",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Models, scale (GPUs, nodes), frameworks.",
    )
    team_size = forms.IntegerField(label="Team size", min_value=1, max_value=1_000_000)


class RedeemForm(forms.Form):
    code = forms.CharField(
        label="Evaluation code",
        max_length=64,
        widget=forms.TextInput(
            attrs={"placeholder": "SCALE-XXXX-XXXX-XXXX", "autocomplete": "off", "size": 24}
        ),
    )
