from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Webhooks and e-mail alerts on finished diagnoses: above `diagnosis`, which it reads and
    which never imports it."""

    name = "alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from alerts import metrics, services
        from diagnosis import hooks
        from diagnosis import metrics as diagnosis_metrics

        # The outbox rows of a finished diagnosis, written in the transaction that finishes it;
        # none for a visitor's, nor for an organisation without a webhook or e-mail alert.
        hooks.on_diagnosis_finished(
            services.enqueue_alerts, idle_when=services.no_alert_endpoints_sql
        )
        diagnosis_metrics.register_collector(metrics.OutboxCollector)
        # Register the tasks in every process, not only in a worker (where Celery's autodiscovery
        # imports them): in the embedded mode the web process runs a delivery eagerly by name.
        from alerts import tasks  # noqa: F401
