from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """The Celery tasks of the pipeline; the engines beside them import no Django."""

    name = "workers"
