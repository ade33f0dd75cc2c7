"""PyTorch's own analyser (fr_trace, shipped with torch 2.13 as `torchfrtrace`) on the corpus'
flight-recorder dumps, its culprit taken as it reports it: the ranks of its first "missing ranks:
{...}" (after "Not all ranks joining collective, sequence number: N"), or of its first "Culprit
rank N" (a mismatch), whichever it prints first. Needs torch: run in .venv-realruns.

    .venv-realruns/bin/python bench/hangruns/fr_trace_compare.py [dev|sealed] [--json] [--thin]

fr_trace reads one pickle per rank. The inputs are adapted, nothing else:
- torch 2.13's gloo dumps key the default group's `pg_config` by "" (name "", desc "") while every
  entry names it ("0", "default_pg"); fr_trace then fails in `build_collectives` with
  `KeyError: ('0', N)`. The key, name and desc are rewritten to the entries' ("0", "default_pg").
- JSON dumps (`_dump_fr_trace_json`) are written as the pickle fr_trace reads: the same fields,
  `process_group` a tuple, `frames` empty (the JSON dump has none).
- fr_trace refuses a job with a rank's dump missing ("Missing dump files from ranks"); it is then
  run again with its own `--allow-incomplete-ranks`, and the bundle counted as such.
`--thin` removes the dumps of 10 % of the ranks first (bench/hangs.py's seeded draw).
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import math
import pickle
import random
import re
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NoReturn, TypedDict, cast

CORPUS = Path(__file__).resolve().parent / "corpus"
FIRST_FINDING = re.compile(r"missing ranks: \{([0-9, ]+)\}|Culprit rank (\d+)")
_PICKLE = re.compile(r"^nccl_trace_rank_(\d+)$")
_JSON = re.compile(r"^fr_trace_rank(\d+)\.json$")


class Dump(TypedDict):
    """A rank's flight-recorder dump, the two parts this script touches (the rest passes as is)."""

    pg_config: dict[str, dict[str, str]]
    entries: list[dict[str, object]]


class Finding(TypedDict):
    """How fr_trace ran on a bundle, the culprits it reported, the error it stopped with."""

    ran: str
    culprits: list[int]
    error: str | None


class _NoObjects(pickle.Unpickler):
    """A gloo dump holds dicts, lists, tuples, strings and numbers only: no class is ever built."""

    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def _adapt(dump: Dump) -> Dump:
    config = dump["pg_config"]
    if "" in config:
        group = dict(config.pop(""))
        group["name"], group["desc"] = "0", "default_pg"
        config["0"] = group
    for entry in dump["entries"]:
        entry["process_group"] = tuple(cast(list[str], entry["process_group"]))
        entry.setdefault("frames", [])
        for key in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            entry[key] = entry.get(key) or None
    return dump


def dumps_of(path: Path) -> dict[int, Dump]:
    """Each rank's flight-recorder dump of a bundle, pickle or JSON, adapted as above."""
    out: dict[int, Dump] = {}
    with tarfile.open(fileobj=io.BytesIO(path.read_bytes())) as tar:
        for member in tar.getmembers():
            name = member.name.rsplit("/", 1)[-1]
            m = _PICKLE.match(name) or _JSON.match(name)
            data = tar.extractfile(member) if member.isreg() and m else None
            if m is None or data is None:
                continue
            raw = data.read()
            is_pickle = _PICKLE.match(name) is not None
            dump = _NoObjects(io.BytesIO(raw)).load() if is_pickle else json.loads(raw)
            out[int(m.group(1))] = _adapt(dump)
    return out


def thin(dumps: dict[int, Dump], world: int, name: str) -> dict[int, Dump]:
    # the draw of bench/hangs.py's _drop_dumps, so both analysers lose the same ranks' dumps
    rng = random.Random(f"drop-dumps:{name}")
    gone = set(rng.sample(range(world), max(1, math.ceil(world * 0.10))))
    return {r: d for r, d in dumps.items() if r not in gone}


def _run_fr_trace(directory: str, incomplete: bool) -> tuple[str, str | None]:
    """fr_trace's main in this process; its log text, and the error it stopped with."""
    # torch is in .venv-realruns only (mypy, run from .venv, knows nothing of it)
    fr_trace = importlib.import_module("torch.distributed.flight_recorder.fr_trace")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("Flight Recorder")
    log.addHandler(handler)
    saved = log.handlers[:]
    log.handlers = [handler]  # its own stderr handler off: the text is read here
    args = [directory, "--prefix", "nccl_trace_rank_"]
    try:
        fr_trace.main([*args, "--allow-incomplete-ranks"] if incomplete else args)
        error = None
    except (Exception, SystemExit) as exc:  # what fr_trace stops with is a finding
        error = f"{type(exc).__name__}: {exc}"
    finally:
        log.handlers = saved
    return stream.getvalue(), error


def analyse(dumps: dict[int, Dump]) -> Finding:
    if not dumps:
        return {"ran": "no dumps", "culprits": [], "error": None}
    with tempfile.TemporaryDirectory() as tmp:
        for rank, dump in dumps.items():
            Path(tmp, f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump, protocol=2))
        text, error = _run_fr_trace(tmp, incomplete=False)
        ran = "all dumps"
        if error and "Missing dump files" in error:
            text, error = _run_fr_trace(tmp, incomplete=True)
            ran = "--allow-incomplete-ranks"
    m = FIRST_FINDING.search(text)
    culprits = sorted(int(x) for x in (m.group(1) or m.group(2)).split(",")) if m else []
    return {"ran": "failed" if error else ran, "culprits": culprits, "error": error}


def main(argv: list[str]) -> None:
    part = next((a for a in argv if not a.startswith("--")), "dev")
    rows = [json.loads(x) for x in (CORPUS / part / "labels.jsonl").read_text().splitlines()]
    n = culprit_ok = named = 0
    for label in rows:
        path = CORPUS / part / f"{label['name']}.tar.gz"
        if not path.exists():
            continue
        dumps = dumps_of(path)
        if "--thin" in argv:
            dumps = thin(dumps, label["world"], label["name"])
        found = analyse(dumps)
        if "--json" in argv:
            print(json.dumps({"name": label["name"], **found}), flush=True)
            continue
        want = label["culprits"][:1]
        n += 1
        named += bool(found["culprits"])
        culprit_ok += found["culprits"][:1] == want if want else not found["culprits"]
        if part == "dev":
            print(f"  {label['name']}: {found['ran']} {found['culprits']} want {want}"
                  f"{' ' + found['error'][:120] if found['error'] else ''}")  # fmt: skip
    if "--json" not in argv:
        print(f"{part}: fr_trace culprit top-1 {culprit_ok}/{n}, named a rank in {named}")


if __name__ == "__main__":
    main(sys.argv[1:])
