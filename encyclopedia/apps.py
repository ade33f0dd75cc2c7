from django.apps import AppConfig


class EncyclopediaConfig(AppConfig):
    name = "encyclopedia"
    default_auto_field = "django.db.models.BigAutoField"
