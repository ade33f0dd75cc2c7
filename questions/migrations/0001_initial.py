"""The questions app's models, which diagnosis/0011 removed from its own state: state only, on the
tables the diagnosis app created (db_table), with their rows."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

MODELS = ["diagnosisquestion"]


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
    _relabel(apps, schema_editor, "diagnosis", "questions")


def move_content_types_back(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, schema_editor, "questions", "diagnosis")


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
                    name="DiagnosisQuestion",
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
                        ("question", models.CharField(max_length=1000)),
                        ("answer", models.TextField()),
                        ("citations", models.JSONField(default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "asked_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "diagnosis",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="questions",
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
                    ],
                    options={
                        "db_table": "diagnosis_diagnosisquestion",
                        "indexes": [
                            models.Index(
                                fields=["diagnosis", "created_at"], name="diagnosis_question_thread"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        # Their content types (and so any permission on them) follow them, where they exist: on a
        # new database they are created after the migrations, under the new app.
        migrations.RunPython(move_content_types, move_content_types_back, elidable=True),
    ]
