"""The masker's shortcuts give what the long way gives: hits of a scan handed on instead of a
second scan of the same bytes, Presidio's per-recognizer regrouping skipped when it can
change nothing, and Presidio handed only what it must decide (rootcause/masking/scanner.py
`scanned`, masker.py, focus.py, recognizer.py `LogAnalyzerEngine`). Each is compared, byte for
byte and count for count, with the code path that scans again and with Presidio's own
AnalyzerEngine reading every window and every finding."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpEngineProvider

from bench.genlog import generate_log
from bench.masking_corpus.cluster import dense_log
from rootcause.masking import Masker, mask_log
from rootcause.masking import focus as focus_module
from rootcause.masking import masker as masker_module
from rootcause.masking import scanner as scanner_module
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
    # issue 33's dense cluster lines: phone-like and card-like windows on every few lines
    dense = b"".join(dense_log(96 * 1024))
    return [p.read_bytes() for p in files] + generated + [dense]


def _presidio_s_own_engine(recognizers_file: str | None = None) -> AnalyzerEngine:
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "no_op",
            "models": [{"lang_code": "en", "model_name": "no_op"}],
        }
    )
    production = build_analyzer()
    return AnalyzerEngine(
        nlp_engine=provider.create_engine(),
        registry=build_registry(recognizers_file),
        supported_languages=["en"],
        context_aware_enhancer=production.context_aware_enhancer,
    )


def _masked(data: bytes, analyzer: Any, rules: list[Rule]) -> tuple[str, dict[str, int]]:
    masker = Masker(secret=SECRET, analyzer=analyzer, rules=rules)
    text = "".join(mask_log(lambda: [data], masker, chunk_size=16 * 1024))
    return text, dict(masker.counts)


def _judged_afresh(buf: bytes, specs: Any) -> Any:
    """scanner._remembered remembering nothing: every anchor confirmed on its own."""
    plans = [s.plan for s in specs]
    return lambda pid, start, end: scanner_module.confirm_one(buf, plans[pid], start, end)


@contextlib.contextmanager
def _no_reuse(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every scan made again: no guard hits handed to the analyzer or to find_learned, and
    every anchor confirmed again (no learning pass's verdicts, no scan with the other
    patterns alone, no verdict remembered)."""

    @contextlib.contextmanager
    def scanned(buf: bytes, hits: Any) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def confirmed(known: Any) -> Iterator[None]:
        yield

    find_learned = masker_module.find_learned

    def scanning_again(buf: bytes, db: Any, entities: Any, hits: Any = None) -> Any:
        return find_learned(buf, db, entities, None)

    def the_long_way(buf: bytes, known: Any, limit: int) -> None:
        return None

    with monkeypatch.context() as patch:
        patch.setattr(masker_module, "scanned", scanned)
        patch.setattr(masker_module, "confirmed", confirmed)
        patch.setattr(masker_module, "find_learned", scanning_again)
        patch.setattr(masker_module, "find_with_verdicts", the_long_way)
        patch.setattr(scanner_module, "_remembered", _judged_afresh)
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


def test_the_learning_pass_s_verdicts_mask_as_the_long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The light client's path (Hyperscan recognizers alone): the masking pass taking the
    learning pass's verdicts on its patterns (and scanning with the other patterns alone,
    verdicts.py) masks as scanning with them all and confirming every anchor again."""
    confirms = {"fast": 0, "slow": 0}
    confirm = scanner_module.confirm_one
    with_verdicts = masker_module.find_with_verdicts
    chunks = {"rest scan": 0, "long way": 0}

    def counting_chunks(buf: bytes, known: Any, limit: int) -> Any:
        found = with_verdicts(buf, known, limit)
        chunks["long way" if found is None else "rest scan"] += 1
        return found

    for data in _inputs():
        for way in ("fast", "slow"):

            def counting(*args: Any, way: str = way) -> Any:
                confirms[way] += 1
                return confirm(*args)

            with monkeypatch.context() as patch:
                patch.setattr(scanner_module, "confirm_one", counting)
                patch.setattr(masker_module, "find_with_verdicts", counting_chunks)
                if way == "fast":
                    fast = _masked(data, None, [])
                else:
                    with _no_reuse(monkeypatch):
                        slow = _masked(data, None, [])
        assert fast == slow
    assert confirms["fast"] < 0.8 * confirms["slow"], confirms  # the verdicts were taken
    assert chunks["rest scan"] > 10 * chunks["long way"], chunks  # and the shorter scan


# An operator's recognizers of types ours find too: Presidio's duplicate removal then weighs
# our findings against theirs, over the whole chunk.
_OVERLAPPING_YAML = """
recognizers:
  - name: "Short phones"
    supported_language: "en"
    supported_entity: "PHONE_NUMBER"
    patterns:
      - name: "phone"
        regex: "\\\\b\\\\d{3}[ -]\\\\d{4}\\\\b"
        score: 0.95
  - name: "Lab hosts"
    supported_language: "en"
    supported_entity: "HOSTNAME"
    patterns:
      - name: "lab"
        regex: "\\\\b[a-z0-9-]+\\\\.lab\\\\b"
        score: 1.0
"""


def test_an_operator_s_recognizers_of_our_types_mask_as_the_long_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "recognizers.yaml"
    path.write_text(_OVERLAPPING_YAML)
    production = build_analyzer(str(path))
    presidio = _presidio_s_own_engine(str(path))
    assert isinstance(production, LogAnalyzerEngine)
    inputs = _inputs()[-5:]  # the generated logs and the dense cluster lines
    assert any(b".lab" in data for data in inputs)
    for data in inputs:
        fast = _masked(data, production, [])
        with _no_reuse(monkeypatch):
            slow = _masked(data, presidio, [])
        assert fast == slow


def test_the_shortcuts_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = {"hits": 0, "learned": 0, "regrouping skipped": 0, "focused": 0}
    log_findings, find_learned = focus_module.log_findings, masker_module.find_learned
    skip = LogAnalyzerEngine._enhance_using_context
    analyze_focused = LogAnalyzerEngine.analyze_focused

    def counting_findings(buf: bytes, hits: Any = None) -> Any:
        taken["hits"] += hits is not None
        return log_findings(buf, hits)

    def counting_focused(self: Any, text: str, focus: Any, ad_hoc: Any) -> Any:
        taken["focused"] += 1
        return analyze_focused(self, text, focus, ad_hoc)

    def counting_learned(buf: bytes, db: Any, entities: Any, hits: Any = None) -> Any:
        taken["learned"] += hits is not None
        return find_learned(buf, db, entities, hits)

    def counting_skip(self: Any, text: str, raw: list[Any], *args: Any, **kwargs: Any) -> Any:
        result = skip(self, text, raw, *args, **kwargs)
        taken["regrouping skipped"] += result == raw
        return result

    monkeypatch.setattr(focus_module, "log_findings", counting_findings)
    monkeypatch.setattr(LogAnalyzerEngine, "analyze_focused", counting_focused)
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


def test_presidio_is_shown_the_findings_its_duplicate_removal_could_touch() -> None:
    from rootcause.masking.focus import _split
    from rootcause.masking.scanner import Candidate

    inside, touching, apart = (
        Candidate(12, 14, "PHONE_NUMBER", 5),
        Candidate(0, 11, "SECRET", 5),
        Candidate(30, 40, "IP_ADDRESS", 5),
    )
    host = Candidate(50, 60, "HOSTNAME", 5)
    ours = [touching, inside, apart, host]
    near, far = _split(ours, {"card": [(10, 20)]}, frozenset({"HOSTNAME"}))
    assert near == [touching, inside, host]
    assert far == [apart]
    assert _split(ours, {}, frozenset()) == ([], ours)


def test_a_verdict_per_window_is_the_verdict_per_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values found by their end (host names) judged once per window of equal bytes
    (scanner._confirm_by_window) are judged as each anchor on its own: on the test logs, the
    dense cluster lines and random host-like text (names that repeat with other bytes around
    them: a '.', a '-', '(', a file extension, the start and end of the buffer)."""
    import random

    rng = random.Random(33)
    pieces = [b"gpu-node-17", b".acme.internal", b".corp.example.com", b".it", b".log", b".py",
              b"(", b" ", b"\n", b"-", b".", b"..", b"_", b"x", b"3", b"sklearn.cluster",
              b"host=", b"node1.lan", b".tar.gz", b"Gpu-Node-17.ACME.io"]  # fmt: skip
    randoms = [b"".join(rng.choice(pieces) for _ in range(400)) for _ in range(300)]

    def per_anchor(buf: bytes, spec: Any, end: int, seen: Any, runs: Any = None) -> Any:
        return scanner_module.confirm_candidate(buf, spec, end, end)

    for data in [*_inputs(), *randoms]:
        for specs in (scanner_module.SPECS, scanner_module.LEARNING_SPECS):
            windowed = scanner_module.find_candidates(data, specs)
            with monkeypatch.context() as patch:
                patch.setattr(scanner_module, "_confirm_by_window", per_anchor)
                assert scanner_module.find_candidates(data, specs) == windowed


def test_assignment_verdicts_judged_once_a_buffer_are_each_anchor_s_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """validate_assignment judges a (key name, value) once per buffer: the candidates are
    those of judging every anchor on its own, and no value is held once they are found."""
    from rootcause.masking import validators as validators_module

    class Never(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:
            return default

    judged = 0
    for data in _inputs():
        for specs in (scanner_module.SPECS, scanner_module.REST_SPECS):
            remembered = scanner_module.find_candidates(data, specs)
            assert validators_module._ASSIGNMENT_VERDICTS == {}
            with monkeypatch.context() as patch:
                patch.setattr(validators_module, "_ASSIGNMENT_VERDICTS", Never())
                assert scanner_module.find_candidates(data, specs) == remembered
            judged += sum(c.entity == "SECRET" for c in remembered)
    assert judged > 100, judged  # the inputs hold assignments


def test_verdicts_remembered_for_the_log_are_each_anchor_s_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An anchor's verdict taken from an equal one's (scanner._remembered: the same pattern,
    length and bytes from its context to its line's end, anywhere in the log) is its own: the
    light client's and Presidio's maskings, on the test logs and on random lines of the values
    whose validators read before them (an address after a version word on the line above, a
    login after ssh, a key name, a Databricks frame), repeated with other bytes around them and
    across chunks of 2 KiB, are those of confirming every anchor on its own."""
    import random

    rng = random.Random(33)
    pieces = [b"cudnn ", b"version\n", b"10.0.0.1", b"10.2.3.4.5", b"ssh ", b"scp -r ",
              b"jdoe@gpu-node-17.corp.example.com", b"jdoe@gpu-node-17", b":~$ ", b"password=",
              b"HF_TOKEN=", b"token: ", b"pad_token=", b"aB3dE5fG7hJ9kL1mN3pQ", b";Name=x",
              b"phone: ", b"+44 20 7946 0393", b"06 39 98 19 97", b": ", b"= ", b"5 ",
              b"4111 1111 1111 1111", b"File <command-", b"wandb: commit ",
              b"0123456789abcdef0123456789abcdef01234567", b"ib0:", b"fe80::1", b"::",
              b"\n", b" ", b"=", b".", b"x", b"3", b"_", b"-"]  # fmt: skip
    # short lines of a few pieces: the same line comes back after other lines
    randoms = [
        b"".join(b"".join(rng.choices(pieces, k=rng.randint(1, 3))) + b"\n" for _ in range(800))
        for _ in range(6)
    ]
    for data in [*_inputs(), *randoms]:
        for analyzer in (None, "auto"):
            remembered = _masked_in(data, analyzer)
            with monkeypatch.context() as patch:
                patch.setattr(scanner_module, "_remembered", _judged_afresh)
                assert _masked_in(data, analyzer) == remembered


def _masked_in(data: bytes, analyzer: str | None, chunk_size: int = 2048) -> str:
    masker = Masker(secret=SECRET, analyzer=analyzer)
    return "".join(mask_log(lambda: [data], masker, chunk_size=chunk_size))


def test_the_command_line_s_bytes_are_the_masked_text_encoded() -> None:
    """mask_log_utf8 (what `rootcause mask` writes) gives mask_log's text UTF-8 encoded, on
    the test logs and on bytes that are not valid UTF-8, NULs, CRLF and non-Latin-1 text."""
    odd = (
        b"user=jdoe \xff\xfe host=gpu-node-17\r\n\x00password=s3cr3tPassw0rd!\n"
        b"caf\xc3\xa9 \xe2\x80\xa6 10.0.0.1 \xed\xa0\x80 jdoe@gpu-node-17:~$ ls\n" * 300
    )
    for data in [*_inputs(), odd]:
        for analyzer in (None, "auto", masker_module.WHEN_NEEDED):
            text = "".join(mask_log(partial(list, [data]), Masker(SECRET, analyzer=analyzer), 4096))
            masker = Masker(SECRET, analyzer=analyzer)
            raw = b"".join(masker_module.mask_log_utf8(partial(list, [data]), masker, 4096))
            assert raw == text.encode("utf-8", "surrogatepass")


def test_a_log_longer_than_the_kept_chunks_is_read_again_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mask_log_utf8 keeps the learning pass's chunks for the masking pass up to a size and
    reads a longer log again: both ways give the same bytes, and the log is read once when
    kept, twice when not."""
    data = b"".join(_inputs())
    reads: list[int] = []

    def read() -> list[bytes]:
        reads.append(1)
        return [data]

    def masked() -> bytes:
        masker = Masker(SECRET, analyzer=masker_module.WHEN_NEEDED)
        return b"".join(masker_module.mask_log_utf8(read, masker, 4096))

    kept = masked()
    assert len(reads) == 1
    monkeypatch.setattr(masker_module, "_MAX_KEPT_BYTES", 10_000)
    assert masked() == kept
    assert len(reads) == 3
    text = "".join(
        mask_log(partial(list, [data]), Masker(SECRET, analyzer=masker_module.WHEN_NEEDED), 4096)
    )
    assert kept == text.encode("utf-8", "surrogatepass")
