from django.urls import path

from billing_tiers import api

urlpatterns = [
    # accounts' /me with the tier and the quota; config/urls.py includes this before accounts.
    path("me", api.MeApi.as_view(), name="api-me"),
    path("quota", api.QuotaApi.as_view(), name="api-quota"),
    path(
        "evaluation/requests",
        api.EvaluationRequestListApi.as_view(),
        name="api-evaluation-requests",
    ),
    path(
        "evaluation/requests/<uuid:request_id>",
        api.EvaluationRequestDetailApi.as_view(),
        name="api-evaluation-request-detail",
    ),
    path("evaluation/redeem", api.EvaluationRedeemApi.as_view(), name="api-evaluation-redeem"),
]
