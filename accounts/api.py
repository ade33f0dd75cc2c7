"""The accounts API: who is calling, the organisation's members, invitations, domains, masking
rules, tokens.

Managing the organisation is for people (owners and admins, members for reading the member
list); an API token is refused with 403 whatever its scopes. Ids from another organisation
answer 404.
"""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.actors import actor_of
from accounts.serializers import (
    DomainInputSerializer,
    DomainSerializer,
    InvitationInputSerializer,
    InvitationSerializer,
    MaskingRuleInputSerializer,
    MaskingRuleSerializer,
    MemberRoleSerializer,
    MemberSerializer,
    MeSerializer,
    OwnershipSerializer,
    TokenCreatedSerializer,
    TokenInputSerializer,
    TokenSerializer,
    paginated,
)
from plumbing.pagination import paged_response

PROBLEM = OpenApiResponse(description="problem+json")
REFUSED = {401: PROBLEM, 403: PROBLEM}
NOT_FOUND = {**REFUSED, 404: PROBLEM}


class MeApi(APIView):
    """Who is calling; billing_tiers may extend it with the tier and quota (docs/accounts.md)."""

    serializer_class = MeSerializer

    @extend_schema(
        operation_id="me",
        responses={200: MeSerializer, 401: PROBLEM},
        description=(
            "The signed-in person (or the calling API token) and the organisation they act for."
        ),
    )
    def get(self, request: Request) -> Response:
        return Response(self.serializer_class(actor_of(request)).data)


# --- Members ----------------------------------------------------------------------------------


class MemberListApi(APIView):
    @extend_schema(
        operation_id="organization_members_list",
        responses={200: paginated(MemberSerializer, "PaginatedMemberList"), **REFUSED},
        description="The members of the organisation, earliest first. Every member may read it.",
    )
    def get(self, request: Request) -> Response:
        members = selectors.members_for(actor_of(request))
        return paged_response(self, request, members, MemberSerializer)

    @extend_schema(
        operation_id="organization_members_create",
        request=InvitationInputSerializer,
        responses={201: InvitationSerializer, 400: PROBLEM, 409: PROBLEM, **REFUSED},
        description=(
            "Add a member: an invitation is e-mailed, and the person joins when they accept it "
            "(the same as POST /organization/invitations). Owners and admins."
        ),
    )
    def post(self, request: Request) -> Response:
        return _invite(request)


class MemberDetailApi(APIView):
    @extend_schema(
        operation_id="organization_members_retrieve",
        responses={200: MemberSerializer, **NOT_FOUND},
    )
    def get(self, request: Request, member_id: uuid.UUID) -> Response:
        membership = selectors.get_member_for(actor_of(request), member_id)
        return Response(MemberSerializer(membership).data)

    @extend_schema(
        operation_id="organization_members_update",
        request=MemberRoleSerializer,
        responses={200: MemberSerializer, 400: PROBLEM, 409: PROBLEM, **NOT_FOUND},
        description="Change a member's role. Owners only; the last owner cannot step down.",
    )
    def patch(self, request: Request, member_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        membership = selectors.get_member_for(actor, member_id)
        data = MemberRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.change_role(
            actor=actor, membership=membership, role=data.validated_data["role"]
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(
        operation_id="organization_members_destroy",
        responses={204: None, 409: PROBLEM, **NOT_FOUND},
        description=(
            "Remove a member (owners), or leave (your own id). The last owner can do neither; "
            "the API tokens the person created for the organisation are revoked."
        ),
    )
    def delete(self, request: Request, member_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        membership = selectors.get_member_for(actor, member_id)
        services.remove_member(actor=actor, membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


class OwnershipApi(APIView):
    @extend_schema(
        operation_id="organization_ownership_transfer",
        request=OwnershipSerializer,
        responses={200: MemberSerializer, 400: PROBLEM, **NOT_FOUND},
        description="Transfer ownership: the member becomes an owner and you an admin. Owners.",
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        data = OwnershipSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = selectors.get_member_for(actor, data.validated_data["member_id"])
        membership = services.transfer_ownership(actor=actor, membership=membership)
        return Response(MemberSerializer(membership).data)


# --- Invitations ------------------------------------------------------------------------------


def _invite(request: Request) -> Response:
    data = InvitationInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    invitation = services.invite_member(actor=actor_of(request), **data.validated_data)
    return Response(InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


class InvitationListApi(APIView):
    @extend_schema(
        operation_id="organization_invitations_list",
        responses={200: paginated(InvitationSerializer, "PaginatedInvitationList"), **REFUSED},
        description="Pending invitations, newest first (expired ones are marked). Owners, admins.",
    )
    def get(self, request: Request) -> Response:
        invitations = selectors.invitations_for(actor_of(request))
        return paged_response(self, request, invitations, InvitationSerializer)

    @extend_schema(
        operation_id="organization_invitations_create",
        request=InvitationInputSerializer,
        responses={201: InvitationSerializer, 400: PROBLEM, 409: PROBLEM, **REFUSED},
        description=(
            "Invite a person by e-mail as admin or member. A pending invitation to the same "
            "address is sent again with a new expiry. The link is in the e-mail only."
        ),
    )
    def post(self, request: Request) -> Response:
        return _invite(request)


class InvitationDetailApi(APIView):
    @extend_schema(
        operation_id="organization_invitations_destroy",
        responses={204: None, **NOT_FOUND},
        description="Withdraw a pending invitation: its link stops working.",
    )
    def delete(self, request: Request, invitation_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        invitation = selectors.get_invitation_for(actor, invitation_id)
        services.revoke_invitation(actor=actor, invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Domains ----------------------------------------------------------------------------------


class DomainListApi(APIView):
    @extend_schema(
        operation_id="organization_domains_list",
        responses={200: paginated(DomainSerializer, "PaginatedDomainList"), **REFUSED},
        description="The claimed workplace domains and whether each is verified. Owners, admins.",
    )
    def get(self, request: Request) -> Response:
        actor = actor_of(request)
        domains = selectors.domains_for(actor)
        verified = selectors.verified_manager_domains(selectors.require_manager(actor))
        return paged_response(self, request, domains, DomainSerializer, verified_domains=verified)

    @extend_schema(
        operation_id="organization_domains_create",
        request=DomainInputSerializer,
        responses={201: DomainSerializer, 400: PROBLEM, 409: PROBLEM, **REFUSED},
        description=(
            "Claim an e-mail domain as the organisation's workplace. It is verified while an "
            "owner or admin has a verified address there; public mail providers are refused."
        ),
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        data = DomainInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        domain = services.claim_domain(actor=actor, domain=data.validated_data["domain"])
        verified = selectors.verified_manager_domains(domain.organization)
        body = DomainSerializer(domain, context={"verified_domains": verified}).data
        return Response(body, status=status.HTTP_201_CREATED)


class DomainDetailApi(APIView):
    @extend_schema(
        operation_id="organization_domains_destroy",
        responses={204: None, **NOT_FOUND},
        description="Give up a claimed domain.",
    )
    def delete(self, request: Request, domain_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        domain = selectors.get_domain_for(actor, domain_id)
        services.remove_domain(actor=actor, domain=domain)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Masking rules ----------------------------------------------------------------------------


class MaskingRuleListApi(APIView):
    @extend_schema(
        operation_id="organization_masking_rules_list",
        responses={200: paginated(MaskingRuleSerializer, "PaginatedMaskingRuleList"), **REFUSED},
        description=(
            "The organisation's own masking rules, earliest first: terms and patterns masked in "
            "its diagnoses on top of the built-in types. Every member may read them."
        ),
    )
    def get(self, request: Request) -> Response:
        rules = selectors.masking_rules_for(actor_of(request))
        return paged_response(self, request, rules, MaskingRuleSerializer)

    @extend_schema(
        operation_id="organization_masking_rules_create",
        request=MaskingRuleInputSerializer,
        responses={201: MaskingRuleSerializer, 400: PROBLEM, 409: PROBLEM, **REFUSED},
        description=(
            "Add a masking rule: the organisation's next diagnoses mask it, as <LABEL_1>…, and "
            "count it under its label in `masking`. A refused rule is a 400 "
            "`invalid-masking-rule` whose detail names the problem (does not compile, matches "
            "the empty string, too long, too many rules); a duplicate is a 409. Owners and "
            "admins."
        ),
    )
    def post(self, request: Request) -> Response:
        data = MaskingRuleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rule = services.add_masking_rule(actor=actor_of(request), **data.validated_data)
        return Response(MaskingRuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class MaskingRuleDetailApi(APIView):
    @extend_schema(
        operation_id="organization_masking_rules_destroy",
        responses={204: None, **NOT_FOUND},
        description="Delete a masking rule: diagnoses from now on no longer mask it.",
    )
    def delete(self, request: Request, rule_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        rule = selectors.get_masking_rule_for(actor, rule_id)
        services.delete_masking_rule(actor=actor, rule=rule)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- API tokens -------------------------------------------------------------------------------


class TokenListApi(APIView):
    @extend_schema(
        operation_id="tokens_list",
        responses={200: paginated(TokenSerializer, "PaginatedTokenList"), **REFUSED},
        description="The organisation's API tokens, revoked ones included. Owners and admins.",
    )
    def get(self, request: Request) -> Response:
        return paged_response(
            self, request, selectors.tokens_for(actor_of(request)), TokenSerializer
        )

    @extend_schema(
        operation_id="tokens_create",
        request=TokenInputSerializer,
        responses={201: TokenCreatedSerializer, 400: PROBLEM, **REFUSED},
        description=(
            "Create an API token with a name, scopes and an optional expiry. The answer holds "
            "the secret, once: only its hash is kept. Owners and admins, signed in."
        ),
    )
    def post(self, request: Request) -> Response:
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, secret = services.issue_api_token(actor=actor_of(request), **data.validated_data)
        body = TokenCreatedSerializer(token, context={"secret": secret}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class TokenDetailApi(APIView):
    @extend_schema(operation_id="tokens_retrieve", responses={200: TokenSerializer, **NOT_FOUND})
    def get(self, request: Request, token_id: uuid.UUID) -> Response:
        return Response(TokenSerializer(selectors.get_token_for(actor_of(request), token_id)).data)

    @extend_schema(
        operation_id="tokens_destroy",
        responses={204: None, **NOT_FOUND},
        description="Revoke a token: it is refused from now on and stays listed as revoked.",
    )
    def delete(self, request: Request, token_id: uuid.UUID) -> Response:
        actor = actor_of(request)
        token = selectors.get_token_for(actor, token_id)
        services.revoke_api_token(actor=actor, token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
