"""The masker's shortcuts give what the long way gives: hits of a scan handed on instead of a
second scan of the same bytes, and Presidio's per-recognizer regrouping skipped when it can
change nothing (rootcause/masking/scanner.py `scanned`, masker.py, recognizer.py
`LogAnalyzerEngine`). Each is compared, byte for byte and count for count, with the code path
that scans again and with Presidio's own AnalyzerEngine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpEngineProvider

from bench.genlog import generate_log
from rootcause.masking import Masker, mask_log
from rootcause.masking import masker as masker_module
from rootcause.masking.recognizer import (
    LogAnalyzerEngine,
    _in_recognizer_order,
    build_analyzer,
    build_registry,
)
from rootcause.masking.rules import Rule

LOGS = Path(__file__).resolve().parents[1] / "logs"
SECRET = b"k" * 32


def _inputs() -> list[bytes]:
    files = sorted(p for p in LOGS.rglob("*") if p.is_file() and p.suffix in (".log", ".txt"))
    assert len(files) > 100  # the test logs are there
    generated = [b"".join(generate_log(50 * 1024, seed=seed)) for seed in range(4)]
    return [p.read_bytes() for p in files] + generated


def _presidio_s_own_engine() -> AnalyzerEngine:
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "no_op",
            "models": [{"lang_code": "en", "model_name": "no_op"}],
        }
    )
    production = build_analyzer()
    return AnalyzerEngine(
        nlp_engine=provider.create_engine(),
        registry=build_registry(),
        supported_languages=["en"],
        context_aware_enhancer=production.context_aware_enhancer,
    )


def _masked(data: bytes, analyzer: Any, rules: list[Rule]) -> tuple[str, dict[str, int]]:
    masker = Masker(secret=SECRET, analyzer=analyzer, rules=rules)
    text = "".join(mask_log(lambda: [data], masker, chunk_size=16 * 1024))
    return text, dict(masker.counts)


@contextlib.contextmanager
def _no_reuse(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every scan made again: no guard hits handed to the analyzer or to find_learned."""

    @contextlib.contextmanager
    def scanned(buf: bytes, hits: Any) -> Iterator[None]:
        yield

    find_learned = masker_module.find_learned

    def scanning_again(buf: bytes, db: Any, entities: Any, hits: Any = None) -> Any:
        return find_learned(buf, db, entities, None)

    with monkeypatch.context() as patch:
        patch.setattr(masker_module, "scanned", scanned)
        patch.setattr(masker_module, "find_learned", scanning_again)
        yield


@pytest.mark.parametrize("with_rules", [False, True], ids=["built-in", "with-rules"])
def test_the_shortcuts_mask_as_the_long_way(
    monkeypatch: pytest.MonkeyPatch, with_rules: bool
) -> None:
    rules = [Rule("term", "gpu-node", "PROJECT_HOST")] if with_rules else []
    production, presidio = build_analyzer(), _presidio_s_own_engine()
    assert isinstance(production, LogAnalyzerEngine)
    for data in _inputs():
        fast = _masked(data, production, rules)
        with _no_reuse(monkeypatch):
            slow = _masked(data, presidio, rules)
        assert fast == slow


def test_the_shortcuts_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = {"hits": 0, "learned": 0, "regrouping skipped": 0}
    scanned, find_learned = masker_module.scanned, masker_module.find_learned
    skip = LogAnalyzerEngine._enhance_using_context

    def counting_scanned(buf: bytes, hits: Any) -> Any:
        taken["hits"] += hits is not None
        return scanned(buf, hits)

    def counting_learned(buf: bytes, db: Any, entities: Any, hits: Any = None) -> Any:
        taken["learned"] += hits is not None
        return find_learned(buf, db, entities, hits)

    def counting_skip(self: Any, text: str, raw: list[Any], *args: Any, **kwargs: Any) -> Any:
        result = skip(self, text, raw, *args, **kwargs)
        taken["regrouping skipped"] += result == raw
        return result

    monkeypatch.setattr(masker_module, "scanned", counting_scanned)
    monkeypatch.setattr(masker_module, "find_learned", counting_learned)
    monkeypatch.setattr(LogAnalyzerEngine, "_enhance_using_context", counting_skip)
    _masked(b"".join(generate_log(50 * 1024, seed=7)), build_analyzer(), [])

    assert all(taken.values()), taken


def test_regrouping_runs_when_results_are_not_in_recognizer_order() -> None:
    class First(EntityRecognizer):
        def load(self) -> None: ...

        def analyze(self, text: str, entities: Any, nlp_artifacts: Any = None) -> list[Any]:
            return []

    class Enhancing(First):
        def enhance_using_context(self, *args: Any, **kwargs: Any) -> list[Any]:
            return []

    a, b = First(["A"], name="a"), First(["B"], name="b")

    def result(recognizer: EntityRecognizer) -> RecognizerResult:
        return RecognizerResult(
            "A",
            0,
            1,
            0.9,
            recognition_metadata={RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id},
        )

    assert _in_recognizer_order([result(a), result(a), result(b)], [a, b])
    assert not _in_recognizer_order([result(b), result(a)], [a, b])  # out of order
    assert not _in_recognizer_order([RecognizerResult("A", 0, 1, 0.9)], [a, b])  # no id
    enhancing = Enhancing(["A"], name="e")
    assert not _in_recognizer_order([result(enhancing)], [enhancing])  # a recognizer enhances
