"""Pages: sign-up, e-mail verification, invitations, the organisation switcher and /settings/.

Sign-in, sign-out and password reset are Django's views with our templates (accounts/urls.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordResetForm, SetPasswordForm
from django.contrib.auth.models import User
from django.contrib.auth.views import (
    PasswordChangeView,
    PasswordResetConfirmView,
    PasswordResetView,
)
from django.contrib.messages.views import SuccessMessageMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import selectors, services
from accounts.actors import SESSION_ORGANIZATION, Actor, actor_of
from accounts.forms import (
    DomainForm,
    InvitationForm,
    MaskingRuleForm,
    OrganizationForm,
    RoleForm,
    SignupForm,
    SwitchOrganizationForm,
    TokenForm,
)
from accounts.models import Membership
from accounts.selectors import Forbidden
from plumbing.links import site_url
from plumbing.problems import ApplicationError

SETTINGS = "accounts:settings"


def _next_url(request: HttpRequest, default: str = "/") -> str:
    """The `next` page to go back to, if it is one of ours."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # behind login_required
    return request.user


# --- Sign-up and e-mail verification ----------------------------------------------------------


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect(_next_url(request))
    form = SignupForm(request.POST or None, initial={"email": request.GET.get("email", "")})
    if request.method == "POST" and form.is_valid():
        try:
            user = services.sign_up(
                email=form.cleaned_data["email"], password=form.cleaned_data["password1"]
            )
        except ApplicationError as exc:
            form.add_error("email", exc.detail)
        else:
            login(request, user, backend="accounts.backends.EmailBackend")
            messages.success(
                request,
                f"Welcome! We sent a link to {user.email}: follow it to verify your address.",
            )
            return redirect(_next_url(request))
    return render(request, "accounts/signup.html", {"form": form, "next": _next_url(request, "")})


@require_GET
def verify_email(request: HttpRequest, token: str) -> HttpResponse:
    # A GET, as links in e-mails are: following it again, or a mail scanner following it
    # first, verifies the same address for the same person and nothing else.
    try:
        user = services.verify_email(token=token)
    except ApplicationError as exc:
        return render(request, "accounts/verify_email.html", {"error": exc.detail}, status=400)
    return render(request, "accounts/verify_email.html", {"verified_email": user.email})


@login_required
@require_POST
def resend_verification(request: HttpRequest) -> HttpResponse:
    try:
        services.resend_verification_email(user=_user(request))
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"We sent a new link to {_user(request).email}.")
    return redirect(_next_url(request, "/settings/"))


class ResetPasswordView(PasswordResetView):
    """Django's view; the link is built on SITE_URL, never on the request's Host header."""

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        self.extra_email_context = {"site_url": site_url()}
        return super().form_valid(form)


class ResetPasswordConfirmView(PasswordResetConfirmView):
    """Django's view; the link came to the person's address, so the address is verified too."""

    def form_valid(self, form: SetPasswordForm[User]) -> HttpResponse:
        response = super().form_valid(form)
        services.mark_email_verified(user=form.user)
        return response


class ChangePasswordView(SuccessMessageMixin, PasswordChangeView):
    success_message = "Your password is changed."


# --- Invitations and the switcher -------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def accept_invitation(request: HttpRequest) -> HttpResponse:
    # The signed token travels in the query string (and the form), which request logs omit.
    token = request.POST.get("token") or request.GET.get("token") or ""
    try:
        invitation = selectors.invitation_from_token(token)
    except ApplicationError as exc:
        return render(request, "accounts/invitation.html", {"error": exc.detail}, status=400)
    context: dict[str, object] = {"invitation": invitation, "token": token}
    if request.method == "POST" and request.user.is_authenticated:
        try:
            membership = services.accept_invitation(user=_user(request), token=token)
        except ApplicationError as exc:
            context["error"] = exc.detail
        else:
            request.session[SESSION_ORGANIZATION] = str(membership.organization_id)
            messages.success(request, f"You joined {membership.organization.name}.")
            return redirect(SETTINGS)
    return render(request, "accounts/invitation.html", context)


@login_required
@require_POST
def switch_organization(request: HttpRequest) -> HttpResponse:
    form = SwitchOrganizationForm(request.POST)
    if (
        form.is_valid()
        and selectors.memberships_of(_user(request))
        .filter(organization_id=form.cleaned_data["organization"])
        .exists()
    ):
        request.session[SESSION_ORGANIZATION] = str(form.cleaned_data["organization"])
    else:
        messages.error(request, "You are not a member of that organisation.")
    return redirect(_next_url(request))


# --- /settings/ -------------------------------------------------------------------------------


def _settings_context(
    request: HttpRequest, actor: Actor, *, forms: dict[str, object] | None = None, **extra: object
) -> dict[str, object]:
    user = _user(request)
    context: dict[str, object] = {
        "actor": actor,
        "organization": actor.organization,
        "email_verified": selectors.has_verified_email(user),
        "forms": {
            **{
                "organization": OrganizationForm(
                    initial={"name": actor.organization.name if actor.organization else ""}
                ),
                "invitation": InvitationForm(),
                "domain": DomainForm(),
                "masking_rule": MaskingRuleForm(),
                "token": TokenForm(),
            },
            **(forms or {}),
        },
        "role_choices": Membership.Role.choices,
    }
    if actor.organization is not None:
        members = list(selectors.members_for(actor))
        context["members"] = members
        context["owner_count"] = sum(m.role == "owner" for m in members)
        context["masking_rules"] = list(selectors.masking_rules_for(actor))
    if actor.manages_organization:
        now = timezone.now()
        verified = selectors.verified_manager_domains(selectors.require_manager(actor))
        context["invitations"] = list(selectors.invitations_for(actor))
        domains = [
            (domain, selectors.is_verified_domain(domain.domain, verified))
            for domain in selectors.domains_for(actor)
        ]
        context["domains"] = domains
        context["workplace_domain"] = next((d.domain for d, ok in domains if ok), None)
        context["tokens"] = list(selectors.tokens_for(actor))
        context["now"] = now
    context.update(extra)
    return context


@login_required
@require_GET
def settings_page(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    return render(request, "accounts/settings.html", _settings_context(request, actor))


def _act(request: HttpRequest, action: Callable[[Actor], str]) -> HttpResponse:
    """Run one settings action for the actor, flash its outcome, go back to /settings/.

    A refusal for want of a role is a 403, as in the API; other domain errors are flashed.
    """
    try:
        done = action(actor_of(request))
    except Forbidden:
        raise
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, done)
    return redirect(SETTINGS)


def _invalid(request: HttpRequest, form: forms.BaseForm) -> HttpResponse:
    for errors in form.errors.get_json_data().values():
        for error in errors:
            messages.error(request, error["message"])
    return redirect(SETTINGS)


@login_required
@require_POST
def rename_organization(request: HttpRequest) -> HttpResponse:
    form = OrganizationForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)

    def rename(actor: Actor) -> str:
        organization = services.rename_organization(actor=actor, name=form.cleaned_data["name"])
        return f"The organisation is now called {organization.name}."

    return _act(request, rename)


@login_required
@require_POST
def invite(request: HttpRequest) -> HttpResponse:
    form = InvitationForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)

    def send(actor: Actor) -> str:
        invitation = services.invite_member(actor=actor, **form.cleaned_data)
        return f"We sent an invitation to {invitation.email}."

    return _act(request, send)


@login_required
@require_POST
def revoke_invitation(request: HttpRequest, invitation_id: uuid.UUID) -> HttpResponse:
    def revoke(actor: Actor) -> str:
        invitation = selectors.get_invitation_for(actor, invitation_id)
        services.revoke_invitation(actor=actor, invitation=invitation)
        return f"The invitation to {invitation.email} is withdrawn."

    return _act(request, revoke)


@login_required
@require_POST
def change_role(request: HttpRequest, member_id: uuid.UUID) -> HttpResponse:
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)

    def change(actor: Actor) -> str:
        membership = selectors.get_member_for(actor, member_id)
        services.change_role(actor=actor, membership=membership, role=form.cleaned_data["role"])
        return f"{membership.user.email} is now {membership.role}."

    return _act(request, change)


@login_required
@require_POST
def transfer_ownership(request: HttpRequest, member_id: uuid.UUID) -> HttpResponse:
    def transfer(actor: Actor) -> str:
        membership = selectors.get_member_for(actor, member_id)
        services.transfer_ownership(actor=actor, membership=membership)
        return f"{membership.user.email} owns the organisation now; you are an admin."

    return _act(request, transfer)


@login_required
@require_POST
def remove_member(request: HttpRequest, member_id: uuid.UUID) -> HttpResponse:
    def remove(actor: Actor) -> str:
        membership = selectors.get_member_for(actor, member_id)
        services.remove_member(actor=actor, membership=membership)
        return f"{membership.user.email} is no longer a member."

    return _act(request, remove)


@login_required
@require_POST
def leave_organization(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    try:
        services.leave_organization(actor=actor)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect(SETTINGS)
    request.session.pop(SESSION_ORGANIZATION, None)
    name = actor.organization.name if actor.organization else "the organisation"
    messages.success(request, f"You left {name}.")
    return redirect(SETTINGS)


@login_required
@require_POST
def claim_domain(request: HttpRequest) -> HttpResponse:
    form = DomainForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)

    def claim(actor: Actor) -> str:
        domain = services.claim_domain(actor=actor, domain=form.cleaned_data["domain"])
        return (
            f"{domain.domain} is claimed. It is verified once an owner or admin has a verified "
            f"address at {domain.domain}."
        )

    return _act(request, claim)


@login_required
@require_POST
def remove_domain(request: HttpRequest, domain_id: uuid.UUID) -> HttpResponse:
    def remove(actor: Actor) -> str:
        domain = selectors.get_domain_for(actor, domain_id)
        services.remove_domain(actor=actor, domain=domain)
        return f"{domain.domain} is no longer claimed."

    return _act(request, remove)


@login_required
@require_POST
def add_masking_rule(request: HttpRequest) -> HttpResponse:
    form = MaskingRuleForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)

    def add(actor: Actor) -> str:
        rule = services.add_masking_rule(actor=actor, **form.cleaned_data)
        return f"The {rule.kind} {rule.value} is masked as {rule.label} from now on."

    return _act(request, add)


@login_required
@require_POST
def delete_masking_rule(request: HttpRequest, rule_id: uuid.UUID) -> HttpResponse:
    def delete(actor: Actor) -> str:
        rule = selectors.get_masking_rule_for(actor, rule_id)
        services.delete_masking_rule(actor=actor, rule=rule)
        return f"The {rule.kind} {rule.value} is no longer masked."

    return _act(request, delete)


@login_required
@require_POST
def create_token(request: HttpRequest) -> HttpResponse:
    """The secret is shown in this response only: never redirected through the session."""
    actor = actor_of(request)
    form = TokenForm(request.POST)
    if not form.is_valid():
        context = _settings_context(request, actor, forms={"token": form})
        return render(request, "accounts/settings.html", context, status=400)
    days = form.cleaned_data["expires_in_days"]
    try:
        token, secret = services.issue_api_token(
            actor=actor,
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=timezone.now() + timedelta(days=days) if days else None,
        )
    except Forbidden:
        raise
    except ApplicationError as exc:
        form.add_error(None, exc.detail)
        context = _settings_context(request, actor, forms={"token": form})
        return render(request, "accounts/settings.html", context, status=400)
    context = _settings_context(request, actor, new_token=token, new_secret=secret)
    response = render(request, "accounts/settings.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_token(request: HttpRequest, token_id: uuid.UUID) -> HttpResponse:
    def revoke(actor: Actor) -> str:
        token = selectors.get_token_for(actor, token_id)
        services.revoke_api_token(actor=actor, token=token)
        return f"The token {token.name} is revoked."

    return _act(request, revoke)
