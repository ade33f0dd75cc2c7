"""Webhook, WebhookDelivery and DeliveryAttempt move to the alerts app, DiagnosisQuestion to the
questions app: in Django's state only. Their tables, rows, indexes and constraints stay where
they are (the new models keep the table names), so nothing is copied or locked."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("diagnosis", "0010_fewer_indexes_on_diagnosis"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay as they are (the models name them in db_table): state only.
            state_operations=[
                migrations.RemoveField(
                    model_name="diagnosisquestion",
                    name="asked_by",
                ),
                migrations.RemoveField(
                    model_name="diagnosisquestion",
                    name="diagnosis",
                ),
                migrations.RemoveField(
                    model_name="diagnosisquestion",
                    name="organization",
                ),
                migrations.RemoveField(
                    model_name="webhook",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="webhook",
                    name="organization",
                ),
                migrations.RemoveField(
                    model_name="webhook",
                    name="recipients",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="webhook",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="diagnosis",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="organization",
                ),
                migrations.DeleteModel(
                    name="DeliveryAttempt",
                ),
                migrations.DeleteModel(
                    name="DiagnosisQuestion",
                ),
                migrations.DeleteModel(
                    name="Webhook",
                ),
                migrations.DeleteModel(
                    name="WebhookDelivery",
                ),
            ],
            database_operations=[],
        ),
    ]
