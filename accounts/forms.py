from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm, UsernameField
from django.contrib.auth.models import User

from accounts import selectors
from accounts.actors import SCOPE_CHOICES
from accounts.models import MaskingRule, Membership


class PrefixedIds(forms.Form):
    """A form whose element ids start with its own `id_prefix`, so that two forms of one page
    with a field of the same name (a name, an e-mail) give their labels distinct targets."""

    id_prefix = ""

    # Django's form arguments, passed on unchanged
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.id_prefix:
            kwargs.setdefault("auto_id", f"{self.id_prefix}-%s")
        super().__init__(*args, **kwargs)


class SignupForm(forms.Form):
    # The e-mail becomes the username, which Django limits to 150 characters.
    email = forms.EmailField(
        label="E-mail", max_length=150, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    password1 = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_email(self) -> str:
        email: str = self.cleaned_data["email"].strip().lower()
        if selectors.user_for_email(email) is not None:
            raise forms.ValidationError(
                "An account with this e-mail address already exists. Sign in, or reset the "
                "password."
            )
        return email

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        password1, password2 = data.get("password1"), data.get("password2")
        if password1 and password2 and password1 != password2:
            self.add_error("password2", "The two passwords differ.")
        elif password2:
            email = data.get("email", "")
            try:
                # With the would-be user, so a password like the address is refused.
                password_validation.validate_password(password2, User(username=email, email=email))
            except forms.ValidationError as error:
                self.add_error("password2", error)
        return data


class LoginForm(AuthenticationForm):
    """Django's form, with the e-mail as the username (accounts/backends.py)."""

    username = UsernameField(
        label="E-mail",
        widget=forms.TextInput(attrs={"autocomplete": "email", "autofocus": True}),
    )
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "The e-mail address or the password is wrong.",
    }


class OrganizationForm(PrefixedIds):
    id_prefix = "organization"
    name = forms.CharField(max_length=200)


class InvitationForm(PrefixedIds):
    id_prefix = "invitation"
    email = forms.EmailField(label="E-mail")
    role = forms.ChoiceField(
        choices=[
            (Membership.Role.MEMBER, "Member"),
            (Membership.Role.ADMIN, "Admin"),
        ]
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class DomainForm(PrefixedIds):
    id_prefix = "domain"
    domain = forms.CharField(max_length=253, help_text="e.g. acme.com")


class MaskingRuleForm(PrefixedIds):
    id_prefix = "masking-rule"
    """Shapes only: what a valid rule is, the service decides (rootcause.masking.rules)."""

    kind = forms.ChoiceField(choices=MaskingRule.Kind.choices, initial=MaskingRule.Kind.TERM)
    value = forms.CharField(label="Term or pattern", strip=False)
    label = forms.CharField(
        required=False, max_length=40, help_text="e.g. PROJECT_CODENAME; ORG_TERM if empty."
    )


class TokenForm(PrefixedIds):
    id_prefix = "token"
    EXPIRY_CHOICES = [
        ("", "Never"),
        ("30", "In 30 days"),
        ("90", "In 90 days"),
        ("365", "In a year"),
    ]

    name = forms.CharField(max_length=100, help_text="Where it is used, e.g. “GitLab CI”.")
    scopes = forms.MultipleChoiceField(
        choices=SCOPE_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        initial=[SCOPE_CHOICES[0][0], SCOPE_CHOICES[1][0]],
    )
    expires_in_days = forms.TypedChoiceField(
        label="Expires",
        choices=EXPIRY_CHOICES,
        coerce=int,
        empty_value=None,
        required=False,
    )


class SwitchOrganizationForm(forms.Form):
    organization = forms.UUIDField()


class ChangeEmailForm(PrefixedIds):
    id_prefix = "change-email"
    email = forms.EmailField(
        label="New e-mail address",
        max_length=150,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    password = forms.CharField(
        label="Your current password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class DeleteAccountForm(PrefixedIds):
    id_prefix = "delete-account"
    password = forms.CharField(
        label="Your password, to confirm",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class DeleteOrganizationForm(forms.Form):
    name = forms.CharField(label="Type the organisation's name to confirm", max_length=200)
