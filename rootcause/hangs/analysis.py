"""The hang verdict of one bundle: which rank stalled the job, and why.

The order of the questions is the order a person asks them in:
1. Did a rank die (a real exception, a SIGKILL) while the others waited on it? Then the job
   failed of that rank's own class and the others' timeouts are collateral.
2. Did the ranks issue different collectives at the same sequence number (op, sizes, dtypes)?
   The minority is the culprit: `collective-mismatch`. Without flight-recorder dumps, a
   mismatch shows only as the collective library's abort on the rank that noticed it (gloo:
   "Is there a distributed collective mismatch"); the culprit is then the rank whose log
   stopped at another step than the others' (it went past their collective or skipped it).
3. Has the job stopped (the peers' pending collective has waited far longer than the job's
   pace, or the logs show the collective timeout)? Then the ranks that never reached it are
   the culprits (`rank-stalled-before-collective`, their stacks say where they are instead);
   if every rank is inside it, `hang-inside-collective`, and the suspect is the rank that did
   not answer as the others did: it ran no faulthandler (a stopped process or a hung host runs
   no signal handler; a rank busy in Python, or blocked in C, still does), it wrote no
   flight-recorder dump though py-spy could read its stack, it gave no dump at all, or, the
   weakest sign, it alone did not report the collective timeout.
   A stall read from stacks alone (no flight recorder) is no stall when every rank's
   time-stamped log went on up to the moment the stacks were taken.
4. Otherwise the job is progressing: one rank late to nearly every collective is a
   `straggler-rank`; else nothing is wrong.
Missing dumps are named and the verdict is still given from what is there.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rootcause.hangs import stacks
from rootcause.hangs.bundle import Bundle
from rootcause.hangs.parsers import Collective, FlightRecord, LogInfo, Parsed, Thread
from rootcause.result import (
    CollectiveSide,
    DivergentCollective,
    HangCulprit,
    HangSection,
    RankCollective,
    StackGroup,
)

if TYPE_CHECKING:
    from rootcause.engine import Engine

STALLED = "rank-stalled-before-collective"
MISMATCH = "collective-mismatch"
INSIDE = "hang-inside-collective"
STRAGGLER = "straggler-rank"
HEALTHY = "none"
KILLED = "host-oom-killed"

_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(
    r"^(?:\[rank\d+\]:)?\s*([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)):? ?(.*)$"
)
_COLLATERAL_ERR = re.compile(
    r"(?i)gloo|Connection closed by peer|Connection reset|Timed out waiting|DistBackendError|"
    r"ProcessGroup|c10d|watchdog|timed out|NCCL communicator was aborted|Broken pipe"
)
_TIMEOUT = re.compile(r"(?i)Timed out waiting \d+ ?ms|Watchdog caught collective operation timeout")
_PEER_GONE = re.compile(r"(?i)Connection closed by peer|Connection reset by peer")
_FINISHED = re.compile(r"(?i)training finished|training complete")
# A collective library that saw the ranks disagree (gloo checks the bytes it receives; torch's
# TORCH_DISTRIBUTED_DEBUG=DETAIL compares the ranks' collectives): the rank that says it is the
# one that noticed, seldom the one that diverged.
_MISMATCH_ERR = re.compile(
    r"(?i)collective mismatch|Received data size doesn't match|"
    r"Detected mismatch between collectives"
)
_STEP = re.compile(r"(?i)\b(?:step|iter|iteration|global_step)\b[\s:=#]*(\d+)")
_STAMP = re.compile(
    r"^(?:\[rank\d+\]:)?\s*\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?"
)
_KILLED_CODES = {-9, 137}


@dataclass
class RankData:
    fr: FlightRecord | None = None
    threads: list[Thread] = field(default_factory=list)
    stack_source: str | None = None
    logs: list[LogInfo] = field(default_factory=list)
    answered_signal: bool = False  # a faulthandler dump of its own: the process ran a handler


@dataclass
class Evidence:
    ranks: dict[int, RankData]
    world: int
    exit_codes: dict[int, int]
    collected_ns: int | None
    unranked: list[str]


def gather(bundle: Bundle) -> Evidence:
    """Every file's contribution, keyed by rank."""
    ranks: dict[int, RankData] = defaultdict(RankData)
    pids: dict[int, int] = {}
    codes: dict[int, int] = {}
    collected = None
    unranked: list[str] = []
    pyspy_by_pid: list[Parsed] = []
    for f in bundle.files:
        if f.log is not None:
            pids.update(f.log.pids)
            codes.update(f.log.exit_codes)
            collected = f.log.collected_ns or collected
    for f in bundle.files:
        rank = f.rank
        if f.kind == "pyspy" and f.pid is not None and f.pid in pids:
            rank = pids[f.pid]
        if rank is None:
            if f.kind == "pyspy":
                pyspy_by_pid.append(f)
            elif f.kind != "log":
                unranked.append(f.name)
            continue
        data = ranks[rank]
        if f.kind == "fr":
            data.fr = f.fr
        elif f.kind == "pyspy":
            data.threads, data.stack_source = f.threads, "py-spy"
        elif f.kind in ("faulthandler", "log"):
            if f.log is not None:
                data.logs.append(f.log)
            data.answered_signal = data.answered_signal or bool(f.threads)
            if f.threads and data.stack_source != "py-spy":
                data.threads, data.stack_source = f.threads, "faulthandler"
    unranked += [f.name for f in pyspy_by_pid]
    world = 0
    for d in ranks.values():
        if d.fr is not None:
            for members in d.fr.pg_ranks.values():
                world = max(world, len(members), max(members, default=-1) + 1)
    world = max([world, *(r + 1 for r in ranks), *(r + 1 for r in codes)])
    return Evidence(dict(ranks), world, codes, collected, unranked)


@dataclass
class LogFacts:
    """What a rank's logs say about its end: its own error, the collective timeout, a peer that
    vanished, a finish, a mismatch the collective library noticed, how far it got (the last
    step it reported) and when it last wrote a time-stamped line."""

    own: str | None = None
    timeout: bool = False
    gone: bool = False
    finished: bool = False
    mismatch: str | None = None
    last_step: int | None = None
    last_stamp_ns: int | None = None
    stamp_gap_s: float | None = None  # the median time between its time-stamped lines


def _stamp_ns(line: str) -> int | None:
    m = _STAMP.match(line)
    if not m:
        return None
    try:
        when = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}").replace(tzinfo=UTC)
    except ValueError:
        return None
    frac = (m.group(3) or "0").ljust(9, "0")
    return int(when.timestamp()) * 10**9 + int(frac)


def _log_facts(logs: list[LogInfo]) -> LogFacts:
    facts = LogFacts()
    stamps: list[int] = []
    for log in logs:
        in_tb = False
        for line in log.lines:
            if _TRACEBACK in line:
                in_tb = True
                continue
            if _TIMEOUT.search(line):
                facts.timeout = True
            if _PEER_GONE.search(line):
                facts.gone = True
            if _FINISHED.search(line):
                facts.finished = True
            if facts.mismatch is None and _MISMATCH_ERR.search(line):
                facts.mismatch = line.strip()
            if not in_tb:
                step = _STEP.search(line)
                if step:
                    facts.last_step = int(step.group(1))
                ns = _stamp_ns(line)
                if ns is not None:
                    stamps.append(ns)
            if in_tb and not line.startswith((" ", "\t")):
                m = _EXC_LINE.match(line)
                if m:
                    in_tb = False
                    if facts.own is None and not _COLLATERAL_ERR.search(line):
                        facts.own = line.strip()
    if stamps:
        facts.last_stamp_ns = max(stamps)
        gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(sorted(stamps)) if b > a]
        facts.stamp_gap_s = statistics.median(gaps) if gaps else None
    return facts


def _odd_steps(facts: dict[int, LogFacts]) -> list[int]:
    """The ranks whose last reported step is not the one most ranks reached: a few ranks that
    went on past the others' collective (they issued another one) or stayed behind it."""
    steps = {r: f.last_step for r, f in facts.items() if f.last_step is not None}
    if len(steps) < 3:
        return []
    common, n = Counter(steps.values()).most_common(1)[0]
    odd = sorted(r for r, s in steps.items() if s != common)
    return odd if odd and len(odd) <= max(1, len(steps) // 3) and n > len(odd) else []


def _logs_progressing(facts: dict[int, LogFacts], collected_ns: int | None) -> bool:
    """Every rank's time-stamped log went on to (or past) the moment the bundle was taken: the
    job was moving, whatever one stack caught it doing. Stamps are read as UTC; a log in another
    zone (hours away from the collection) says nothing."""
    if not collected_ns or not facts:
        return False
    for f in facts.values():
        if f.last_stamp_ns is None:
            return False
        lag = (collected_ns - f.last_stamp_ns) / 1e9
        if abs(lag) > 600:
            return False
        if lag > max(0.5, 2 * (f.stamp_gap_s or 0.0)):
            return False
    return True


def _crash_class(line: str, engine: Engine | None) -> str:
    # The rank's own error, read by today's engine: the class it would name for that log alone.
    from rootcause.engine import get_engine

    result = (engine or get_engine()).diagnose([line + "\n"])
    if result.failure is not None:
        return result.failure.slug
    return "unknown-error"


def _main_pg(ev: Evidence) -> str | None:
    counts: Counter[str] = Counter()
    for d in ev.ranks.values():
        if d.fr is not None:
            for e in d.fr.entries:
                counts[e.pg] += 1
    return counts.most_common(1)[0][0] if counts else None


def _entries(fr: FlightRecord, pg: str) -> list[Collective]:
    return sorted((e for e in fr.entries if e.pg == pg), key=lambda e: e.seq)


@dataclass
class Verdict:
    verdict: str
    culprits: list[tuple[int, float, str]]
    summary: str
    divergent: DivergentCollective | None = None
    collateral: list[int] = field(default_factory=list)


def _mismatch(per_rank: dict[int, list[Collective]], pg: str) -> Verdict | None:
    by_seq: dict[int, dict[tuple[str, str, str], list[int]]] = defaultdict(
        lambda: defaultdict(list)
    )
    entry_of: dict[tuple[int, int], Collective] = {}
    for rank, entries in per_rank.items():
        for e in entries[-64:]:  # a divergence shows at the end of the buffer
            by_seq[e.seq][e.signature()].append(rank)
            entry_of[(rank, e.seq)] = e
    for seq in sorted(by_seq):
        groups = by_seq[seq]
        if len(groups) < 2:
            continue
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
        majority = ordered[0][1]
        minority = sorted(r for _, rs in ordered[1:] for r in rs)
        sides = [
            CollectiveSide(
                ranks=stacks.rank_ranges(rs),
                op=sig[0],
                sizes=sig[1],
                dtypes=sig[2].split(",") if sig[2] else [],
                state="completed" if all(entry_of[(r, seq)].completed for r in rs) else "pending",
            )
            for sig, rs in ordered
        ]
        missing = sorted(set(per_rank) - {r for rs in groups.values() for r in rs})
        tie = len(ordered[0][1]) == len(ordered[1][1])
        conf = 0.55 if tie else 0.9
        reason = (
            f"issued {ordered[1][0][0]} {ordered[1][0][1]} {ordered[1][0][2]} at sequence {seq} "
            f"where {len(majority)} ranks issued {ordered[0][0][0]} {ordered[0][0][1]} "
            f"{ordered[0][0][2]}"
        )
        return Verdict(
            MISMATCH,
            [(r, conf, reason) for r in minority],
            f"The ranks issued different collectives at sequence {seq} of process group {pg}: "
            f"rank{'s' if len(minority) > 1 else ''} {stacks.rank_ranges(minority)} differ "
            "from the rest.",
            DivergentCollective(
                process_group=pg, seq=seq, sides=sides, missing_ranks=stacks.rank_ranges(missing)
            ),
        )
    return None


def _stack_mismatch(readings: dict[int, stacks.Reading]) -> Verdict | None:
    calls: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r, rd in readings.items():
        if rd.meaning == "collective":
            calls[(rd.frame, rd.where)].append(r)
    if (
        len(calls) < 2
        or len(calls) != len({c for c in calls})
        or len(readings) != sum(len(v) for v in calls.values())
    ):
        return None
    ordered = sorted(calls.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
    (frame, where), majority = ordered[0]
    minority = sorted(r for _, rs in ordered[1:] for r in rs)
    if len(minority) > len(majority):
        return None
    other = ordered[1][0]
    reason = f"waits in `{other[0]}` at {other[1]} while the others wait in `{frame}` at {where}"
    return Verdict(
        MISMATCH,
        [(r, 0.7, reason) for r in minority],
        f"Every rank waits in a collective, but rank{'s' if len(minority) > 1 else ''} "
        f"{stacks.rank_ranges(minority)} in a different call: the ranks' collectives are out "
        "of step.",
    )


def _pace(per_rank: dict[int, list[Collective]]) -> tuple[float, float]:
    """(the median time between one rank's steps, the median spread of a collective's start
    across ranks), in seconds, over completed collectives."""
    gaps: list[float] = []
    for entries in per_rank.values():
        done = [e for e in entries if e.completed and e.created_ns]
        by_sig: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for e in done:
            by_sig[e.signature()].append(e.created_ns)
        for times in by_sig.values():
            gaps += [(b - a) / 1e9 for a, b in itertools.pairwise(times)]
    spreads = _spreads(per_rank)
    return (
        statistics.median(gaps) if gaps else 0.0,
        statistics.median(s for s, _ in spreads.values()) if spreads else 0.0,
    )


def _spreads(per_rank: dict[int, list[Collective]]) -> dict[int, tuple[float, int]]:
    """seq -> (max - min start across ranks in seconds, the last rank to start)."""
    starts: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for rank, entries in per_rank.items():
        for e in entries:
            if e.completed and e.created_ns:
                starts[e.seq].append((e.created_ns, rank))
    out = {}
    for seq, ts in starts.items():
        if len(ts) >= 2:
            ts.sort()
            out[seq] = ((ts[-1][0] - ts[0][0]) / 1e9, ts[-1][1])
    return out


def _straggler(per_rank: dict[int, list[Collective]]) -> tuple[int, float, str] | None:
    """The rank that starts the slow collectives last, if one does nearly always.

    Only the collectives whose start is spread far more than usual count: a step has several
    collectives and a straggler delays only the first of them (the others then start
    together), and the buffer's first collective carries the start-up's skew.
    """
    spreads = _spreads(per_rank)
    seqs = sorted(spreads)[1:][-60:]
    if len(seqs) < 3:
        return None
    usual = statistics.median(spreads[s][0] for s in seqs)
    slow = [s for s in seqs if spreads[s][0] >= max(0.05, 3 * usual)]
    if len(slow) < 2:
        return None
    last = Counter(spreads[s][1] for s in slow)
    rank, n = last.most_common(1)[0]
    if n < 0.6 * len(slow):
        return None
    lateness = statistics.median(spreads[s][0] for s in slow if spreads[s][1] == rank)
    return (
        rank,
        round(min(0.95, 0.5 + n / len(slow) / 2), 2),
        f"last to start {n} of the {len(slow)} slow collectives (of {len(seqs)}), a median "
        f"{lateness:.2f} s after the first rank",
    )


def decide(
    ev: Evidence, readings: dict[int, stacks.Reading], engine: Engine | None = None
) -> Verdict:
    verdict = _decide(ev, readings, engine)
    if verdict.verdict in (STALLED, INSIDE, MISMATCH) and not verdict.collateral:
        # the ranks that only waited on the culprits
        blamed = {r for r, _, _ in verdict.culprits}
        verdict.collateral = [r for r in range(ev.world) if r not in blamed]
    return verdict


def _decide(ev: Evidence, readings: dict[int, stacks.Reading], engine: Engine | None) -> Verdict:
    world = list(range(ev.world))
    errors = {r: _log_facts(d.logs) for r, d in ev.ranks.items()}
    any_timeout = any(e.timeout for e in errors.values())
    have_dump = {r for r, d in ev.ranks.items() if d.fr is not None or d.threads}

    pg = _main_pg(ev)
    per_rank = {r: _entries(d.fr, pg) for r, d in ev.ranks.items() if d.fr is not None and pg}
    per_rank = {r: es for r, es in per_rank.items() if es}

    # 1. Different collectives at the same sequence number (a crash it causes is its effect).
    if per_rank and pg is not None:
        found = _mismatch(per_rank, pg)
        if found:
            return found

    # 1b. Without a flight recorder: the collective library saw the ranks disagree (gloo aborts
    # on the bytes it received). The rank that says so only noticed; the diverged rank is the
    # one whose log stopped at another step than the others': it went on past their collective
    # (issued another, or skipped theirs) or never reached it.
    noticed = sorted(r for r, e in errors.items() if e.mismatch)
    if noticed and not per_rank:
        odd = _odd_steps(errors)
        line = errors[noticed[0]].mismatch or ""
        steps = ", ".join(f"rank {r}: step {errors[r].last_step}" for r in odd)
        return Verdict(
            MISMATCH,
            [
                (
                    r,
                    0.7,
                    f"its log stopped at another step than the others' ({steps}); rank "
                    f"{stacks.rank_ranges(noticed)} then reported: {line}",
                )
                for r in odd
            ],
            f"Rank {stacks.rank_ranges(noticed)} reported a collective mismatch"
            + (
                f"; rank{'s' if len(odd) > 1 else ''} {stacks.rank_ranges(odd)} had gone to "
                "another step than the others, so issued a different collective."
                if odd
                else "; no log shows which rank issued the different collective (a "
                "flight-recorder dump of each rank would)."
            ),
            collateral=sorted(set(world) - set(odd)),
        )

    # 2. A rank that died of its own error, or was killed while the others still ran.
    crashed = [(r, e.own) for r, e in errors.items() if e.own]
    killed_codes = {r for r, c in ev.exit_codes.items() if c in _KILLED_CODES}
    if killed_codes and len(killed_codes) < len(world):
        # A rank with a dump was alive when the bundle was taken: killed afterwards, by whoever
        # stopped the hung job, not the cause.
        # And when the others timed out, the job hung first and was stopped afterwards.
        killed = [r for r in killed_codes if r not in have_dump and not any_timeout]
    else:
        killed = []
    if crashed:
        slug = _crash_class(crashed[0][1] or "", engine)
        culprits = [(r, 0.9, f"died of its own error: {line}") for r, line in crashed]
        collateral = sorted(set(world) - {r for r, _ in crashed})
        return Verdict(
            slug,
            culprits,
            f"Rank {stacks.rank_ranges([r for r, _ in crashed])} died of "
            f"{crashed[0][1]}; the other ranks waited on it.",
            collateral=collateral,
        )
    if killed:
        collateral = sorted(set(world) - set(killed))
        return Verdict(
            KILLED,
            [
                (r, 0.85, "killed (SIGKILL, exit code -9) while the others waited on it")
                for r in sorted(killed)
            ],
            f"Rank {stacks.rank_ranges(sorted(killed))} was killed (SIGKILL: the "
            "kernel's OOM killer or a scheduler); the others lost their peer.",
            collateral=collateral,
        )

    # 2b. Without a flight recorder: ranks waiting in different collective calls.
    if not per_rank:
        found = _stack_mismatch(readings)
        if found:
            return found

    # A rank that ran no faulthandler while most others did was not running at all: frozen (a
    # stopped process, a hung host), not busy elsewhere in Python, which still answers.
    answered = [r for r in world if r in ev.ranks and ev.ranks[r].answered_signal]
    deaf = [r for r in world if r not in answered]
    if len(answered) < max(2, len(world) // 2) or len(deaf) > max(1, len(world) // 4):
        deaf = []
    # A rank that did not report the collective timeout every other rank reported.
    timed_out = [r for r in world if r in errors and errors[r].timeout]
    quiet = [r for r in world if r not in timed_out]
    if len(timed_out) < max(2, len(world) // 2) or len(quiet) > max(1, len(world) // 4):
        quiet = []

    # 3. Stopped or progressing?
    top = max((es[-1].seq for es in per_rank.values()), default=None)
    pending_at_top = [r for r, es in per_rank.items() if es[-1].seq == top and not es[-1].completed]
    behind = sorted(r for r, es in per_rank.items() if top is not None and es[-1].seq < top)
    no_fr = [r for r in world if r not in per_rank]
    stopped = any_timeout
    if not stopped and per_rank and pending_at_top and ev.collected_ns:
        oldest = min(per_rank[r][-1].created_ns for r in pending_at_top)
        age = (ev.collected_ns - oldest) / 1e9
        step, spread = _pace(per_rank)
        stopped = age > max(0.8, 3 * spread, 2 * step)
    if not stopped and per_rank and len(pending_at_top) == len(per_rank) and ev.collected_ns:
        # Every dumped rank waits in the same collective, for longer than its start is usually
        # spread, and some rank gave no dump at all: a frozen process answers no dump request.
        age = (ev.collected_ns - min(per_rank[r][-1].created_ns for r in pending_at_top)) / 1e9
        # Longer than the start of any earlier collective of this job was ever spread: in a
        # moving job a collective is pending only until its last rank arrives.
        spreads = _spreads(per_rank)
        widest = max((spreads[s][0] for s in sorted(spreads)[1:]), default=0.0)
        stopped = 0 < len(no_fr) <= max(1, len(world) // 4) and age > max(
            0.1, 3 * _pace(per_rank)[1], 1.5 * widest
        )
    elsewhere = sorted(r for r, rd in readings.items() if rd.meaning != "collective")
    waiting = sorted(r for r, rd in readings.items() if rd.meaning == "collective")
    if not per_rank and not stopped:
        # Stacks alone: a few ranks away from a collective that the rest wait in reads as a hang.
        # Waiting ranks at different call sites are a moving job caught mid-step, not a hang.
        sites = {(readings[r].frame, readings[r].where) for r in waiting}
        stopped = len(sites) == 1 and 0 < len(elsewhere) <= max(1, len(readings) // 4)
        # ... unless every rank's log went on writing up to the moment the stacks were taken.
        stopped = stopped and not _logs_progressing(errors, ev.collected_ns)
    if not stopped and deaf and waiting and not elsewhere:
        # Every rank that ran its faulthandler waits in a collective; the rest ran none.
        stopped = True
    finished = all(r in errors and errors[r].finished for r in world) and bool(world)
    if finished and not pending_at_top:
        return Verdict(HEALTHY, [], "Every rank finished.")

    if stopped:
        suspects = behind or [r for r in elsewhere if r not in pending_at_top]
        if suspects and len(suspects) <= max(1, len(world) // 2):
            both = set(behind) & set(elsewhere)
            culprits = []
            for r in suspects:
                rd = readings.get(r)
                where = f"; its stack is in `{rd.frame}` at {rd.where}" if rd else ""
                conf = 0.9 if r in both or (r in behind and rd is None) else 0.75
                culprits.append(
                    (r, conf, f"never reached the collective the others wait in{where}")
                )
            div = None
            if top is not None and pg is not None:
                sample = next(per_rank[r][-1] for r in pending_at_top) if pending_at_top else None
                div = DivergentCollective(
                    process_group=pg,
                    seq=top,
                    sides=[
                        CollectiveSide(
                            ranks=stacks.rank_ranges(pending_at_top),
                            op=sample.op,
                            sizes=sample.signature()[1],
                            dtypes=sample.dtypes,
                            state="pending",
                        )
                    ]
                    if sample
                    else [],
                    missing_ranks=stacks.rank_ranges(sorted(set(suspects) | set(no_fr))),
                )
            return Verdict(
                STALLED,
                culprits,
                f"Rank{'s' if len(suspects) > 1 else ''} "
                f"{stacks.rank_ranges(suspects)} never reached the collective the "
                "others wait in.",
                div,
            )
        silent = no_fr if per_rank else sorted(set(world) - have_dump)
        # Alive enough for py-spy to read its stack, yet it wrote no flight-recorder dump when
        # every rank was asked: a process that cannot run its own code, frozen.
        mute = [r for r in no_fr if per_rank and r in readings and r not in answered]
        if len(mute) > max(1, len(world) // 4):
            mute = []
        if len(silent) > max(1, len(world) // 4):
            silent = mute
        if not per_rank and not readings:
            # Logs alone: the ranks that did not report the timeout are the suspects.
            quiet = [r for r in world if not (r in errors and errors[r].timeout)]
            if quiet and len(quiet) < len(world):
                return Verdict(
                    STALLED,
                    [
                        (r, 0.5, "did not report the collective timeout the others did")
                        for r in quiet
                    ],
                    f"Ranks {stacks.rank_ranges(quiet)} did not time out with the rest.",
                )
        # A rank that ran its faulthandler was running: it only lost its dump.
        silent = [r for r in silent if r not in answered]
        unseen = [r for r in silent if r not in readings]
        if silent and len(unseen) == len(silent) and not set(silent) <= set(deaf):
            # No dump and no stack: it may be frozen inside the collective, but a rank that never
            # reached it is the commoner case, and nothing shows it inside.
            return Verdict(
                STALLED,
                [
                    (r, 0.5, "gave no dump and no stack while the others wait in the collective")
                    for r in silent
                ],
                f"Rank {stacks.rank_ranges(silent)} gave no dump while every other rank waits in "
                "the same collective: it never reached it, or it is frozen.",
            )
        culprits = [
            (
                r,
                0.75 if r in deaf else 0.7 if r in mute else 0.6,
                "could not be dumped while every other rank waited inside the "
                "collective: frozen, or its host is"
                + ("; it ran no faulthandler either, which the others did" if r in deaf else "")
                + (
                    "; py-spy read its stack, so the process was there but did not answer"
                    if r in mute
                    else ""
                ),
            )
            for r in silent
        ]
        for r in deaf:
            if r not in silent:
                culprits.append(
                    (
                        r,
                        0.7,
                        "ran no faulthandler while the others did"
                        + (", and did not report the timeout they reported" if r in quiet else "")
                        + ": a process that runs no signal handler is frozen (stopped, or its "
                        "host hung) inside the collective",
                    )
                )
        if not culprits:
            culprits = [
                (
                    r,
                    0.5,
                    "did not report the collective timeout every other rank reported: it was "
                    "not waiting on its own clock, frozen or held elsewhere",
                )
                for r in quiet
            ]
        culprits.sort(key=lambda c: -c[1])
        named = [r for r, _, _ in culprits]
        return Verdict(
            INSIDE,
            culprits,
            "Every rank that could be dumped is inside the same collective and none "
            "completed it."
            + (f" Rank {stacks.rank_ranges(silent)} gave no dump." if silent else "")
            + (
                f" Rank {stacks.rank_ranges([r for r in named if r not in silent])} did not "
                "answer as the others did: frozen inside it."
                if set(named) - set(silent)
                else ""
            ),
        )

    # 4. Progressing.
    if per_rank:
        slow = _straggler(per_rank)
        if slow:
            rank, conf, why = slow
            return Verdict(
                STRAGGLER, [(rank, conf, why)], f"The job progresses, but rank {rank} is {why}."
            )
    return Verdict(HEALTHY, [], "The job is progressing: no rank is stalled.")


def group_stacks(readings: dict[int, stacks.Reading]) -> list[StackGroup]:
    groups: dict[tuple[str, str, stacks.Meaning], list[int]] = defaultdict(list)
    for r, rd in readings.items():
        groups[(rd.frame, rd.where, rd.meaning)].append(r)
    out = [
        StackGroup(
            ranks=stacks.rank_ranges(rs),
            count=len(rs),
            frame=frame,
            where=where,
            meaning=meaning,
            meaning_text=stacks.MEANINGS[meaning],
        )
        for (frame, where, meaning), rs in groups.items()
    ]
    out.sort(key=lambda g: -g.count)
    return out


def analyse(bundle: Bundle, engine: Engine | None = None) -> HangSection:
    """The hang section of a bundle. `engine`: the catalogue that names a crashed rank's own
    class (the service's current one); by default the catalogue shipped in the package."""
    ev = gather(bundle)
    readings = {}
    for r, d in ev.ranks.items():
        rd = stacks.read_stack(d.threads) if d.threads else None
        if rd is not None:
            readings[r] = rd
    v = decide(ev, readings, engine)
    pg = _main_pg(ev)
    last = []
    for r in sorted(ev.ranks):
        fr = ev.ranks[r].fr
        es = _entries(fr, pg) if fr is not None and pg is not None else []
        if es:
            e = es[-1]
            last.append(
                RankCollective(
                    rank=r,
                    process_group=e.pg,
                    seq=e.seq,
                    op=e.op,
                    sizes=e.signature()[1],
                    dtypes=e.dtypes,
                    state="completed" if e.completed else "pending",
                )
            )
    world = range(ev.world)
    missing = []
    for label, has in (
        ("flight-recorder dump", lambda d: d.fr is not None),
        ("stack dump", lambda d: bool(d.threads)),
        ("log", lambda d: bool(d.logs)),
    ):
        gone = [r for r in world if r not in ev.ranks or not has(ev.ranks[r])]
        if gone and len(gone) < ev.world:
            missing.append(
                f"{label}: rank{'s' if len(gone) > 1 else ''} {stacks.rank_ranges(gone)}"
            )
    for name in ev.unranked:
        missing.append(f"{name}: no rank in its name or content; left out")
    return HangSection(
        verdict=v.verdict,
        summary=v.summary,
        world_size=ev.world,
        culprits=[
            HangCulprit(rank=r, confidence=round(c, 2), reason=why) for r, c, why in v.culprits
        ],
        divergent=v.divergent,
        stacks=group_stacks(readings),
        last_collectives=last,
        collateral_ranks=stacks.rank_ranges(v.collateral),
        missing=missing,
        artefacts=dict(Counter(f.kind for f in bundle.files)),
    )
