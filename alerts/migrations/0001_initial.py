"""The alerts app's models, which diagnosis/0011 removed from its own state: state only, on the
tables the diagnosis app created (db_table), with their rows."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

MODELS = ["webhook", "webhookdelivery", "deliveryattempt"]


def _relabel(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor, old: str, new: str) -> None:
    types = apps.get_model("contenttypes", "ContentType").objects.using(
        schema_editor.connection.alias
    )
    # A type already under the new label (made by a `migrate` that ran since) stays; the old one
    # is then left for `remove_stale_contenttypes`.
    taken = set(types.filter(app_label=new, model__in=MODELS).values_list("model", flat=True))
    types.filter(app_label=old, model__in=[m for m in MODELS if m not in taken]).update(
        app_label=new
    )


def move_content_types(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, schema_editor, "diagnosis", "alerts")


def move_content_types_back(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, schema_editor, "alerts", "diagnosis")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0005_maskingrule"),
        ("diagnosis", "0011_alerts_and_questions_move_out"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay as they are (the models name them in db_table): state only.
            state_operations=[
                migrations.CreateModel(
                    name="Webhook",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "channel",
                            models.CharField(
                                choices=[("webhook", "Webhook"), ("email", "Email")],
                                default="webhook",
                                max_length=16,
                            ),
                        ),
                        ("url", models.URLField(blank=True, max_length=500)),
                        ("secret", models.CharField(max_length=100)),
                        ("category", models.CharField(blank=True, max_length=64)),
                        ("failure_slug", models.SlugField(blank=True, max_length=100)),
                        ("min_confidence", models.FloatField(default=0.0)),
                        ("first_occurrence_only", models.BooleanField(default=False)),
                        (
                            "payload_format",
                            models.CharField(
                                choices=[("standard", "Standard"), ("slack", "Slack")],
                                default="standard",
                                max_length=16,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "organization",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="webhooks",
                                to="accounts.organization",
                            ),
                        ),
                        (
                            "recipients",
                            models.ManyToManyField(
                                blank=True, related_name="email_alerts", to=settings.AUTH_USER_MODEL
                            ),
                        ),
                    ],
                    options={
                        "db_table": "diagnosis_webhook",
                    },
                ),
                migrations.CreateModel(
                    name="WebhookDelivery",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("event_type", models.CharField(max_length=32)),
                        ("payload", models.JSONField()),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("delivered", "Delivered"),
                                    ("failed", "Failed"),
                                ],
                                default="pending",
                                max_length=16,
                            ),
                        ),
                        ("attempts", models.PositiveSmallIntegerField(default=0)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        ("leased_until", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "diagnosis",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                to="diagnosis.diagnosis",
                            ),
                        ),
                        (
                            "organization",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                to="accounts.organization",
                            ),
                        ),
                        (
                            "webhook",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="deliveries",
                                to="alerts.webhook",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "diagnosis_webhookdelivery",
                    },
                ),
                migrations.CreateModel(
                    name="DeliveryAttempt",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("attempted_at", models.DateTimeField(auto_now_add=True)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("latency_ms", models.PositiveIntegerField(default=0)),
                        ("error", models.CharField(blank=True, max_length=255)),
                        ("response_excerpt", models.CharField(blank=True, max_length=500)),
                        (
                            "organization",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                to="accounts.organization",
                            ),
                        ),
                        (
                            "delivery",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="attempt_log",
                                to="alerts.webhookdelivery",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "diagnosis_deliveryattempt",
                    },
                ),
                migrations.AddConstraint(
                    model_name="webhook",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("min_confidence__gte", 0), ("min_confidence__lte", 1)),
                        name="webhook_min_confidence_fraction",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="webhook",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("channel", "email"),
                            models.Q(("url", ""), _negated=True),
                            _connector="OR",
                        ),
                        name="webhook_has_url",
                    ),
                ),
                migrations.AddIndex(
                    model_name="webhookdelivery",
                    index=models.Index(
                        fields=["webhook", "-created_at"], name="webhook_delivery_log"
                    ),
                ),
                migrations.AddIndex(
                    model_name="webhookdelivery",
                    index=models.Index(
                        condition=models.Q(("state", "pending")),
                        fields=["next_attempt_at"],
                        name="webhook_delivery_pending",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="webhookdelivery",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("diagnosis__isnull", False)),
                        fields=("diagnosis", "webhook"),
                        name="webhook_delivery_once_per_diagnosis",
                    ),
                ),
            ],
            database_operations=[],
        ),
        # Their content types (and so any permission on them) follow them, where they exist: on a
        # new database they are created after the migrations, under the new app.
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
