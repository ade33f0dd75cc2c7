from django.urls import path

from diagnosis import views, views_alerts

urlpatterns = [
    path("", views.home, name="home"),
    path("extraction.json", views.extraction_patterns, name="extraction-patterns"),
    path("diagnoses/", views.history, name="diagnosis-history"),
    path("diagnoses/<uuid:diagnosis_id>/", views.detail, name="diagnosis-detail"),
    path("diagnoses/<uuid:diagnosis_id>/delete/", views.delete, name="diagnosis-delete"),
    path(
        "diagnoses/<uuid:diagnosis_id>/questions/",
        views_alerts.ask_question,
        name="diagnosis-ask",
    ),
    # The organisation's alerts (Scale; owners and admins): webhooks and e-mail alerts.
    path("settings/alerts/", views_alerts.alerts_page, name="diagnosis-alerts"),
    path(
        "settings/alerts/webhooks/",
        views_alerts.create_webhook,
        name="diagnosis-webhook-create",
    ),
    path(
        "settings/alerts/email/",
        views_alerts.create_email_alert,
        name="diagnosis-email-alert-create",
    ),
    path("settings/alerts/<uuid:alert_id>/", views_alerts.alert_log, name="diagnosis-alert-log"),
    path(
        "settings/alerts/<uuid:alert_id>/delete/",
        views_alerts.delete_alert,
        name="diagnosis-alert-delete",
    ),
    path(
        "settings/alerts/<uuid:alert_id>/test/",
        views_alerts.test_alert,
        name="diagnosis-alert-test",
    ),
    path(
        "settings/alerts/<uuid:alert_id>/deliveries/<uuid:delivery_id>/redeliver/",
        views_alerts.redeliver,
        name="diagnosis-alert-redeliver",
    ),
]
