"""An organisation's own masking rules: deny-list terms and patterns, validated and compiled.

The service stores them per organisation (``accounts.MaskingRule``) and passes them to
``Masker(rules=...)`` for that organisation's diagnoses only; this module is the one place
that decides what a valid rule is, for the API, the settings page and the admin alike.

- A **term** is a literal, matched case-insensitively (ASCII letters) where it does not touch an
  ASCII letter or digit on a side where the term itself begins or ends with one: ``acme`` is
  masked in ``acme-prod``, ``ckpt_acme_v2``, ``ACME.log`` and ``user@acme``, not in ``acmeish``
  or ``myacme``. ``_``, ``-`` and ``.`` separate words here, as in file names.
- A **pattern** is a regular expression in Hyperscan's syntax (PCRE without back-references or
  look-around), case-sensitive unless it says ``(?i)``, ``^`` and ``$`` at line ends, ``.``
  never a newline. Hyperscan runs it as an automaton: there is no backtracking to go
  catastrophic, and what it cannot run that way it refuses to compile, which refuses the rule.
  A match never crosses a line: the longest one within its line is masked.

Each rule names the entity type its findings are counted and replaced under (``label``,
upper-case, ``ORG_TERM`` or ``ORG_PATTERN`` by default). A label of a built-in type
(``HOSTNAME``) is masked as that type (``<HOST_1>``); any other gets numbered pseudonyms of its
own (``<PROJECT_CODENAME_1>``), keyed per log like the built-in ones.

Plain Python on Hyperscan: the light client can run rules too, though only the service has any.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import hyperscan

from rootcause.masking.scanner import Candidate

TERM: Literal["term"] = "term"
PATTERN: Literal["pattern"] = "pattern"
KINDS = (TERM, PATTERN)
DEFAULT_LABEL = {TERM: "ORG_TERM", PATTERN: "ORG_PATTERN"}

# The service's defaults (config/settings.py may lower or raise the first two).
MAX_VALUE_LENGTH = 200
MAX_RULES = 200
MAX_LABEL_LENGTH = 40
# A term of one character would mask every standalone "a" or "x" of a log.
MIN_TERM_LENGTH = 2

# An organisation's label wins a tie on the same span against a built-in type: they named it.
RULE_PRIORITY = 0

_LABEL = re.compile(r"[A-Z][A-Z0-9_]*")
_LABEL_SEPARATORS = re.compile(r"[\s\-]+")


class RuleError(ValueError):
    """A rule refused, with a sentence that names the problem (shown to the person as is)."""


@dataclass(frozen=True, slots=True)
class Rule:
    kind: Literal["term", "pattern"]
    value: str
    label: str


def normalize_label(label: str, kind: str) -> str:
    """``project codename`` -> ``PROJECT_CODENAME``; empty -> the kind's default."""
    name = _LABEL_SEPARATORS.sub("_", label.strip()).upper()
    if not name:
        return DEFAULT_LABEL[kind]
    if len(name) > MAX_LABEL_LENGTH or not _LABEL.fullmatch(name):
        raise RuleError(
            f"The label {label.strip()!r} must be a letter followed by letters, digits or "
            f"underscores, at most {MAX_LABEL_LENGTH} characters (e.g. PROJECT_CODENAME)."
        )
    return name


def validate_rule(
    kind: str, value: str, label: str = "", *, max_length: int = MAX_VALUE_LENGTH
) -> Rule:
    """The rule as it is stored and run, or ``RuleError`` naming what is wrong with it."""
    if kind not in KINDS:
        raise RuleError(f"{kind!r} is not a kind of rule: term or pattern.")
    if kind == TERM:
        value = value.strip()
    what = "term" if kind == TERM else "pattern"
    if not value:
        raise RuleError(f"The {what} is empty.")
    if len(value) > max_length:
        raise RuleError(f"The {what} has {len(value)} characters; at most {max_length}.")
    if "\n" in value or "\r" in value:
        raise RuleError(f"The {what} must be on one line: logs are masked line by line.")
    if kind == TERM:
        if len(value) < MIN_TERM_LENGTH:
            raise RuleError(f"The term must have at least {MIN_TERM_LENGTH} characters.")
        if not any(c.isalnum() for c in value):
            raise RuleError("The term must contain a letter or a digit.")
    else:
        if not value.isascii():
            raise RuleError(
                "Patterns are ASCII: put a name with other characters in a term instead."
            )
        _compile_one(value)
    return Rule(kind, value, normalize_label(label, kind))  # type: ignore[arg-type]


def validate_rules(rules: Sequence[Rule], *, max_rules: int = MAX_RULES) -> None:
    """The whole set of an organisation's rules: few enough, and compiling together."""
    if len(rules) > max_rules:
        raise RuleError(f"An organisation may have at most {max_rules} masking rules.")
    try:
        compile_rules(tuple(rules))
    except hyperscan.error as exc:
        raise RuleError(f"The rules do not compile together: {_sentence(exc)}") from None


def _sentence(exc: hyperscan.error) -> str:
    # Hyperscan's messages are sentences already ("Back-references are unsupported.");
    # a multi-pattern one is prefixed with the expression's index, which means nothing here.
    return re.sub(r"^Expression \d+: ", "", str(exc)) or "Hyperscan refused it."


_PATTERN_FLAGS = hyperscan.HS_FLAG_SOM_LEFTMOST | hyperscan.HS_FLAG_MULTILINE
_TERM_FLAGS = hyperscan.HS_FLAG_SOM_LEFTMOST | hyperscan.HS_FLAG_CASELESS


class _StreamDatabase:
    """Arbitrary patterns with start offsets, compiled and scanned in streaming mode.

    Not the block mode of ``scanner.Database``: with the Hyperscan build we ship (5.4.12 in
    python-hyperscan 0.9.1), a block-mode scan of a SOM_LEFTMOST database crashes the process
    (SIGSEGV) for ordinary patterns such as ``b+c`` over a few hundred ``a`` then ``c``; random
    patterns of a fuzz crash it within seconds. Our own patterns are known and tested; people's
    are not, and a worker must not die of one. Streaming mode with the large SOM horizon ran
    the same fuzz clean, with every span a match of the pattern. One stream per scan, so no
    state carries between chunks.
    """

    def __init__(self, expressions: list[bytes], flags: list[int]) -> None:
        self._db = hyperscan.Database(
            mode=hyperscan.HS_MODE_STREAM | hyperscan.HS_MODE_SOM_HORIZON_LARGE
        )
        self._db.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=flags,
        )
        self._lock = threading.Lock()  # one scratch per database

    def scan(self, buf: bytes) -> list[tuple[int, int, int]]:
        hits: list[tuple[int, int, int]] = []
        append = hits.append

        def on_match(pid: int, start: int, end: int, flags: int, context: object) -> None:
            append((pid, start, end))

        with self._lock, self._db.stream(match_event_handler=on_match) as stream:
            stream.scan(buf)
        return hits


def _compile_one(pattern: str) -> None:
    try:
        _StreamDatabase([pattern.encode()], [_PATTERN_FLAGS])
    except hyperscan.error as exc:
        message = _sentence(exc)
        if "empty buffer" in message:
            message = "It matches the empty string, so it would match everywhere."
        raise RuleError(f"The pattern is refused: {message}") from None


def _is_alnum(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122


def _literal(term: bytes) -> bytes:
    """A Hyperscan expression matching ``term`` exactly: every non-alphanumeric byte escaped."""
    return b"".join(bytes([c]) if _is_alnum(c) else b"\\x%02x" % c for c in term)


class RuleSet:
    """One organisation's rules compiled into one small Hyperscan database."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self.entities = frozenset(r.label for r in self.rules)
        self._terms = [r.value.encode() if r.kind == TERM else b"" for r in self.rules]
        expressions = [
            _literal(term) if r.kind == TERM else r.value.encode()
            for r, term in zip(self.rules, self._terms, strict=True)
        ]
        flags = [_TERM_FLAGS if r.kind == TERM else _PATTERN_FLAGS for r in self.rules]
        self._db = _StreamDatabase(expressions, flags) if expressions else None

    def find(self, buf: bytes) -> list[Candidate]:
        """Every finding in ``buf`` (overlapping; the masker resolves them with the rest)."""
        if self._db is None:
            return []
        newlines: list[int] | None = None
        longest: dict[tuple[int, int], int] = {}
        for pid, start, end in self._db.scan(buf):
            if self._terms[pid]:
                term = self._terms[pid]
                if _is_alnum(term[0]) and start > 0 and _is_alnum(buf[start - 1]):
                    continue
                if _is_alnum(term[-1]) and end < len(buf) and _is_alnum(buf[end]):
                    continue
            else:
                # A pattern may cross a line ([^x]+, \s); evidence is cited by line, so only
                # the matches within their line count.
                if newlines is None:
                    newlines = [m.start() for m in re.finditer(b"\n", buf)]
                i = bisect_left(newlines, start)
                if i < len(newlines) and newlines[i] < end:
                    continue
            if longest.get((pid, start), -1) < end:
                longest[(pid, start)] = end
        found = []
        for (pid, start), end in longest.items():
            # A pattern's '.' or [^…] may stop inside a UTF-8 sequence: mask whole characters.
            while start > 0 and buf[start] & 0xC0 == 0x80:
                start -= 1
            while end < len(buf) and buf[end] & 0xC0 == 0x80:
                end += 1
            found.append(Candidate(start, end, self.rules[pid].label, RULE_PRIORITY))
        return found


@lru_cache(maxsize=64)
def compile_rules(rules: tuple[Rule, ...]) -> RuleSet:
    """Compiled once per process and set of rules: an organisation's diagnoses share it."""
    return RuleSet(rules)


def as_rule_set(rules: Iterable[Rule] | RuleSet | None) -> RuleSet | None:
    if rules is None or isinstance(rules, RuleSet):
        return rules
    chosen = tuple(rules)
    return compile_rules(chosen) if chosen else None
