from django.urls import path

from alerts import api

urlpatterns = [
    path("webhooks", api.WebhookListApi.as_view(), name="api-webhooks"),
    path(
        "webhooks/<uuid:webhook_id>",
        api.WebhookDetailApi.as_view(),
        name="api-webhook-detail",
    ),
    path(
        "webhooks/<uuid:webhook_id>/deliveries",
        api.WebhookDeliveriesApi.as_view(),
        name="api-webhook-deliveries",
    ),
    path(
        "webhooks/<uuid:webhook_id>/test",
        api.WebhookTestApi.as_view(),
        name="api-webhook-test",
    ),
    path(
        "webhooks/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/redeliver",
        api.DeliveryRedeliverApi.as_view(),
        name="api-webhook-redeliver",
    ),
    path("email-alerts", api.EmailAlertListApi.as_view(), name="api-email-alerts"),
    path(
        "email-alerts/<uuid:webhook_id>",
        api.EmailAlertDetailApi.as_view(),
        name="api-email-alert-detail",
    ),
    path(
        "email-alerts/<uuid:webhook_id>/deliveries",
        api.EmailAlertDeliveriesApi.as_view(),
        name="api-email-alert-deliveries",
    ),
    path(
        "email-alerts/<uuid:webhook_id>/test",
        api.EmailAlertTestApi.as_view(),
        name="api-email-alert-test",
    ),
]
