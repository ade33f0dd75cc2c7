from __future__ import annotations

from django import forms

from feedback.models import Feedback
from feedback.services import NO_FAILURE, NOTE_MAX_CHARS


class FeedbackForm(forms.Form):
    verdict = forms.ChoiceField(
        label="Was this right?",
        choices=[
            (Feedback.Verdict.RIGHT, "Right"),
            (Feedback.Verdict.WRONG, "Wrong"),
        ],
        widget=forms.RadioSelect,
    )
    correct_class = forms.ChoiceField(label="The right class is", required=False)
    note = forms.CharField(
        label="Note (optional)",
        required=False,
        max_length=NOTE_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def __init__(self, *args: object, classes: list[tuple[str, str]], **kwargs: object) -> None:
        kwargs.setdefault("auto_id", "feedback-%s")
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        field = self.fields["correct_class"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            ("", "— I don't know —"),
            *classes,
            (NO_FAILURE, "None: the run did not fail"),
        ]
