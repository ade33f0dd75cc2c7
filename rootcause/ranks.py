"""Rank analysis: which rank of a distributed job failed first.

The first non-collateral error wins (by timestamp when every candidate has one, else by order in
the log). When the errors alone cannot tell (every rank raised the same error, or only collateral
errors are present) cross-rank evidence decides: the rank whose collective differs in a
"Detected mismatch between collectives" report, the rank stuck at a lower NCCL SeqNum or on a
different OpType, the rank behind in "last enqueued NCCL work", the first process group that
signalled a dump, the only rank that did not report a timeout. The launcher's "Root Cause (first
observed failure)" names the first process it saw exit, which is often only the first victim: it
never decides alone. When every rank raised the same root-cause error, no rank is singled out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

# the operation only when the line goes on after it: a paste cut inside the name ("OpType=ALLREDUC")
# is not a different collective
SEQNUM_RE = re.compile(
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?:(?P<op>\w+)[,)])?(?: NumelIn=(?P<numel>\d+)\b)?"
)
ENQUEUED_RE = re.compile(
    r"last enqueued NCCL work: (?P<enq>-?\d+), last completed NCCL work: (?P<done>-?\d+)"
)
MISMATCH_RE = re.compile(
    r"Rank (?P<rank>\d+) is running collective: CollectiveFingerPrint\((?P<fp>[^)]{0,400})\)"
)
# Messages that name the rank they are about (DDP's unused parameters, monitored_barrier).
NAMED_RANK_RE = re.compile(
    r"did not receive grad for rank (?P<rank>\d+)|"
    r"\bRank (?P<rank2>\d+) failed to pass monitoredBarrier|"
    # a rank that reached the barrier reports the one it waited for
    r"waiting for send/recv from rank (?P<rank3>\d+)"
)
# Errors that report absent peers (the store server waiting for clients, a store-based barrier
# short of workers): the rank that prints one is the one that did arrive.
PEER_REPORT_RE = re.compile(
    r"waiting for clients\. \d+/\d+ clients joined|"
    r"Timed out initializing process group in store based barrier|"
    # NCCL's ncclRemoteError: the peer went away (or the network did), not this rank
    r"NCCL error: remote process exited or there was a network error"
)
FIRST_PG_RE = re.compile(r"First PG on this rank to signal dumping")
# a rank's own watchdog caught a failed collective (a timeout, or an NCCL error): that rank was
# not silent, even when its line matches no fingerprint
# (torch 2.6+: "failure detected by watchdog at work sequence id: N"; 2.3-2.5: "Exception (either
# an error or timeout) detected by watchdog at work: N"; older: "Timeout at NCCL work: N")
WATCHDOG_RE = re.compile(
    r"detected by watchdog at work\b|Watchdog caught collective operation timeout|"
    r"\] Timeout at NCCL work: \d"
)
ROOT_CAUSE_HEAD = "Root Cause (first observed failure)"
# The reason given when nothing at all points at a rank.
NO_RANK = "no rank can be singled out"
# `rank : 2 (local_rank: 2)`, or `rank2 (local rank: 2)` when a paste lost the layout
LAUNCHER_RANK_RE = re.compile(r"^\s*rank\s*:?\s*(\d{1,5})\s*\(local[_ ]rank")
# A launcher summary entry whose process died of a crash signal of its own (SIGILL, SIGBUS,
# SIGFPE, SIGSEGV): that rank did not hang silently, even if it printed nothing. SIGABRT (the
# NCCL watchdog), SIGKILL and SIGTERM (sent by the agent or the host) say nothing of the kind.
# torch.multiprocessing.spawn says it of the process it names ("process 1 terminated with signal
# SIGSEGV"), the elastic agent's own line and mpirun of theirs (`crash_code` on their exit code).
CRASH_EXIT_RE = re.compile(
    r"^\s*exitcode\s*:\s*-(?:4|7|8|11)\b|"
    r"\bProcessExitedException: process \d{1,5} terminated with signal SIG(?:ILL|BUS|FPE|SEGV)\b"
)
# mpirun's report of the first process it saw exit: "mpirun noticed that process rank 7 with PID
# 0 on node h exited on signal 9 (Killed)", or its summary "Process name: [[29973,1],0]" followed
# by "Exit code: 1" (the last number of the name is the process's rank in the job). "exited" is
# optional: with the node's name blanked in a paste, masking reads "exited" as the host name.
MPI_EXIT_RE = re.compile(
    r"noticed that process rank (?P<rank>\d{1,5}) with PID [^\n]{0,200}?on signal "
    r"(?P<sig>\d{1,3})|Process name: \[\[\d{1,9},\d{1,9}\],(?P<vpid>\d{1,5})\]"
)
# DeepSpeed's launcher (deepspeed/launcher/launch.py) when a worker exits non-zero: it kills the
# others ("Killing subprocess N"), then logs "[ERROR] [launch.py:321:sigkill_handler] ['python',
# '-u', 'train.py', '--local_rank=1', ...] exits with return code = -9". The return code is the
# failed worker's; the command line is the launcher's `cmd`, the last worker it started, so the
# local rank it shows is only weak evidence of which worker failed.
DS_LOCAL_RANK_RE = re.compile(r"--local_rank=(?P<local>\d{1,5})\b")
DS_EXIT_RE = re.compile(r"exits with return code = (?P<code>-?\d{1,5})\b")
DS_CAVEAT = (
    "DeepSpeed's launcher prints the command line of the last worker it started beside the "
    "return code of the one that failed"
)
# NCCL's INFO lines of one process (`host:pid:tid [dev] NCCL INFO ...`) that state its rank in the
# communicator: the ring/tree set-up ("Trees [0] 2/-1/-1->1->0", this rank between the arrows)
# and the init summary ("comm 0x55d0 rank 1 nranks 4 cudaDev 1"). Every later line of that pid,
# a WARN included, is that rank's.
NCCL_PREFIX_RE = re.compile(r"^\s*(?P<host>[^\s:]{1,255}):(?P<pid>\d{1,10}):\d{1,10} \[\d{1,3}\] ")
NCCL_RANK_RE = re.compile(
    r"NCCL INFO (?:Trees \[0\] -?\d{1,5}/-?\d{1,5}/-?\d{1,5}->(?P<tree>\d{1,5})->|"
    r"[^\n]{0,80}?\brank (?P<rank>\d{1,5}) n[Rr]anks \d{1,5}\b)"
)
MAX_NCCL_PIDS = 4096
# In the reason of a rank named from a launcher's report alone (its first exit), nothing else.
LAUNCHER_ONLY = "weak evidence"
_MPI_EXIT_CODE_RE = re.compile(r"^\s*Exit code:\s*(-?\d{1,5})")
# Beyond this a rank number is not taken to imply the ranks below it (bounded work).
MAX_IMPLIED_RANK = 4096
# Every rank raised the same error: a rank whose time stamp is this much earlier than all the
# others failed first (the others hit the same condition later); closer than that, who printed
# first is scheduling noise.
DISTINCT_FIRST_SECONDS = 1.0
# The numbers that differ between ranks running the same collective at the same step.
_FP_NOISE_RE = re.compile(r"SequenceNumber=\d+,?\s*")
# what a collective fingerprint says a rank was running: the operation and the tensor's shape
_FP_OP_RE = re.compile(r"OpType=(?P<op>\w{1,40})")
_FP_SHAPE_RE = re.compile(r"TensorShape=(?P<shape>\[[^\]]{0,60}\])")


class MismatchSide(NamedTuple):
    """One rank of a collective-mismatch report: the collective the rank ran, as its own report
    states it, and where its program called it (the frame of its own code above torch's)."""

    rank: int
    collective: str  # "ALLREDUCE of [5]"
    source: int = 0
    line: int | None = None  # the call site's line in the log
    call_site: str | None = None  # its frame line: File "train.py", line 376, in run


def _collective(fingerprint: str) -> str:
    op = _FP_OP_RE.search(fingerprint)
    shape = _FP_SHAPE_RE.search(fingerprint)
    what = op.group("op") if op else "a collective"
    return f"{what} of {shape.group('shape')}" if shape else what


# What a launcher says about the node it runs on: the elastic agent's rendezvous result
# ("group_rank=1", "group_world_size=2", "global_ranks=[2, 3]" or, in torchelastic 0.2,
# "workers={'local_ranks': [0], 'global_ranks': [1], ...}"), torchrun's own arguments
# ("--nnodes=2 --node_rank=1 --nproc_per_node=4"), DeepSpeed's launcher ("nnodes=2,
# num_local_procs=8, node_rank=0"). A worker's local rank becomes a global rank only from these.
LAYOUT_RE = re.compile(
    r"\b(?:group_rank|node_rank)[=:]\s?(?P<node>\d{1,5})\b|"
    r"--node[_-]rank[= ](?P<node2>\d{1,5})\b|"
    r"\bglobal_ranks'?(?:=|: )\[(?P<globals>[\d, ]{1,2000})\]|"
    r"\b(?:local_world_size|num_local_procs)[=:]\s?(?P<lws>\d{1,5})\b|"
    r"--nproc[_-]per[_-]node[= ](?P<lws2>\d{1,5})\b|"
    r"\b(?:group_world_size|nnodes)[=:]\s?(?:\d{1,5}:)?(?P<nodes>\d{1,5})\b|"
    r"--nnodes[= ](?:\d{1,5}:)?(?P<nodes2>\d{1,5})\b"
)
MAX_LAYOUT_HOSTS = 64


@dataclass
class NodeLayout:
    """One node's place in the job, as far as its launcher's lines state it (None: not stated,
    or stated twice with different values)."""

    node_rank: int | None = None
    local_world_size: int | None = None
    global_ranks: tuple[int, ...] | None = None
    nodes: int | None = None
    _conflict: set[str] = field(default_factory=set)

    def set(self, name: str, value: object) -> None:
        if name in self._conflict:
            return
        old = getattr(self, name)
        if old is not None and old != value:
            # two nodes' launchers in one stream (per-node files concatenated): neither holds
            self._conflict.add(name)
            setattr(self, name, None)
        else:
            setattr(self, name, value)


@dataclass
class JobLayout:
    """Node layouts by the host prefix of the lines that stated them (None: no prefix)."""

    by_host: dict[str | None, NodeLayout] = field(default_factory=dict)
    hosts: int = 0  # host prefixes among the keys of by_host

    def observe(self, host: str | None, text: str) -> None:
        layout = self.by_host.get(host)
        if layout is None:
            if len(self.by_host) >= MAX_LAYOUT_HOSTS:
                return
            layout = self.by_host[host] = NodeLayout()
            self.hosts += host is not None
        for m in LAYOUT_RE.finditer(text[:2000]):
            node, lws, nodes = (
                m.group("node") or m.group("node2"),
                m.group("lws") or m.group("lws2"),
                m.group("nodes") or m.group("nodes2"),
            )
            if node is not None:
                layout.set("node_rank", int(node))
            elif lws is not None:
                layout.set("local_world_size", int(lws))
            elif nodes is not None:
                layout.set("nodes", int(nodes))
            elif m.group("globals") is not None:
                ranks = tuple(int(x) for x in re.findall(r"\d{1,5}", m.group("globals")))
                layout.set("global_ranks", ranks or None)

    def note_host(self, host: str | None) -> None:
        """A host prefix seen on a line whose rank is local: two of them are two nodes."""
        if host is not None and host not in self.by_host and len(self.by_host) < MAX_LAYOUT_HOSTS:
            self.by_host[host] = NodeLayout()
            self.hosts += 1

    def multi_node(self) -> bool:
        return (
            any(
                (n.nodes or 0) > 1 or (n.node_rank or 0) > 0 or "node_rank" in n._conflict
                for n in self.by_host.values()
            )
            or len(self.by_host.keys() - {None}) > 1
        )

    def states_node(self, host: str | None) -> bool:
        """The lines of `host` say where its node sits in the job (its rank or global ranks)."""
        layout = self.by_host.get(host)
        return layout is not None and (
            layout.node_rank is not None or layout.global_ranks is not None
        )

    def global_rank(self, local: int, host: str | None) -> int | None:
        """The global rank of local rank `local` on the node of `host`; None when the log does
        not give what that takes (a node other than the first, its size not stated)."""
        layout = self.by_host.get(host)
        if layout is not None:
            if layout.global_ranks is not None and local < len(layout.global_ranks):
                return layout.global_ranks[local]
            if layout.node_rank == 0:
                return local
            if layout.node_rank is not None and layout.local_world_size:
                if local >= layout.local_world_size:
                    return None
                return layout.node_rank * layout.local_world_size + local
        # no layout for this node: its local rank is the global one only on a one-node job
        return None if self.multi_node() else local


@dataclass
class FirstError:
    """Where a rank's first error of some class sits: time when known, then position."""

    ts: float | None
    order: tuple[int, int]  # (source index, line number)
    line: int = field(compare=False)
    text: str = field(compare=False)
    signal: str = field(default="", compare=False)  # which fingerprint signal it was


@dataclass
class CrossRankEvidence:
    seqnum: dict[int, tuple[int, str]] = field(default_factory=dict)
    # the element count of the collective each rank timed out in (NumelIn), where printed
    numel: dict[int, int] = field(default_factory=dict)
    enqueued: dict[int, tuple[int, int]] = field(default_factory=dict)
    mismatch: Counter[tuple[int, str]] = field(default_factory=Counter)
    first_pg: list[int] = field(default_factory=list)
    named: set[int] = field(default_factory=set)
    launcher_root: int | None = None
    # the first worker the elastic agent reported as failed ("failed (exitcode: 1) local_rank: 3"),
    # with its exit code: the agent stops the others because of it (SIGTERM lines come next)
    # (the local rank is turned into a global one through `layout`; None when it cannot be)
    launcher_failed: tuple[int | None, int] | None = None
    # what makes the launcher's word weaker than usual (DeepSpeed's command line), for the reason
    launcher_caveat: str | None = None
    # (host, pid) of NCCL's line prefix -> the rank that process stated in its INFO lines
    nccl_ranks: dict[tuple[str, int], int] = field(default_factory=dict)
    # "Rank A is running collective X, but Rank B is running Y" reports: (A, B) pairs
    mismatch_pairs: set[tuple[int, int]] = field(default_factory=set)
    # the reporter of each mismatch report, with its collective and call site (note_mismatch)
    mismatch_sides: dict[int, MismatchSide] = field(default_factory=dict)
    # ranks whose own stream shows a traceback or an exception line
    troubled: set[int] = field(default_factory=set)
    crashed: set[int] = field(default_factory=set)  # launcher summary: died of a crash signal
    watchdog: set[int] = field(default_factory=set)  # ranks whose own watchdog caught a failure
    layout: JobLayout = field(default_factory=JobLayout)

    def observe(self, rank: int | None, text: str) -> None:
        """Feed one line; only the patterns above are looked for, on a bounded head."""
        head = text[:2000]
        reporter = None
        for m in MISMATCH_RE.finditer(head):
            fingerprint = _FP_NOISE_RE.sub("", m.group("fp"))
            self.mismatch[(int(m.group("rank")), fingerprint)] += 1
            if reporter is None:
                reporter = int(m.group("rank"))
            elif len(self.mismatch_pairs) < 64:
                self.mismatch_pairs.add((reporter, int(m.group("rank"))))
        for m in NAMED_RANK_RE.finditer(head):
            self.named.add(int(next(g for g in m.groups() if g is not None)))
        if rank is None:
            return
        seq = SEQNUM_RE.search(head)
        if seq and rank not in self.seqnum:
            self.seqnum[rank] = (int(seq.group("seq")), seq.group("op") or "")
            if seq.group("numel") is not None:
                self.numel[rank] = int(seq.group("numel"))
        enq = ENQUEUED_RE.search(head)
        if enq and rank not in self.enqueued:
            self.enqueued[rank] = (int(enq.group("enq")), int(enq.group("done")))
        if WATCHDOG_RE.search(head) and len(self.watchdog) < MAX_IMPLIED_RANK:
            self.watchdog.add(rank)
        if FIRST_PG_RE.search(head) and rank not in self.first_pg:
            self.first_pg.append(rank)

    def note_mismatch(self, text: str, source: int, call_site: tuple[int, str] | None) -> None:
        """A mismatch report's reporter (the first rank it names is its own), the collective it
        ran and the call site in its traceback (line, frame text), kept for the first report of
        each rank that shows one (a rank's report is often printed twice: by its logger, whose
        traceback may not resolve to the rank, and by torchrun's `[rankN]:` copy)."""
        m = MISMATCH_RE.search(text[:2000])
        if m is None or len(self.mismatch_sides) >= 64:
            return
        rank = int(m.group("rank"))
        known = self.mismatch_sides.get(rank)
        if known is None or (known.call_site is None and call_site is not None):
            line, frame = call_site if call_site is not None else (None, None)
            self.mismatch_sides[rank] = MismatchSide(
                rank, _collective(m.group("fp")), source, line, frame
            )

    def mirrored(self) -> list[MismatchSide]:
        """The two ranks of a mismatch whose reports mirror each other ("Rank 0 is running X,
        but Rank 1 is running Y" and the converse), lower rank first, when nothing else of the
        reports singles one out (no majority: two ranks, or a tie); empty otherwise. Which rank
        left the common sequence is then a question of the program's code, not of the log."""
        pairs = self.mismatch_pairs
        if len(pairs) != 2 or self._mismatch_outlier() is not None:
            return []
        (a, b), other = sorted(pairs)
        if other != (b, a):
            return []
        return [self.mismatch_sides.get(r) or MismatchSide(r, "a collective") for r in (a, b)]

    def suspect(self) -> tuple[int, str] | None:
        """A rank that cross-rank evidence singles out, with the reason, or None."""
        named = (
            (next(iter(self.named)), "the error message names this rank")
            if len(self.named) == 1
            else None
        )
        return (
            named
            or self._mismatch_outlier()
            or self._seqnum_outlier()
            or self._enqueued_outlier()
            or (
                (self.first_pg[0], "first process group on this rank to signal a dump")
                # another rank's watchdog caught the timeout on its own: not the only one
                if len(self.first_pg) == 1
                and (set(self.seqnum) | self.watchdog) <= {self.first_pg[0]}
                else None
            )
        )

    def about_the_error(self) -> tuple[int, str] | None:
        """The rank the error messages themselves single out (named, or the odd collective).

        Unlike timeout counters this holds even when that rank printed nothing: the ranks that
        did report describe what it was doing.
        """
        if len(self.named) == 1:
            return next(iter(self.named)), "the error message names this rank"
        return self._mismatch_outlier()

    def _mismatch_outlier(self) -> tuple[int, str] | None:
        by_rank: dict[int, Counter[str]] = {}
        for (rank, fp), n in self.mismatch.items():
            by_rank.setdefault(rank, Counter())[fp] += n
        if len(by_rank) < 2:
            return None
        usual = Counter(fp for fps in by_rank.values() for fp in fps)
        (majority, n), *rest = usual.most_common(2)
        if rest and rest[0][1] == n:
            # two ranks that accuse each other (or a tie): only the reports' direction can tell
            return self.named_by_reports()
        odd = [r for r, fps in by_rank.items() if majority not in fps]
        if len(odd) == 1:
            return odd[0], f"rank {odd[0]} ran a different collective from the other ranks"
        return None

    def named_by_reports(self) -> tuple[int, str] | None:
        """The rank every mismatch report names as the other one, when it reported none itself.

        Each rank compares its collective with every other rank's and reports the first rank
        that differs: "Rank 1 is running X, but Rank 7 is running Y" says that ranks 1 and 7
        differ, not which of them left the common sequence. Rank 7 is taken only when the log
        backs it: rank 7 raised a traceback of its own, or the launcher saw it fail first.
        """
        reporters = {a for a, _ in self.mismatch_pairs}
        named = {b for _, b in self.mismatch_pairs}
        if len(named) != 1 or named & reporters:
            return None
        rank = next(iter(named))
        failed_first = self.launcher_failed is not None and self.launcher_failed[0] == rank
        if rank in self.troubled or failed_first:
            return (
                rank,
                f"the collective-mismatch report names rank {rank}, which failed on its own",
            )
        return None

    def _seqnum_outlier(self) -> tuple[int, str] | None:
        if len(self.seqnum) < 2:
            return None
        ops = Counter(op for _, op in self.seqnum.values() if op)
        if len(ops) > 1:
            (common, _), *_ = ops.most_common()
            odd = [r for r, (_, op) in self.seqnum.items() if op and op != common]
            if len(odd) == 1:
                return odd[
                    0
                ], f"rank {odd[0]} timed out in a different collective ({self.seqnum[odd[0]][1]})"
        seqs = Counter(seq for seq, _ in self.seqnum.values())
        low = min(seqs)
        if len(seqs) > 1 and seqs[low] == 1:
            rank = next(r for r, (seq, _) in self.seqnum.items() if seq == low)
            return rank, f"rank {rank} is stuck at an earlier collective (SeqNum={low})"
        if len(seqs) == 1 and len(ops) <= 1:
            return self._numel_outlier()
        return None

    def _numel_outlier(self) -> tuple[int, str] | None:
        """Every rank at the same SeqNum and OpType, but one reducing another number of elements:
        the collectives differ. With three ranks or more the odd count is that rank's; with two,
        the rank in a one-element collective (a metric, a loss or a stop flag: it left the
        gradient reductions of the training loop, e.g. into validation after its last batch)."""
        if len(self.numel) < 2 or set(self.numel) != set(self.seqnum):
            return None
        counts = Counter(self.numel.values())
        if len(counts) != 2:
            return None
        (common, n_common), (odd_count, n_odd) = counts.most_common()
        if n_odd == 1 and n_common > 1:
            rank = next(r for r, n in self.numel.items() if n == odd_count)
            return rank, (
                f"rank {rank} timed out in a collective of {odd_count} elements, the others in "
                f"one of {common}"
            )
        scalar = [r for r, n in self.numel.items() if n == 1]
        if n_common == n_odd == 1 and len(scalar) == 1:
            rank = scalar[0]
            return rank, (
                f"rank {rank} timed out in a one-element collective (a metric or a flag) while "
                "the other reduced a tensor: it had left the training loop's reductions"
            )
        return None

    def _enqueued_outlier(self) -> tuple[int, str] | None:
        if len(self.enqueued) < 2:
            return None
        values = Counter(enq for enq, _ in self.enqueued.values())
        low = min(values)
        if len(values) > 1 and values[low] == 1:
            rank = next(r for r, (enq, _) in self.enqueued.items() if enq == low)
            return rank, f"rank {rank} enqueued fewer NCCL collectives than the others"
        return None


def mpi_exit(text: str, following: list[str]) -> tuple[int | None, int] | None:
    """(rank, exit code) from mpirun's report of the first process to exit (a signal as a
    negative code, as the elastic agent reports it); None when the line is not one."""
    m = MPI_EXIT_RE.search(text)
    if m is None:
        return None
    if m.group("rank") is not None:
        return int(m.group("rank")), -int(m.group("sig"))
    for line in following:
        code = _MPI_EXIT_CODE_RE.match(line)
        if code:
            return int(m.group("vpid")), int(code.group(1))
    return None


_SPAWN_EXIT_RE = re.compile(
    r"\bProcessExitedException: process (?P<rank>\d{1,5}) terminated with "
    r"(?:signal SIG(?P<sig>[A-Z]{2,6})\b|exit code (?P<code>-?\d{1,5})\b)"
)
_SIGNAL_NUMBERS = {"ILL": 4, "ABRT": 6, "BUS": 7, "FPE": 8, "KILL": 9, "SEGV": 11, "TERM": 15}


def spawn_exit(text: str) -> tuple[int, int] | None:
    """(rank, exit code) from torch.multiprocessing.spawn's report of a process that died
    without a Python error ("process 2 terminated with signal SIGSEGV": the process index is the
    rank it was given; a signal as a negative code); None when the line is not one."""
    m = _SPAWN_EXIT_RE.search(text)
    if m is None:
        return None
    if m.group("code") is not None:
        return int(m.group("rank")), int(m.group("code"))
    number = _SIGNAL_NUMBERS.get(m.group("sig"))
    return (int(m.group("rank")), -number) if number is not None else None


def deepspeed_exit(text: str, following: list[str]) -> tuple[int, int] | None:
    """(local rank, return code) from DeepSpeed's launcher line `[...'--local_rank=N'...] exits
    with return code = C`, the code read from the next lines when a paste wrapped the long
    command line; None when the line is not one."""
    local = DS_LOCAL_RANK_RE.search(text)
    if local is None:
        return None
    for line in (text, *following):
        code = DS_EXIT_RE.search(line)
        if code:
            return int(local.group("local")), int(code.group("code"))
    return None


def nccl_rank(text: str) -> tuple[tuple[str, int], int] | None:
    """((host, pid), rank) from an NCCL INFO line that states the process's rank."""
    prefix = NCCL_PREFIX_RE.match(text)
    if prefix is None:
        return None
    m = NCCL_RANK_RE.search(text, prefix.end())
    if m is None:
        return None
    rank = m.group("tree") or m.group("rank")
    return (prefix.group("host"), int(prefix.group("pid"))), int(rank)


def nccl_process(text: str) -> tuple[str, int] | None:
    """(host, pid) of an NCCL line's prefix."""
    prefix = NCCL_PREFIX_RE.match(text)
    return (prefix.group("host"), int(prefix.group("pid"))) if prefix else None


def earliest(errors: dict[int, FirstError]) -> int | None:
    """The rank whose error came first: by time when all have one, else by log order."""
    if not errors:
        return None
    if all(e.ts is not None for e in errors.values()):
        return min(errors, key=lambda r: (errors[r].ts, errors[r].order))
    return min(errors, key=lambda r: errors[r].order)


def _clearly_first(errors: dict[int, FirstError]) -> int | None:
    """The rank whose time stamp precedes every other one by DISTINCT_FIRST_SECONDS, if any."""
    if len(errors) < 2 or any(e.ts is None for e in errors.values()):
        return None
    times = sorted((e.ts, r) for r, e in errors.items() if e.ts is not None)
    (t0, rank), (t1, _) = times[0], times[1]
    return rank if t1 - t0 >= DISTINCT_FIRST_SECONDS else None


CRASH_SIGNALS = {4: "SIGILL", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}


def crash_code(code: int) -> bool:
    """The exit code (negative: a signal, as the elastic agent reports it) is a crash signal of
    the process's own: nobody sends SIGSEGV, SIGBUS, SIGILL or SIGFPE to a worker."""
    return code < 0 and -code in CRASH_SIGNALS


def _lone_crash(
    evidence: CrossRankEvidence, collateral_errors: dict[int, FirstError]
) -> tuple[int, str] | None:
    """One rank died of a crash signal and every other rank that spoke only lost a peer or timed
    out: the crashed rank is the one they lost. Its own death needs no word of its own (a
    segfault prints no traceback); the others' errors say they were left waiting. None when the
    crashed rank itself reported a collateral error (it was a victim that crashed later) or no
    other rank reported anything (the launcher's word alone: see the last rule)."""
    if len(evidence.crashed) != 1 or not collateral_errors:
        return None
    rank = next(iter(evidence.crashed))
    if rank in collateral_errors:
        return None
    others = sorted(collateral_errors)
    who = f"rank {others[0]}" if len(others) == 1 else "ranks " + ", ".join(map(str, others))
    return rank, (
        f"rank {rank} died of a crash signal (the launcher's report) and {who} only lost a peer "
        "or timed out"
    )


# A collateral error that says the rank waited for a peer and gave up (gloo's and NCCL's
# timeouts), and one that says its peer went away (gloo's closed socket, NCCL's remote error)
TIMED_OUT_RE = re.compile(
    r"\bTimed out waiting \d+ ?ms\b|Watchdog caught collective operation timeout|"
    r"\] Timeout at NCCL work: \d"
)
LOST_PEER_RE = re.compile(
    r"Connection closed by peer|Connection reset by peer|"
    r"remote process exited or there was a network error"
)


def _waited_for(
    collateral_errors: dict[int, FirstError], ranks_seen: set[int]
) -> tuple[int, str] | None:
    """The other ranks timed out waiting, and one rank only lost its peers, after every one of
    those timeouts: it is the rank they waited for (a rank held up on its own, in a long
    evaluation or a stall, that came back to the collective once the others had given up and
    gone; no launcher stopped it first, as multiprocessing's does not). A rank that crashed makes
    its peers lose it at once, before any timeout: not this.

    Another waiting rank may lose its peer too, when a rank that timed out leaves before its own
    timeout fires (a real 4-rank mp run: ranks 0 and 2 timed out, rank 1 lost its peer before
    their reports, rank 3, the stalled one, after them); the last to lose its peer is then the
    one, only when it alone came after every timeout and every rank seen spoke (a silent rank
    may be a crash that its peers lost)."""
    lost = [r for r, e in collateral_errors.items() if LOST_PEER_RE.search(e.text)]
    waited = [r for r, e in collateral_errors.items() if TIMED_OUT_RE.search(e.text)]
    if not lost or not waited or len(lost) + len(waited) != len(collateral_errors):
        return None
    if len(lost) > 1 and not ranks_seen <= set(collateral_errors):
        return None
    timed = all(e.ts is not None for e in collateral_errors.values())

    def after_every_timeout(rank: int) -> bool:
        late = collateral_errors[rank]
        if timed:
            return all(
                late.ts is not None and e.ts is not None and late.ts > e.ts
                for r, e in collateral_errors.items()
                if r in waited
            )
        return all(late.order > collateral_errors[r].order for r in waited)

    late = [r for r in lost if after_every_timeout(r)]
    if len(late) != 1:
        return None
    rank = late[0]
    who = (
        f"rank {waited[0]}" if len(waited) == 1 else "ranks " + ", ".join(map(str, sorted(waited)))
    )
    return rank, (
        f"{who} timed out waiting and rank {rank} only lost its peers after them: it is the "
        "rank they waited for"
    )


SIGABRT = -6


def _quiet_exit(
    evidence: CrossRankEvidence, collateral_errors: dict[int, FirstError], root: int
) -> tuple[int, str] | None:
    """The launcher's first failure is a rank that ended on its own (a non-zero exit code of its
    own, or an abort: not a signal someone sent) and printed no error, while every rank that did
    speak only lost a peer: they lost that rank. Unlike the launcher's word alone, the others'
    errors back it (a victim that reports its lost peer first is in `collateral_errors` and is
    never taken). Other silent ranks are the agent's SIGTERMs of the survivors, which print
    nothing either.

    An abort (SIGABRT, -6) is the process's own too (abort(), a failed C++ check,
    std::terminate), but it is also how NCCL's watchdog ends a rank after a collective timed out:
    a victim then. So an abort is taken only when every rank that spoke lost its peer and none
    timed out (a crash makes its peers lose it at once, before any timeout)."""
    failed = evidence.launcher_failed
    if failed is None or failed[0] != root:
        return None
    aborted = failed[1] == SIGABRT
    if failed[1] <= 0 and not aborted:
        return None
    # (not `troubled`: the launcher's summary block, "traceback : Signal 15 ...", marks every
    # rank it lists)
    if not collateral_errors or root in collateral_errors or root in evidence.watchdog:
        return None
    if aborted:
        if any(
            TIMED_OUT_RE.search(e.text) or not LOST_PEER_RE.search(e.text)
            for e in collateral_errors.values()
        ):
            return None
        return root, (
            f"rank {root} aborted (SIGABRT, the launcher's first failure) without an error of "
            "its own and the ranks that spoke only lost a peer"
        )
    return root, (
        f"rank {root} exited with code {failed[1]} without an error of its own (the launcher's "
        "first failure) and the ranks that spoke only lost a peer"
    )


class Basis(StrEnum):
    """What the answer about the rank rests on: set by the rule that decided it, read by the
    calibration (rootcause.engine.calibration.answer_kind) instead of the reason's wording."""

    ONLY_RAISER = "the only rank that raised a root-cause error"
    FIRST_RAISER = "the first of several ranks that raised a root-cause error"
    CROSS_RANK = "cross-rank evidence (a named rank, an odd collective, a counter behind)"
    CRASH_SIGNAL = "a crash signal of its own while the others lost a peer"
    SILENT = "the one rank that reported no collateral error"
    WAITED_FOR = "the one rank that lost its peers after the others had timed out waiting"
    QUIET_EXIT = "an exit of its own without an error while the others lost a peer"
    LAUNCHER = "the launcher's first exit alone"
    ALIKE = "every rank failed alike"
    NOT_SINGLED_OUT = "nothing singles a rank out"
    ONE_PROCESS = "one process"


# the bases of a named rank that rest on the rank's own root-cause error
OWN_ERROR_BASES = frozenset({Basis.ONLY_RAISER, Basis.FIRST_RAISER})


class RankAnswer(NamedTuple):
    rank: int | None
    reason: str
    basis: Basis


def initiating_rank(
    *,
    root_errors: dict[int, FirstError],
    collateral_errors: dict[int, FirstError],
    evidence: CrossRankEvidence,
    ranks_seen: set[int] | None = None,
    unranked_roots: int = 0,
) -> tuple[int | None, str]:
    """The initiating rank and a short reason; (None, reason) when it cannot be told (what the
    answer rests on: `rank_answer`)."""
    answer = rank_answer(
        root_errors=root_errors,
        collateral_errors=collateral_errors,
        evidence=evidence,
        ranks_seen=ranks_seen,
        unranked_roots=unranked_roots,
    )
    return answer.rank, answer.reason


def rank_answer(
    *,
    root_errors: dict[int, FirstError],
    collateral_errors: dict[int, FirstError],
    evidence: CrossRankEvidence,
    ranks_seen: set[int] | None = None,
    unranked_roots: int = 0,
) -> RankAnswer:
    """The initiating rank (None when it cannot be told), a short reason, and what it rests on."""
    suspect = evidence.suspect()
    reporters = {r for r, e in root_errors.items() if PEER_REPORT_RE.search(e.text)}
    if reporters and reporters == set(root_errors):
        # every raiser reports peers that never came: they are witnesses, like a timeout
        collateral_errors = {**root_errors, **collateral_errors}
        root_errors = {}
    if len(root_errors) == 1:
        only = next(iter(root_errors))
        reported = evidence.named_by_reports()
        if reported is not None and reported[0] != only:
            # the raiser reports that another rank runs a different collective
            return RankAnswer(*reported, Basis.CROSS_RANK)
        return RankAnswer(only, f"only rank {only} raised a root-cause error", Basis.ONLY_RAISER)
    if len(root_errors) > 1:
        if suspect and (suspect[0] in root_errors or suspect == evidence.about_the_error()):
            return RankAnswer(*suspect, Basis.CROSS_RANK)
        known = set(ranks_seen or ()) | set(collateral_errors) | set(root_errors)
        # ranks are numbered from 0: a gap below the highest rank seen is a rank that exists
        # and raised nothing here, so the raisers are not "every rank"
        implied = set(range(min(max(known), MAX_IMPLIED_RANK) + 1))
        others = (known | implied) - set(root_errors)
        if not others and len({e.signal for e in root_errors.values()}) == 1:
            first = _clearly_first(root_errors)
            if first is not None:
                return RankAnswer(
                    first,
                    f"rank {first} raised the error first (by time, the others later)",
                    Basis.FIRST_RAISER,
                )
            mirrored = evidence.mirrored()
            if mirrored:
                return RankAnswer(None, mirrored_reason(mirrored), Basis.ALIKE)
            # the same error on every rank (a bad config, a missing build): who printed it first
            # is scheduling noise, not a cause
            return RankAnswer(None, "every rank raised the same error", Basis.ALIKE)
        rank = earliest(root_errors)
        by = "time" if all(e.ts is not None for e in root_errors.values()) else "order in the log"
        return RankAnswer(
            rank, f"rank {rank} raised the first root-cause error (by {by})", Basis.FIRST_RAISER
        )
    if suspect:
        return RankAnswer(*suspect, Basis.CROSS_RANK)
    if unranked_roots > 1:
        # the root-cause error was raised several times on lines that name no rank: by more
        # than one rank, so neither the silent rank nor the launcher's first exit says who
        return RankAnswer(
            None,
            f"the root-cause error appears {unranked_roots} times without a rank prefix",
            Basis.NOT_SINGLED_OUT,
        )
    if len(evidence.crashed) > 1:
        # several processes died of a crash signal of their own: the launcher's order of exits
        # does not say which crashed first
        return RankAnswer(
            None, f"the launcher reports ranks {sorted(evidence.crashed)} crashed", Basis.ALIKE
        )
    # before the silent rank: a rank that printed nothing may only have been stopped by the
    # agent before it noticed the crash (a real 4-rank run: rank 1 died of SIGFPE, ranks 0 and 2
    # lost their peer, rank 3 was SIGTERMed silent)
    crash = _lone_crash(evidence, collateral_errors)
    if crash is not None:
        return RankAnswer(*crash, Basis.CRASH_SIGNAL)
    # before the silent rank too: of ranks whose tracebacks interleave (multiprocessing's
    # children raising together), one may look silent that timed out like the others
    waited_for = _waited_for(collateral_errors, set(ranks_seen or ()))
    if waited_for is not None:
        return RankAnswer(*waited_for, Basis.WAITED_FOR)
    # a rank whose own watchdog caught the failure was not silent (its line may match no
    # fingerprint: "failure detected by watchdog at work sequence id")
    spoke = set(collateral_errors) | evidence.crashed | evidence.watchdog
    silent = set(ranks_seen or ()) - spoke
    if len(collateral_errors) > 1 and not silent:
        # ranks are numbered from 0: one gap below the highest rank that timed out is a rank
        # that printed nothing at all (hung, or its output was lost)
        top = min(max(set(ranks_seen or ()) | set(collateral_errors)), MAX_IMPLIED_RANK)
        silent = set(range(top + 1)) - spoke
    if collateral_errors and len(silent) == 1:
        # every other rank timed out or lost its peer: the one that did not is where they waited
        rank = silent.pop()
        return RankAnswer(rank, f"every rank but {rank} reported a collateral error", Basis.SILENT)
    root = evidence.launcher_root
    if root is None and evidence.launcher_failed is not None:
        root = evidence.launcher_failed[0]
    if root is not None:
        # the launcher reports the first exit it saw, usually the first victim: it decides only
        # when no other rank reported an error of its own
        if set(collateral_errors) <= {root}:
            caveat = f"; {evidence.launcher_caveat}" if evidence.launcher_caveat else ""
            return RankAnswer(
                root,
                f"the launcher saw rank {root} exit first, {LAUNCHER_ONLY}{caveat}",
                Basis.LAUNCHER,
            )
        quiet_exit = _quiet_exit(evidence, collateral_errors, root)
        if quiet_exit is not None:
            return RankAnswer(*quiet_exit, Basis.QUIET_EXIT)
        return RankAnswer(
            None,
            f"only collateral errors; the launcher saw rank {root} exit first",
            Basis.NOT_SINGLED_OUT,
        )
    return RankAnswer(None, NO_RANK, Basis.NOT_SINGLED_OUT)


def mirrored_reason(sides: list[MismatchSide]) -> str:
    """Why no rank is named when two ranks report each other's collective: what each ran and
    where its program called it."""

    def ran(side: MismatchSide) -> str:
        where = f" (called at {frame_place(side.call_site)})" if side.call_site else ""
        return f"rank {side.rank} ran {side.collective}{where}"

    a, b = sides
    return (
        f"ranks {a.rank} and {b.rank} each report the other's collective: {ran(a)}, {ran(b)}; "
        "with two ranks nothing in the log says which left the common sequence"
    )


_FRAME_PLACE_RE = re.compile(
    r'File "(?:[^"\n]{0,500}[/\\])?(?P<file>[^"/\\\n]{1,200})", line (?P<line>\d+)'
    r"(?:, in (?P<fn>\S{1,100}))?"
)


def frame_place(frame: str) -> str:
    """`File "/a/b/train.py", line 376, in run` as `train.py:376 in run`."""
    m = _FRAME_PLACE_RE.search(frame)
    if m is None:
        return frame
    place = f"{m.group('file')}:{m.group('line')}"
    return f"{place} in {m.group('fn')}" if m.group("fn") else place
