"""/settings/account/: the person's own account (its address, changed through a link to the new
one; deleting it), and /settings/organization/delete/ (the owner deletes the organisation)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import account_changes, selectors
from accounts.actors import SESSION_ORGANIZATION, actor_of
from accounts.forms import ChangeEmailForm, DeleteAccountForm, DeleteOrganizationForm
from accounts.models import Membership
from plumbing.problems import ApplicationError

ACCOUNT = "accounts:account"


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # behind login_required
    return request.user


def _account_context(user: User, **forms: object) -> dict[str, object]:
    end = account_changes.account_end(user)
    return {
        "email_verified": selectors.has_verified_email(user),
        "end": end,
        "deleted_holdings": [
            (organization, account_changes.holdings_of(organization))
            for organization in end.deleted_organizations
        ],
        "email_form": forms.get("email_form") or ChangeEmailForm(),
        "delete_form": forms.get("delete_form") or DeleteAccountForm(),
    }


@login_required
@require_GET
def account_page(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/account.html", _account_context(_user(request)))


@login_required
@require_POST
def change_email(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    form = ChangeEmailForm(request.POST)
    if form.is_valid():
        try:
            email = account_changes.request_email_change(
                user=user,
                new_email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
            )
        except ApplicationError as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(
                request,
                f"We sent a link to {email}: follow it to make it your address. Until then you "
                f"sign in with {user.email}.",
            )
            return redirect(ACCOUNT)
    context = _account_context(user, email_form=form)
    return render(request, "accounts/account.html", context, status=400)


@require_GET
def confirm_email_change(request: HttpRequest, token: str) -> HttpResponse:
    # A GET, as links in e-mails are: only the new address's reader has the link.
    try:
        user = account_changes.confirm_email_change(token=token)
    except ApplicationError as exc:
        return render(
            request, "accounts/verify_email.html", {"error": exc.detail}, status=exc.status_code
        )
    return render(request, "accounts/verify_email.html", {"verified_email": user.email})


@login_required
@require_POST
def delete_account(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    form = DeleteAccountForm(request.POST)
    if form.is_valid():
        try:
            end = account_changes.delete_account(user=user, password=form.cleaned_data["password"])
        except ApplicationError as exc:
            form.add_error(None, exc.detail)
        else:
            logout(request)
            gone = ", ".join(o.name for o in end.deleted_organizations)
            messages.success(
                request,
                "Your account was deleted" + (f", with {gone} and all it held." if gone else "."),
            )
            return redirect("home")
    return render(
        request, "accounts/account.html", _account_context(user, delete_form=form), status=400
    )


@login_required
@require_http_methods(["GET", "POST"])
def delete_organization(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    organization = selectors.require_role(actor, Membership.Role.OWNER)
    form = DeleteOrganizationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            name = account_changes.delete_organization(
                actor=actor, confirm_name=form.cleaned_data["name"]
            )
        except ApplicationError as exc:
            form.add_error("name", exc.detail)
        else:
            request.session.pop(SESSION_ORGANIZATION, None)
            messages.success(request, f"{name} was deleted with everything it held.")
            return redirect("accounts:settings")
    return render(
        request,
        "accounts/delete_organization.html",
        {
            "organization": organization,
            "holdings": account_changes.holdings_of(organization),
            "form": form,
        },
        status=400 if form.errors else 200,
    )
