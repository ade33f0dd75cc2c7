"""A stand-in for the diagnosis intake: charges the caller as `diagnosis/` will, over HTTP."""

from __future__ import annotations

from django.db import transaction
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from billing_tiers.selectors import quota_status, rate_limit_headers
from billing_tiers.services import charge_quota


class ChargeApi(APIView):
    permission_classes = [AllowAny]

    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        with transaction.atomic():
            charge = charge_quota(
                actor=actor, idempotency_key=request.headers.get("Idempotency-Key", "")
            )
            status = quota_status(actor)
        return Response({"charge": str(charge.pk)}, status=202, headers=rate_limit_headers(status))


urlpatterns = [path("charge", ChargeApi.as_view())]
