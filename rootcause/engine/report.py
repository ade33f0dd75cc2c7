"""Building the DiagnosisResult from what held: the failure, the per-rank rows, the collateral
failures, the evidence lines, the root-cause sentence and the facts a reader should add."""

from __future__ import annotations

import re
from typing import NamedTuple

from msgspec import UNSET, UnsetType

from rootcause.catalogue import Entry
from rootcause.confidence import LIKELY, what_would_decide
from rootcause.engine import similar
from rootcause.engine.calibration import PROPOSED, answer_kind, calibrated
from rootcause.engine.rules import Held, confidence, exit_first, initiating, launcher_report
from rootcause.engine.scanning import EVIDENCE_CHARS, Hit, Scan, ends_in_traceback
from rootcause.evidence import FRAME_LINE_RE, parse_line
from rootcause.ranks import NO_RANK, Basis, MismatchSide, frame_place
from rootcause.result import (
    CollateralFailure,
    DiagnosisResult,
    EvidenceLine,
    Launch,
    RankRow,
    failure_of,
    rank_sentence,
)

MAX_EVIDENCE = 6
# glog's error and fatal lines, as c10d, ProcessGroupNCCL and the elastic agent write them
# ("[E1201 04:01:00.100 53136 ProcessGroupNCCL.cpp:2222] …", after an optional rank prefix):
# error lines without an exception name, which the scan's exception marker does not take.
_GLOG_ERROR_RE = re.compile(r"^(?:\[rank\d+\]:\s*)?\[?[EF]\d{4} \d\d:\d\d:\d\d")

# A rank named from the launcher's report alone is a guess that one line of that rank's own output
# would settle: the evidence score is lowered by this factor before it is calibrated.
LAUNCHER_ONLY_FACTOR = 0.9
# The last line of a log that stops in the middle of training.
_PROGRESS_RE = re.compile(
    r"\d+/\d+ \[\d|\bstep[ =:]+\d+|\bepoch[ =:]+\d+|\bloss[ =:]+[0-9.]+|it/s\]|s/it\]"
)


def short(text: str) -> str:
    """A line as evidence shows it: stripped, without NUL bytes (a crashed writer leaves them;
    PostgreSQL's text and jsonb refuse them), and cut to EVIDENCE_CHARS."""
    text = text.replace("\x00", "").strip()
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1] + "…"


def _first_sentence(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    # "e.g." and "i.e." end no sentence
    m = re.match(rf"(.{{20,{limit}}}?(?<!\be\.g)(?<!\bi\.e)[.!?])(\s|$)", text)
    if m:
        return m.group(1)
    if len(text) <= limit:
        return text
    cut = max(text.rfind(", ", 0, limit), text.rfind("; ", 0, limit), text.rfind(": ", 0, limit))
    return text[: cut if cut > limit // 2 else limit].rstrip() + "…"


def diagnosed(held: Held, scan: Scan, ranked: list[int], version: str) -> DiagnosisResult:
    """The result when `ranked` (winner first, see rules.candidates) is not empty."""
    answer = initiating(held, scan, ranked)
    rank, rank_reason, basis = answer
    ranked = exit_first(held, scan, ranked, answer)
    winner = ranked[0]
    entry = held.entries[winner]
    multi = len(scan.ranks_seen) > 1
    evidence, headline = _evidence(held, winner, rank, scan.sources)
    if multi and rank is None:
        evidence = _with_call_sites(evidence, scan.evidence.mirrored(), scan.sources)
    score = confidence(held, ranked)
    missing = _missing_facts(scan, diagnosed=True, rank=rank, multi=multi)
    # only collateral failures: the launcher's summary may be all there is of the failed rank
    exit_note = _exit_note(held, ranked, scan) if held.collateral(winner) else None
    if exit_note is not None:
        who = f"rank {exit_note[0]}" if exit_note[0] is not None else "the failed process"
        missing.insert(
            0,
            f"the launcher reports {who} exiting, but not {who}'s own output: attach that "
            "rank's stderr (its traceback or last lines; torchrun --tee 3 --log-dir logs keeps "
            "one file per rank)",
        )
    elif rank is not None and basis is Basis.LAUNCHER:
        missing.insert(
            0,
            f"rank {rank} is named from the launcher's report alone: rank {rank}'s own output "
            "(its traceback or last lines; for a killed process, `dmesg` on its node) would "
            "confirm it",
        )
    cut = any(held.signals[p].cut_traceback for p in held.by_entry[winner])
    if cut:
        missing.insert(
            0,
            "the log stops inside a traceback, before its exception line: the class is read "
            "from the deepest frames; the lines after them (the exception's type and message) "
            "would confirm it",
        )
    elif score < 0.6 and scan.tracebacks == 0 and exit_note is None:
        missing.append(
            "no traceback: the class rests on error lines alone; include the full stderr "
            "(the traceback shows the call that failed; for a killed process add "
            "`dmesg | tail`)"
        )
    device = None if scan.ranks_seen else _oom_device([*(e.text for e in evidence), *scan.tail])
    if device:
        missing.append(_device_fact(device))
    leads = _decided_by(held, winner)
    if leads:
        missing.insert(0, "what would decide it: " + "; ".join(leads))
    elif exit_note is not None:
        # the launcher's report is the answer; a crash signal it names may still be read by a
        # class that needs more than the signal (a SIGBUS without shared memory in the log)
        below = _decided_by_below(held, ranked)
        if below:
            missing.insert(1, "what would decide the cause: " + "; ".join(below))
    if rank is not None and basis is Basis.LAUNCHER:
        score *= LAUNCHER_ONLY_FACTOR
    probability = calibrated(score, answer_kind(multi=multi, rank=rank, basis=basis))
    if probability < LIKELY and not leads:
        missing.append(_what_would_decide(held, ranked))
    rows = _rank_rows(held, winner, rank)
    root_cause = _root_cause(entry, rank_sentence(rank, rows), rank_reason, headline, multi=multi)
    if exit_note is not None:
        root_cause += f" {exit_note[1]}"
    confirm = what_would_decide(
        check=leads[0] if leads else entry.checklist[0] if entry.checklist else None,
        launcher_only=exit_note is not None,
        silent_rank=exit_note[0] if exit_note is not None else None,
        rivals=_rivals(held, ranked),
    )
    return DiagnosisResult(
        outcome="diagnosed",
        failure=failure_of(
            slug=entry.slug,
            title=entry.title,
            category=entry.category,
            confidence=probability,
            confirm=confirm,
        ),
        root_cause=root_cause,
        initiating_rank=rank,
        ranks=rows,
        collateral=_collateral_failures(held, ranked),
        evidence=evidence,
        missing_facts=missing,
        encyclopedia_url=f"/encyclopedia/{entry.slug}/",
        catalogue_version=version,
        launch=_launch(scan),
    )


# The device a CUDA out-of-memory error names: "Tried to allocate 3.02 GiB (GPU 1; 23.70 GiB
# total capacity; ..." (torch < 2.1) or "Tried to allocate 2.00 GiB. GPU 1 has a total capacity".
_OOM_DEVICE_RE = re.compile(
    r"Tried to allocate [^\n]{0,40}?\bGPU (\d{1,4})(?:;| has a total capacity)"
)


def _oom_device(lines: list[str]) -> int | None:
    """The GPU an out-of-memory error among `lines` (the evidence, the log's last lines) names,
    when it is not the first one (on GPU 0 a lone process and a job's rank 0 look alike, so it
    says nothing)."""
    for text in lines:
        m = _OOM_DEVICE_RE.search(text)
        if m is not None and int(m.group(1)) > 0:
            return int(m.group(1))
    return None


def _device_fact(device: int) -> str:
    """What the GPU of an out-of-memory error says of the rank when no line names one: the
    process that owned it, which is a rank only in a job of one process per GPU."""
    return (
        f"the out-of-memory error is on GPU {device} and no line names a rank: in a job of one "
        f"process per GPU (torchrun, DDP, fairseq's distributed training) GPU {device} is "
        f"usually local rank {device}'s, while one process spreading a model over several GPUs "
        "(device_map, pipeline stages) or pinned to it has no rank to name; the command line or "
        "each rank's own output (torchrun --tee 3) would tell which"
    )


def _decided_by(held: Held, winner: int) -> list[str]:
    """What would settle a diagnosis resting only on signals that say so (`decided_by`: a bare
    crash signal, a paste cut before its exception line); empty when a firmer one held too."""
    texts = [held.signals[p].decided_by for p in held.error_pids(held.by_entry[winner])]
    if not texts or None in texts:
        return []
    return list(dict.fromkeys(t for t in texts if t is not None))


def _decided_by_below(held: Held, ranked: list[int]) -> list[str]:
    """What would settle the entries that held only under MIN_CONFIDENCE, on signals that say
    what decides them (a launcher's bare SIGBUS is not yet dataloader-shm)."""
    texts = [
        held.signals[p].decided_by
        for entry, pids in held.by_entry.items()
        if entry not in ranked
        for p in held.error_pids(pids)
    ]
    return list(dict.fromkeys(t for t in texts if t is not None))


def _launch(scan: Scan) -> Launch | UnsetType:
    run = scan.run
    launcher = run.launcher_name
    if launcher is None and run.script is None and run.batch_size is None:
        return UNSET
    return Launch(
        launcher=launcher,
        script=run.script,
        command=run.command,
        batch_size=run.batch_size,
        world_size=run.world_size,
    )


def _rivals(held: Held, ranked: list[int]) -> list[str]:
    """The root-cause classes that also held, after the winner (at most three)."""
    return [held.entries[e].slug for e in ranked[1:] if not held.collateral(e)][:3]


def _what_would_decide(held: Held, ranked: list[int]) -> str:
    """For a diagnosis below LIKELY: the fact that would settle it, and the classes it would
    tell apart."""
    rivals = _rivals(held, ranked)
    text = (
        "what would decide it: the full output of the failing process around the error (its "
        "traceback, and what the run was doing just before: loading the model, training, "
        "evaluating, saving)"
    )
    if rivals:
        text += f"; it would tell {held.entries[ranked[0]].slug} from {', '.join(rivals)}"
    return text


def no_match(
    held: Held, scan: Scan, version: str, outside: Outside | None = None
) -> DiagnosisResult:
    """The result when no entry held firmly enough: a class proposed by likeness (similar.py) if
    an error line resembles a catalogue signature closely, else the exception lines found and
    what to add. `outside`: a failure of a kind no class covers (outside_catalogue, or
    illegal_instruction when nothing held or resembled a signature), said first, with the rank
    the launcher saw fail first."""
    # a line a fingerprint read and found too thin alone (a generic `ninja -v` failure that is
    # DeepSpeed's only beside DeepSpeed) is not proposed again by its likeness to a signature
    read = [held.signals[pid].regex for pid in held.hits if held.signals[pid].kind == "error"]
    lines = [c for c in similar.candidate_lines(scan) if not any(r.search(c[2]) for r in read)]
    proposal = similar.index_for(held.entries).nearest(lines) if outside is None else None
    if proposal is None and outside is None:
        outside = illegal_instruction(scan)
    if proposal is not None:
        return _proposed(held, scan, proposal, version)
    found = outside.lines if outside is not None else []
    found = found or sorted(scan.exceptions.values(), key=lambda h: (h.source, h.line))
    evidence = [EvidenceLine(line=h.line, text=short(h.text)) for h in found[:3]] or (
        _error_level_lines(scan)[:3]
    )
    missing = _missing_facts(scan, diagnosed=False, rank=None, multi=False)
    scores = held.scores
    if outside is not None:
        missing.insert(0, outside.said)
    elif scores:
        best = max(scores, key=lambda e: scores[e])
        missing.insert(
            0,
            "the evidence is too thin to settle the cause (closest: "
            f"{held.entries[best].slug}, score {scores[best]:.2f}): include the full "
            "traceback of the failing rank and the lines just before it",
        )
    return DiagnosisResult(
        outcome="no_match",
        failure=None,
        root_cause=None,
        initiating_rank=outside.rank if outside is not None else None,
        ranks=[],
        collateral=[],
        evidence=evidence,
        missing_facts=missing,
        encyclopedia_url=None,
        catalogue_version=version,
    )


def _proposed(held: Held, scan: Scan, proposal: similar.Proposal, version: str) -> DiagnosisResult:
    """A class no fingerprint named, proposed at low confidence from the likeness of one line to
    the catalogue's signature, with that line as evidence and what would settle it."""
    entry = held.entries[proposal.entry]
    line = short(proposal.text)
    missing = [
        f"no fingerprint matched: line {proposal.line} resembles the catalogue's signature "
        f"for {entry.slug} ({proposal.similarity:.0f} % alike: {short(proposal.signature)}); "
        "include the full traceback of the failing process, with the lines just before it, "
        "to confirm or correct the class",
        *_missing_facts(scan, diagnosed=True, rank=None, multi=False),
    ]
    where = (
        EvidenceLine(file=scan.sources[proposal.source], line=proposal.line, text=line)
        if len(scan.sources) > 1
        else EvidenceLine(line=proposal.line, text=line)
    )
    return DiagnosisResult(
        outcome="diagnosed",
        failure=failure_of(
            slug=entry.slug,
            title=entry.title,
            category=entry.category,
            confidence=calibrated(proposal.confidence, PROPOSED),
            confirm=f"the full traceback of the failing process (no fingerprint matched: line "
            f"{proposal.line} only resembles this class's error)",
        ),
        root_cause=(
            _first_sentence(entry.quick_answer or entry.title)
            + f" (Proposed from a line that resembles this class's error: {line})"
        ),
        initiating_rank=None,
        ranks=[],
        collateral=[],
        evidence=[where],
        missing_facts=missing,
        encyclopedia_url=f"/encyclopedia/{entry.slug}/",
        catalogue_version=version,
    )


def _root_cause(entry: Entry, ranks: str, reason: str, headline: str, *, multi: bool) -> str:
    """The entry's quick answer, then which rank failed first (the sentence of the rank table,
    rank_sentence) and how that was told, then the error quoted."""
    text = _first_sentence(entry.quick_answer or entry.title)
    if ranks:
        text += f" {ranks}" if reason == NO_RANK else f" {ranks[:-1]} ({reason})."
    elif multi:
        # ranks were seen but at most one reported an error: nothing to single out from
        text += " No rank can be singled out as the first to fail"
        text += "." if reason == NO_RANK else f" ({reason})."
    if headline:
        text += f" First error: {headline}"
    return text


_EXITCODE_RE = re.compile(r"\bexitcode\s*:\s*(-?\d{1,5})|return code = (-?\d{1,5})")
# mpirun's report of a rank killed by a signal (the code is read by scanning.mpi_exit)
_MPI_EXIT_RE = re.compile(r"noticed that process rank \d+ with PID [^\n]{0,200}on signal \d+")
# Exit codes that say the failure is of a kind no class covers (dev3's out-of-taxonomy threads:
# horovod/horovod#926's SIGILL on a CPU without AVX; pytorch-image-models#1724, PyTorch 2.0's
# launcher passing --local-rank to a script whose argparse knew only --local_rank).
OUTSIDE_EXITS = {
    -4: (
        "signal 4 (SIGILL), an illegal instruction: a package built for CPU features this CPU "
        "lacks (AVX/AVX2 on an older or virtual CPU; `grep -o -w 'avx2\\?' /proc/cpuinfo | "
        "sort -u` shows them) or for another GPU"
    ),
    2: (
        "Python's exit code for a command line the script refused (argparse's usage error, such "
        "as a launcher passing --local-rank to a script that reads --local_rank) or a script "
        "file it could not open"
    ),
}
# What a worker's exit code says, as the elastic agent reports it (negative: killed by a signal).
_SIGNALS = {
    4: ("SIGILL", "an illegal instruction: a binary built for another CPU or GPU"),
    6: ("SIGABRT", "an abort: a C++ exception or the NCCL watchdog tearing the process down"),
    7: (
        "SIGBUS",
        "a bus error: usually shared memory (/dev/shm) running out under DataLoader workers "
        "or NCCL, else a memory-mapped file truncated or unreadable, or a host memory fault",
    ),
    8: ("SIGFPE", "a floating-point exception in native code"),
    9: ("SIGKILL", "killed from outside: most often the kernel's OOM killer or the scheduler"),
    11: ("SIGSEGV", "a segmentation fault in native code (an extension, a driver, a data library)"),
    15: ("SIGTERM", "terminated from outside: the agent, the scheduler or a preemption"),
}


def _launcher_exit(held: Held, ranked: list[int], scan: Scan) -> tuple[int | None, int] | None:
    """For a log with only collateral failures, one of them the launcher's exit report: the rank
    it saw fail first and its exit code (negative: the signal that killed it). None when that
    rank printed an error of its own."""
    failed = scan.evidence.launcher_failed
    rank, code = failed if failed is not None else (None, None)
    hits = [h for e in ranked for h in held.error_hits(e)]
    reports = [h for h in hits if _EXITCODE_RE.search(h.text) or _MPI_EXIT_RE.search(h.text)]
    if not reports:
        return None  # the collateral failures are something else than an exit report
    if rank is not None and any(h.rank == rank and not launcher_report(h.text) for h in hits):
        return None  # that rank's own output is here
    if code is None:
        for h in reports:
            m = _EXITCODE_RE.search(h.text)
            if m:
                rank, code = h.rank, int(m.group(1) or m.group(2))
                break
    return None if code is None else (rank, code)


def _exit_note(held: Held, ranked: list[int], scan: Scan) -> tuple[int | None, str] | None:
    """The launcher's exit report (_launcher_exit) in words: the rank it saw fail first and what
    its exit code says (an uncaught Python exception, or the signal that killed it)."""
    failed = _launcher_exit(held, ranked, scan)
    if failed is None:
        return None
    rank, code = failed
    who = f"Rank {rank}" if rank is not None else "The worker"
    if code in OUTSIDE_EXITS:
        return rank, f"{who} exited with code {code}: {OUTSIDE_EXITS[code]}."
    if code < 0 and -code in _SIGNALS:
        name, meaning = _SIGNALS[-code]
        return rank, f"{who} exited with code {code}: signal {-code} ({name}), {meaning}."
    if code < 0:
        return rank, f"{who} exited with code {code}: killed by signal {-code}."
    if code == 1:
        return rank, (
            f"{who} exited with code 1: an uncaught Python exception, whose traceback is in "
            "that rank's own output."
        )
    return rank, f"{who} exited with code {code}."


class Outside(NamedTuple):
    """A failure of a kind no class covers, read from the launcher's exit report or the
    process's own line."""

    said: str  # what the exit code or signal means, for missing_facts
    rank: int | None  # the rank that failed first, as the launcher's summary would say it
    lines: list[Hit]  # the lines that say so, as evidence


# A process's own report of an illegal instruction (the shell's, gdb's, faulthandler's): like the
# launcher's exit code -4, a failure no class covers (dev3's pytorch/pytorch#22338: a prebuilt
# binary's AVX2 code on a virtual CPU without AVX2)
_SIGILL_LINE_RE = re.compile(
    r"\bIllegal instruction \(core dumped\)|received signal SIGILL|"
    r"Fatal Python error: Illegal instruction"
)


def illegal_instruction(scan: Scan) -> Outside | None:
    """With no class held: a line that reports an illegal instruction, said as what it means."""
    lines = [(h.source, h.line, h.text) for h in (*scan.error_lines, *scan.error_tail)]
    lines += [(s, n, text) for text, (s, n) in zip(scan.tail, scan.tail_at, strict=True)]
    for source, line, text in lines:
        if _SIGILL_LINE_RE.search(text):
            said = f"outside the catalogue's classes: the process was killed by {OUTSIDE_EXITS[-4]}"
            return Outside(said, None, [Hit(source, line, None, None, None, text)])
    return None


def outside_catalogue(held: Held, scan: Scan, ranked: list[int]) -> Outside | None:
    """When the launcher's exit report is all there is and its exit code names a failure no
    class of the catalogue covers (an illegal instruction, a command line the script refused),
    what it says: the answer is then no class, with that said, not the launcher's summary."""
    if not held.collateral(ranked[0]):
        return None
    failed = _launcher_exit(held, ranked, scan)
    if failed is None or failed[1] not in OUTSIDE_EXITS:
        return None
    rank, code = failed
    who = f"rank {rank}" if rank is not None else "the worker"
    # the rank named is the one the launcher's summary would have been answered with
    first, _, _ = initiating(held, scan, ranked)
    said = (
        f"outside the catalogue's classes: the launcher reports {who} exiting with code {code}, "
        f"{OUTSIDE_EXITS[code]}; {who}'s own output would show it"
    )
    reports = [
        h
        for e in ranked
        for h in held.error_hits(e)
        if launcher_report(h.text) or _MPI_EXIT_RE.search(h.text)
    ]
    return Outside(said, first, sorted(reports, key=lambda h: (h.source, h.line)))


def _rank_rows(held: Held, winner: int, initiating: int | None) -> list[RankRow]:
    """Per rank, the first error of the most likely entry that rank reported."""
    best: dict[int, tuple[int, int]] = {}  # rank -> (entry, first line)
    for e in sorted(held.scores, key=lambda e: (e != winner, -held.scores[e])):
        for rank, fe in held.first_errors_by_rank(e).items():
            if rank not in best:
                best[rank] = (e, fe.line)
    return [
        RankRow(
            rank=rank,
            slug=held.entries[e].slug,
            first_error_line=line,
            # a collateral class, or a rank that failed after the initiating one
            collateral=held.collateral(e) or (initiating is not None and rank != initiating),
        )
        for rank, (e, line) in sorted(best.items())
    ]


def _collateral_failures(held: Held, ranked: list[int]) -> list[CollateralFailure]:
    return [
        CollateralFailure(
            slug=held.entries[e].slug,
            ranks=sorted(r for r in held.ranks_of(e) if r is not None),
        )
        for e in ranked[1:]
        if held.collateral(e)
    ]


def _evidence(
    held: Held, winner: int, rank: int | None, sources: list[str]
) -> tuple[list[EvidenceLine], str]:
    """The evidence lines in log order, and the line of the strongest error signal: the one
    the root cause quotes (the first line by position may be a frame above the error)."""
    signals = held.signals
    chosen: dict[tuple[int, int], str] = {}
    order = sorted(
        held.by_entry[winner], key=lambda p: (signals[p].kind != "error", -signals[p].weight)
    )
    headline = ""
    for p in order:
        hits = held.hits[p]
        hit = (
            hits.get(rank) if rank in hits else min(hits.values(), key=lambda h: (h.source, h.line))
        )
        assert hit is not None
        chosen[(hit.source, hit.line)] = short(hit.text)
        headline = headline or chosen[(hit.source, hit.line)]
        if len(chosen) >= MAX_EVIDENCE:
            break
    if len(sources) > 1:  # merged per-rank files: a line number needs its file
        return [
            EvidenceLine(file=sources[src], line=line, text=text)
            for (src, line), text in sorted(chosen.items())
        ], headline
    return [
        EvidenceLine(line=line, text=text) for (_, line), text in sorted(chosen.items())
    ], headline


def _error_level_lines(scan: Scan) -> list[EvidenceLine]:
    """The glog error lines among the log's last lines (c10d's and NCCL's `[E…]` lines)."""
    return [
        EvidenceLine(line=line, text=short(text))
        for text, (_, line) in zip(scan.tail, scan.tail_at, strict=True)
        if _GLOG_ERROR_RE.match(text)
    ]


def _last_frame(scan: Scan) -> str:
    """The deepest `File "…", line N, in f` line among the log's last lines, shortened."""
    for text in reversed(scan.tail):
        line = parse_line(text).text.strip()
        if FRAME_LINE_RE.match(line):
            return short(line)[:160]
    return short(parse_line(scan.tail[-1]).text)[:160]


def _missing_facts(scan: Scan, *, diagnosed: bool, rank: int | None, multi: bool) -> list[str]:
    facts = []
    if scan.chars == 0 or not scan.tail:
        return ["the log is empty: paste or upload the whole output of the failed run"]
    if not diagnosed:
        if ends_in_traceback(scan):
            # a paste cut inside a traceback (often its head too): frames, and no exception line
            facts.append(
                "the log stops inside a traceback, before the exception line that names the "
                f"error (its last frame: {_last_frame(scan)}): include the lines after it, the "
                "exception's type and message"
            )
        elif scan.tracebacks == 0 and not scan.exceptions and _error_level_lines(scan):
            facts.append(
                "the error lines found (c10d's and NCCL's [E…] lines) match no known failure: "
                "include the whole stderr of every rank from its start (the first error is "
                "often much earlier), the command line and the versions of torch, CUDA and NCCL"
            )
        elif scan.tracebacks == 0 and not scan.exceptions:
            facts.append(
                "no traceback or error line: include the stderr of every rank, not only stdout"
            )
        elif scan.exceptions:
            facts.append(
                "the error found matches no known failure: include the full traceback, the "
                "command line and the versions of torch, CUDA and NCCL"
            )
        if scan.tail and _PROGRESS_RE.search(scan.tail[-1][-400:]):
            facts.append(
                "the log stops before the error: include the end of the output, after the "
                "last training step"
            )
    elif multi and rank is None:
        mirrored = scan.evidence.mirrored()
        facts.append(
            _mirrored_fact(mirrored)
            if mirrored
            else "which rank failed first cannot be told: include the logs of every rank with "
            "timestamps (e.g. torchrun --tee 3 and logging with %(asctime)s)"
        )
    return facts


def _mirrored_fact(sides: list[MismatchSide]) -> str:
    """What decides which of two ranks that report each other's collective left the common
    sequence: the program's code at each call site, or each rank's record of its collectives."""
    places = [frame_place(s.call_site) if s.call_site else None for s in sides]
    a, b = sides
    if places[0] is not None and places[0] == places[1]:
        where = (
            f"both ranks call it at {places[0]}, so the tensor they pass differs: which rank "
            "builds it differently there (a size computed from the rank, its data or a branch "
            "before the call) is the one that left the common sequence"
        )
    elif None not in places:
        where = (
            f"which of the two call sites, rank {a.rank}'s {places[0]} or rank {b.rank}'s "
            f"{places[1]}, is the branch not every rank takes at that step: the rank that "
            "called it left the common sequence"
        )
    else:
        known = "".join(
            f" (rank {s.rank} called it at {p})" for s, p in zip(sides, places, strict=True) if p
        )
        where = (
            "which rank's code took a branch the other's did not at that step: the rank that "
            "called the unusual collective left the common sequence; each rank's full traceback "
            f"shows the line of the program that called it{known}"
        )
    return (
        f"what would decide the rank: ranks {a.rank} and {b.rank} disagree on the collective "
        f"and each reports the other; {where}. TORCH_DISTRIBUTED_DEBUG=DETAIL (which made the "
        "ranks compare their collectives here) says only that they differ; PyTorch's flight "
        "recorder (NCCL jobs: TORCH_NCCL_TRACE_BUFFER_SIZE=2000, read with `python -m "
        "torch.distributed.flight_recorder.fr_trace`) lists each rank's collectives in order, "
        "so the rank whose sequence departs from the earlier steps' shows"
    )


def _with_call_sites(
    evidence: list[EvidenceLine], sides: list[MismatchSide], sources: list[str]
) -> list[EvidenceLine]:
    """The evidence with each mirrored rank's call site of the collective, in log order."""
    have = {(e.file, e.line) for e in evidence}
    for side in sides:
        if side.line is None or side.call_site is None:
            continue
        line = (
            EvidenceLine(file=sources[side.source], line=side.line, text=short(side.call_site))
            if len(sources) > 1
            else EvidenceLine(line=side.line, text=short(side.call_site))
        )
        if (line.file, line.line) not in have:
            have.add((line.file, line.line))
            evidence.append(line)
    evidence.sort(key=lambda e: (str(e.file), e.line))
    return evidence[-MAX_EVIDENCE:] if len(evidence) > MAX_EVIDENCE else evidence
