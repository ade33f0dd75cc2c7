from django.apps import AppConfig


class DiagnosisConfig(AppConfig):
    name = "diagnosis"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A visitor's results go with them into the account they sign up or sign in to.
        from django.contrib.auth.signals import user_logged_in

        from diagnosis.services.carry import carry_on_login

        user_logged_in.connect(carry_on_login, dispatch_uid="diagnosis.carry_visitor_diagnoses")
