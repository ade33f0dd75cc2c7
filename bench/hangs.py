"""Score the hang analyser on the run-produced bundles, and time it on simulated big jobs.

    python -m bench.hangs                 # dev and sealed apart (sealed: figures only)
    python -m bench.hangs --scale 512 2048
    python -m bench.hangs --show-dev      # every dev miss, for whoever tunes on dev

Per part: verdict accuracy, culprit top-1 (the first culprit named is the scenario's rank; for
healthy bundles, no culprit named), the same with 10 % of the ranks' dumps removed (flight-recorder
and stack dumps of ceil(10 %) of the ranks, chosen by a seeded draw, never the scenario's own
choice), and beside it today's engine on the bundle's logs alone (its class and initiating rank).
Labels come from bench/hangruns/corpus/*/labels.jsonl, written by the scenario, never by this.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import NotRequired, TypedDict

from rootcause.engine import get_engine
from rootcause.hangs import analyse, members, read_bundle

CORPUS = Path(__file__).resolve().parent / "hangruns" / "corpus"
# PyTorch's fr_trace needs torch, which never enters .venv: it runs in bench/realruns' virtualenv.
TORCH_PYTHON = CORPUS.parents[2] / ".venv-realruns" / "bin" / "python"
FR_TRACE = CORPUS.parent / "fr_trace_compare.py"
_DUMP = re.compile(r"(?i)fr_trace|nccl_trace|pyspy")


def _rank_of(name: str) -> int | None:
    m = re.search(r"(\d+)(?!.*\d)", name.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def _drop_dumps(files: list[tuple[str, bytes]], world: int, seed: str) -> list[tuple[str, bytes]]:
    # A seed of its own: the scenario's (its name) chose the culprit, and must not choose this.
    rng = random.Random(f"drop-dumps:{seed}")
    gone = set(rng.sample(range(world), max(1, math.ceil(world * 0.10))))
    return [(n, d) for n, d in files if not (_DUMP.search(n) and _rank_of(n) in gone)]


class Label(TypedDict):
    """A line of a part's labels.jsonl: a bundle's name, world size, verdict and culprit ranks."""

    name: str
    world: int
    verdict: str
    culprits: list[int]


class Figures(TypedDict):
    """evaluate()'s counts for one part (none but `bundles` when the part has no labels)."""

    bundles: int
    misses: NotRequired[list[str]]
    verdict: NotRequired[int]
    culprit: NotRequired[int]
    verdict_missing: NotRequired[int]
    culprit_missing: NotRequired[int]
    logs_verdict: NotRequired[int]
    logs_culprit: NotRequired[int]
    healthy: NotRequired[int]
    healthy_flagged: NotRequired[int]
    fr_culprit: NotRequired[int]
    fr_culprit_missing: NotRequired[int]
    fr_ran: NotRequired[dict[str, int]]
    fr_fair: NotRequired[list[int]]  # hung bundles with dumps: their count, fr_trace's, ours
    fr_absent: NotRequired[bool]  # fr_trace asked for, but .venv-realruns (torch) is not there


def _score(section_verdict: str, culprits: list[int], label: Label) -> tuple[bool, bool]:
    verdict_ok = section_verdict == label["verdict"]
    culprit_ok = culprits[:1] == label["culprits"][:1] if label["culprits"] else not culprits
    return verdict_ok, culprit_ok


def _logs_alone(files: list[tuple[str, bytes]], label: Label) -> tuple[bool, bool]:
    """Today's engine on the bundle's logs (each rank's file a source, as --merge does)."""
    logs = [
        (n, [d.decode("utf-8", "replace")]) for n, d in files if n.endswith(".log") and d.strip()
    ]
    result = get_engine().diagnose_sources(logs)
    slug = result.failure.slug if result.failure else "none"
    rank = [result.initiating_rank] if result.initiating_rank is not None else []
    return _score(slug, rank, label)


FrFindings = dict[str, dict[str, list[int] | str]]


def fr_trace(part: str, thinned: bool = False) -> FrFindings | None:
    """PyTorch's fr_trace on the part's flight-recorder dumps (bench/hangruns/fr_trace_compare.py
    in .venv-realruns): per bundle, how it ran and the culprits it reported. None without torch."""
    if not TORCH_PYTHON.exists():
        return None
    cmd = [str(TORCH_PYTHON), str(FR_TRACE), part, "--json", *(["--thin"] if thinned else [])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["name"]: r for r in rows}


def fr_trace_status() -> str:
    """Which torch runs fr_trace, or why it does not run."""
    if not TORCH_PYTHON.exists():
        return (
            "not run: .venv-realruns is absent (`make .venv-realruns/.installed` installs torch "
            "2.13 CPU into it; torch never enters .venv)"
        )
    probe = [str(TORCH_PYTHON), "-c", "import torch; print(torch.__version__)"]
    version = subprocess.run(probe, capture_output=True, text=True, timeout=120).stdout.strip()
    return f"run with torch {version or '?'} from .venv-realruns"


def _fr_right(found: FrFindings | None, label: Label) -> bool:
    row = (found or {}).get(label["name"], {})
    culprits = row.get("culprits", [])
    return _score("", culprits if isinstance(culprits, list) else [], label)[1]


def evaluate(part: str, with_fr_trace: bool = True) -> Figures:
    labels_path = CORPUS / part / "labels.jsonl"
    if not labels_path.exists():
        return {"bundles": 0}
    rows: list[Label] = [json.loads(line) for line in labels_path.read_text().splitlines()]
    bundles = 0
    misses: list[str] = []
    counts = dict.fromkeys(
        ("verdict", "culprit", "verdict_missing", "culprit_missing", "logs_verdict",
         "logs_culprit", "healthy", "healthy_flagged", "fr_culprit", "fr_culprit_missing"),
        0,
    )  # fmt: skip
    fr = fr_trace(part) if with_fr_trace else None
    fr_thin = fr_trace(part, thinned=True) if fr is not None else None
    fr_ran: dict[str, int] = {}
    fr_fair = [0, 0, 0]
    for label in rows:
        path = CORPUS / part / f"{label['name']}.tar.gz"
        if not path.exists():
            continue
        files = list(members(path.read_bytes()))
        bundles += 1
        section = analyse(read_bundle(files))
        culprits = [c.rank for c in section.culprits]
        v_ok, c_ok = _score(section.verdict, culprits, label)
        counts["verdict"] += v_ok
        counts["culprit"] += c_ok
        if label["verdict"] == "none":
            counts["healthy"] += 1
            counts["healthy_flagged"] += section.verdict != "none"
        if not (v_ok and c_ok):
            misses.append(
                f"{label['name']}: {section.verdict} {culprits} (label {label['verdict']} "
                f"{label['culprits']})"
            )
        thinned = _drop_dumps(files, label["world"], label["name"])
        s2 = analyse(read_bundle(thinned))
        v2, c2 = _score(s2.verdict, [c.rank for c in s2.culprits], label)
        counts["verdict_missing"] += v2
        counts["culprit_missing"] += c2
        lv, lc = _logs_alone(files, label)
        counts["logs_verdict"] += lv
        counts["logs_culprit"] += lc
        if fr is not None:
            counts["fr_culprit"] += _fr_right(fr, label)
            counts["fr_culprit_missing"] += _fr_right(fr_thin, label)
            ran = str(fr.get(label["name"], {}).get("ran", "not run"))
            fr_ran[ran] = fr_ran.get(ran, 0) + 1
            if label["culprits"] and ran != "no dumps":
                fr_fair[0] += 1
                fr_fair[1] += _fr_right(fr, label)
                fr_fair[2] += c_ok
    figures = Figures(
        bundles=bundles,
        misses=misses,
        verdict=counts["verdict"],
        culprit=counts["culprit"],
        verdict_missing=counts["verdict_missing"],
        culprit_missing=counts["culprit_missing"],
        logs_verdict=counts["logs_verdict"],
        logs_culprit=counts["logs_culprit"],
        healthy=counts["healthy"],
        healthy_flagged=counts["healthy_flagged"],
    )
    if with_fr_trace and fr is None:
        figures["fr_absent"] = True
    if fr is not None:
        figures["fr_culprit"] = counts["fr_culprit"]
        figures["fr_culprit_missing"] = counts["fr_culprit_missing"]
        figures["fr_ran"] = fr_ran
        figures["fr_fair"] = fr_fair
    return figures


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} % ({a}/{b})" if b else "n/a"


def report_lines(part: str, r: Figures) -> list[str]:
    n = r["bundles"]
    if not n:
        return [f"{part}: no bundles"]
    return [
        f"{part}: {n} bundles ({r['healthy']} healthy, {r['healthy_flagged']} of them flagged)",
        f"  analyser      verdict {_pct(r['verdict'], n)}  culprit top-1 {_pct(r['culprit'], n)}",
        f"  10 % missing  verdict {_pct(r['verdict_missing'], n)}  culprit top-1 "
        f"{_pct(r['culprit_missing'], n)}",
        f"  logs alone    verdict {_pct(r['logs_verdict'], n)}  culprit top-1 "
        f"{_pct(r['logs_culprit'], n)}",
        f"  fr_trace      culprit top-1 {_pct(r['fr_culprit'], n)}, 10 % missing "
        f"{_pct(r['fr_culprit_missing'], n)} ({_ran(r['fr_ran'])})"
        if "fr_ran" in r
        else "  fr_trace      not run: .venv-realruns is absent (`make .venv-realruns/.installed`)"
        if r.get("fr_absent")
        else "  fr_trace      not run (`make eval` runs it, with .venv-realruns's torch)",
    ]


def _ran(ran: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(ran.items()))


def _cell(a: int, n: int) -> str:
    return f"{100 * a / n:.1f} % ({a}/{n})"


def markdown(parts: list[tuple[str, Figures]]) -> list[str]:
    """The hang table of docs/accuracy.md: ours, fr_trace's and the logs alone, per part."""
    lines = [
        "| part | bundles | verdict | culprit top-1 | 10 % of dumps missing: verdict / culprit"
        " | fr_trace culprit top-1 | fr_trace, 10 % missing | logs alone: verdict / culprit |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    runs = []
    for part, r in parts:
        n = r["bundles"]
        if not n:
            continue
        fr = "fr_ran" in r
        absent = "not run (no .venv-realruns)" if r.get("fr_absent") else "not run"
        lines.append(
            f"| {part} | {n} | {_cell(r['verdict'], n)} | {_cell(r['culprit'], n)}"
            f" | {_cell(r['verdict_missing'], n)} / {_cell(r['culprit_missing'], n)}"
            f" | {_cell(r['fr_culprit'], n) if fr else absent}"
            f" | {_cell(r['fr_culprit_missing'], n) if fr else absent}"
            f" | {_cell(r['logs_verdict'], n)} / {_cell(r['logs_culprit'], n)} |"
        )
        if fr:
            n_fair, fr_ok, ours = r.get("fr_fair", [0, 0, 0])
            runs.append(
                f"{part}: {_ran(r['fr_ran'])}; on the {n_fair} bundles with a culprit and"
                f" flight-recorder dumps, fr_trace {fr_ok} right, rootcause {ours}"
            )
    if runs:
        lines += ["", "How fr_trace ran, per bundle: " + "; ".join(runs) + "."]
    return lines


# --- scale by simulation ----------------------------------------------------------------------

_RANK_IN_NAME = re.compile(r"(\d+)(?!.*\d)")


def simulate(template: Path, ranks: int) -> tuple[list[tuple[str, bytes]], int]:
    """A bundle of `ranks` ranks built from a real one: its waiting ranks replicated with their
    ids rewritten (file names, `[rankN]` prefixes, the process group's rank list), its culprit
    placed at a random rank among them. Returns the files and the culprit's new rank."""
    files = list(members(template.read_bytes()))
    label = next(
        json.loads(line)
        for line in (template.parent / "labels.jsonl").read_text().splitlines()
        if json.loads(line)["name"] == template.name.removesuffix(".tar.gz")
    )
    world, culprit = label["world"], label["culprits"][0]
    waiter = next(r for r in range(world) if r != culprit)
    by_rank: dict[int, list[tuple[str, bytes]]] = {}
    for name, data in files:
        r = _rank_of(name)
        if r is not None and r < world and "launcher" not in name:
            by_rank.setdefault(r, []).append((name, data))
    rng = random.Random(ranks)
    new_culprit = rng.randrange(ranks)
    group = json.dumps(list(range(ranks))).encode()
    # the launcher's output: its collection time says how long the pending collective waited
    out: list[tuple[str, bytes]] = [(n, d) for n, d in files if n == "launcher.log"]
    for new in range(ranks):
        source = culprit if new == new_culprit else waiter
        for name, data in by_rank[source]:
            new_name = _RANK_IN_NAME.sub(str(new), name)
            data = data.replace(f"[rank{source}]".encode(), f"[rank{new}]".encode())
            data = data.replace(f"rank={source} ".encode(), f"rank={new} ".encode())
            data = re.sub(rb'"ranks": ?"\[[0-9, ]*\]"', b'"ranks": "' + group + b'"', data)
            out.append((new_name, data))
    return out, new_culprit


def scale(sizes: list[int]) -> list[str]:
    template = CORPUS / "dev" / "lock__0.tar.gz"
    lines = []
    for n in sizes:
        files, culprit = simulate(template, n)
        size = sum(len(d) for _, d in files)
        start = time.perf_counter()
        section = analyse(read_bundle(files))
        took = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ok = [c.rank for c in section.culprits][:1] == [culprit]
        lines.append(
            f"{n} ranks: {len(files)} files, {size / 1e6:.1f} MB: {took:.1f} s, peak RSS "
            f"{rss:.0f} MB; verdict {section.verdict}, culprit {'right' if ok else 'WRONG'}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, nargs="*", default=None)
    ap.add_argument("--show-dev", action="store_true", help="list the dev part's misses")
    args = ap.parse_args(argv)
    if args.scale is not None:
        print("\n".join(scale(args.scale or [512, 2048])))
        return 0
    for part in ("dev", "sealed"):
        r = evaluate(part)
        print("\n".join(report_lines(part, r)))
        if part == "dev" and args.show_dev:
            print("\n".join(f"  miss {m}" for m in r.get("misses", [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
