"""The masking patterns behind Presidio's interfaces: an EntityRecognizer and an analyzer."""

from __future__ import annotations

import os

# Presidio's e-mail validation calls tldextract, which fetches the public suffix list over the
# network unless this is empty. Must be set before presidio imports tldextract.
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

from presidio_analyzer import (
    AnalyzerEngine,
    EntityRecognizer,
    RecognizerRegistry,
    RecognizerResult,
)
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngineProvider

from rootcause.masking.patterns import ENTITIES
from rootcause.masking.scanner import (
    Candidate,
    find_candidates,
    find_private_keys,
    resolve,
)

_SCORE = 0.9


def _char_offsets(text: str, buf: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if text.isascii():
        return spans
    # Byte offsets to character offsets, one left-to-right pass over sorted positions.
    points = sorted({p for span in spans for p in span})
    mapping: dict[int, int] = {}
    chars = 0
    prev = 0
    for p in points:
        chars += len(buf[prev:p].decode("utf-8", "surrogatepass"))
        mapping[p] = chars
        prev = p
    return [(mapping[s], mapping[e]) for s, e in spans]


class HyperscanRecognizer(EntityRecognizer):
    """All log-masking patterns in one Hyperscan pass, reported as Presidio results."""

    def __init__(self) -> None:
        super().__init__(
            supported_entities=list(ENTITIES),
            name="HyperscanLogRecognizer",
            supported_language="en",
        )

    def load(self) -> None:
        find_candidates(b"")  # compiles the shared database now rather than on first text

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        buf = text.encode("utf-8", "surrogatepass")
        keys, _ = find_private_keys(buf, in_key=False)
        kept = resolve(find_candidates(buf), keys)
        kept += [Candidate(s, e, "PRIVATE_KEY", 0) for s, e in keys]
        wanted = set(entities) if entities else set(ENTITIES)
        kept = [c for c in kept if c.entity in wanted]
        offsets = _char_offsets(text, buf, [(c.start, c.end) for c in kept])
        return [
            RecognizerResult(c.entity, s, e, _SCORE)
            for c, (s, e) in zip(kept, offsets, strict=True)
        ]


def build_analyzer() -> AnalyzerEngine:
    """An AnalyzerEngine with the no_op NLP engine (no spaCy model) and only our recognizer."""
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "no_op",
            "models": [{"lang_code": "en", "model_name": "no_op"}],
        }
    )
    registry = RecognizerRegistry(recognizers=[HyperscanRecognizer()], supported_languages=["en"])
    return AnalyzerEngine(
        nlp_engine=provider.create_engine(), registry=registry, supported_languages=["en"]
    )
