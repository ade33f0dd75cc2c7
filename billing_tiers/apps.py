from django.apps import AppConfig


class BillingTiersConfig(AppConfig):
    """Trust tiers, the daily quota ledger and evaluation codes: arrive with the tiers issue."""

    name = "billing_tiers"
    default_auto_field = "django.db.models.BigAutoField"
