"""Deciding what a read log shows: which entries held, how they rank, and which rank failed first.

Scores come from the weights of the signals that held. The ordering rules then correct what scores
alone get wrong: an error raised while handling an earlier one, a root cause raised clearly earlier
on other ranks, and a failure the run recovered from.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from rootcause.catalogue import Entry
from rootcause.engine.metrics import PROGRESS_BAR_RE, logged_finite_after
from rootcause.engine.scanning import RECOVERY_PROGRESS_LINES, Hit, Scan, is_training_line
from rootcause.evidence import parse_line
from rootcause.matching import Signal
from rootcause.ranks import DISTINCT_FIRST_SECONDS, Basis, FirstError, RankAnswer, rank_answer

# The elastic agent's report about a worker (an exit line, a field of its summary block).
LAUNCHER_REPORT_RE = re.compile(
    r"\bfailed \(exitcode: -?\d+\)|^\s*(?:exitcode|traceback|error_file)\s*:|"
    r"^\s*rank\s*:?\s*\d+\s*\(local[_ ]rank|Signal \d+ \(SIG[A-Z]+\) received by PID|"
    r"ChildFailedError|"
    # torch.multiprocessing.spawn's report of a process that died without a Python error
    r"\bProcessExitedException: process \d{1,5} terminated with (?:signal|exit code)\b"
)


def launcher_report(text: str) -> bool:
    """The line is the launcher's report about a worker (read without its host or time prefix:
    `node-b: exitcode : 1 (pid: 7)` is a summary field too)."""
    return bool(LAUNCHER_REPORT_RE.search(text) or LAUNCHER_REPORT_RE.search(parse_line(text).text))


# Below this an entry's score is noise: the outcome is no_match.
MIN_CONFIDENCE = 0.3
# What a line says when it reports a failure (as opposed to a memory report or a loss value).
_FAILURE_WORDS_RE = re.compile(
    r"(?i)error|fail|out of memory|exception|fatal|abort|killed|cannot|unable|exceeded|timed? ?out"
)


@dataclass
class Held:
    """The signals whose conditions held in one log, grouped by entry, with the entry scores.

    Entries and signals are referred to by their index in the engine's lists.
    """

    signals: list[Signal]
    entries: list[Entry]
    # signal index -> first hit per rank (None for unranked lines)
    hits: dict[int, dict[int | None, Hit]]
    by_entry: dict[int, list[int]] = field(init=False)
    # only entries with an error signal among their held ones have a score
    scores: dict[int, float] = field(init=False)

    def __post_init__(self) -> None:
        self.by_entry = {}
        for pid in self.hits:
            self.by_entry.setdefault(self.signals[pid].entry, []).append(pid)
        # error signals of an entry held through within_lines also count as its errors
        self.scores = {}
        for entry, pids in self.by_entry.items():
            if not any(self.signals[p].kind == "error" for p in pids):
                continue
            self.scores[entry] = 1 - math.prod(1 - self.signals[p].weight for p in pids)

    def collateral(self, entry: int) -> bool:
        """The entry is a failure that follows from another (a watchdog timeout, a closed peer)."""
        return self.entries[entry].fingerprints.is_collateral

    def error_pids(self, pids: list[int]) -> list[int]:
        """The error signals among `pids`, or all of them when none is an error signal."""
        errors = [p for p in pids if self.signals[p].kind == "error"]
        return errors or pids

    def error_hits(self, entry: int) -> list[Hit]:
        return [h for p in self.error_pids(self.by_entry[entry]) for h in self.hits[p].values()]

    def first_errors_by_rank(self, entry: int) -> dict[int, FirstError]:
        out: dict[int, FirstError] = {}
        for p in self.error_pids(self.by_entry[entry]):
            for rank, h in self.hits[p].items():
                if rank is None:
                    continue
                fe = FirstError(h.ts, (h.source, h.line), h.line, h.text, self.signals[p].id)
                if rank not in out or fe.order < out[rank].order:
                    out[rank] = fe
        return out

    def ranks_of(self, entry: int) -> set[int | None]:
        return {r for p in self.error_pids(self.by_entry[entry]) for r in self.hits[p]}


def candidates(held: Held, scan: Scan) -> list[int]:
    """The entries that may be the diagnosis, the winner first; empty for no_match."""

    def first_error_line(entry: int) -> int:
        return min(held.error_hits(entry), key=lambda h: (h.source, h.line)).line

    ranked = sorted(
        held.scores,
        key=lambda e: (held.collateral(e), -round(held.scores[e], 3), first_error_line(e)),
    )
    ranked = [
        e
        for e in ranked
        if held.scores[e] >= MIN_CONFIDENCE
        and not _recovered(held, scan, e)
        and not _bar_only_nonfinite(held, scan, e)
    ]
    ranked = _drop_resumed(held, scan, ranked)
    if not ranked:
        return ranked
    ranked = _root_of_chain(held, ranked)
    return _first_collateral(held, _first_in_time(held, ranked))


def confidence(held: Held, ranked: list[int]) -> float:
    """The winner's score, lowered when another root cause scores nearly as high."""
    winner = ranked[0]
    score = held.scores[winner]
    rivals = [e for e in ranked[1:] if not held.collateral(e) and not held.collateral(winner)]
    if rivals and held.scores[rivals[0]] > score - 0.1:
        score *= 0.85  # two root causes nearly tie: say so through the confidence
    return score


def initiating(held: Held, scan: Scan, ranked: list[int]) -> RankAnswer:
    """The rank that failed first (None when none can be singled out), the reason why, and what
    it rests on."""
    winner = ranked[0]
    root_errors = held.first_errors_by_rank(winner)
    collateral_errors: dict[int, FirstError] = {}
    for e in ranked[1:]:
        if held.collateral(e):
            for r, fe in held.first_errors_by_rank(e).items():
                if r not in collateral_errors or fe.order < collateral_errors[r].order:
                    collateral_errors[r] = fe
    if held.collateral(winner):
        for r, fe in root_errors.items():
            if r not in collateral_errors or fe.order < collateral_errors[r].order:
                collateral_errors[r] = fe
        root_errors = {}
    # the launcher's lines about a worker ("failed (exitcode: 3) local_rank: 1", its summary
    # block) are not that worker's own output: a rank they alone speak of printed nothing
    collateral_errors = {
        r: fe for r, fe in collateral_errors.items() if not launcher_report(fe.text)
    }
    answer = rank_answer(
        root_errors=root_errors,
        collateral_errors=collateral_errors,
        evidence=scan.evidence,
        ranks_seen=scan.ranks_seen,
        # several separate raises of the root cause on unranked lines are several processes
        unranked_roots=0 if held.collateral(winner) else _repeated_raises(scan, winner),
    )
    if not scan.ranks_seen and answer.rank is None:
        return RankAnswer(None, "single process", Basis.ONE_PROCESS)
    return answer


def exit_first(held: Held, scan: Scan, ranked: list[int], answer: RankAnswer) -> list[int]:
    """With only collateral failures, and the named rank one that printed no error while the
    launcher saw it exit on its own (a non-zero exit code; an abort the quiet-exit rule took),
    the class is the launcher's report of that exit, not the peers' loss of it: put first the
    collateral entry that holds the launcher's line about that rank.

    torchrun's summary block holds that entry firmly by its score already; mp.spawn's single
    `ProcessExitedException: process 0 terminated with exit code 3` does not, and the survivor's
    gloo `Connection reset by peer`, printed earlier, led instead. A rank the agent stopped
    (SIGTERM) or that others timed out waiting for is not taken: there the stall is the story.
    """
    rank = _exited_on_its_own(scan, answer)
    if rank is None or not held.collateral(ranked[0]):
        return ranked
    for e in ranked:
        exit_line = held.first_errors_by_rank(e).get(rank)
        if held.collateral(e) and exit_line is not None and launcher_report(exit_line.text):
            return [e] + [x for x in ranked if x != e]
    return ranked


def _exited_on_its_own(scan: Scan, answer: RankAnswer) -> int | None:
    """The named rank, when the launcher saw it exit first and by its own doing: the quiet-exit
    rule's answer, or the one silent rank with an exit code above 0 (not a signal sent to it)."""
    failed = scan.evidence.launcher_failed
    if answer.rank is None or failed is None or failed[0] != answer.rank:
        return None
    if answer.basis is Basis.QUIET_EXIT or (answer.basis is Basis.SILENT and failed[1] > 0):
        return answer.rank
    return None


def _repeated_raises(scan: Scan, entry: int) -> int:
    """How many times one error of the entry was raised on unranked lines (its most raised
    signal): the same message raised several times is several processes."""
    by_signal = Counter(pid for pid, _, _ in scan.unranked_raises.get(entry, ()))
    return max(by_signal.values(), default=0)


def _root_of_chain(held: Held, ranked: list[int]) -> list[int]:
    """Put first the entry whose error was the first exception of a chain.

    When the leader's errors were all raised while handling an earlier exception, and
    another root-cause entry matched that earlier exception, the earlier one is the cause
    (the later one is the handler failing in turn: an emergency save, a fallback load).
    """
    leader = ranked[0]
    if held.collateral(leader):
        return ranked
    hits = held.error_hits(leader)
    if not hits or any(h.chained is None for h in hits):
        return ranked
    for e in ranked[1:]:
        if held.collateral(e):
            continue
        for h in held.error_hits(e):
            if any(
                h.source == c.source
                and c.chained is not None
                and c.chained[0] <= h.line < c.chained[1]
                for c in hits
            ):
                return [e] + [x for x in ranked if x != e]
    return ranked


# A collateral entry this firmly held is the log's own account of a failure (a timeout's
# message), not a hint among others.
FIRM_COLLATERAL = 0.8


def _first_collateral(held: Held, ranked: list[int]) -> list[int]:
    """With only collateral failures, the first of those firmly held leads, whatever the
    scores: two groups timing out on the same stall (a gloo group's send/recv, then the NCCL
    watchdog of the same job) name the group that stuck first."""
    if not held.collateral(ranked[0]):
        return ranked

    def first(e: int) -> tuple[int, int]:
        hit = min(held.error_hits(e), key=lambda h: (h.source, h.line))
        return hit.source, hit.line

    firm = [e for e in ranked if held.collateral(e) and held.scores[e] >= FIRM_COLLATERAL]
    if len(firm) < 2 or len({first(e)[0] for e in firm}) > 1:
        return ranked  # order across files says nothing
    lead = min(firm, key=first)
    return [lead] + [e for e in ranked if e != lead]


def _first_in_time(held: Held, ranked: list[int]) -> list[int]:
    """Put first the root-cause entry raised clearly earlier, on other ranks, than the leader.

    Two different root-cause errors on different ranks of one job: the later one met a job
    that was already failing (an emergency save filling the disk after another rank ran out
    of memory), whatever the scores say. Only when every error of both carries a rank; by
    time stamp when both have them (DISTINCT_FIRST_SECONDS apart), else by order when both
    are in the same file.
    """
    leader = ranked[0]
    if held.collateral(leader):
        return ranked

    def start(e: int) -> tuple[set[int], FirstError] | None:
        pids = held.error_pids(held.by_entry[e])
        if any(None in held.hits[p] for p in pids):
            return None
        firsts = held.first_errors_by_rank(e)
        if not firsts:
            return None
        timed = all(fe.ts is not None for fe in firsts.values())
        key = (lambda f: (f.ts, f.order)) if timed else (lambda f: (0.0, f.order))
        return set(firsts), min(firsts.values(), key=key)

    def earlier(a: FirstError, b: FirstError) -> bool:
        if a.ts is not None and b.ts is not None:
            return a.ts <= b.ts - DISTINCT_FIRST_SECONDS
        if a.ts is None and b.ts is None:
            return a.order[0] == b.order[0] and a.order < b.order
        return False

    lead = start(leader)
    if lead is None:
        return ranked
    best, best_first = leader, lead[1]
    for e in ranked[1:]:
        other = None if held.collateral(e) else start(e)
        if other and not other[0] & lead[0] and earlier(other[1], best_first):
            best, best_first = e, other[1]
    return [best] + [x for x in ranked if x != best]


_NONFINITE_RE = re.compile(r"(?i)\b(?:nan|-?inf)\b")


def _bar_only_nonfinite(held: Held, scan: Scan, entry: int) -> bool:
    """Every error line of the entry is a progress bar whose postfix shows NaN or inf (a running
    mean that one skipped batch spoils), and the run logged a finite loss after the first of
    them: the logged figure is the run's, the bar's is not (a false alarm)."""
    hits = held.error_hits(entry)
    if not hits or not all(
        PROGRESS_BAR_RE.search(h.text) and _NONFINITE_RE.search(h.text) for h in hits
    ):
        return False
    first = min((h.source, h.line) for h in hits)
    return logged_finite_after(scan.metrics, first)


def _recovered(held: Held, scan: Scan, entry: int) -> bool:
    """The entry's failure was reported and then the run carried on: it was caught.

    Its last error line is followed by several progress lines and by no error, exception
    or traceback of any kind, and its lines read as a failure report (a loss value or a
    memory report that training went on after is still the class's evidence).
    """
    last = scan.last_error.get(entry)
    if last is None or len(scan.sources) != 1 or last < scan.last_trouble:
        return False
    if _handled(scan, last):
        return True
    # the tail holds the non-empty ones of the log's last lines
    training = sum(
        is_training_line(t) for t, at in zip(scan.tail, scan.tail_at, strict=True) if at > last
    )
    if training < RECOVERY_PROGRESS_LINES:
        return False
    hits = held.error_hits(entry)
    if len(scan.ranks_seen) > 1 and any(h.rank is not None for h in hits):
        # progress lines carry no rank here: they may be other ranks running on for a
        # while after this one failed
        return False
    return all(_FAILURE_WORDS_RE.search(h.text) for h in hits)


# What a run prints when it ends normally (no progress line needs to follow it).
_FINISHED_RE = re.compile(
    r"(?i)\btraining (?:is )?(?:finished|complete|completed|done)\b|\bfinished training\b|"
    r"`Trainer\.fit` stopped: `max_epochs=\d+` reached|\btrain_runtime\b"
)


def _handled(scan: Scan, last: tuple[int, int]) -> bool:
    """The run said it handled the failure (a batch skipped on every rank, a checkpoint read that
    succeeded after retries) at or after its last error line, and went on: a progress line or
    the end of training follows that statement, with no error of any kind after it."""
    after = [r for r in scan.recoveries if r >= last]
    if not after:
        return False
    said = max(after)
    return any(
        at > said and (is_training_line(t) or _FINISHED_RE.search(t[:400]) is not None)
        for t, at in zip(scan.tail, scan.tail_at, strict=True)
    )


def _drop_resumed(held: Held, scan: Scan, ranked: list[int]) -> list[int]:
    """Drop an entry whose failure training went on after, when a later one ended the run.

    A caught error (an OOM retried with a smaller batch, printed with its traceback) is
    followed by progress lines and then by the error that really stopped the run: when
    another root-cause entry's error comes after that resumption, the caught one is not
    the cause. Same conditions as the recovery rule: one file, no rank on the error lines
    of a multi-rank log, and lines that read as a failure report.
    """
    if len(scan.sources) != 1 or not scan.resumed_after or len(ranked) < 2:
        return ranked
    multi = len(scan.ranks_seen) > 1

    def resumed(e: int) -> tuple[int, int] | None:
        last = scan.last_error.get(e)
        after = [p for p in scan.resumed_after if last is not None and p >= last]
        if not after:
            return None
        hits = held.error_hits(e)
        if multi and any(h.rank is not None for h in hits):
            return None
        if not all(_FAILURE_WORDS_RE.search(h.text) for h in hits):
            return None
        return min(after)

    dropped = set()
    for e in ranked:
        if held.collateral(e):
            continue
        resumption = resumed(e)
        if resumption is None:
            continue
        later = any(
            not held.collateral(x) and x != e and scan.last_error.get(x, (-1, -1)) > resumption
            for x in ranked
        )
        if later:
            dropped.add(e)
    return [e for e in ranked if e not in dropped] if dropped else ranked
