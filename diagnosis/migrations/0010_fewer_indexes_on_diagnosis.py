# Indexes nothing needs: the sweepers' old index of every row (0009 made the one of active rows),
# a SlugField's default index on failure_slug and its LIKE twin (looked up within an organisation
# only), the foreign key's own index on organization (the history's and recurrence's begin with it).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_maskingrule"),
        ("diagnosis", "0009_active_status_index"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="diagnosis",
            name="diagnosis_status_updated",
        ),
        migrations.AlterField(
            model_name="diagnosis",
            name="failure_slug",
            field=models.SlugField(blank=True, db_index=False, max_length=100),
        ),
        migrations.AlterField(
            model_name="diagnosis",
            name="organization",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="diagnoses",
                to="accounts.organization",
            ),
        ),
    ]
