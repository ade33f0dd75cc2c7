from django.urls import path

from accounts import api

urlpatterns = [
    path("me", api.MeApi.as_view(), name="api-me"),
    path("tokens", api.TokenListApi.as_view(), name="api-tokens"),
    path("tokens/<uuid:token_id>", api.TokenDetailApi.as_view(), name="api-token"),
    path("organization/members", api.MemberListApi.as_view(), name="api-members"),
    path("organization/members/<uuid:member_id>", api.MemberDetailApi.as_view(), name="api-member"),
    path("organization/ownership", api.OwnershipApi.as_view(), name="api-ownership"),
    path("organization/invitations", api.InvitationListApi.as_view(), name="api-invitations"),
    path(
        "organization/invitations/<uuid:invitation_id>",
        api.InvitationDetailApi.as_view(),
        name="api-invitation",
    ),
    path("organization/domains", api.DomainListApi.as_view(), name="api-domains"),
    path("organization/domains/<uuid:domain_id>", api.DomainDetailApi.as_view(), name="api-domain"),
    path("organization/masking-rules", api.MaskingRuleListApi.as_view(), name="api-masking-rules"),
    path(
        "organization/masking-rules/<uuid:rule_id>",
        api.MaskingRuleDetailApi.as_view(),
        name="api-masking-rule",
    ),
]
