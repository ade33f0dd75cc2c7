import uuid

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def fill_public_ids(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Membership = apps.get_model("accounts", "Membership")
    for membership in Membership.objects.filter(public_id__isnull=True).only("pk"):
        membership.public_id = uuid.uuid4()
        membership.save(update_fields=["public_id"])


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    # A unique UUID on existing rows takes three steps: add it nullable, fill it, then constrain.
    operations = [
        migrations.AddField(
            model_name="membership",
            name="public_id",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="membership",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
