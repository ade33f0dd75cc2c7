from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """The Celery tasks of the pipeline, the top layer: nothing imports them."""

    name = "workers"

    def ready(self) -> None:
        # Register the tasks in every process, not only in a worker (where Celery's autodiscovery
        # imports them): in the embedded mode the web process runs the chain eagerly by name.
        from workers import tasks  # noqa: F401
