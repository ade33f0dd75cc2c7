# A diagnosis is of a log or of a bundle (one job's per-rank files); the stage table names the
# kinds each stage runs for. A column with a constant default: no table rewrite on PostgreSQL.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("diagnosis", "0012_status_choices_from_the_stage_table"),
    ]

    operations = [
        migrations.AddField(
            model_name="diagnosis",
            name="kind",
            field=models.CharField(
                choices=[("log", "Log"), ("bundle", "Bundle")], default="log", max_length=8
            ),
        ),
    ]
