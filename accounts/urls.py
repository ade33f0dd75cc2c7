"""Pages of accounts, mounted at the site root: /accounts/… and /settings/…."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import views, views_account
from accounts.forms import LoginForm

app_name = "accounts"

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            template_name="accounts/login.html",
            authentication_form=LoginForm,
            redirect_authenticated_user=True,
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password_reset/",
        views.ResetPasswordView.as_view(
            template_name="accounts/password_reset_form.html",
            email_template_name="accounts/email/password_reset.txt",
            subject_template_name="accounts/email/password_reset_subject.txt",
            success_url=reverse_lazy("accounts:password_reset_done"),
        ),
        name="password_reset",
    ),
    path(
        "accounts/password_reset/done/",
        auth_views.PasswordResetDoneView.as_view(template_name="accounts/password_reset_done.html"),
        name="password_reset_done",
    ),
    path(
        "accounts/reset/<uidb64>/<token>/",
        views.ResetPasswordConfirmView.as_view(
            template_name="accounts/password_reset_confirm.html",
            success_url=reverse_lazy("accounts:password_reset_complete"),
        ),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(
            template_name="accounts/password_reset_complete.html"
        ),
        name="password_reset_complete",
    ),
    path(
        "accounts/password_change/",
        views.ChangePasswordView.as_view(
            template_name="accounts/password_change.html",
            success_url=reverse_lazy("accounts:settings"),
        ),
        name="password_change",
    ),
    path("accounts/verify/", views.resend_verification, name="resend-verification"),
    path("accounts/verify/<str:token>/", views.verify_email, name="verify-email"),
    path("accounts/invitations/accept/", views.accept_invitation, name="accept-invitation"),
    path("accounts/organization/", views.switch_organization, name="switch-organization"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/account/", views_account.account_page, name="account"),
    path("settings/account/email/", views_account.change_email, name="change-email"),
    path("settings/account/delete/", views_account.delete_account, name="delete-account"),
    path(
        "accounts/email/<str:token>/",
        views_account.confirm_email_change,
        name="confirm-email-change",
    ),
    path(
        "settings/organization/delete/",
        views_account.delete_organization,
        name="delete-organization",
    ),
    path("settings/organization/", views.rename_organization, name="rename-organization"),
    path("settings/leave/", views.leave_organization, name="leave-organization"),
    path("settings/invitations/", views.invite, name="invite"),
    path(
        "settings/invitations/<uuid:invitation_id>/revoke/",
        views.revoke_invitation,
        name="revoke-invitation",
    ),
    path("settings/members/<uuid:member_id>/role/", views.change_role, name="change-role"),
    path(
        "settings/members/<uuid:member_id>/ownership/",
        views.transfer_ownership,
        name="transfer-ownership",
    ),
    path("settings/members/<uuid:member_id>/remove/", views.remove_member, name="remove-member"),
    path("settings/domains/", views.claim_domain, name="claim-domain"),
    path("settings/domains/<uuid:domain_id>/remove/", views.remove_domain, name="remove-domain"),
    path("settings/masking-rules/", views.add_masking_rule, name="add-masking-rule"),
    path(
        "settings/masking-rules/<uuid:rule_id>/delete/",
        views.delete_masking_rule,
        name="delete-masking-rule",
    ),
    path("settings/tokens/", views.create_token, name="create-token"),
    path("settings/tokens/<uuid:token_id>/revoke/", views.revoke_token, name="revoke-token"),
]
