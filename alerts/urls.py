from django.urls import path

from alerts import views

# The organisation's alerts (Scale; owners and admins): webhooks and e-mail alerts. The route
# names kept their diagnosis- prefix from before alerts had an app of their own: templates and
# links name them.
urlpatterns = [
    path("settings/alerts/", views.alerts_page, name="diagnosis-alerts"),
    path("settings/alerts/webhooks/", views.create_webhook, name="diagnosis-webhook-create"),
    path(
        "settings/alerts/email/",
        views.create_email_alert,
        name="diagnosis-email-alert-create",
    ),
    path("settings/alerts/<uuid:alert_id>/", views.alert_log, name="diagnosis-alert-log"),
    path(
        "settings/alerts/<uuid:alert_id>/delete/",
        views.delete_alert,
        name="diagnosis-alert-delete",
    ),
    path("settings/alerts/<uuid:alert_id>/test/", views.test_alert, name="diagnosis-alert-test"),
    path(
        "settings/alerts/<uuid:alert_id>/deliveries/<uuid:delivery_id>/redeliver/",
        views.redeliver,
        name="diagnosis-alert-redeliver",
    ),
]
