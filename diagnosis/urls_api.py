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
    path("email-alerts", api_webhooks.EmailAlertListApi.as_view(), name="api-email-alerts"),
    path(
        "email-alerts/<uuid:webhook_id>",
        api_webhooks.EmailAlertDetailApi.as_view(),
        name="api-email-alert-detail",
    ),
    path(
        "email-alerts/<uuid:webhook_id>/deliveries",
        api_webhooks.EmailAlertDeliveriesApi.as_view(),
        name="api-email-alert-deliveries",
    ),
    path(
        "email-alerts/<uuid:webhook_id>/test",
        api_webhooks.EmailAlertTestApi.as_view(),
        name="api-email-alert-test",
    ),
    path("failures", api_failures.FailureListApi.as_view(), name="api-failures"),
]
