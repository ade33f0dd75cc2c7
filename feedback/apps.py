from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    """ "Was this right?" on a diagnosis: the verdicts, their review by staff, the corpus exported
    from them and the confirmation rate an encyclopedia entry shows. Above `diagnosis` and
    `encyclopedia`, which show its form and figures through its template tags, loaded by name,
    and never import it."""

    name = "feedback"
    default_auto_field = "django.db.models.BigAutoField"
