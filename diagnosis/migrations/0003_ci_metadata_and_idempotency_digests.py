"""The CI path: job metadata on a diagnosis; the Idempotency-Key kept as a keyed digest only, with
a digest of the log to tell a retry from another log sent under the same key."""

import hashlib
import hmac

from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def _digest_keys(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # The same digest as diagnosis.selectors.idempotency_key_digest, written out here so that this
    # migration does not change if that function does.
    Diagnosis = apps.get_model("diagnosis", "Diagnosis")
    secret = settings.SECRET_KEY.encode()
    for pk, key in Diagnosis.objects.exclude(idempotency_key="").values_list(
        "pk", "idempotency_key"
    ):
        digest = hmac.new(secret, f"idempotency-key:{key}".encode(), hashlib.sha256).hexdigest()
        Diagnosis.objects.filter(pk=pk).update(idempotency_key_digest=digest)


class Migration(migrations.Migration):
    dependencies = [("diagnosis", "0002_anonymous_diagnoses")]

    operations = [
        migrations.RemoveConstraint(
            model_name="diagnosis", name="diagnosis_unique_idempotency_key"
        ),
        migrations.RemoveConstraint(
            model_name="diagnosis", name="diagnosis_unique_anonymous_idempotency_key"
        ),
        migrations.AddField(
            model_name="diagnosis",
            name="idempotency_key_digest",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(_digest_keys, migrations.RunPython.noop, elidable=True),
        migrations.RemoveField(model_name="diagnosis", name="idempotency_key"),
        migrations.AddField(
            model_name="diagnosis",
            name="body_digest",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="diagnosis", name="job", field=models.CharField(blank=True, max_length=200)
        ),
        migrations.AddField(
            model_name="diagnosis",
            name="run_url",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="diagnosis",
            name="commit",
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name="diagnosis",
            name="labels",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddConstraint(
            model_name="diagnosis",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key_digest", ""), _negated=True),
                fields=("organization", "idempotency_key_digest"),
                name="diagnosis_unique_idempotency_key",
            ),
        ),
        migrations.AddConstraint(
            model_name="diagnosis",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("organization__isnull", True),
                    models.Q(("idempotency_key_digest", ""), _negated=True),
                ),
                fields=("anonymous_subject", "idempotency_key_digest"),
                name="diagnosis_unique_anonymous_idempotency_key",
            ),
        ),
    ]
