"""`python -m bench.matching`: matching throughput with the catalogue and with 10x fingerprints.

Logs come from bench.genlog. Matching is timed on
already-masked, line-aligned 1 MiB chunks, so the figure is the engine's alone. The 100 MB
diagnose peak RSS is measured in a subprocess so that this process's memory does not count.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Iterator

from msgspec import UNSET
from msgspec.structs import replace

from bench.genlog import generate_log
from rootcause.catalogue import Entry, load_entries
from rootcause.engine import Engine

MB = 1_000_000
CHUNK = 1 << 20


def generate(size_bytes: int, seed: int = 0) -> Iterator[bytes]:
    return generate_log(size_bytes, seed=seed, ranks=4)


def chunks_of(size_bytes: int) -> list[str]:
    """The log as line-aligned str chunks (generation is kept out of the timing)."""
    buf = b"".join(generate(size_bytes))
    out = []
    start = 0
    while start < len(buf):
        end = buf.rfind(b"\n", start, start + CHUNK)
        end = len(buf) if end < 0 or start + CHUNK >= len(buf) else end + 1
        out.append(buf[start:end].decode("utf-8", "replace"))
        start = end
    return out


def synthetic_entries(entries: list[Entry], factor: int) -> list[Entry]:
    """The catalogue plus (factor-1) copies of it with plausible, literal-heavy new patterns."""
    rng = random.Random(1)
    out = list(entries)

    def word() -> str:
        return "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(5, 10))
        )

    def new_pattern() -> str:
        a, b, c = word(), word(), word()
        return rng.choice(
            [
                f"{a.title()}Error: {b} [a-z_]{{3,20}} (failed|aborted) {c}",
                f"{a} {b} (?P<size>[0-9.]+ [GM]iB)[^\\n]{{0,80}}{c}",
                f"\\b{a}_{b}\\(\\) returned {c}",
                f"(?i){a} {b} {c}",
            ]
        )

    for k in range(1, factor):
        for entry in entries:
            signals = [
                replace(sig, pattern=new_pattern(), numeric=UNSET)
                for sig in entry.fingerprints.signals
            ]
            fingerprints = replace(entry.fingerprints, signals=signals)
            out.append(replace(entry, slug=f"{entry.slug}-syn{k}", fingerprints=fingerprints))
    return out


def throughput(engine: Engine, chunks: list[str], repeat: int = 3, budget_s: float = 1.0) -> float:
    """MB/s, best of at least `repeat` runs: the machine is shared, the best run is the engine's
    speed. A small log takes milliseconds, so it runs until `budget_s` is spent (50 runs at most),
    or one scheduler hiccup would decide its figure."""
    size = sum(len(c) for c in chunks)
    engine.diagnose(chunks[:2])  # warm up
    best = float("inf")
    runs, spent = 0, 0.0
    while runs < repeat or (spent < budget_s and runs < 50):
        start = time.perf_counter()
        engine.diagnose(chunks)
        elapsed = time.perf_counter() - start
        best, runs, spent = min(best, elapsed), runs + 1, spent + elapsed
    return size / MB / best


def peak_rss_mb(size_mb: int, *, masking: bool = False) -> float:
    """Peak RSS (VmHWM) of a child that streams a generated log through the engine.

    VmHWM rather than ru_maxrss: on Linux a forked child inherits the parent's ru_maxrss.
    """
    masked = "(Masker().mask(c) for c in chunks)" if masking else "chunks"
    code = (
        "from bench.matching import generate\n"
        "from rootcause.engine import get_engine\n"
        "from rootcause.masking import Masker, iter_line_chunks\n"
        f"chunks = iter_line_chunks(generate({size_mb * MB}))\n"
        f"get_engine().diagnose({masked})\n"
        "status = open('/proc/self/status').read()\n"
        "print(next(l.split()[1] for l in status.splitlines() if l.startswith('VmHWM')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / 1024


def run(sizes: tuple[int, ...] = (1, 10, 100)) -> list[dict[str, float]]:
    entries = load_entries()
    base = Engine(entries)
    grown = Engine(synthetic_entries(entries, 10))
    rows = []
    for size in sizes:
        chunks = chunks_of(size * MB)
        rows.append(
            {
                "size_mb": size,
                "signals": len(base.signals),
                "mb_s": throughput(base, chunks),
                "signals_10x": len(grown.signals),
                "mb_s_10x": throughput(grown, chunks),
            }
        )
    return rows


def main() -> int:
    rows = run()
    print(f"{'size':>6} {'signals':>8} {'MB/s':>8} {'signals':>8} {'MB/s':>8} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['size_mb']:>4}MB {r['signals']:>8} {r['mb_s']:>8.1f} {r['signals_10x']:>8}"
            f" {r['mb_s_10x']:>8.1f} {r['mb_s_10x'] / r['mb_s']:>6.2f}"
        )
    try:
        print(f"peak RSS, 100 MB log, matching only: {peak_rss_mb(100):.0f} MB")
        print(f"peak RSS, 100 MB log, masking + matching: {peak_rss_mb(100, masking=True):.0f} MB")
    except subprocess.CalledProcessError as exc:
        print(f"peak RSS not measured: {exc.stderr[-500:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
