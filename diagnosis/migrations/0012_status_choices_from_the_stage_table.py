# The status column's choices come from the stage table (a callable, named here rather than
# copied), and the sweepers' partial index is defined by what is finished rather than by the
# list of active statuses: a new stage's row then needs no migration. The new index is built
# (without blocking writes on PostgreSQL) before the old one goes, so the sweepers always have one.

from django.db import migrations, models

import diagnosis.pipeline.stage
from plumbing.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("diagnosis", "0011_alerts_and_questions_move_out"),
    ]

    operations = [
        migrations.AlterField(
            model_name="diagnosis",
            name="status",
            field=models.CharField(
                choices=diagnosis.pipeline.stage.status_choices, default="queued", max_length=16
            ),
        ),
        AddIndexConcurrently(
            model_name="diagnosis",
            index=models.Index(
                condition=models.Q(("status__in", ("done", "failed")), _negated=True),
                fields=["status", "updated_at"],
                name="diagnosis_unfinished_updated",
            ),
        ),
        migrations.RemoveIndex(
            model_name="diagnosis",
            name="diagnosis_active_updated",
        ),
    ]
