from __future__ import annotations

from django import forms


class QuestionForm(forms.Form):
    question = forms.CharField(
        label="Ask a follow-up question", max_length=1000, widget=forms.TextInput
    )
