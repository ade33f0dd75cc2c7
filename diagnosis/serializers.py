"""Output shapes of the diagnosis API.

A diagnosis is its record (DRF fields below) and, once it is done, the fields of its typed result
(`rootcause.result.DiagnosisResult`). The result is rendered by msgspec and described in the
OpenAPI schema from the same type, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import msgspec
from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import Direction
from rest_framework import serializers

from diagnosis import selectors
from diagnosis.models import Diagnosis
from diagnosis.pipeline.stage import status_choices
from diagnosis.recurrence import recurrence_of
from diagnosis.selectors import MAX_SEARCH_CHARS, HistoryFilters
from diagnosis.services import JobMetadata
from plumbing.openapi_hooks import Document
from plumbing.serializers import FieldsBoundOnce, StringField
from rootcause.result import DiagnosisResult, as_json


class RecentDiagnosisSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()


class RecurrenceSerializer(serializers.Serializer):
    """How often one failure class has been seen in the organisation."""

    failure_slug = serializers.CharField(help_text="The failure class.")
    first_seen = serializers.DateTimeField(help_text="Its first diagnosis in the organisation.")
    last_seen = serializers.DateTimeField(help_text="Its latest diagnosis.")
    last_7_days = serializers.IntegerField(help_text="Diagnoses of the class in the last 7 days.")
    last_30_days = serializers.IntegerField(help_text="Diagnoses in the last 30 days.")
    total = serializers.IntegerField(help_text="Diagnoses of the class kept in the history.")
    recent = RecentDiagnosisSerializer(many=True, help_text="Its latest diagnoses, newest first.")


class DiagnosisSerializer(FieldsBoundOnce):
    """A diagnosis: its record, and once its status is done the fields of its result.

    Answers every submission and every poll: its fields are bound once (plumbing/serializers.py;
    none reads the context, which only `to_representation` below does)."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=status_choices())
    progress = serializers.IntegerField(help_text="Percent of the pipeline done.")
    kind = serializers.ChoiceField(
        choices=Diagnosis.Kind.choices,
        help_text="`log`, or `bundle`: one job's per-rank files, judged for a hang.",
    )
    failure_reason = serializers.CharField(
        required=False, help_text="Why the diagnosis failed on our side; only when it failed."
    )
    filename = serializers.CharField(allow_blank=True)
    size_bytes = serializers.IntegerField()
    job = serializers.CharField(allow_blank=True, help_text="The CI job's name, masked.")
    run_url = serializers.CharField(allow_blank=True, help_text="The CI run's address, masked.")
    commit = serializers.CharField(allow_blank=True, help_text="The commit built, masked.")
    labels = serializers.ListField(child=serializers.CharField(), help_text="Labels, masked.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(
        required=False,
        help_text="A visitor's diagnosis only: when its link stops working and it is deleted.",
    )
    # Not a column: only its digest is stored. Given in the context by the view that created it.
    access_key = serializers.CharField(
        required=False,
        help_text=(
            "A visitor's diagnosis only, in the answer that created it and never again: the key "
            "that reads the result, `GET /api/v1/diagnoses/{id}?key=…` or the page "
            "`/diagnoses/{id}/?key=…`."
        ),
    )

    recurrence = RecurrenceSerializer(
        required=False,
        help_text=(
            "An organisation's finished diagnosis of a failure class only: how often the "
            "organisation has seen that class (diagnosis.recurrence)."
        ),
    )

    def to_representation(self, instance: Diagnosis) -> dict[str, object]:
        body = dict(super().to_representation(instance))
        if instance.status != Diagnosis.Status.FAILED:
            del body["failure_reason"]
        if instance.organization_id is not None:
            del body["expires_at"]
        if self.context.get("access_key"):
            body["access_key"] = self.context["access_key"]
        result = selectors.diagnosis_result(instance)
        if result is not None:
            body.update(as_json(result))
        found = recurrence_of(instance) if instance.status == Diagnosis.Status.DONE else None
        if found is not None:
            body["recurrence"] = RecurrenceSerializer(found).data
        return body


class DiagnosisSummarySerializer(serializers.Serializer):
    """A row of the history: the record, without the result."""

    id = serializers.UUIDField()
    status = serializers.CharField()
    outcome = serializers.CharField(allow_blank=True)
    failure_slug = serializers.CharField(allow_blank=True, help_text="The failure class.")
    kind = serializers.ChoiceField(choices=Diagnosis.Kind.choices)
    filename = serializers.CharField(allow_blank=True)
    size_bytes = serializers.IntegerField()
    job = serializers.CharField(allow_blank=True)
    run_url = serializers.CharField(allow_blank=True)
    commit = serializers.CharField(allow_blank=True)
    labels = serializers.ListField(child=serializers.CharField())
    # The metaclass takes declared fields off the class, so this does not shadow Field.source.
    source = serializers.ChoiceField(choices=Diagnosis.Source.choices)  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


MAX_LABELS = 20

# A CI run's address: http or https, a host, then anything without spaces or control characters.
# It is shown as a link and never fetched, so a host name DNS could not hold (a label over 63
# characters, 253 in all) is taken as written; `javascript:` and the like are not. The pattern is
# the validation and, through the validator, the document's (read as JSON Schema reads it, by
# `re.search`), so the two cannot differ.
RUN_URL_PATTERN = r"^[hH][tT][tT][pP][sS]?://[^\x00-\x20\x7f/?#]+(?:[/?#][^\x00-\x20\x7f]*)?$"


class SubmissionMetadataSerializer(FieldsBoundOnce):
    """What may come with a log: its file name and what the CI job says about itself. Each is
    masked like the log before it is stored.

    Validates every submission: its fields are bound once (plumbing/serializers.py; no validator
    reads the context, and it is never partial)."""

    filename = StringField(
        max_length=255,
        required=False,
        allow_blank=True,
        help_text="The log's file name (its last path component is kept), shown in the history.",
    )
    job = StringField(
        max_length=200, required=False, allow_blank=True, help_text="The CI job's name."
    )
    run_url = StringField(
        max_length=500,
        required=False,
        allow_blank=True,
        validators=[RegexValidator(RUN_URL_PATTERN, message="Enter an http or https address.")],
        help_text="The address of the CI run (http or https).",
    )
    commit = StringField(
        max_length=100, required=False, allow_blank=True, help_text="The commit that was built."
    )
    labels = serializers.ListField(
        child=StringField(max_length=100),
        max_length=MAX_LABELS,
        required=False,
        help_text=f"Up to {MAX_LABELS} short labels (e.g. `nightly`, `gpu=a100`).",
    )

    def metadata(self) -> JobMetadata:
        data = self.validated_data
        return JobMetadata(
            job=data.get("job", ""),
            run_url=data.get("run_url", ""),
            commit=data.get("commit", ""),
            labels=tuple(label for label in data.get("labels", []) if label.strip()),
        )


class DiagnosisSubmissionSerializer(SubmissionMetadataSerializer):
    """The JSON form of a submission: the log as a string, and the metadata beside it."""

    # Not blank, as the schema says (minLength 1): an empty JSON log is `invalid-request`.
    log = StringField(trim_whitespace=False, help_text="The log's text (UTF-8); not empty.")


class WaitSerializer(serializers.Serializer):
    wait = serializers.IntegerField(
        min_value=0,
        required=False,
        default=0,
        help_text=(
            f"Seconds to wait for the diagnosis to finish; at most {selectors.MAX_WAIT_SECONDS}."
        ),
    )


class HistoryFilterSerializer(serializers.Serializer):
    """The filters of the history list, from the query string."""

    q = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_SEARCH_CHARS,
        help_text="Words to find (all of them, case aside) in the file name, the CI job, the "
        "failure class or the root cause.",
    )
    failure = serializers.SlugField(required=False, help_text="A failure class's slug.")
    status = serializers.ChoiceField(choices=status_choices(), required=False)
    created_after = serializers.DateTimeField(
        required=False, help_text="ISO 8601 date or date-time (UTC if no offset); inclusive."
    )
    created_before = serializers.DateTimeField(
        required=False, help_text="ISO 8601 date or date-time (UTC if no offset); exclusive."
    )

    def filters(self) -> HistoryFilters:
        return HistoryFilters(**self.validated_data)


# A JSON Schema (any of its nodes) walked by key, as msgspec gives it and spectacular takes it.
def _openapi_30(schema: Any) -> Any:
    """A JSON Schema from msgspec in the dialect of OpenAPI 3.0, which has no "null" type: an
    optional value (`anyOf` with null) becomes `nullable`. A reference with siblings (a
    description, nullable) goes through `allOf`, since 3.0 ignores the siblings of a `$ref`."""
    if isinstance(schema, list):
        return [_openapi_30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _openapi_30(value) for key, value in schema.items()}
    if "$ref" in out and len(out) > 1:
        out["allOf"] = [{"$ref": out.pop("$ref")}]
    options = out.get("anyOf")
    if options and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        del out["anyOf"]
        if len(rest) > 1:
            out["anyOf"] = rest
        elif "$ref" in rest[0]:
            out["allOf"] = rest
        else:
            out.update(rest[0])
        out["nullable"] = True
    return out


class DiagnosisSerializerSchema(OpenApiSerializerExtension):
    """Documents DiagnosisSerializer as the record's fields plus the typed result's, and
    publishes DiagnosisResult and its parts as components of the OpenAPI document."""

    target_class = DiagnosisSerializer

    # spectacular's component schema: nested dicts edited in place by key
    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = super().map_serializer(auto_schema, direction)  # as above
        _, components = msgspec.json.schema_components(
            [DiagnosisResult], ref_template="#/components/schemas/{name}"
        )
        for name, component in components.items():
            # a name taken by a serializer's component makes drf-spectacular warn, and
            # `spectacular --fail-on-warn` fail
            auto_schema.registry.register_on_missing(
                ResolvedComponent(
                    name=name,
                    type=ResolvedComponent.SCHEMA,
                    object=f"rootcause.result.{name}",
                    schema=_openapi_30(component),
                )
            )
        result = _openapi_30(components[DiagnosisResult.__name__])
        schema["properties"].update(result["properties"])
        schema["description"] = (
            "A diagnosis. Once `status` is `done` it also carries the fields of its result "
            "(DiagnosisResult; there `outcome`, `failure`, ... are always present and "
            "`remediation` only for tiers that include fixes)."
        )
        return schema


def submission_body_required_hook(result: Document, **kwargs: object) -> Document:
    """A submission has a body, whichever its form (none is 400 `log-rejected`: the log is
    empty). drf-spectacular marks a body given as a schema of its own optional."""
    operation = result.get("paths", {}).get("/api/v1/diagnoses", {}).get("post")
    if operation is not None and "requestBody" in operation:
        operation["requestBody"]["required"] = True
    return result
