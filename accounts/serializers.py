from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from accounts import selectors
from accounts.actors import ALL_SCOPES, Actor
from accounts.models import ApiToken, Domain, Invitation, MaskingRule, Membership

SCOPES = sorted(ALL_SCOPES)
# Owners are made by an owner once people have joined, never invited as such.
INVITABLE_ROLES = [
    (Membership.Role.ADMIN.value, Membership.Role.ADMIN.label),
    (Membership.Role.MEMBER.value, Membership.Role.MEMBER.label),
]


def paginated(
    serializer: type[serializers.BaseSerializer[Any]],  # of any rows: Serializer is invariant
    name: str,
) -> serializers.Serializer[object]:
    """The schema of a LimitOffsetPagination page of `serializer` rows."""
    return inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer(many=True),
        },
    )


# --- /me --------------------------------------------------------------------------------------


class MeUserSerializer(serializers.Serializer[User]):
    email = serializers.EmailField()
    email_verified = serializers.SerializerMethodField()

    def get_email_verified(self, user: User) -> bool:
        return selectors.has_verified_email(user)


class MeTokenSerializer(serializers.Serializer[ApiToken]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES))
    expires_at = serializers.DateTimeField(allow_null=True)


class MeOrganizationSerializer(serializers.Serializer[Actor]):
    """The actor's organisation; billing_tiers may extend it with the tier and evaluation."""

    id = serializers.UUIDField(source="organization.id")
    name = serializers.CharField(source="organization.name")
    role = serializers.ChoiceField(
        choices=Membership.Role.choices,
        allow_null=True,
        help_text="The person's role; null for an API token.",
    )
    verified_domain = serializers.SerializerMethodField(
        help_text="The verified workplace domain, or null."
    )

    def get_verified_domain(self, actor: Actor) -> str | None:
        assert actor.organization is not None
        return selectors.workplace_domain(actor.organization)


class MeSerializer(serializers.Serializer[Actor]):
    """Who is calling: the person (or the token) and the organisation they act for."""

    user = MeUserSerializer(allow_null=True, help_text="Null when an API token calls.")
    token = MeTokenSerializer(allow_null=True, help_text="The calling API token, if one is.")
    organization = MeOrganizationSerializer(source="*", allow_null=True)

    def to_representation(self, instance: Actor) -> dict[str, object]:
        # Each part is null when the actor has none (a token has no person, and so on).
        fields = self.fields
        return {
            "user": fields["user"].to_representation(instance.user) if instance.user else None,
            "token": fields["token"].to_representation(instance.token) if instance.token else None,
            "organization": (
                fields["organization"].to_representation(instance)
                if instance.organization is not None
                else None
            ),
        }


# --- Members and invitations ------------------------------------------------------------------


class MemberSerializer(serializers.Serializer[Membership]):
    id = serializers.UUIDField(source="public_id")
    email = serializers.EmailField(source="user.email")
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    joined_at = serializers.DateTimeField(source="created_at")


class MemberRoleSerializer(serializers.Serializer[dict[str, object]]):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class OwnershipSerializer(serializers.Serializer[dict[str, object]]):
    member_id = serializers.UUIDField(help_text="The member who becomes an owner.")


class InvitationInputSerializer(serializers.Serializer[dict[str, object]]):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=INVITABLE_ROLES, default=Membership.Role.MEMBER)


class InvitationSerializer(serializers.Serializer[Invitation]):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=INVITABLE_ROLES)
    status = serializers.ChoiceField(choices=Invitation.Status.choices)
    invited_by = serializers.EmailField(source="invited_by.email", allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    expired = serializers.SerializerMethodField()

    def get_expired(self, invitation: Invitation) -> bool:
        return invitation.expires_at <= timezone.now()


# --- Domains ----------------------------------------------------------------------------------


class DomainInputSerializer(serializers.Serializer[dict[str, object]]):
    domain = serializers.CharField(max_length=253, help_text="e.g. acme.com")


class DomainSerializer(serializers.Serializer[Domain]):
    id = serializers.UUIDField()
    domain = serializers.CharField()
    verified = serializers.SerializerMethodField(
        help_text="An owner or admin has a verified address at this domain."
    )
    created_at = serializers.DateTimeField()

    def get_verified(self, domain: Domain) -> bool:
        return selectors.is_verified_domain(domain.domain, self.context["verified_domains"])


# --- Masking rules ----------------------------------------------------------------------------


class MaskingRuleInputSerializer(serializers.Serializer[dict[str, object]]):
    kind = serializers.ChoiceField(choices=MaskingRule.Kind.choices)
    # Lengths and syntax are the service's (rootcause.masking.rules and the settings): one rule
    # for the API, the page and the admin, with a problem that names what is wrong.
    value = serializers.CharField(
        trim_whitespace=False,
        help_text=(
            "A term (literal, case-insensitive, matched where it does not touch a letter or "
            "digit) or a pattern in Hyperscan syntax (PCRE without back-references or "
            "look-around; must not match the empty string)."
        ),
    )
    # Field.label (the form label) is an attribute of every field, so mypy sees an override;
    # DRF collects declared fields before, so the API field named label is what it seems.
    label = serializers.CharField(  # type: ignore[assignment]
        required=False,
        allow_blank=True,
        default="",
        help_text=(
            "The entity type findings are counted and replaced under, e.g. PROJECT_CODENAME; "
            "ORG_TERM or ORG_PATTERN when empty."
        ),
    )


class MaskingRuleSerializer(serializers.Serializer[MaskingRule]):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=MaskingRule.Kind.choices)
    label = serializers.CharField(  # type: ignore[assignment]  # as in the input serializer
        help_text="The entity type it is masked and counted as."
    )
    value = serializers.CharField()
    created_by = serializers.EmailField(source="created_by.email", allow_null=True)
    created_at = serializers.DateTimeField()


# --- API tokens -------------------------------------------------------------------------------


class TokenInputSerializer(serializers.Serializer[dict[str, object]]):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=SCOPES), min_length=1, max_length=len(SCOPES)
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class TokenSerializer(serializers.Serializer[ApiToken]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="The first characters of the secret.")
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES))
    created_at = serializers.DateTimeField()
    created_by = serializers.EmailField(source="created_by.email", allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    active = serializers.SerializerMethodField(help_text="Neither revoked nor expired.")

    def get_active(self, token: ApiToken) -> bool:
        return token.revoked_at is None and (
            token.expires_at is None or token.expires_at > timezone.now()
        )


class TokenCreatedSerializer(TokenSerializer):
    secret = serializers.SerializerMethodField(
        help_text="The token itself, `rc_live_…`: shown in this answer only, never again."
    )

    def get_secret(self, token: ApiToken) -> str:
        return str(self.context["secret"])
