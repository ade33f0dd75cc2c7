"""The masker: one per diagnosis, fed line-aligned chunks in order.

Why the hot loop is ours and not ``AnalyzerEngine.analyze`` + ``AnonymizerEngine.anonymize``:
the recognizer is a real Presidio ``EntityRecognizer`` (``HyperscanRecognizer``) and
``build_analyzer()`` runs it inside an ``AnalyzerEngine``, but per chunk the engine adds result
objects, score filtering, context enhancement and the anonymizer's conflict resolution and string
rebuilding in character space, which measured about 2-3x slower than the scan itself on a
log with many hosts and IPs (see ``bench/masking.py``). ``Masker.mask`` therefore calls the same
candidate finder directly, resolves overlaps and replaces in bytes; the Presidio path stays
available and tested to give the same masking.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections import Counter

from workers.masking.engine import (
    Candidate,
    find_candidates,
    find_learned,
    find_private_keys,
    learned_database,
    resolve,
)
from workers.masking.engine import (
    _Database as Database,
)
from workers.masking.patterns import FIXED_TOKEN, PSEUDONYM_PREFIX

# Learned host names are masked wherever they reappear in the log; cap the literal database.
_MAX_LEARNED = 512


def _has_digit(value: bytes) -> bool:
    return any(48 <= c <= 57 for c in value)


def host_key(value: bytes) -> bytes:
    """node-17, NODE-17 and node-17.example.com are one machine; www.a.com and www.b.com not."""
    name = value.lower().rstrip(b".")
    head = name.split(b".", 1)[0]
    if _has_digit(head) and any(97 <= c <= 122 for c in head) and not name[:1].isdigit():
        return head
    return name


def _learnable(head: bytes) -> bool:
    # Only names that cannot be ordinary words: masking every "main" or "worker" would
    # destroy the log.
    return (
        len(head) >= 4
        and _has_digit(head)
        and any(97 <= c <= 122 for c in head)
        and all(48 <= c <= 57 or 97 <= c <= 122 or c in (45, 95) for c in head)
    )


class Masker:
    """Masks one log. Pseudonyms (``<HOST_1>``) are numbered in first-seen order and stay stable
    across ``mask`` calls on the same instance; a different secret gives no link between logs.

    The numbering table is keyed by HMAC-SHA256(secret, entity, value), so no plain hash of a
    value is kept. Host names learned from context (an NCCL line prefix) are kept in memory for
    the life of the instance, as the raw log itself is, so their later bare mentions are masked.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else os.urandom(32)
        self._numbers: dict[str, dict[bytes, int]] = {p: {} for p in PSEUDONYM_PREFIX}
        self._counts: Counter[str] = Counter()
        self._in_private_key = False
        self._learned: dict[bytes, None] = {}
        self._learned_db: Database | None = None

    @property
    def counts(self) -> dict[str, int]:
        """Entity type -> number of occurrences masked so far."""
        return dict(self._counts)

    def token(self, entity: str, value: bytes) -> str:
        """The replacement for one occurrence (also used by the Presidio operator path)."""
        prefix = PSEUDONYM_PREFIX.get(entity)
        if prefix is None:
            return FIXED_TOKEN.get(entity, "<SECRET>")
        norm = host_key(value) if entity == "HOSTNAME" else value.lower()
        digest = hmac.new(self._secret, entity.encode() + b"\0" + norm, hashlib.sha256).digest()
        table = self._numbers[entity]
        number = table.setdefault(digest, len(table) + 1)
        return f"<{prefix}_{number}>"

    def mask(self, chunk: str) -> str:
        """Mask one line-aligned chunk (a token split across two calls cannot be recognised)."""
        if not chunk:
            return chunk
        # surrogatepass: a str built from arbitrary input must round-trip, not raise.
        buf = chunk.encode("utf-8", "surrogatepass")
        continued = self._in_private_key
        keys, self._in_private_key = find_private_keys(buf, continued)
        candidates = find_candidates(buf)
        if self._learn(buf, candidates) or self._learned_db is not None:
            assert self._learned_db is not None
            candidates.extend(find_learned(buf, self._learned_db))
        spans = resolve(candidates, keys)
        out = self._render(buf, spans, keys, continued)
        return out.decode("utf-8", "surrogatepass")

    def _learn(self, buf: bytes, candidates: list[Candidate]) -> bool:
        new = False
        for c in candidates:
            if c.entity != "HOSTNAME" or len(self._learned) >= _MAX_LEARNED:
                continue
            head = buf[c.start : c.end].lower().split(b".", 1)[0]
            if head not in self._learned and _learnable(head):
                self._learned[head] = None
                new = True
        if new:
            self._learned_db = learned_database(tuple(self._learned))
        return new

    def _render(
        self, buf: bytes, spans: list[Candidate], keys: list[tuple[int, int]], continued: bool
    ) -> bytes:
        edits: list[tuple[int, int, bytes]] = []
        for c in spans:
            edits.append((c.start, c.end, self.token(c.entity, buf[c.start : c.end]).encode()))
            self._counts[c.entity] += 1
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
