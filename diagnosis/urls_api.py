from django.urls import path

from diagnosis import api, api_failures, api_questions, api_webhooks

urlpatterns = [
    path("diagnoses", api.DiagnosisListApi.as_view(), name="api-diagnoses"),
    path(
        "diagnoses/<uuid:diagnosis_id>",
        api.DiagnosisDetailApi.as_view(),
        name="api-diagnosis-detail",
    ),
    path(
        "diagnoses/<uuid:diagnosis_id>/questions",
        api_questions.DiagnosisQuestionsApi.as_view(),
        name="api-diagnosis-questions",
    ),
    path("webhooks", api_webhooks.WebhookListApi.as_view(), name="api-webhooks"),
    path(
        "webhooks/<uuid:webhook_id>",
        api_webhooks.WebhookDetailApi.as_view(),
        name="api-webhook-detail",
    ),
    path(
        "webhooks/<uuid:webhook_id>/deliveries",
        api_webhooks.WebhookDeliveriesApi.as_view(),
        name="api-webhook-deliveries",
    ),
    path(
        "webhooks/<uuid:webhook_id>/test",
        api_webhooks.WebhookTestApi.as_view(),
        name="api-webhook-test",
    ),
    path(
        "webhooks/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/redeliver",
        api_webhooks.DeliveryRedeliverApi.as_view(),
        name="api-webhook-redeliver",
    ),
    path("failures", api_failures.FailureListApi.as_view(), name="api-failures"),
]
