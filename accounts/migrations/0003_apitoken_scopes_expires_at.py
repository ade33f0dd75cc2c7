from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.utils import timezone


def revoke_legacy_tokens(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # Tokens minted before the rc_live_ format (only ever from a shell) carry no checksum and
    # no scopes; authentication refuses them anyway, and revoking says so in every listing.
    ApiToken = apps.get_model("accounts", "ApiToken")
    ApiToken.objects.filter(revoked_at__isnull=True).exclude(prefix__startswith="rc_live_").update(
        revoked_at=timezone.now()
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_membership_public_id")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(revoke_legacy_tokens, migrations.RunPython.noop, elidable=True),
    ]
