"""The production analyzer: Presidio's AnalyzerEngine over a registry of log recognizers.

The registry holds
- ``HyperscanRecognizer``: every log pattern of ``patterns.py`` in one Hyperscan pass (the bulk:
  user and host names, addresses, tokens and keys, secrets, phones, cards);
- Presidio's own validated recognizers (credit cards with Luhn, IBANs with their checksum, phone
  numbers through ``phonenumbers``, crypto wallets), each wrapped in ``PrefilteredRecognizer``:
  a Hyperscan prefilter finds the few spans that could be one and Presidio's recognizer runs on
  those windows only, not over a megabyte of log lines;
- the operator's recognizers, from a YAML file in Presidio's own format
  (``RecognizerRegistry.add_recognizers_from_yaml``; the service reads its path from the
  ``MASKING_RECOGNIZERS_FILE`` setting).

An organisation's own rules (``rules.py``) are not in the shared registry: ``Masker`` passes
them to each ``analyze`` call as an ad-hoc recognizer (``RuleSetRecognizer``), so they apply to
that organisation's logs only while the registry stays one per process.

It runs on the ``no_op`` NLP engine: no spaCy model is loaded, and none is downloaded.

Importing this module imports presidio (the server extra); the light client never does, and
``Masker`` then runs the Hyperscan recognizers alone (see ``masker.default_analyzer``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

# Presidio's e-mail validation calls tldextract, which fetches the public suffix list over the
# network unless this is empty. Must be set before presidio imports tldextract.
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

from presidio_analyzer import (
    AnalyzerEngine,
    EntityRecognizer,
    RecognizerRegistry,
    RecognizerResult,
)
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngineProvider
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    CryptoRecognizer,
    IbanRecognizer,
    PhoneRecognizer,
)

from rootcause.masking.offsets import char_offsets
from rootcause.masking.patterns import ENTITIES
from rootcause.masking.prefilters import (
    PREFILTERS,
    Window,
    prefilter_database,
    trimmed,
    windows,
)
from rootcause.masking.rules import RuleSet
from rootcause.masking.scanner import Candidate, find_candidates, log_findings
from rootcause.masking.validators import phone_bounds_ok

_SCORE = 0.9
PRIORITY = "priority"

# A window of a prefiltered recognizer: (lo, hi) as it reads it, then (lo, hi) trimmed to
# where its findings can lie (prefilters.trimmed).
WindowPair = tuple[int, int, int, int]


@dataclass(frozen=True)
class Focus:
    """What ``LogAnalyzerEngine.analyze_focused`` hands its log recognizers for one text:
    ``HyperscanRecognizer`` reports ``ours`` instead of scanning, each prefiltered recognizer
    reads only its ``windows`` (by recognizer id), both for the text encoded as ``buf``."""

    buf: bytes
    ours: list[Candidate]
    windows: dict[str, list[tuple[int, int]]]


_FOCUS: ContextVar[Focus | None] = ContextVar("rootcause_masking_focus", default=None)


def _focus_on(buf: bytes) -> Focus | None:
    focus = _FOCUS.get()
    return focus if focus is not None and focus.buf == buf else None


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
        focus = _focus_on(buf)
        kept = focus.ours if focus is not None else log_findings(buf)
        wanted = set(entities) if entities else set(ENTITIES)
        kept = [c for c in kept if c.entity in wanted]
        offsets = char_offsets(text, buf, [(c.start, c.end) for c in kept])
        return [
            RecognizerResult(c.entity, s, e, _SCORE, recognition_metadata={PRIORITY: c.priority})
            for c, (s, e) in zip(kept, offsets, strict=True)
        ]


class RuleSetRecognizer(EntityRecognizer):
    """An organisation's terms and patterns (one small Hyperscan database) as a recognizer."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        super().__init__(
            supported_entities=sorted(rules.entities),
            name="OrganizationRulesRecognizer",
            supported_language="en",
        )

    def load(self) -> None:
        pass  # compiled with the RuleSet

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        # ``entities`` is what the registry supports, which an ad-hoc recognizer's types are
        # not part of: every finding of the organisation's rules is wanted.
        buf = text.encode("utf-8", "surrogatepass")
        found = self.rules.find(buf)
        offsets = char_offsets(text, buf, [(c.start, c.end) for c in found])
        return [
            RecognizerResult(c.entity, s, e, _SCORE, recognition_metadata={PRIORITY: c.priority})
            for c, (s, e) in zip(found, offsets, strict=True)
        ]


class PrefilteredRecognizer(EntityRecognizer):
    """A Presidio recognizer run only on the windows that a cheap Hyperscan prefilter finds.

    Presidio's validated recognizers are regular expressions in Python (``regex``) or
    ``phonenumbers`` matchers that would each walk the whole text; logs rarely hold a card or
    an IBAN, so a prefilter that any candidate must match cuts their cost to the windows
    around its hits (a character on each side too, so that their word boundaries hold).
    """

    def __init__(
        self,
        inner: EntityRecognizer,
        prefilter: bytes,
        window: Window,
        keep: Callable[[str, int, int], bool] | None = None,
    ) -> None:
        self.inner = inner
        self.window = window
        self.keep = keep  # a finding (text, start, end) it reports; None: every one
        self._db = prefilter_database(prefilter)
        self._name = f"Prefiltered{type(inner).__name__}"
        super().__init__(
            supported_entities=list(inner.supported_entities),
            name=self._name,
            supported_language=inner.supported_language,
        )

    def load(self) -> None:
        pass  # the inner recognizer loaded itself

    def _windows(self, buf: bytes) -> list[tuple[int, int]]:
        focus = _focus_on(buf)
        if focus is not None:
            return focus.windows.get(self.id, [])
        return windows(self._db, self.window, buf)

    def window_pairs(self, buf: bytes) -> list[WindowPair]:
        """Every window it would read in ``buf``, each with its trimmed span."""
        return [
            (lo, hi, *trimmed(self.window, buf, lo, hi))
            for lo, hi in windows(self._db, self.window, buf)
        ]

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        buf = text.encode("utf-8", "surrogatepass")
        windows = self._windows(buf)
        if not windows:
            return []
        results: list[RecognizerResult] = []
        for lo, hi in char_offsets(text, buf, windows):
            # No NLP artifacts: the validated recognizers need none (no_op engine).
            for r in self.inner.analyze(text[lo:hi], entities, None):  # type: ignore[arg-type]
                r.start += lo
                r.end += lo
                if self.keep is not None and not self.keep(text, r.start, r.end):
                    continue
                # The analyzer keeps only results that name a recognizer of its registry.
                r.recognition_metadata = {
                    **(r.recognition_metadata or {}),
                    RecognizerResult.RECOGNIZER_NAME_KEY: self._name,
                    RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                }
                results.append(r)
        return results


def phone_bounded(text: str, start: int, end: int) -> bool:
    """Whether a phone number ``phonenumbers`` found in ``text[start:end]`` is bounded as our
    phone patterns require (``validators.phone_bounds_ok``): "212-555-0143.5", "-7" after it or
    "x=" before it make it part of a longer number, which neither path masks."""
    lo = max(0, start - 1)
    piece = text[lo : end + 2].encode("utf-8", "surrogatepass")
    s = len(text[lo:start].encode("utf-8", "surrogatepass"))
    return phone_bounds_ok(piece, s, s + len(text[start:end].encode("utf-8", "surrogatepass")))


def validated_recognizers() -> list[PrefilteredRecognizer]:
    """Presidio's checksum- and format-validated recognizers behind their prefilters."""
    return [
        PrefilteredRecognizer(
            CreditCardRecognizer(),
            *PREFILTERS["card"],
        ),
        PrefilteredRecognizer(
            IbanRecognizer(),
            *PREFILTERS["iban"],
        ),
        PrefilteredRecognizer(
            PhoneRecognizer(),
            *PREFILTERS["phone"],
            keep=phone_bounded,
        ),
        PrefilteredRecognizer(
            CryptoRecognizer(),
            *PREFILTERS["crypto"],
        ),
    ]


class NoContextEnhancer(ContextAwareEnhancer):
    """Leaves scores as the recognizers gave them.

    Presidio's default (lemma-based) enhancer needs the tokens of an NLP model, which the no_op
    engine does not produce (Presidio warns so), and it deep-copies every result of a chunk:
    measured, a quarter of the analyzer's time on a PII-dense log. Every finding is masked
    whatever its score, so there is nothing for it to decide.
    """

    def __init__(self) -> None:
        super().__init__(0, 0, 0, 0)

    def enhance_using_context(
        self,
        text: str,
        raw_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts,
        recognizers: list[EntityRecognizer],
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        return raw_results


class LogAnalyzerEngine(AnalyzerEngine):
    """Presidio's ``AnalyzerEngine``, less a regrouping pass that leaves our results as they are.

    ``_enhance_using_context`` sorts the results out per recognizer (two scans of every result
    for each recognizer) for each one's own context enhancement, then hands them to the
    analyzer's enhancer (``NoContextEnhancer`` here). When no recognizer enhances (none
    overrides ``EntityRecognizer.enhance_using_context``, which returns its input), the
    recognizer ids are distinct and the results already come grouped in the recognizers' order
    (each recognizer's results are appended in turn), that pass returns the same results in
    the same order: they are returned as they are. In any other case Presidio's pass runs.
    """

    def _enhance_using_context(
        self,
        text: str,
        raw_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts,
        recognizers: list[EntityRecognizer],
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        if type(self.context_aware_enhancer) is NoContextEnhancer and _in_recognizer_order(
            raw_results, recognizers
        ):
            return list(raw_results)
        return super()._enhance_using_context(
            text, raw_results, nlp_artifacts, recognizers, context
        )

    # Handing Presidio only what it must decide (Masker's focused path): the log patterns'
    # findings come from the Masker, and the validated recognizers read only the windows
    # where a finding of theirs could change the masking.

    def focusable(self) -> bool:
        """Whether the registry is the production one: one ``HyperscanRecognizer``, whose
        findings a focused analysis hands in."""
        return sum(isinstance(r, HyperscanRecognizer) for r in self.registry.recognizers) == 1

    def prefiltered(self) -> list[PrefilteredRecognizer]:
        return [r for r in self.registry.recognizers if isinstance(r, PrefilteredRecognizer)]

    def other_entities(self, ad_hoc: Sequence[EntityRecognizer]) -> frozenset[str]:
        """The types the registry's other recognizers (the operator's) and ``ad_hoc`` find:
        Presidio drops a finding of ours that one of theirs of the same type contains."""
        ours = (HyperscanRecognizer, PrefilteredRecognizer)
        return frozenset(
            entity
            for r in [*self.registry.recognizers, *ad_hoc]
            if not isinstance(r, ours)
            for entity in r.supported_entities
        )

    def focus(
        self, buf: bytes, ours: list[Candidate], windows: dict[str, list[tuple[int, int]]]
    ) -> Focus:
        return Focus(buf, ours, windows)

    def analyze_focused(
        self,
        text: str,
        focus: object,
        ad_hoc: Sequence[EntityRecognizer],
    ) -> list[RecognizerResult]:
        """Presidio's ``analyze`` of ``text`` (encoded as ``focus.buf``) with the log
        recognizers told what to report and where to read (``Focus``); the operator's and the
        ad-hoc recognizers read the whole text."""
        if not isinstance(focus, Focus):
            raise TypeError(f"a Focus, not {type(focus).__name__}")
        token = _FOCUS.set(focus)
        try:
            return self.analyze(text=text, language="en", ad_hoc_recognizers=list(ad_hoc) or None)
        finally:
            _FOCUS.reset(token)


_PLAIN_ENHANCE = EntityRecognizer.enhance_using_context


def _in_recognizer_order(
    results: list[RecognizerResult], recognizers: list[EntityRecognizer]
) -> bool:
    """Whether ``results`` are grouped by recognizer in the order of ``recognizers`` (every
    result naming one of them), the recognizers' ids distinct and none enhancing by context."""
    index: dict[str, int] = {}
    for k, recognizer in enumerate(recognizers):
        plain = type(recognizer).enhance_using_context is _PLAIN_ENHANCE
        if not plain or "enhance_using_context" in vars(recognizer):
            return False
        index[recognizer.id] = k
    if len(index) != len(recognizers):
        return False
    key = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
    last = 0
    for result in results:
        meta = result.recognition_metadata
        rid = meta.get(key) if meta else None
        at = index.get(rid) if isinstance(rid, str) else None
        if at is None or at < last:
            return False
        last = at
    return True


def build_registry(recognizers_file: str | None = None) -> RecognizerRegistry:
    registry = RecognizerRegistry(
        recognizers=[HyperscanRecognizer(), *validated_recognizers()], supported_languages=["en"]
    )
    if recognizers_file:
        # Presidio's own format: pattern and deny-list recognizers, one YAML file.
        registry.add_recognizers_from_yaml(recognizers_file)
    return registry


def build_analyzer(recognizers_file: str | None = None) -> AnalyzerEngine:
    """An AnalyzerEngine (``LogAnalyzerEngine``) on the no_op NLP engine (no spaCy model) with
    the production registry."""
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "no_op",
            "models": [{"lang_code": "en", "model_name": "no_op"}],
        }
    )
    return LogAnalyzerEngine(
        nlp_engine=provider.create_engine(),
        registry=build_registry(recognizers_file),
        supported_languages=["en"],
        context_aware_enhancer=NoContextEnhancer(),
    )


@lru_cache(maxsize=4)
def shared_analyzer(recognizers_file: str | None = None) -> AnalyzerEngine:
    """One analyzer per process and recognizer file: building one compiles every recognizer."""
    return build_analyzer(recognizers_file)
