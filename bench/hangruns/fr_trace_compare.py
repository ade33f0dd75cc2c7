"""PyTorch's own analyser (fr_trace, shipped with torch 2.13 as `torchfrtrace`) on the corpus'
flight-recorder pickles, its culprit taken as it reports it: the first of the "missing ranks" it
prints for a collective not all ranks joined, or the ranks it names in a mismatch. It reads
pickles only (not the JSON dumps), and needs torch: run in .venv-realruns.

    .venv-realruns/bin/python bench/hangruns/fr_trace_compare.py [dev|sealed]
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
MISSING = re.compile(r"missing ranks: \{([0-9, ]+)\}")


def main() -> None:
    part = sys.argv[1] if len(sys.argv) > 1 else "dev"
    rows = [json.loads(x) for x in (CORPUS / part / "labels.jsonl").read_text().splitlines()]
    n = culprit_ok = named_any = failed = 0
    for label in rows:
        if label["fr"] != "pickle":
            continue
        path = CORPUS / part / f"{label['name']}.tar.gz"
        if not path.exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(fileobj=io.BytesIO(path.read_bytes())) as tar:
                for m in tar.getmembers():
                    if m.name.startswith("nccl_trace_rank_") and m.isreg():
                        data = tar.extractfile(m)
                        assert data is not None
                        Path(tmp, m.name).write_bytes(data.read())
            res = subprocess.run(
                [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", tmp,
                 "--prefix", "nccl_trace_rank_"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        out = res.stdout + res.stderr
        failed += res.returncode != 0
        if res.returncode != 0 and part == "dev":
            print(f"  {label['name']}: fr_trace failed: {out.strip().splitlines()[-1][:160]}")
        m = MISSING.search(out)
        culprits = sorted(int(x) for x in m.group(1).split(",")) if m else []
        n += 1
        named_any += bool(culprits)
        want = label["culprits"][:1]
        culprit_ok += culprits[:1] == want if want else not culprits
    print(
        f"{part}: fr_trace on {n} bundles with pickles: culprit top-1 {culprit_ok}/{n}, "
        f"named a rank in {named_any}, failed on {failed}"
    )


if __name__ == "__main__":
    main()
