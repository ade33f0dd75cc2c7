from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Organization(models.Model):
    """The tenant: every diagnosis and token belongs to exactly one organisation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    # The id the API and pages show; the integer primary key stays internal.
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "user"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class ApiToken(models.Model):
    """A CI token of one organisation. Only a SHA-256 digest of the secret is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_tokens"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    name = models.CharField(max_length=100)
    # What the token may do: a list of accounts.actors SCOPE_* values.
    scopes = models.JSONField(default=list)
    # The first characters of the secret, shown in listings so people can tell tokens apart.
    prefix = models.CharField(max_length=12)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class VerifiedEmail(models.Model):
    """An address a person proved they read, by following a link sent to it.

    A person's e-mail counts as verified only while `user.email` is still this address, so a
    changed address is unverified until its own link is followed.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="verified_emails"
    )
    # Lower-cased.
    email = models.EmailField(max_length=254)
    verified_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "email"], name="verified_email_unique_user")
        ]

    def __str__(self) -> str:
        return self.email


class Invitation(models.Model):
    """An invitation by e-mail to join an organisation.

    The link in the e-mail carries the id signed with the SECRET_KEY (django.core.signing), so
    nothing secret is stored; the row makes it single use, revocable and expiring.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REVOKED = "revoked"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="invitations"
    )
    # Lower-cased; only a person signed in with this address may accept.
    email = models.EmailField(max_length=254)
    role = models.CharField(
        max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Moved forward when the invitation is sent again.
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            # A second invitation to the same address re-sends the pending one instead.
            models.UniqueConstraint(
                fields=["organization", "email"],
                condition=Q(status="pending"),
                name="invitation_unique_pending_email",
            ),
            models.CheckConstraint(condition=~Q(role="owner"), name="invitation_role_not_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.organization} ({self.status})"


class Domain(models.Model):
    """An e-mail domain an organisation claims as its workplace.

    The claim is verified while an owner or admin has a verified address at the domain (see
    `accounts.selectors.workplace_domain`); nothing is stored about it, so it follows the people.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="domains")
    # Lower-cased, IDNA (punycode) form.
    domain = models.CharField(max_length=253)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Two organisations may claim one domain (two teams of one company); one org once.
            models.UniqueConstraint(fields=["organization", "domain"], name="domain_unique_per_org")
        ]

    def __str__(self) -> str:
        return self.domain


class MaskingRule(models.Model):
    """A term or pattern an organisation masks in its own logs, on top of the built-in types.

    Validated by `rootcause.masking.rules` (`accounts.services.add_masking_rule`); the mask stage
    reads them through `accounts.selectors.masking_rules_of`.
    """

    class Kind(models.TextChoices):
        TERM = "term"
        PATTERN = "pattern"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="masking_rules"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The entity type findings are counted and replaced under, upper-case (PROJECT_CODENAME).
    label = models.CharField(max_length=40)
    # As validated: a term stripped, a pattern as written. The length limit is a setting
    # (MASKING_RULE_MAX_LENGTH), enforced by the service, so the column does not fix it.
    value = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Terms are also compared case-insensitively by the service (they match so).
            models.UniqueConstraint(
                fields=["organization", "kind", "value"], name="masking_rule_unique_value"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["term", "pattern"]), name="masking_rule_kind_valid"
            ),
            models.CheckConstraint(condition=~Q(value=""), name="masking_rule_value_not_empty"),
            models.CheckConstraint(condition=~Q(label=""), name="masking_rule_label_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.label}: {self.value}"
