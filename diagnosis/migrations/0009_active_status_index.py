# The sweepers' index of active diagnoses, built without blocking writes on PostgreSQL
# (plumbing/migration_operations.py); 0010 then drops the indexes it and others make redundant.

from django.db import migrations, models

from plumbing.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("diagnosis", "0008_alert_channels_and_delivery_lease"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="diagnosis",
            index=models.Index(
                condition=models.Q(
                    ("status__in", ("queued", "masking", "matching", "remediating"))
                ),
                fields=["status", "updated_at"],
                name="diagnosis_active_updated",
            ),
        ),
    ]
