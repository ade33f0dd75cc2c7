from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    """Follow-up questions on a diagnosis, answered from the catalogue: above `diagnosis`, which
    shows the question box through this app's template tag and never imports it."""

    name = "questions"
    default_auto_field = "django.db.models.BigAutoField"
