"""What each stage of the pipeline reads and computes; the loop (loop.py) runs them.

A runner reads its input by the claim's diagnosis (or from what the stage before it carried in
memory), does its work, and returns the columns its completion writes and what to do once it
is written (Output). The loop completes the stage only if the claim still holds its lease, so a
stage that runs twice (a redelivered task, the sweeper) or a worker killed half-way never loses
or duplicates a diagnosis.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import TYPE_CHECKING

import msgspec
from django.conf import settings

from accounts.selectors import masking_rules_of
from billing_tiers.selectors import includes_fix_steps
from diagnosis.bundles import bundle_limits
from diagnosis.masking import masking_secret
from diagnosis.pipeline.stage import Carried, Kind, Output, StageError
from diagnosis.selectors import stored_result
from diagnosis.staging import (
    LOST_IN_OUTAGE,
    MASKED,
    RAW,
    READ_CHUNK,
    StagingStore,
    get_store,
    staging_key,
)
from encyclopedia.selectors import current_engine
from rootcause.hangs import Bundle, BundleError, analyse, read_bundle, result_for
from rootcause.masking import Masker, iter_line_chunks, mask_log
from rootcause.masking.recognizer import shared_analyzer
from rootcause.masking.rules import Rule
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult, as_json

if TYPE_CHECKING:
    from diagnosis.services.lifecycle import Claim
    from rootcause.engine import Engine

logger = logging.getLogger(__name__)


def _staged(store: StagingStore, key: str) -> Callable[[], Iterator[bytes]]:
    """A reader of a staged value that yields it from the start at each call.

    Its first chunk is read now, so that a value Redis lost fails the stage before any work.
    A value that came whole in that chunk (up to READ_CHUNK bytes: most logs) is kept and read
    from the store no more; a bigger one is streamed from the store, a chunk at a time, each call.
    """
    chunks = store.read(key)
    try:
        head = list(islice(chunks, 2))
    except KeyError:
        raise StageError(LOST_IN_OUTAGE) from None
    if len(head) <= 1:
        return lambda: iter(head)
    started = [chain(head, chunks)]
    return lambda: started.pop() if started else store.read(key)


def _checked(chunks: Iterable[bytes], check: Callable[[], None]) -> Iterator[bytes]:
    """The chunks, the lease checked before each: a stage whose lease may be another worker's
    reads and writes no further (LeaseLost; diagnosis/pipeline/lease.py)."""
    for chunk in chunks:
        check()
        yield chunk


def _masker(claim: Claim) -> Masker:
    # Presidio's analyzer: the Hyperscan log recognizers, Presidio's validated ones and the
    # operator's (MASKING_RECOGNIZERS_FILE), one per process (rootcause/masking/recognizer.py).
    analyzer = shared_analyzer(settings.MASKING_RECOGNIZERS_FILE or None)
    return Masker(
        secret=masking_secret(str(claim.diagnosis.id)),
        analyzer=analyzer,
        # The organisation's own terms and patterns, for its diagnoses only (a visitor's has
        # none); read when the stage is claimed (with the claim, lifecycle.ReadWithClaim), so a
        # rule added after submission applies too.
        rules=_masking_rules(claim),
    )


def _masking_rules(claim: Claim) -> list[Rule]:
    rules = claim.read.masking_rules
    return masking_rules_of(claim.diagnosis.organization_id) if rules is None else rules


def _engine(claim: Claim) -> Engine:
    """The engine of the catalogue that was current when the stage was claimed."""
    return current_engine(claim.read.catalogue_version)


def run_mask(claim: Claim, carried: Carried) -> Output:
    if claim.diagnosis.kind == Kind.BUNDLE:
        return _mask_bundle(claim, carried)
    diagnosis_id = str(claim.diagnosis.id)
    store = get_store(settings.REDIS_URL)
    raw_key, masked_key = staging_key(RAW, diagnosis_id), staging_key(MASKED, diagnosis_id)
    staged_raw = _staged(store, raw_key)

    def read_raw() -> Iterator[bytes]:
        return _checked(staged_raw(), claim.check)

    masker = _masker(claim)
    # The masked text as written, kept for the match stage while it fits in one read chunk.
    kept: list[bytes] | None = []

    def masked_chunks() -> Iterator[bytes]:
        nonlocal kept
        # Two passes over the staged log (read_raw starts again each time): learn the user
        # and host names first, so that mentions before the line that names them are masked.
        for chunk in mask_log(read_raw, masker):
            claim.check()  # before the chunk is written
            data = chunk.encode("utf-8")
            if kept is not None:
                kept.append(data)
                if sum(map(len, kept)) > READ_CHUNK:
                    kept = None
            yield data

    store.write(masked_key, masked_chunks(), ttl_seconds=settings.ROOTCAUSE_RAW_TTL_SECONDS)

    def after() -> None:
        # The masked text exists: the raw bytes have served their only purpose.
        store.delete(raw_key)
        if kept is not None:
            # As the store would give it back: one chunk, or none for an empty text.
            whole = b"".join(kept)
            carried.masked = [whole] if whole else []

    return Output({"masking_counts": dict(masker.counts)}, after)


def _mask_bundle(claim: Claim, carried: Carried) -> Output:
    """A bundle's mask stage: every file masked with the log's masker (names learned across all
    of them first) and recognised by its content, staged as JSON of the masked, parsed files;
    the raw archive is deleted once that exists. Nothing after this stage sees a raw byte."""
    diagnosis_id = str(claim.diagnosis.id)
    store = get_store(settings.REDIS_URL)
    raw_key, masked_key = staging_key(RAW, diagnosis_id), staging_key(MASKED, diagnosis_id)
    raw = b"".join(_checked(_staged(store, raw_key)(), claim.check))
    masker = _masker(claim)
    try:
        bundle = read_bundle(raw, limits=bundle_limits(), masker=masker, learn=True)
    except BundleError as exc:
        # Checked at intake, so only a change of limits in between gets here. The reason is
        # stored: masked like the files it may name.
        raise StageError(masker.mask(f"bundle refused: {exc}")[:250]) from None
    del raw
    claim.check()  # before the masked bundle is written
    store.write(
        masked_key, [msgspec.json.encode(bundle)], ttl_seconds=settings.ROOTCAUSE_RAW_TTL_SECONDS
    )

    def after() -> None:
        store.delete(raw_key)
        carried.bundle = bundle

    return Output({"masking_counts": dict(masker.counts)}, after)


def run_analyse(claim: Claim, carried: Carried) -> Output:
    """A bundle's hang analysis (rootcause.hangs) over its masked files: the verdict is the
    diagnosis' class, a single culprit its initiating rank, the rest in the `hang` section."""
    bundle = carried.bundle
    if bundle is None:
        staged = _staged(
            get_store(settings.REDIS_URL), staging_key(MASKED, str(claim.diagnosis.id))
        )
        bundle = msgspec.json.decode(b"".join(_checked(staged(), claim.check)), type=Bundle)
    engine = _engine(claim)
    result = result_for(
        analyse(bundle, engine), masked=claim.diagnosis.masking_counts, engine=engine
    )

    def after() -> None:
        carried.matched, carried.engine = result, engine

    return Output(_result_fields(result, engine.version), after)


def _result_fields(result: DiagnosisResult, version: str) -> dict[str, object]:
    return {
        "result": as_json(result),
        "outcome": result.outcome,
        "failure_slug": result.failure.slug if result.failure else "",
        "catalogue_version": version,
    }


def run_match(claim: Claim, carried: Carried) -> Output:
    diagnosis_id = str(claim.diagnosis.id)
    if carried.masked is not None:
        masked = iter(carried.masked)  # masked by this task a moment ago: what the store holds
    else:
        masked = _staged(get_store(settings.REDIS_URL), staging_key(MASKED, diagnosis_id))()
    engine = _engine(claim)
    result = engine.diagnose(iter_line_chunks(_checked(masked, claim.check)))

    def after() -> None:
        carried.matched, carried.engine = result, engine

    return Output(_result_fields(result, engine.version), after)


# What warm_up masks and matches: a line of each kind of personal data the recognizers and the
# learned names look for, and a traceback, so that each compiles what it compiles on first use.
_WARM_UP_LOG = (
    b"2026-01-01 00:00:00 INFO [rank0]: user alice@example.com on host gpu-node-1 (10.0.0.1)"
    b" token=hf_abcdefghijklmnopqrstuvwxyz0123456789 path /home/alice/run\n"
    b"Traceback (most recent call last):\n"
    b'  File "/home/alice/train.py", line 1, in <module>\n'
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def warm_up() -> None:
    """Builds what every diagnosis uses before the first one comes: Presidio's analyzer, the
    engine of the current catalogue (one read of it), and what masking and matching compile on
    their first use, by masking and matching a made-up log of a few lines.

    Run in the Celery worker's main process before its pool starts (workers/tasks.py): the
    prefork children inherit it all, so none builds it on its first diagnosis, which under load
    took seconds with every child building at once and made the first diagnoses after a start
    the slowest of all. Nothing of a real log is involved."""
    engine = current_engine()
    masker = Masker(analyzer=shared_analyzer(settings.MASKING_RECOGNIZERS_FILE or None))
    masked = "".join(mask_log(lambda: iter([_WARM_UP_LOG]), masker))
    engine.diagnose(iter_line_chunks(iter([masked.encode("utf-8")])))


def run_remediate(claim: Claim, carried: Carried) -> Output:
    diagnosis = claim.diagnosis
    matched: DiagnosisResult | None
    if carried.matched is not None and carried.engine is not None:
        # Matched by this task a moment ago: the same result and engine the row names.
        matched, engine = carried.matched, carried.engine
    else:
        # Resumed at this stage (a redelivered message, a take-over): what the row stored, and
        # the catalogue as it is now.
        matched, engine = stored_result(diagnosis), _engine(claim)
    if matched is None:
        raise StageError("the match stage stored no result")
    slug = diagnosis.failure_slug
    result = complete_result(
        matched,
        # None when an admin edit removed the entry since matching: the result goes without a fix
        entry=engine.by_slug.get(slug) if slug else None,
        include_fix=includes_fix_steps(diagnosis.organization),
        masking=diagnosis.masking_counts,
    )

    def after() -> None:
        get_store(settings.REDIS_URL).delete(staging_key(MASKED, str(diagnosis.id)))
        logger.info("diagnosis %s done: %s", diagnosis.id, slug or "no_match")

    return Output({"result": as_json(result)}, after)
