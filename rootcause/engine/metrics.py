"""Failures visible only in the figures a run logs: no error line says them.

Two series are followed while the log is read, each in bounded state (how many values, the lowest
or first one, the last few): the training loss (`loss: 0.74`, `loss = 25237.9`, `'loss': 3.1`,
`loss=2.3`; not `val_loss` or `eval_loss`) and the host memory a run reports of itself (`RSS MEM
USE: 5.11G`, `cpu mem: 40 GB`). After the scan each series is judged:

- the loss climbed by an order of magnitude (at least ten times its lowest value, and by at least
  1) and stayed there: every one of the last values, read from the log's last lines when they
  hold them, is that high. A spike the run came back from is not it (its last values are low),
  nor a loss that was high from the start (its lowest value comes first). `loss-divergence`.
- the host memory multiplied (the last figure at least four times the first, at least 32 GiB, the
  highest seen, after three rising figures) and the log ends there: the run was growing until
  the kernel killed it. `host-oom-killed`.
- a census of live tensors, as the usual leak hunt prints it at every step (`for obj in
  gc.get_objects(): if torch.is_tensor(obj): print(type(obj), obj.size())`, one `<class
  'torch.Tensor'> torch.Size([])` line per tensor), holds more tensors at each of three
  consecutive censuses: something keeps a tensor per step (a loss summed without `.item()`, a
  graph kept alive). The census the log ends in is left out (a paste cuts it).
  `eval-memory-growth`.
- the loss fell straight to exactly 0 (from 0.1 or more, in one logged step) and stayed there for
  at least three values to the last one: a NaN the loss computation turned into 0. `nan-loss`.

A finding is a signal of the engine's own (`Finding`), weighed like a catalogue signal: low
enough that any error line of another class outweighs it.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

# The loss a progress line reports, and the host memory a run reports of itself, read by Python in
# each chunk's first and last WINDOW characters (Hyperscan markers for them cost more than the
# reading: on a log where every line has a loss, they fire on every line).
# (the character before "loss" is checked apart: `val_loss`, `eval_loss`, `loss_ctc` are others)
# (fairseq's and many scripts' `| loss 9.876 |`, `Training Loss 2.2959`: a blank alone separates
# the figure too; `loss scale: 128` is not a loss: a word comes between)
LOSS_RE = re.compile(
    r"(?i)loss['\"]?(?:[ \t]{0,3}[:=][ \t]{0,3}|[ \t]{1,3})['\"]?"
    r"(?P<value>[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)"
)
_NOT_BEFORE_LOSS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/.-")
# ...except the training loss under its logger's namespace (`train/loss=0.81`, as Lightning and
# wandb name it): `val/loss` stays another figure
_TRAIN_NAMESPACE = "train/"
# (not a bare "ram": the word hides in too many others)
HOST_MEMORY_RE = re.compile(
    r"(?i)\b(?:rss|(?:host|cpu) mem(?:ory)?|ram (?:use|usage|used))\b[^\n0-9]{0,20}"
    r"(?P<value>[0-9]+(?:\.[0-9]+)?) ?(?P<unit>[MGT])i?B?\b"
)
# One line of a census of live tensors (`print(type(obj), obj.size())` over gc.get_objects()).
CENSUS_RE = re.compile(
    r"<class 'torch\.(?:cuda\.)?(?:[A-Za-z]*Tensor|nn\.parameter\.Parameter)'> "
    r"(?:torch\.Size\(|\()"
)
# A tqdm bar's rate (`3.1it/s,` `1.24s/it]`): its postfix shows a running figure, not a logged one.
PROGRESS_BAR_RE = re.compile(r"[0-9.]+ ?(?:it/s|s/it)[,\]]")
WINDOW = 4096
MAX_VALUES = 24  # per window and series
LINE_CHARS = 600  # what a finding keeps of its line

# The loss: values needed, the factor over the lowest one, the least absolute rise.
MIN_LOSSES = 6
CLIMB_FACTOR = 10.0
CLIMB_ABSOLUTE = 1.0
LAST_LOSSES = 3
# The loss falling straight to exactly 0 and staying: zeros in a row, the least value it fell from.
MIN_ZEROS = 3
ZERO_FALL_FROM = 0.1
# The census: rising counts needed (complete censuses, each larger than the one before).
MIN_CENSUSES = 3
# The host memory: figures needed, the factor over the first one, the least final figure.
MIN_MEMORY_FIGURES = 3
MEMORY_FACTOR = 4.0
MEMORY_FLOOR = 32 * 1024**3
_UNITS = {"m": 1024**2, "g": 1024**3, "t": 1024**4}


@dataclass(frozen=True)
class At:
    """Where a value was read: the line a finding quotes. Figures speak for the run, not for a
    rank: a finding names none."""

    source: int
    line: int
    text: str


@dataclass
class Series:
    """One figure as the log reports it over time, in bounded state."""

    count: int = 0
    first: float | None = None
    low: float = math.inf
    low_at: int = -1  # the count at which the lowest value was read
    recent: deque[tuple[float, At]] = field(default_factory=lambda: deque(maxlen=4))
    # the first value an order of magnitude above the lowest one since that lowest one
    jump: At | None = None
    # values read from lines that are not a progress bar (a logged figure, not a bar's postfix)
    plain: int = 0
    last_plain: At | None = None
    # the values of exactly 0 in a row up to the newest value, the first of them, and the value
    # the loss fell to 0 from
    zeros: int = 0
    zero_at: At | None = None
    fell_from: float = 0.0

    def add(self, value: float, at: At) -> None:
        if not math.isfinite(value):
            return
        if value == 0:
            if self.zeros == 0:
                self.zero_at = at
                self.fell_from = self.recent[-1][0] if self.recent else 0.0
            self.zeros += 1
        else:
            self.zeros = 0
        self.count += 1
        if self.first is None:
            self.first = value
        if value < self.low:
            self.low, self.low_at, self.jump = value, self.count, None
        elif self.jump is None and value >= climbed(self.low):
            self.jump = at
        self.recent.append((value, at))
        if not PROGRESS_BAR_RE.search(at.text):
            self.plain += 1
            self.last_plain = at


def climbed(low: float) -> float:
    """The least value that is an order of magnitude above `low`."""
    return max(low * CLIMB_FACTOR, low + CLIMB_ABSOLUTE)


@dataclass
class Metrics:
    """The series one scan follows (one per source file for the loss: ranks of one file log the
    same loss, files of several jobs would not)."""

    loss: dict[int, Series] = field(default_factory=dict)
    host_memory: dict[int, Series] = field(default_factory=dict)
    census: dict[int, Census] = field(default_factory=dict)

    def read(self, source: int, base: int, body: str) -> None:
        """The values of both series in one chunk (`body`, after `base` lines)."""
        for start, text in _windows(body):
            first = base + body.count("\n", 0, start) + 1 if start else base + 1
            for value, at in _values(LOSS_RE, source, first, text):
                self.loss.setdefault(source, Series()).add(value, at)
            for value, at in _values(HOST_MEMORY_RE, source, first, text):
                self.host_memory.setdefault(source, Series()).add(value, at)
            for _, at in _values(CENSUS_RE, source, first, text, limit=None):
                self.census.setdefault(source, Census()).add(at)


@dataclass
class Census:
    """The sizes of the last censuses of live tensors one file printed: runs of consecutive
    census lines (bounded: the newest few)."""

    sizes: deque[tuple[int, At]] = field(default_factory=lambda: deque(maxlen=MIN_CENSUSES + 1))
    last_line: int = -2

    def add(self, at: At) -> None:
        if at.line == self.last_line + 1 and self.sizes:
            size, first = self.sizes[-1]
            self.sizes[-1] = (size + 1, first)
        else:
            self.sizes.append((1, at))
        self.last_line = at.line


def _windows(body: str) -> list[tuple[int, str]]:
    """The chunk's first and last WINDOW characters, cut at line ends (the whole of a small one)."""
    if len(body) <= 2 * WINDOW:
        return [(0, body)]
    # a line longer than the window is cut: the windows stay WINDOW long whatever the lines
    head = body.rfind("\n", 0, WINDOW)
    tail = body.find("\n", len(body) - WINDOW)
    tail = tail + 1 if tail >= 0 else len(body) - WINDOW
    return [(0, body[: head if head >= 0 else WINDOW]), (tail, body[tail:])]


# How every match of a case-insensitive series pattern begins, in lower case (HOST_MEMORY_RE's \b
# comes before it): where they are found in the lowered window, the pattern is tried there only.
_STARTS = {
    LOSS_RE: ("loss",),
    HOST_MEMORY_RE: ("rss", "host mem", "cpu mem", "ram "),
}


def _finditer(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)`, faster: a case-insensitive search tries each position of an
    8 KB window (hundreds of µs); here it is tried only where its first words are, found in the
    lowered text. That needs a lower case with the text's positions (no character lowered into
    two) in which every character the pattern takes for one of those letters is that letter:
    `re` also takes the long s (U+017F, which lowers to itself) for an s."""
    starts = _STARTS.get(pattern)
    lowered = text.lower() if starts is not None else ""
    if starts is None or len(lowered) != len(text):
        yield from pattern.finditer(text)
        return
    if not lowered.isascii():
        lowered = lowered.replace("\u017f", "s")
    pos = 0
    for at in _positions(lowered, starts):
        if at < pos:
            continue  # inside the match before (finditer's matches do not overlap)
        m = pattern.match(text, at)
        if m is not None:
            yield m
            pos = m.end()


def _positions(lowered: str, words: tuple[str, ...]) -> list[int]:
    """Every position where one of `words` begins in `lowered`, in order."""
    out: list[int] = []
    for word in words:
        at = lowered.find(word)
        while at >= 0:
            out.append(at)
            at = lowered.find(word, at + 1)
    if len(words) > 1:
        out.sort()
    return out


def _values(
    pattern: re.Pattern[str],
    source: int,
    first_line: int,
    text: str,
    limit: int | None = MAX_VALUES,
) -> Iterator[tuple[float, At]]:
    """The pattern's values in `text` (at most `limit`; a pattern without a value group: 1.0)."""
    line, counted, kept = first_line, 0, 0
    for m in _finditer(pattern, text):
        if pattern is LOSS_RE and _other_figure(text, m.start()):
            continue
        kept += 1
        if limit is not None and kept > limit:
            return
        line += text.count("\n", counted, m.start())
        counted = m.start()
        value = float(m.group("value")) if "value" in pattern.groupindex else 1.0
        if m.groupdict().get("unit"):
            value *= _UNITS[m.group("unit").lower()]
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        yield value, At(source, line, text[start : end if end >= 0 else len(text)][:LINE_CHARS])


def _other_figure(text: str, start: int) -> bool:
    """The `loss` at `start` ends another figure's name (`val_loss`, `eval/loss`, `loss_ctc`)."""
    if start == 0 or text[start - 1] not in _NOT_BEFORE_LOSS:
        return False
    namespace = text[max(0, start - len(_TRAIN_NAMESPACE)) : start].lower()
    return namespace != _TRAIN_NAMESPACE or (
        start > len(_TRAIN_NAMESPACE)
        and text[start - len(_TRAIN_NAMESPACE) - 1] in _NOT_BEFORE_LOSS
    )


def logged_finite_after(metrics: Metrics, position: tuple[int, int]) -> bool:
    """The run logged a finite loss (on lines that are not progress bars, at least twice) after
    `position`: a NaN that only a bar's running figure showed did not stay."""
    series = metrics.loss.get(position[0])
    if series is None or series.plain < 2 or series.last_plain is None:
        return False
    return (series.last_plain.source, series.last_plain.line) > position


@dataclass(frozen=True)
class Finding:
    """A failure a series shows: the class, the engine's signal id and weight, the line."""

    slug: str
    signal: str
    weight: float
    at: At


# The engine's own signals: (slug, id, weight). Below a traceback-backed class (0.7 and up) and
# below nan-loss's 0.7, so that a run ending in NaN or in an error line is that.
LOSS_CLIMB = ("loss-divergence", "loss-climbs-and-stays", 0.45)
MEMORY_CLIMB = ("host-oom-killed", "host-memory-multiplies", 0.4)
TENSORS_GROW = ("eval-memory-growth", "live-tensors-grow", 0.4)
LOSS_ZERO = ("nan-loss", "loss-falls-to-zero", 0.45)
SIGNALS = (LOSS_CLIMB, MEMORY_CLIMB, TENSORS_GROW, LOSS_ZERO)


def findings(metrics: Metrics, tail: list[tuple[str, tuple[int, int]]]) -> list[Finding]:
    """What the series show, judged once after the scan. `tail` is the log's last non-empty lines
    with their (source, line) positions: the last values are read there when it holds them."""
    out = []
    for source, series in metrics.loss.items():
        climb = _loss_climb(series, _tail_values(tail, source, LOSS_RE))
        if climb is not None:
            out.append(Finding(LOSS_CLIMB[0], LOSS_CLIMB[1], LOSS_CLIMB[2], climb))
        zero = _loss_zero(series)
        if zero is not None:
            out.append(Finding(LOSS_ZERO[0], LOSS_ZERO[1], LOSS_ZERO[2], zero))
    for series in metrics.host_memory.values():
        growth = _memory_growth(series, tail)
        if growth is not None:
            out.append(Finding(MEMORY_CLIMB[0], MEMORY_CLIMB[1], MEMORY_CLIMB[2], growth))
    for census in metrics.census.values():
        grown = _tensors_grow(census, tail)
        if grown is not None:
            out.append(Finding(TENSORS_GROW[0], TENSORS_GROW[1], TENSORS_GROW[2], grown))
    return out


def _tensors_grow(census: Census, tail: list[tuple[str, tuple[int, int]]]) -> At | None:
    """The first line of the last complete census, when each of the last MIN_CENSUSES complete
    ones counted more tensors than the one before (one the log ends in may be cut)."""
    sizes = list(census.sizes)
    ends_in_census = bool(tail) and any(
        position == (sizes[-1][1].source, census.last_line) for _, position in tail[-1:]
    )
    if ends_in_census:
        sizes = sizes[:-1]
    sizes = sizes[-MIN_CENSUSES:]
    if len(sizes) < MIN_CENSUSES or any(a >= b for (a, _), (b, _) in itertools.pairwise(sizes)):
        return None
    return sizes[-1][1]


def _tail_values(
    tail: list[tuple[str, tuple[int, int]]], source: int, pattern: re.Pattern[str]
) -> list[float]:
    values = []
    for text, (src, _) in tail:
        m = pattern.search(text[:2000]) if src == source else None
        if m:
            values.append(float(m.group("value")))
    return values


def _loss_climb(series: Series, tail_values: list[float]) -> At | None:
    if series.count < MIN_LOSSES or not series.recent:
        return None
    last = tail_values[-LAST_LOSSES:] if len(tail_values) >= 2 else []
    recent = list(series.recent)[-LAST_LOSSES:]
    last = last or [v for v, _ in recent]
    # the lowest value came before the last ones: a loss high from its first value did not climb
    if series.low_at > series.count - len(recent) or series.low <= 0:
        return None
    threshold = climbed(series.low)
    if len(last) < 2 or not all(v >= threshold for v in last):
        return None
    # the line where the loss jumped (else the first recorded last value that is high)
    return series.jump or next((at for v, at in recent if v >= threshold), recent[-1][1])


def _loss_zero(series: Series) -> At | None:
    """The line where the loss fell straight from a real value to exactly 0 and stayed there to
    its last value: a loss that NaN made 0 (fp16 logits overflowing with the NaN masked out, a
    trainer's `'loss': 0.0` beside `'grad_norm': nan` or, before transformers logged grad_norm,
    alone: QwenLM/Qwen-VL#352, NVIDIA-Merlin/Transformers4Rec#493). A loss that converges reaches
    0 through small values (0.0012, 0.0003), not from 0.1 and up in one step."""
    if series.zeros < MIN_ZEROS or series.fell_from < ZERO_FALL_FROM:
        return None
    return series.zero_at


def _memory_growth(series: Series, tail: list[tuple[str, tuple[int, int]]]) -> At | None:
    if series.count < MIN_MEMORY_FIGURES or series.first is None or not series.recent:
        return None
    values = [v for v, _ in series.recent]
    final, at = series.recent[-1]
    rising = all(a < b for a, b in zip(values[-3:], values[-2:], strict=False))
    if not (rising and final >= MEMORY_FACTOR * series.first and final >= MEMORY_FLOOR):
        return None
    # the log ends while the figure climbs: its last reported figure is among the last lines
    if not any(position == (at.source, at.line) for _, position in tail):
        return None
    return at
