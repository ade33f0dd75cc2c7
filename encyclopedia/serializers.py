"""Input and output shapes of the encyclopedia API; they are also its OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers

from encyclopedia import memory
from plumbing.serializers import StringField
from rootcause.catalogue import CATEGORIES, FAQ_TOPICS, SEVERITIES


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details, as plumbing.problems renders every error."""

    type = serializers.CharField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    # DRF's metaclass moves declared fields off the class, so this does not shadow `.errors`.
    errors = serializers.JSONField(required=False)  # type: ignore[assignment]


class SymptomSerializer(serializers.Serializer):
    symptom = serializers.CharField()
    why = serializers.CharField()


class ReferenceSerializer(serializers.Serializer):
    title = serializers.CharField()
    url = serializers.URLField()


class FaqSerializer(serializers.Serializer):
    topic = serializers.ChoiceField(
        choices=FAQ_TOPICS, required=False, help_text="Which standard question this answers."
    )
    q = serializers.CharField()
    a = serializers.CharField()


class FixSerializer(serializers.Serializer):
    steps = serializers.ListField(child=serializers.CharField())
    command = serializers.CharField()


class VerificationSerializer(serializers.Serializer):
    command = serializers.CharField()
    expect = serializers.CharField()


class CodeExampleSerializer(serializers.Serializer):
    stack = serializers.CharField()
    language = serializers.CharField()
    title = serializers.CharField(required=False)
    code = serializers.CharField()


class SignalSerializer(serializers.Serializer):
    id = serializers.CharField()
    pattern = serializers.CharField()
    weight = serializers.FloatField()
    kind = serializers.ChoiceField(choices=["error", "support"], required=False)
    within_lines = serializers.IntegerField(required=False)
    in_frame = serializers.CharField(required=False)
    numeric = serializers.CharField(required=False)


class FingerprintsSerializer(serializers.Serializer):
    collateral = serializers.BooleanField(required=False)
    signals = SignalSerializer(many=True)


class EntrySerializer(serializers.Serializer):
    """An entry as `selectors.visible_fields` leaves it: the fields marked "signed-in" are absent
    for anonymous callers, and `locked` names them."""

    slug = serializers.SlugField()
    title = serializers.CharField()
    category = serializers.ChoiceField(choices=CATEGORIES)
    tags = serializers.ListField(child=serializers.CharField())
    severity = serializers.ChoiceField(choices=SEVERITIES)
    url = serializers.CharField(help_text="The encyclopedia page of this entry.")
    quick_answer = serializers.CharField()
    mechanism = serializers.CharField()
    observe = serializers.ListField(child=serializers.CharField())
    symptoms = SymptomSerializer(many=True)
    affected = serializers.ListField(child=serializers.CharField())
    checklist = serializers.ListField(child=serializers.CharField())
    signatures = serializers.ListField(child=serializers.CharField())
    root_causes = serializers.ListField(child=serializers.CharField())
    references = ReferenceSerializer(many=True)
    related = serializers.ListField(child=serializers.SlugField())
    faq = FaqSerializer(many=True, required=False)
    fix = FixSerializer(required=False, help_text="Signed-in callers only.")
    prevention = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Signed-in callers only."
    )
    verification = VerificationSerializer(required=False, help_text="Signed-in callers only.")
    code_examples = CodeExampleSerializer(
        many=True, required=False, help_text="Signed-in callers only."
    )
    fingerprints = FingerprintsSerializer(required=False, help_text="Signed-in callers only.")
    locked = serializers.ListField(
        child=serializers.CharField(),
        help_text="Fields this entry has that the caller may not see; sign in to read them.",
    )


class EntryFilterSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=CATEGORIES, required=False)
    # Empty is no filter, as the schema says (no minLength), not a 400.
    tag = serializers.CharField(required=False, allow_blank=True, max_length=100)
    severity = serializers.ChoiceField(choices=SEVERITIES, required=False)


class SearchInputSerializer(serializers.Serializer):
    text = StringField(
        trim_whitespace=False,
        help_text="Error text or a log excerpt, at most 1 MiB.",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=50, default=10)


class MatchedLineSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="1-based line number in the pasted text.")
    text = serializers.CharField()


class MatchedPairSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="1-based line number in the pasted text.")
    text = serializers.CharField(help_text="That line of the pasted text.")
    entry_field = serializers.CharField(
        help_text='Where in the entry it matched: "fingerprint <id>", "signature", "title", '
        '"slug", "category" or "tag".'
    )
    entry_text = serializers.CharField(
        help_text="The entry's text it matched (a fingerprint's pattern)."
    )


class SearchResultSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    score = serializers.FloatField()
    url = serializers.CharField()
    lines = MatchedLineSerializer(many=True)
    matched = MatchedPairSerializer(
        many=True, help_text="Each line of the pasted text that matched, with what it matched."
    )


class SearchOutputSerializer(serializers.Serializer):
    catalogue_version = serializers.CharField()
    results = SearchResultSerializer(many=True)


class OptimizerField(serializers.ChoiceField):
    def to_internal_value(self, data: object) -> str:
        if isinstance(data, str):
            return super().to_internal_value(memory.normalize_optimizer(data))
        # What ChoiceField answers to a value that is no optimizer's name (none is a number).
        self.fail("invalid_choice", input=data)


class PrecisionField(serializers.ChoiceField):
    def to_internal_value(self, data: object) -> str:
        if isinstance(data, str):
            return super().to_internal_value(memory.normalize_precision(data))
        self.fail("invalid_choice", input=data)


class MemoryEstimateInputSerializer(serializers.Serializer):
    # Not trimmed: what the pattern (the schema's too) says is what is taken.
    params = serializers.RegexField(
        memory.PARAMS_PATTERN,
        max_length=40,
        trim_whitespace=False,
        error_messages={"invalid": memory.PARAMS_REFUSED},
        help_text=(
            "Parameter count: 7000000000, 7,000,000,000, 7e9, 70e9, 7B, 1.3B, 350M (above 0, "
            "under 1e15; a fraction of one is rounded up)."
        ),
    )
    optimizer = OptimizerField(choices=memory.OPTIMIZERS, default="adamw")
    precision = PrecisionField(
        choices=list(memory.PRECISION_LABELS.items()),
        default="mixed",
        help_text=(
            "fp32; mixed = bf16/fp16 mixed precision with fp32 master weights; bf16 = pure. "
            "The frameworks' spellings are taken too: bf16-mixed, 16-mixed, fp16, --bf16 and "
            "--fp16 (mixed), bf16-true (pure bf16), 32-true (fp32)."
        ),
    )
    zero_stage = serializers.IntegerField(min_value=0, max_value=3, default=0)
    dp_size = serializers.IntegerField(min_value=1, max_value=memory.MAX_DP_SIZE, default=1)
    gpu_memory_gib = serializers.FloatField(
        required=False, min_value=0.001, max_value=1e6, help_text="GPU memory in GiB, e.g. 80."
    )

    def validate_params(self, value: str) -> int:
        try:
            return memory.parse_params(value)
        except memory.EstimateError as exc:
            raise serializers.ValidationError(str(exc)) from None


class ComponentBytesSerializer(serializers.Serializer):
    weights = serializers.IntegerField()
    gradients = serializers.IntegerField()
    optimizer_states = serializers.IntegerField()
    master_weights = serializers.IntegerField()


class MemoryEstimateSerializer(serializers.Serializer):
    params = serializers.IntegerField()
    optimizer = serializers.CharField()
    precision = serializers.CharField()
    zero_stage = serializers.IntegerField()
    dp_size = serializers.IntegerField()
    bytes_per_param = ComponentBytesSerializer(help_text="Before sharding.")
    sharded = serializers.ListField(
        child=serializers.CharField(), help_text="Components divided across the ranks."
    )
    bytes = ComponentBytesSerializer(help_text="Bytes per GPU of each component.")
    total_bytes = serializers.IntegerField(help_text="Per GPU; activations are not counted.")
    gpu_memory_bytes = serializers.IntegerField(allow_null=True)
    fits = serializers.BooleanField(allow_null=True, help_text="null when no GPU memory was given.")
    formula = serializers.CharField()
    notes = serializers.ListField(child=serializers.CharField())
