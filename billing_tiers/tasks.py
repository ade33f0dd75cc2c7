"""The periodic jobs of tiers and evaluations; the beat schedule is in config/celery.py."""

from __future__ import annotations

from celery import shared_task

from billing_tiers import services


@shared_task(
    name="billing_tiers.tasks.send_evaluation_ending_notices", soft_time_limit=240, time_limit=300
)
def send_evaluation_ending_notices() -> int:
    """Safe to run concurrently: each notice is claimed by compare-and-set before it is sent."""
    return services.send_evaluation_ending_notices()


@shared_task(name="billing_tiers.tasks.purge_quota_ledger", soft_time_limit=240, time_limit=300)
def purge_quota_ledger() -> int:
    return services.purge_quota_ledger()
