"""Output shapes of the diagnosis API; they document the result format in the OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers


class FailureSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    category = serializers.CharField()
    confidence = serializers.FloatField()


class RankSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    slug = serializers.CharField(allow_null=True)
    first_error_line = serializers.IntegerField(allow_null=True)
    collateral = serializers.BooleanField()


class CollateralSerializer(serializers.Serializer):
    slug = serializers.CharField()
    ranks = serializers.ListField(child=serializers.IntegerField())


class EvidenceSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField()


class RemediationSerializer(serializers.Serializer):
    steps = serializers.ListField(child=serializers.CharField())
    command = serializers.CharField()
    verification_command = serializers.CharField()


class DiagnosisSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(
        choices=["queued", "masking", "matching", "remediating", "done", "failed"]
    )
    progress = serializers.IntegerField(help_text="Percent of the pipeline done.")
    outcome = serializers.ChoiceField(choices=["diagnosed", "no_match"], required=False)
    failure = FailureSerializer(required=False, allow_null=True)
    root_cause = serializers.CharField(required=False, allow_null=True)
    initiating_rank = serializers.IntegerField(
        required=False, allow_null=True, help_text="Null for single-process logs."
    )
    ranks = RankSerializer(many=True, required=False)
    collateral = CollateralSerializer(many=True, required=False)
    evidence = EvidenceSerializer(many=True, required=False, help_text="Masked lines only.")
    remediation = RemediationSerializer(
        required=False, help_text="Present only for tiers that include fixes."
    )
    missing_facts = serializers.ListField(child=serializers.CharField(), required=False)
    masking = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="Entity type -> count masked."
    )
    encyclopedia_url = serializers.CharField(required=False, allow_null=True)
    catalogue_version = serializers.CharField(required=False)
    failure_reason = serializers.CharField(required=False)
    filename = serializers.CharField(allow_blank=True)
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class DiagnosisSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()
    outcome = serializers.CharField(allow_blank=True)
    failure_slug = serializers.CharField(allow_blank=True)
    filename = serializers.CharField(allow_blank=True)
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
