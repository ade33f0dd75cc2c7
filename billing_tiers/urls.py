from django.urls import path

from billing_tiers import views

urlpatterns = [
    path("", views.evaluation, name="evaluation"),
    path("request/", views.evaluation_request, name="evaluation-request"),
    path("redeem/", views.evaluation_redeem, name="evaluation-redeem"),
]
