"""The masker: one per diagnosis, fed line-aligned chunks in order.

What finds the values is Presidio's ``AnalyzerEngine`` when presidio is installed (the server:
``recognizer.shared_analyzer``, a registry of the Hyperscan log recognizers, Presidio's
validated recognizers behind prefilters, and the operator's YAML recognizers), and the same
Hyperscan recognizers called directly when it is not (the light client, ``pip install .``).
For every entity type the Hyperscan recognizers cover, both give the same masked text (tested
on the labelled corpus); the server also masks IBANs, crypto wallets and the operator's types.
An organisation's own terms and patterns (``rules.py``) come in as ``rules``: one more
recognizer, ad hoc for this log's analyzer calls, not in the shared registry.

Why the replacement loop is ours and not ``AnonymizerEngine.anonymize``: measured on a
generated 1 MiB chunk with 1,112 findings, ``AnalyzerEngine.analyze`` took 0.06 s and
``AnonymizerEngine.anonymize`` 1.7 s (its conflict resolution and text rebuilding grow much
faster than linearly with the number of findings, and logs have thousands), 30 times the
analysis. So ``Masker.mask`` takes the analyzer's results, resolves overlaps itself (leftmost,
longest, most specific) and replaces in bytes, with per-log pseudonyms. What stays per log and
not in the analyzer: the names learned from context and a private-key block open across chunks.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter, lt
from typing import TYPE_CHECKING, cast

from rootcause.masking.chunks import iter_line_chunks, iter_line_chunks_utf8

if TYPE_CHECKING:
    # Presidio is the server's extra (the light client lacks it), read for its names only.
    from presidio_analyzer import AnalyzerEngine, EntityRecognizer
from rootcause.masking.density import (
    DENSE_ENTITY,
    Hits,
    bounded_scan,
    chunk_budget,
    dense_regions,
    lines_in,
    marked_whole,
)
from rootcause.masking.focus import FocusedAnalyzer, as_candidates, focused_spans
from rootcause.masking.patterns import FIXED_TOKEN, PSEUDONYM_PREFIX, SPECS
from rootcause.masking.prefilters import all_windows, covered
from rootcause.masking.rules import Rule, RuleSet, as_rule_set
from rootcause.masking.scanner import (
    LEARNED_ENTITIES,
    LEARNING_SPECS,
    Candidate,
    Confirmed,
    Database,
    Remembered,
    confirmed,
    find_candidates,
    find_learned,
    find_learning_candidates,
    find_private_keys,
    learned_database,
    learning_database,
    log_findings,
    main_database,
    remembering,
    resolve,
    scanned,
)
from rootcause.masking.verdicts import find_with_verdicts

# Learned host and user names are masked wherever they reappear in the log (a bucket named
# after the user, a short host name in a message); cap the literal database.
_MAX_LEARNED = 512
# Account names shared by many people, or words: masking every later "data" would hurt.
_GENERIC_USERS = frozenset(
    b"root admin user users ubuntu ec2-user centos debian jovyan sagemaker-user runner "
    b"colab kaggle data train test work shared share export local home opt scratch "
    b"public guest nobody".split()
)


# Replacements remembered per value (a cache: numbering lives in _numbers).
_MAX_TOKENS = 1 << 16
_START, _END, _ENTITY = attrgetter("start"), attrgetter("end"), attrgetter("entity")
# Dense regions the learning pass found, kept for the masking pass (dense chunks only).
_MAX_DENSE = 1 << 12
# The learning pass's verdicts (scanner.Confirmed, ~40 bytes an anchor), kept for the masking
# pass of this many chunks at most (the first 256 MiB of a log, in 1 MiB chunks).
_MAX_CONFIRMED = 256
# The chunks mask_log_utf8's learning pass read, kept for its masking pass up to this many
# bytes; a longer log is read again.
_MAX_KEPT_BYTES = 64 << 20

# The setting the service reads too (config/settings.py): a YAML file of Presidio recognizers.
RECOGNIZERS_FILE_ENV = "MASKING_RECOGNIZERS_FILE"
_AUTO = "auto"
# Presidio's analyzer only for the chunks where it could add something (the command line):
# see Masker._find_when_needed.
WHEN_NEEDED = "when-needed"


def default_analyzer() -> AnalyzerEngine | None:
    """Presidio's analyzer when presidio is importable (the server), else None (light client)."""
    try:
        from rootcause.masking.recognizer import shared_analyzer
    except ImportError:
        return None
    return shared_analyzer(os.environ.get(RECOGNIZERS_FILE_ENV) or None)


def _presidio_installed() -> bool:
    try:
        return importlib.util.find_spec("presidio_analyzer") is not None
    except (ImportError, ValueError):
        return False


def _has_digit(value: bytes) -> bool:
    return any(48 <= c <= 57 for c in value)


def host_key(value: bytes) -> bytes:
    """node-17, NODE-17 and node-17.example.com are one machine; www.a.com and www.b.com not."""
    name = value.lower().rstrip(b".")
    head = name.split(b".", 1)[0]
    if _has_digit(head) and any(97 <= c <= 122 for c in head) and not name[:1].isdigit():
        return head
    return name


def _learnable(name: bytes, entity: str) -> bool:
    if len(name) < 4 or not all(48 <= c <= 57 or 97 <= c <= 122 or c in b"-_." for c in name):
        return False
    if entity == "USERNAME":
        return name not in _GENERIC_USERS
    if entity == "CLOUD_ACCOUNT":
        return len(name) >= 6
    # Host names only when they cannot be ordinary words ("main", "worker").
    return _has_digit(name) and any(97 <= c <= 122 for c in name)


class Masker:
    """Masks one log. Pseudonyms (``<HOST_1>``) are numbered in first-seen order and stay stable
    across ``mask`` calls on the same instance; a different secret gives no link between logs.

    The numbering table is keyed by HMAC-SHA256(secret, entity, value), so no plain hash of a
    value is kept. Host and user names learned from context (an NCCL line prefix, a home path)
    are kept in memory for the life of the instance, as the raw log itself is, so that their
    bare mentions elsewhere are masked too: ``mask`` learns from its own chunk first, and a
    learning pass (``learn`` over every chunk, see ``mask_log``) before the masking pass
    catches the mentions that come before the line a name is learned from.
    """

    def __init__(
        self,
        secret: bytes | None = None,
        *,
        analyzer: AnalyzerEngine | str | None = _AUTO,
        rules: Iterable[Rule] | RuleSet | None = None,
    ) -> None:
        """``analyzer``: a Presidio ``AnalyzerEngine``, None for the Hyperscan recognizers
        alone, or by default Presidio's when it is installed (``default_analyzer``).
        ``rules``: an organisation's own terms and patterns (validated, see ``rules.py``)."""
        self._secret = secret if secret is not None else os.urandom(32)
        self._rules = as_rule_set(rules)
        # WHEN_NEEDED with nothing but the built-in recognizers: Presidio is imported (about
        # 1.5 s: spaCy comes with it) and called only for a chunk where one of its own
        # recognizers could find something; other chunks get what its analyzer would return
        self._when_needed = (
            analyzer == WHEN_NEEDED
            and self._rules is None
            and not os.environ.get(RECOGNIZERS_FILE_ENV)
            and _presidio_installed()
        )
        if analyzer == WHEN_NEEDED:
            analyzer = None if self._when_needed else _AUTO
        # by now a string can only be _AUTO (the two names above are the only ones accepted)
        self._analyzer = default_analyzer() if isinstance(analyzer, str) else analyzer
        # Their types get numbered pseudonyms of their own unless they name a built-in type.
        self._rule_prefix = {
            e: e for e in (self._rules.entities if self._rules else ()) if e not in FIXED_TOKEN
        }
        self._ad_hoc: list[EntityRecognizer] = []
        if self._rules is not None and self._analyzer is not None:
            from rootcause.masking.recognizer import RuleSetRecognizer

            self._ad_hoc = [RuleSetRecognizer(self._rules)]
        self._numbers: dict[str, dict[bytes, int]] = {}
        self._tokens: dict[tuple[str, bytes], str] = {}
        # the same, encoded (what _render writes)
        self._replacements: dict[tuple[str, bytes], bytes] = {}
        # (type, bytes) of the candidates _learn has read: the same again teaches nothing
        self._offered: set[tuple[str, bytes]] = set()
        # the main database's hits in the chunk being masked, when its guard scan had them
        self._hits: list[tuple[int, int, int]] | None = None
        # the main database's complete hits in the chunk being masked (none when thinned)
        self._scanned: list[tuple[int, int, int]] | None = None
        # the candidates of the chunk being masked, when found from the learning pass's
        # verdicts and a scan with the other patterns (verdicts.py)
        self._found: list[Candidate] | None = None
        # (hash, length) of a dense chunk the learning pass saw -> its dense regions
        self._dense: dict[tuple[int, int], list[tuple[int, int]]] = {}
        # (hash, length) of a chunk the learning pass saw -> its learning patterns' verdicts
        self._confirmed: dict[tuple[int, int], Confirmed] = {}
        self._counts: Counter[str] = Counter()
        # the anchors' verdicts, by what they depend on (scanner._remembered): for this log
        self._remembered = Remembered()
        self._in_private_key = 0  # bytes an open key block may still run for
        self._learned: dict[bytes, str] = {}
        self._learned_db: Database | None = None
        self._learned_dirty = False
        # (learned database, bytes, its complete hits in them) of the chunk being masked
        self._mentions: tuple[Database, bytes, Hits] | None = None

    @property
    def counts(self) -> dict[str, int]:
        """Entity type -> number of occurrences masked so far."""
        return dict(self._counts)

    def token(self, entity: str, value: bytes) -> str:
        """The replacement for one occurrence (also used by the Presidio operator path)."""
        # Logs repeat the same hosts and users on every line: the HMAC once per value.
        key = (entity, value)
        token = self._tokens.get(key)
        if token is None:
            if len(self._tokens) >= _MAX_TOKENS:
                self._tokens.clear()
            token = self._tokens[key] = self._new_token(entity, value)
        return token

    def _new_token(self, entity: str, value: bytes) -> str:
        prefix = PSEUDONYM_PREFIX.get(entity) or self._rule_prefix.get(entity)
        if prefix is None:
            # An operator's or Presidio's own type (IBAN_CODE, CRYPTO) is named as it is.
            return FIXED_TOKEN.get(entity) or f"<{entity}>"
        norm = host_key(value) if entity == "HOSTNAME" else value.lower()
        digest = hmac.new(self._secret, entity.encode() + b"\0" + norm, hashlib.sha256).digest()
        table = self._numbers.setdefault(entity, {})
        number = table.setdefault(digest, len(table) + 1)
        return f"<{prefix}_{number}>"

    def learn(self, chunk: str) -> None:
        """The learning pass: remember the user and host names in ``chunk``, replace nothing."""
        self.learn_bytes(chunk.encode("utf-8", "surrogatepass"))

    def learn_bytes(self, buf: bytes) -> None:
        """``learn`` of a chunk's UTF-8 encoding (``chunk.encode("utf-8", "surrogatepass")``)."""
        if buf:
            key = (hash(buf), len(buf))
            # The learning scan counts against the guard's budget (density.py): an ordinary
            # chunk costs no scan more; a dense one is first thinned as the masking pass will.
            hits: Hits | None
            hits, complete = bounded_scan(learning_database(), buf, chunk_budget(len(buf)), 1 << 30)
            if not complete:
                regions, _ = dense_regions(buf)
                if len(self._dense) < _MAX_DENSE:  # for the masking pass of the same chunk
                    self._dense[key] = regions
                buf, _ = _thinned(buf, regions)
                hits = None  # scanned again, thinned, with the learning patterns' ids
            with remembering(self._remembered):
                found, verdicts = find_learning_candidates(buf, hits)
            if len(self._confirmed) < _MAX_CONFIRMED:  # for the masking pass of the same chunk
                self._confirmed[key] = verdicts
            self._learn(buf, found)

    def learn_lines(self, buf: bytes) -> None:
        """Learn the names in ``buf``: a few whole lines picked from a log (``printed.py``),
        read without the density guard, which could thin them and learn less than ``learn``
        over the whole log does."""
        if buf:
            with remembering(self._remembered):
                self._learn(buf, find_candidates(buf, LEARNING_SPECS))

    def mask_apart(self, text: str) -> str:
        """``text`` masked on its own (a printed line): no private-key block carried in from
        an earlier call or out to a later one."""
        self._in_private_key = 0
        out = self.mask(text)
        self._in_private_key = 0
        return out

    def mask(self, chunk: str) -> str:
        """Mask one line-aligned chunk (a token split across two calls cannot be recognised)."""
        if not chunk:
            return chunk
        # surrogatepass: a str built from arbitrary input must round-trip, not raise.
        buf = chunk.encode("utf-8", "surrogatepass")
        with remembering(self._remembered):
            return self._mask(buf, chunk).decode("utf-8", "surrogatepass")

    def mask_bytes(self, buf: bytes) -> bytes:
        """``mask`` of a chunk's UTF-8 encoding (``chunk.encode("utf-8", "surrogatepass")``),
        encoded the same way: the command line's path, which never needs the text itself
        unless Presidio reads it."""
        if not buf:
            return buf
        with remembering(self._remembered):
            return self._mask(buf, None)

    def _mask(self, buf: bytes, chunk: str | None) -> bytes:
        """``chunk``: the text of ``buf`` when the caller has it (else decoded when needed)."""
        # the learning pass's verdicts on this chunk: used if the bytes masked are those it read
        key = (hash(buf), len(buf))
        known = self._confirmed.pop(key, None)
        # The guard (density.py): the patterns' own scan, stopped at the budget; only a chunk
        # over it gets the guard's scan, and its dense lines masked whole.
        hits: Hits | None = None
        complete = True
        self._found = None
        # the light path (Presidio's analyzer reads the chunk itself): see verdicts.py
        if self._analyzer is None and known is not None:
            self._found = find_with_verdicts(buf, known, chunk_budget(len(buf)))
        if self._found is None:
            hits, complete = bounded_scan(main_database(), buf, chunk_budget(len(buf)), 1 << 30)
        # the main database's every hit in buf, for the analyzer's HyperscanRecognizer
        self._scanned = hits if complete else None
        if not complete:
            regions = self._dense.pop(key, None)
            if regions is None:
                regions, hits = dense_regions(buf)
            else:
                hits = None
            if regions:
                buf, dense = _thinned(buf, regions)
                chunk = None
                self._counts[DENSE_ENTITY] += dense
            hits = None if hits is None else [h for h in hits if h[0] < len(SPECS)]
        self._hits = hits
        self._update_learned()
        learned = self._learned_db
        if learned is not None:
            # Mentions of learned names count against the budget too (a name learned once and
            # written on every line of a megabyte): the same guard with their database.
            def scan(data: bytes, limit: int) -> tuple[Hits, bool]:
                return bounded_scan(learned, data, limit, 1 << 30)

            mentions, complete = scan(buf, chunk_budget(len(buf)))
            if complete:  # every mention in buf: find_learned need not scan it again
                self._mentions = (learned, buf, mentions)
            else:
                regions, _ = dense_regions(buf, scan)
                if regions:
                    buf, dense = _thinned(buf, regions)
                    chunk = None
                    self._counts[DENSE_ENTITY] += dense
                    # the text changed: scanned again
                    self._hits = self._scanned = self._found = None
        continued = self._in_private_key > 0
        keys, self._in_private_key = find_private_keys(buf, self._in_private_key)
        with confirmed(known):
            spans = self._spans(chunk, buf, keys)
            if (
                self._when_needed
                and self._analyzer is None
                and not _covered(all_windows(buf, skip_impossible_wallets=True), spans)
            ):
                # Presidio's recognizers could change this chunk's masking: from now on, its way.
                self._analyzer = default_analyzer()
                spans = self._spans(chunk, buf, keys)
        self._mentions = None
        return self._render(buf, spans, keys, continued)

    def _spans(self, chunk: str | None, buf: bytes, keys: list[tuple[int, int]]) -> list[Candidate]:
        """What is replaced in a chunk: every recognizer's and the learned names' findings,
        resolved. ``chunk``: ``buf``'s text, if the caller has it."""
        analyzer = self._analyzer
        if analyzer is not None and getattr(analyzer, "focusable", _no)():
            # the production analyzer (recognizer.LogAnalyzerEngine): see focus.py
            text = buf.decode("utf-8", "surrogatepass") if chunk is None else chunk
            return focused_spans(self, cast("FocusedAnalyzer", analyzer), text, buf, keys)
        candidates = self._find(chunk, buf)
        # Found from the learning pass's verdicts (verdicts.py): its names are in candidates
        # only as the learning pass found them on these bytes, and learned from there (or
        # refused for good: _learnable is pure, and _learned only grows).
        taught = self._found is not None
        self._hits = self._scanned = self._found = None
        return self.resolved(buf, candidates, keys, learn=not taught)

    def take_hits(self) -> Hits | None:
        """The main database's hits in the chunk being masked, if its guard scan had them;
        used once (after a fallback to Presidio, its analyzer reads the chunk)."""
        hits, self._hits, self._scanned, self._found = self._hits, None, None, None
        return hits

    @property
    def ad_hoc(self) -> list[EntityRecognizer]:
        """The recognizers handed to each ``analyze`` call (an organisation's rules)."""
        return self._ad_hoc

    def resolved(
        self,
        buf: bytes,
        candidates: list[Candidate],
        keys: list[tuple[int, int]],
        *,
        learn: bool = True,
    ) -> list[Candidate]:
        """``candidates`` (a list of its own: it is sorted) with the learned names' mentions,
        resolved; names are learned from ``candidates`` first (unless ``learn`` is False:
        they were already)."""
        if learn:
            self._learn(buf, candidates)
        self._update_learned()
        if self._learned_db is not None:
            entities = tuple(self._learned.values())
            # the guard's scan of the same bytes with the same database, when it was complete
            known = self._mentions
            hits = None
            if known is not None and known[0] is self._learned_db and known[1] is buf:
                hits = known[2]
            candidates.extend(find_learned(buf, self._learned_db, entities, hits))
        return resolve(candidates, keys)

    def _update_learned(self) -> None:
        if self._learned_dirty:
            # Compiled when a chunk is masked, not whenever the learning pass finds a name.
            self._learned_db = learned_database(tuple(self._learned))
            self._learned_dirty = False

    def _find(self, chunk: str | None, buf: bytes) -> list[Candidate]:
        if self._when_needed and self._analyzer is None:
            # What the analyzer returns when only HyperscanRecognizer finds anything
            # (recognizer.py): its resolved candidates and the private-key bodies.
            return log_findings(buf, self._hits, self._found)
        if self._analyzer is None:
            found = self._found
            if found is None:
                found = find_candidates(buf, hits=self._hits)
            if self._rules is not None:
                found.extend(self._rules.find(buf))
            return found
        # HyperscanRecognizer encodes the chunk as buf is: it takes the guard scan's hits
        if chunk is None:
            chunk = buf.decode("utf-8", "surrogatepass")
        with scanned(buf, self._scanned):
            results = self._analyzer.analyze(
                text=chunk, language="en", ad_hoc_recognizers=self._ad_hoc or None
            )
        return as_candidates(chunk, buf, results)

    def _learn(self, buf: bytes, candidates: list[Candidate]) -> None:
        # The learned names are for the whole log; _learned_db is rebuilt only when one is new.
        # A candidate of the same type and bytes as one read before teaches nothing more: its
        # names were learned then, or refused (_learnable reads the name alone).
        offered = self._offered
        for c in candidates:
            if c.entity not in LEARNED_ENTITIES:
                continue
            if len(self._learned) >= _MAX_LEARNED:
                return
            raw = buf[c.start : c.end]
            if (c.entity, raw) in offered:
                continue
            if len(offered) >= _MAX_TOKENS:
                offered.clear()
            offered.add((c.entity, raw))
            name = raw.lower()
            if c.entity == "HOSTNAME":
                name = name.split(b".", 1)[0]
            names = [name]
            if c.entity == "USERNAME" and (b"." in name or b"_" in name):
                # declan.murphy is declan-murphy in a Kubernetes pod's name
                names.append(name.replace(b".", b"-").replace(b"_", b"-"))
            for name in names:
                if name not in self._learned and _learnable(name, c.entity):
                    self._learned[name] = c.entity
                    self._learned_dirty = True

    def _render(
        self, buf: bytes, spans: list[Candidate], keys: list[tuple[int, int]], continued: bool
    ) -> bytes:
        # A span's replacement by its (type, bytes), the first of each made in the spans' order
        # (pseudonyms are numbered in first-seen order); the rest read in C, span by span.
        starts = list(map(_START, spans))
        ends = list(map(_END, spans))
        values = map(buf.__getitem__, map(slice, starts, ends))
        found = list(zip(map(_ENTITY, spans), values, strict=True))
        replacements = self._replacements
        known = list(map(replacements.get, found))
        made = cast("list[bytes]", known)  # once every None is replaced below
        if None in known:
            for i, replacement in enumerate(known):
                if replacement is None:
                    key = found[i]
                    replacement = replacements.get(key)
                    if replacement is None:
                        if len(replacements) >= _MAX_TOKENS:
                            replacements.clear()
                        replacement = replacements[key] = self.token(*key).encode()
                    made[i] = replacement
        self._counts.update(map(_ENTITY, spans))  # counted in C
        if not keys and all(map(lt, starts, ends)):
            # spans are resolved: in order, apart (none empty, which the sort below would order
            # by its replacement); the text between them, then each replacement
            parts: list[bytes] = [b""] * (2 * len(spans) + 1)
            parts[0::2] = map(buf.__getitem__, map(slice, [0, *ends], [*starts, len(buf)]))
            parts[1::2] = made
            return b"".join(parts)
        edits = list(zip(starts, ends, made, strict=True))
        for start, end in keys:
            # Keep the line count: evidence is cited by line number downstream.
            body = buf[start:end]
            lead = b"\n" if body.startswith(b"\n") else b""
            newlines = body.count(b"\n") - len(lead)
            edits.append((start, end, lead + b"<PRIVATE_KEY>" + b"\n" * newlines))
            if not (start == 0 and continued):  # the rest of a block counted in an earlier chunk
                self._counts["PRIVATE_KEY"] += 1
        edits.sort()
        out: list[bytes] = []
        pos = 0
        for start, end, replacement in edits:
            out.append(buf[pos:start])
            out.append(replacement)
            pos = end
        out.append(buf[pos:])
        return b"".join(out)


def _no() -> bool:
    return False


def _thinned(buf: bytes, regions: list[tuple[int, int]]) -> tuple[bytes, int]:
    """The chunk with its dense regions masked whole (density.py), and how many lines were
    (regions start and end at line breaks: never inside a UTF-8 sequence)."""
    if not regions:
        return buf, 0
    parts = []
    pos = lines = 0
    for start, end in regions:
        body = buf[start:end]
        parts += [buf[pos:start], marked_whole(body)]
        lines += lines_in(body)
        pos = end
    parts.append(buf[pos:])
    return b"".join(parts), lines


def _covered(windows: list[tuple[int, int]], spans: list[Candidate]) -> bool:
    """Whether findings inside every one of ``windows`` would leave ``spans`` as they are
    (``prefilters.covered``)."""
    starts = [c.start for c in spans]
    return all(covered(lo, hi, spans, starts) for lo, hi in windows)


def mask_log(
    read: Callable[[], Iterable[bytes]], masker: Masker, chunk_size: int = 1 << 20
) -> Iterator[str]:
    """Learn first, then mask: two passes over a log that ``read()`` yields afresh each time.

    The first pass only learns user and host names (a cheaper scan with the patterns they are
    learned from), so that "gpu-node-17 unreachable" on line 3 is masked although the NCCL
    prefix that names the host comes on line 900. Memory stays that of one chunk per pass.
    """
    for chunk in iter_line_chunks(read(), chunk_size):
        masker.learn(chunk)
    for chunk in iter_line_chunks(read(), chunk_size):
        yield masker.mask(chunk)


def mask_log_utf8(
    read: Callable[[], Iterable[bytes]], masker: Masker, chunk_size: int = 1 << 20
) -> Iterator[bytes]:
    """``mask_log``'s chunks UTF-8 encoded, never made into text where the log is valid UTF-8
    (the command line writes them as they are: on issue 33's dense log, whose chunks hold a few
    characters outside Latin-1, decoding and encoding each chunk twice cost a seventh of it).
    The learning pass's chunks are kept for the masking pass up to ``_MAX_KEPT_BYTES``: the
    log is then read, cleaned and cut once (a gzip decompressed once), and each chunk's hash,
    which finds the learning pass's verdicts, is made once."""
    kept: list[bytes] | None = []
    size = 0
    for buf in iter_line_chunks_utf8(read(), chunk_size):
        masker.learn_bytes(buf)
        if kept is not None:
            size += len(buf)
            kept.append(buf)
            if size > _MAX_KEPT_BYTES:
                kept = None
    if kept is None:
        for buf in iter_line_chunks_utf8(read(), chunk_size):
            yield masker.mask_bytes(buf)
        return
    kept.reverse()  # popped from the end: each chunk freed once masked
    while kept:
        yield masker.mask_bytes(kept.pop())
