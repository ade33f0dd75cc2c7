from django.apps import AppConfig


class DiagnosisConfig(AppConfig):
    name = "diagnosis"
    default_auto_field = "django.db.models.BigAutoField"
