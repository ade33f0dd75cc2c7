"""Evidence extraction: what one log line says about its rank, its time and its traceback.

Everything here works on single lines of masked text plus a bounded look-back over the lines
just before, so the engine can call it only on the lines the matcher flagged. Rank prefixes come
in many shapes (torchrun `[rank3]:`, `--tee` `[default3]:`, `srun -l` `3: `, multi-node
`node-2: [rank9]:`, mpirun `[1,3]<stderr>:`, docker compose `trainer-1  | `) and the same log can
mix them; logging headers (`rank=2`, `[Rank 1]`) give a weaker, in-text rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

# A look-back never walks further than this: it bounds the work per flagged line.
LOOKBACK_LINES = 400
# A message printed before the traceback of its exception (a logger line, then
# `traceback.print_exc()`; a launcher printing the error, then the trace): the traceback must
# start within LOOKAHEAD_GAP lines after the message and is read for at most LOOKAHEAD_LINES
# lines, within the current chunk.
LOOKAHEAD_GAP = 6
LOOKAHEAD_LINES = 200
# Only the head of a line is searched for prefixes, timestamps and in-text ranks.
HEAD_CHARS = 240

_PROGRESS_RE = re.compile(r"^.{0,400}?\d(?:it/s|s/it)\]")
_MARKDOWN_RE = re.compile(r"^(?:>\s?)+|^```\w*\s*$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]{0,30}[A-Za-z]")
# IPython / Jupyter tracebacks: "File ~/x.py:117, in AdamW._init_group(self, ...)", "Cell In[3],
# line 9, in f(x)" and "----> 9 code": read as Python's "  File "x", line N, in name" frames.
_IPY_FRAME_RE = re.compile(
    r"^(?:File (?P<path>[^\n]{1,500}?):(?P<line>\d{1,7}), in "
    r"(?:[\w.<>]{0,300}\.)?(?P<fn>[\w<>]{1,100})"
    r"|Cell (?P<cell>In ?\[\d{1,6}\]), line (?P<cline>\d{1,7})(?:, in (?P<cfn>[\w<>]{1,100}))?)"
)
_IPY_ARROW_RE = re.compile(r"^-{1,8}> ?(?=\d)")
_BOX_RE = re.compile(r"^[\s│┃|]*[│┃╭╰╮╯─━]+\s?")
_BOX_TAIL_RE = re.compile(r"\s*[│┃]\s*$")

_PREFIX_RE = re.compile(
    r"""^(?:
        \((?P<proc>[A-Za-z_]\w{0,63}\ pid=\d{1,9}(?:,\ ip=[^)\s]{1,64})?)\)\s    # Ray/vLLM worker
      | \([A-Za-z_][\w.-]{0,63},\ rank=(?P<skyrank>\d{1,5}),\ pid=\d{1,9}(?:,\ ip=[^)\s]{1,64})?\)\s
                                                                # SkyPilot: (worker1, rank=1, pid=N)
      | \[\d{1,5},mpirank:(?P<smrank>\d{1,5}),[^\]\s]{1,64}\]<std(?:out|err)>:\s?  # SageMaker MPI
      | \[pod/(?P<pod>[^\]\s/]{1,128})/[^\]\s]{1,64}\]\s      # kubectl logs --prefix
      | (?P<syslog>[A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d)\ [^\s:]{1,64}
        \ (?P<unit>[\w.@-]{1,64}\[\d{1,9}\]):\s                  # journald / syslog
      | \d{1,7}\.\d{1,3}s\t\d{1,7}\t                          # Kaggle log viewer: 12.3s<TAB>45<TAB>
      | (?P<svc>[A-Za-z0-9_.<>-]{1,64}-\d{1,3})\s{1,24}\|\s?    # docker compose: name-1 |
      | \[(?P<mpi>\d{1,5}),(?P<mpirank>\d{1,5})\]<std(?:out|err)>:\s?  # mpirun --tag-output
      | (?P<host>[A-Za-z0-9_.<>-]{1,64}):\s(?=\[(?:rank|default)\d)    # node-2: [rank9]:
      | (?P<pdsh><(?:HOST|IP)_\d{1,4}>|[A-Za-z][A-Za-z0-9_.-]{0,62}[0-9]):\s  # pdsh: worker-1: ...
    )""",
    re.X,
)
_RANK_PREFIX_RE = re.compile(r"^\s?(?:\[(?:rank|default)(?P<r1>\d{1,5})\]:?\s?|(?P<r2>\d{1,5}):\s)")
# A collector's time stamp in front of every line (`kubectl logs --timestamps`, docker
# `--timestamps`, CI runners): taken off so rank prefixes and traceback lines read as usual.
_TS_PREFIX_RE = re.compile(
    r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?\s"
)
_GLUED_RE = re.compile(r"\[(?:rank|default)(\d{1,5})\]:\s?")
_SOFT_RANK_RE = re.compile(
    r"(?i:\[rank[ :]{0,2}(?P<a>\d{1,5})\])|\brank=(?P<b>\d{1,5})\b|\b[Rr]ank (?P<c>\d{1,5}):|"
    r"^\[rank(?P<d>\d{1,5})\]\s|"
    # the launcher reporting a worker's exit speaks about that worker
    r"\bfailed \(exitcode: -?\d+\) local_rank: (?P<e>\d{1,5})|"
    # so does srun about one of its tasks (with -l, task N is the line prefix `N: `)
    r"\bsrun: error: [^\s:]{1,80}: task (?P<f>\d{1,5}): |"
    # a process group's own messages: `[PG ID 0 PG GUID 0(default_pg) Rank 2]`, `[PG 0 Rank 2]`
    r"\[PG [^\]\n]{0,60}\bRank (?P<g>\d{1,5})\]|"
    # a framework reporting about one rank: `Unexpected result nan on rank 3 at iteration`
    r"\bon rank (?P<h>\d{1,5}) at (?:iteration|step)\b|"
    # torch.multiprocessing.spawn's header of a process's traceback (the process index is the
    # rank it was given); the unprefixed traceback below it inherits the rank
    r"^-- Process (?P<i>\d{1,5}) terminated with the following error:|"
    # and its report of a process that died without a Python error (a signal, an exit code)
    r"\bProcessExitedException: process (?P<j>\d{1,5}) terminated with (?:signal|exit code)\b"
)
# multiprocessing's own header before a child's traceback, `Process SpawnProcess-3:`: children
# numbered from 1 in the order the launcher started them, which is rank order when it starts one
# per rank in a loop (a weak, in-text rank)
_MP_CHILD_RE = re.compile(r"^Process (?:Spawn|Fork|ForkServer)?Process-(\d{1,5}):\s*$")
# the same header glued to the end of another rank's unfinished stdout line (`rank 0: step 4/12
# loss 2.2 grad_norm 1.8Process SpawnProcess-2:`): the child's stderr came before that rank's
# newline, so the header is the news, not the line it ends
_MP_CHILD_GLUED_RE = re.compile(r"(?<=\S)Process (?:Spawn|Fork|ForkServer)?Process-\d{1,5}:\s*$")
# A bound on the lines looked at between that header and its traceback (one per other rank, blank
# lines, the tracebacks of children whose headers came in the same run).
MP_INTERLEAVED_LINES = 400
# A bound on the children whose headers come in one run (the processes of one host): the walk
# back from a traceback stops after this many other tracebacks, so a log of nothing but
# tracebacks costs a few lines a traceback, not the whole window.
MP_HEADER_RUN = 64
# The elastic agent's report of a worker's exit, older and newer wordings; the local rank can sit
# past HEAD_CHARS behind a long binary path, so this one is searched on a longer head.
LAUNCHER_FAILED_RE = re.compile(
    r"\bfailed \(exitcode: (?P<code>-?\d{1,5})\)"
    r"(?: local_rank: (?P<a>\d{1,5})"
    r"| for binary located at [^\n]{0,400}? with local_rank: (?P<b>\d{1,5}))"
)

_GLOG_RE = re.compile(r"(?:^|\[)[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
# Month first, as Python logging's "%m/%d/%Y %H:%M:%S" (accelerate, transformers examples) and
# syslog's "Dec  1 10:41:07" print it.
_US_RE = re.compile(r"(?<!\d)(\d\d)/(\d\d)/\d{4},? (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?!\d)")
_SYSLOG_RE = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d\d):(\d\d):(\d\d)\b"
)
_CLOCK_RE = re.compile(r"\d\d:\d\d:\d\d")  # in each of the four forms above and below
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_ISO_RE = re.compile(
    r"(?<!\d)(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?!\d)"
)

# (`Original Traceback (most recent call last):` is a DataLoader worker's traceback re-raised in
# the process that iterated it: the same stream, so the rank above it carries on)
_TRACEBACKISH_RE = re.compile(
    r"^(?:$|\s|(?:Original )?Traceback \(most recent|During handling|The above exception|[\^~]|"
    r"File \"|"
    r"[A-Za-z_][\w.]{0,120}(?:Error|Exception|Interrupt|Exit|Failure)\b|[│┃╭╰])"
)
# A frame line, indented or not (pasting into an issue form can strip the indentation; the
# code line under an unindented frame then reads as part of the traceback through it).
FRAME_LINE_RE = re.compile(r'^\s*File "[^"\n]{1,500}", line \d')
# a frame in an installed package or the standard library, not in the program's own code
_LIBRARY_FRAME_RE = re.compile(
    r'^\s*File "[^"\n]{0,500}'
    r"(?:[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[.\d]{0,6}[/\\]|<frozen )"
)
# The exception line that ends a traceback (unindented, as Python prints it).
_EXCEPTION_LINE_RE = re.compile(r"^[A-Za-z_][\w.]{0,120}(?:Error|Exception|Interrupt|Exit)\b")
_CHAIN_RE = re.compile(r"During handling of the above exception|The above exception was the direct")
_LAUNCHER_FIELD_RE = re.compile(r"^\s*(?:exitcode|traceback|error_file|time|host)\s*:")
# `rank : 2 (local_rank: 2)`, or `rank2 (local rank: 2)` when a paste lost the layout
_LAUNCHER_RANK_RE = re.compile(r"^\s*rank\s*:?\s*(\d{1,5})\s*\(local[_ ]rank")


@dataclass(frozen=True)
class LineInfo:
    """One line with its prefixes taken off: `rank` is None for launcher or single-process lines."""

    text: str
    rank: int | None
    host: str | None
    explicit: bool  # the rank came from a stream prefix, not from words inside the line
    ts: float | None
    # the rank is the local rank on the line's node: torchrun's `--tee` prefix `[default3]:`
    # (TailLog's `[{role}{local_rank}]:`); the scan makes it global where the log tells how
    local: bool = False


def clean_line(line: str) -> str:
    """Drop what pasting adds around a log line: markdown quotes, fences, progress bars, \\r."""
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    if "\x1b[" in line:
        line = _ANSI_RE.sub("", line)
    if line[:1] in ">`":
        line = _MARKDOWN_RE.sub("", line)
    if ("it/s]" in line or "s/it]" in line) and len(line) < 100_000:
        # tqdm bars glued to the next message: keep what follows the last bar
        while True:
            m = _PROGRESS_RE.match(line)
            if not m or m.end() >= len(line):
                break
            line = line[m.end() :]
    return line


def parse_line(raw: str) -> LineInfo:
    line = clean_line(raw)
    host: str | None = None
    rank: int | None = None
    explicit = False
    stamp = _TS_PREFIX_RE.match(line)
    if stamp:
        line = line[stamp.end() :]
    syslog_time: str | None = None
    m = _PREFIX_RE.match(line)
    if m:
        if m.group("svc") or m.group("proc") or m.group("pod") or m.group("unit"):
            host = m.group("svc") or m.group("proc") or m.group("pod") or m.group("unit")
            syslog_time = m.group("syslog")
        elif (m.group("mpirank") or m.group("smrank") or m.group("skyrank")) is not None:
            rank = int(m.group("mpirank") or m.group("smrank") or m.group("skyrank"))
            explicit = True
        else:
            host = m.group("host") or m.group("pdsh")
        line = line[m.end() :]
        if not stamp:
            stamp = _TS_PREFIX_RE.match(line)
            if stamp:
                line = line[stamp.end() :]
    local = False
    if rank is None:
        m = _RANK_PREFIX_RE.match(line)
        if m:
            rank, explicit = int(m.group("r1") or m.group("r2")), True
            local = m.group(0).lstrip().startswith("[default")
            line = line[m.end() :]
            # `[rank0]:[rank0]:` appears when two launchers both prefix
            m2 = _RANK_PREFIX_RE.match(line)
            if m2 and m2.group("r1"):
                line = line[m2.end() :]
    glued = max(line.rfind("[rank", 1), line.rfind("[default", 1))
    if glued > 0:
        # another rank's line glued to this one (no newline in between): the tail is the news
        m = _GLUED_RE.match(line, glued)
        if m:
            rank, explicit = int(m.group(1)), True
            local = m.group(0).startswith("[default")
            line = line[m.end() :]
    if "Process-" in line and not line.startswith("Process "):
        c = _MP_CHILD_GLUED_RE.search(line)
        if c:
            # a child's header after another rank's text: its rank is the header's (below)
            line, rank, explicit, local = line[c.start() :], None, False, False
    if line[:1] in "FC-":
        line = _ipython_frame(line)
    if line[:1] in "│┃╭╰" and len(line) < 10_000:
        # a rich box-drawn traceback: its frame lines read as indented frame lines
        line = "  " + _BOX_TAIL_RE.sub("", _BOX_RE.sub("", line))
    head = line[:HEAD_CHARS]
    if rank is None:
        # Each of its forms has one of these words (`rank` in any case): most lines have none,
        # and the search itself is slow (tens of µs on a line without a match).
        s = _SOFT_RANK_RE.search(head) if _may_name_rank(head) else None
        if s and s.group("a") is not None and "log_dist] [" in head[: s.start() + 2]:
            # DeepSpeed's log_dist tags a message with the rank chosen to print it (rank 0 by
            # default), not with the rank it is about: "[logging.py:60:log_dist] [Rank 0]"
            s = None
        elif s:
            rank = int(next(g for g in s.groups() if g is not None))
        elif "failed (exitcode" in line:
            f = LAUNCHER_FAILED_RE.search(line[: 4 * HEAD_CHARS])
            if f:
                rank = int(f.group("a") or f.group("b"))
        elif line.startswith("Process "):
            c = _MP_CHILD_RE.match(line)
            if c and int(c.group(1)) > 0:
                rank = int(c.group(1)) - 1
    ts = parse_timestamp(stamp.group(0) if stamp else head)
    if ts is None and syslog_time:
        ts = parse_timestamp(syslog_time)
    return LineInfo(text=line, rank=rank, host=host, explicit=explicit, ts=ts, local=local)


def _may_name_rank(head: str) -> bool:
    """Whether `head` has a word every form of _SOFT_RANK_RE contains: a cheap pre-check."""
    return "rank" in head.lower() or "Process" in head or "srun: error: " in head


def _ipython_frame(line: str) -> str:
    m = _IPY_FRAME_RE.match(line)
    if m:
        if m.group("path"):
            return f'  File "{m.group("path")}", line {m.group("line")}, in {m.group("fn")}'
        return (
            f'  File "{m.group("cell")}", line {m.group("cline")}, in {m.group("cfn") or "<cell>"}'
        )
    m = _IPY_ARROW_RE.match(line)
    return "    " + line[m.end() :] if m else line


def parse_timestamp(head: str) -> float | None:
    """Seconds within the year (the year is dropped: glog lines carry none)."""
    # Every form has a clock: a line without one (most flagged lines) costs one search, not
    # four; a date and time cannot start more than 11 characters before the first clock.
    clock = _CLOCK_RE.search(head) if ":" in head else None
    if clock is None:
        return None
    m = _ISO_RE.search(head, max(0, clock.start() - 11))
    if m:
        _, mo, d, h, mi, s, frac = m.groups()
    elif m := _GLOG_RE.search(head) or _US_RE.search(head):
        mo, d, h, mi, s, frac = m.groups()
    elif m := _SYSLOG_RE.search(head):
        month, d, h, mi, s = m.groups()
        mo, frac = str(_MONTHS.index(month) + 1), None
    else:
        return None
    seconds = ((int(mo) * 32 + int(d)) * 24 + int(h)) * 3600 + int(mi) * 60 + int(s)
    return seconds + (float("0." + frac) if frac else 0.0)


def is_tracebackish(text: str) -> bool:
    return bool(_TRACEBACKISH_RE.match(text))


class ChunkLines(Sequence[str]):
    """The lines of a chunk, decoded only when asked for (most lines never are).

    Index 0.. covers `tail` (the previous chunk's last lines) and then the chunk's own lines.
    Line starts are known where the matcher found hits; other lines are reached by walking
    from a known neighbour, which is how the look-back goes (backwards from a hit).
    """

    def __init__(self, tail: Sequence[str], data: bytes, starts: dict[int, int]) -> None:
        self.tail = tail
        self.data = data
        self.n_lines = data.count(b"\n") + 1
        self.starts = dict(starts)
        self.starts[0] = 0
        self.starts[self.n_lines - 1] = data.rfind(b"\n") + 1

    def __len__(self) -> int:
        return len(self.tail) + self.n_lines

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            # walk backwards: each line start is then found from the one after it
            return [self[j] for j in reversed(range(*i.indices(len(self))))][::-1]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i < len(self.tail):
            return self.tail[i]
        start = self._start(i - len(self.tail))
        end = self.data.find(b"\n", start)
        return self.data[start : end if end >= 0 else len(self.data)].decode(
            "utf-8", "surrogatepass"
        )

    def last(self, n: int) -> Sequence[str]:
        """The last n lines, for the next chunk's look-back, without decoding them now."""
        if self.n_lines >= n:
            # a view over this chunk's own bytes only: holding `self` would chain every chunk
            own = ChunkLines((), self.data, self.starts)
            return _TailView(own, own.n_lines - n, n)
        return self[-n:]

    def _start(self, k: int) -> int:
        start = self.starts.get(k)
        if start is not None:
            return start
        after = self.starts.get(k + 1)
        if after is not None:
            start = self.data.rfind(b"\n", 0, after - 1) + 1
        else:
            below = max(j for j in self.starts if j < k)
            start = self.starts[below]
            for j in range(below + 1, k + 1):
                start = self.data.find(b"\n", start) + 1
                self.starts[j] = start
        self.starts[k] = start
        return start


class _TailView(Sequence[str]):
    """Lines [offset, offset+n) of a ChunkLines, all within its own data (no chain of tails)."""

    def __init__(self, lines: ChunkLines, offset: int, n: int) -> None:
        self.lines, self.offset, self.n = lines, offset, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in reversed(range(*i.indices(self.n)))][::-1]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.lines[self.offset + i]


class LineContext:
    """Resolves rank, timestamp and traceback frames of lines in a window of recent lines.

    `lines` holds the tail of the previous chunk followed by the current chunk, so a traceback
    cut by a chunk boundary still finds its head. Results are cached per index: the flagged lines
    of one traceback share the walk.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._parsed: dict[int, LineInfo] = {}
        self._resolved: dict[int, LineInfo] = {}
        self._chained: dict[int, bool] = {}

    def parsed(self, i: int) -> LineInfo:
        info = self._parsed.get(i)
        if info is None:
            info = parse_line(self.lines[i])
            self._parsed[i] = info
        return info

    def resolve(self, i: int) -> LineInfo:
        """The line with the rank and time it inherits from the stream it continues."""
        done = self._resolved.get(i)
        if done is not None:
            return done
        info = self.parsed(i)
        rank, ts, local = info.rank, info.ts, info.local
        launcher = _LAUNCHER_FIELD_RE.match(info.text) or _LAUNCHER_RANK_RE.match(info.text)
        if launcher and not info.explicit:
            rank = self._launcher_block_rank(i)
        elif (rank is None or ts is None) and is_tracebackish(info.text):
            if rank is None and info.text.startswith("Traceback (most recent"):
                rank = self._mp_child_above(i)
            # an unprefixed traceback continues the last line that named a rank or a time
            for j in range(i - 1, max(-1, i - LOOKBACK_LINES), -1):
                prev = self._resolved.get(j) or self.parsed(j)
                if prev.host != info.host:
                    continue
                if info.explicit and prev.rank != rank:
                    continue
                if rank is None:
                    rank, local = prev.rank, prev.local
                if ts is None:
                    ts = prev.ts
                if (rank is not None and ts is not None) or not is_tracebackish(prev.text):
                    break
                if j in self._resolved:
                    break
        if launcher and not info.explicit:
            local = False  # the summary's `rank :` field is the global rank
        resolved = LineInfo(info.text, rank, info.host, info.explicit, ts, local)
        self._resolved[i] = resolved
        return resolved

    def _mp_child_above(self, i: int) -> int | None:
        """The rank of multiprocessing's `Process SpawnProcess-N:` header printed by the child
        just before this traceback, when other ranks' lines (their stdout, interleaved with its
        stderr) or blank lines came in between: the traceback is the header's child's, not the
        interleaved rank's. The child writes the two back to back, so at most one line of each
        other rank still running fits between them (a 4-rank run put three: ranks 2, 0 and 3);
        a rank printing twice there is a rank of its own going on, whose traceback this is.

        Children that raise together print their headers in a run and then their tracebacks:
        the tracebacks come in the headers' order (dev_r6's 2-rank collective mismatch: headers
        of ranks 0 and 1, then rank 0's report, then rank 1's), so the traceback after k others
        that began below the run is the (k+1)-th header's; past the run's length, none."""
        if self._chained_start(i):
            return None  # a later link of a chain: the rank of the traceback it continues
        interleaved: set[int] = set()
        earlier = 0  # tracebacks that began between the header run and this one
        for j in range(i - 1, max(-1, i - 1 - MP_INTERLEAVED_LINES), -1):
            prev = self.parsed(j)
            if prev.rank is not None and _MP_CHILD_RE.match(prev.text):
                run = self._header_run(j)
                return run[earlier] if earlier < len(run) else None
            if not prev.text.strip():
                continue
            if is_tracebackish(prev.text):
                if prev.text.startswith("Traceback (most recent") and not self._chained_start(j):
                    earlier += 1
                    if earlier >= MP_HEADER_RUN:
                        return None
                continue
            if prev.rank is None or prev.rank in interleaved:
                return None
            interleaved.add(prev.rank)
        return None

    def _header_run(self, j: int) -> list[int]:
        """The ranks of the run of child headers that ends at line j, top to bottom."""
        ranks: list[int] = []
        for k in range(j, max(-1, j - MP_INTERLEAVED_LINES), -1):
            info = self.parsed(k)
            if info.rank is not None and _MP_CHILD_RE.match(info.text):
                ranks.append(info.rank)
            elif info.text.strip():
                break
        return ranks[::-1]

    def _chained_start(self, j: int) -> bool:
        """Line j starts a traceback that a chain marker ("During handling of the above
        exception") links to the one above."""
        chained = self._chained.get(j)
        if chained is None:
            chained = False
            for k in range(j - 1, max(-1, j - 4), -1):
                text = self.parsed(k).text.strip()
                if text:
                    chained = bool(_CHAIN_RE.match(text))
                    break
            self._chained[j] = chained
        return chained

    def _launcher_block_rank(self, i: int) -> int | None:
        """`rank : 2 (local_rank: 2)` in torchrun's failure summary, for the lines of its entry."""
        for j in range(i, max(-1, i - 8), -1):
            m = _LAUNCHER_RANK_RE.match(self.parsed(j).text)
            if m:
                return int(m.group(1))
        return None

    def _in_traceback(self, j: int, text: str) -> bool:
        if is_tracebackish(text):
            return True
        return j > 0 and bool(FRAME_LINE_RE.match(self.parsed(j - 1).text))

    def chained_after(self, i: int) -> tuple[int, int] | None:
        """For an exception raised while handling another: (first line, chain marker) as offsets.

        Walks back like `frames` over the traceback that ends at line i; when it passes a
        "During handling of the above exception" / "The above exception was the direct cause"
        line, line i belongs to a later exception of a chain. The result is (index of the
        chain's first traceback line, index of the last marker passed), both relative to i as
        negative offsets, or None when line i is not part of a later link.
        """
        marker: int | None = None
        start = i
        for j, info in self._traceback_before(i):
            start = j
            # lstrip: a paste indented as a markdown code block indents the marker too
            if marker is None and _CHAIN_RE.match(info.text.lstrip()):
                marker = j
        if marker is None:
            return None
        return start - i, marker - i

    def frames(self, i: int, limit: int = 200) -> list[str]:
        """The traceback lines of i's stream that end at line i (chained tracebacks included)."""
        out: list[str] = []
        for _, info in self._traceback_before(i):
            out.append(info.text)
            if len(out) >= limit:
                break
        return out

    def call_site(self, i: int) -> tuple[int, str] | None:
        """The frame of the program's own code nearest above line i in its traceback (index and
        text): the call that led into a library (torch's collectives, a site-packages wrapper),
        the line a reader opens; None without such a frame."""
        for j, info in self._traceback_before(i):
            m = FRAME_LINE_RE.match(info.text)
            if m and not _LIBRARY_FRAME_RE.search(info.text[:600]):
                return j, info.text.strip()
        return None

    def frames_after(self, i: int) -> list[str]:
        """The traceback of i's stream that starts within LOOKAHEAD_GAP lines after line i.

        For a message printed before its traceback; only read when line i ends no traceback of
        its own (the caller checks that `frames(i)` holds no frame line). Stops at the exception
        line that ends the traceback, at the first line that is not part of it, or after
        LOOKAHEAD_LINES lines; lines of other streams are skipped.
        """
        me = self.resolve(i)
        n = len(self.lines)
        start = -1
        for j in range(i + 1, min(n, i + 1 + LOOKAHEAD_GAP)):
            info = self.parsed(j)
            if not self._same_stream(me, info):
                continue
            if info.text.lstrip().startswith("Traceback (most recent call last)"):
                start = j
                break
        if start < 0:
            return []
        out: list[str] = []
        for j in range(start + 1, min(n, start + 1 + LOOKAHEAD_LINES)):
            info = self.parsed(j)
            if not self._same_stream(me, info):
                continue
            if not self._in_traceback(j, info.text):
                break
            out.append(info.text)
            if _EXCEPTION_LINE_RE.match(info.text):
                break
        return out

    @staticmethod
    def _same_stream(me: LineInfo, info: LineInfo) -> bool:
        if info.host != me.host:
            return False
        return not (me.explicit and info.rank != me.rank) and not (
            not me.explicit and info.explicit
        )

    def _traceback_before(self, i: int) -> Iterator[tuple[int, LineInfo]]:
        """Walks back from line i over the traceback lines of i's own stream (its host and rank;
        other streams' lines interleaved with it are skipped), nearest first."""
        me = self.resolve(i)
        for j in range(i - 1, max(-1, i - LOOKBACK_LINES), -1):
            info = self.parsed(j)
            if info.host != me.host:
                continue
            if me.explicit:
                if info.rank != me.rank:
                    continue
            elif info.explicit:
                return
            if not self._in_traceback(j, info.text):
                return
            yield j, info
