"""Whether this checkout masks as another commit does, byte for byte (a speed change's check).

    python -m bench.masking_same [--ref main] [--dense-mb 20] [LOG ...]

The other commit's ``rootcause/`` is taken with ``git archive`` into a temporary directory;
each tree masks the same logs in a child process of this virtualenv (two passes over 1 MiB
chunks, as ``mask_log``), with the Hyperscan recognizers alone (the light client), as
``rootcause mask`` does (``WHEN_NEEDED``) and with Presidio's analyzer (the workers). The logs:
every test log (tests/logs), the masking corpus's texts and issue 33's dense cluster log
(``--dense-mb``; 0 leaves it out), or the files given. Exit 1 when any masked text differs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
MODES = ("hyperscan", "when-needed", "presidio")

_CHILD = """
import hashlib, json, sys
from rootcause.masking import Masker, mask_log
from rootcause.masking.masker import WHEN_NEEDED
mode, paths = sys.argv[1], json.loads(sys.stdin.read())
analyzer = {"hyperscan": None, "when-needed": WHEN_NEEDED, "presidio": "auto"}[mode]
out = {}
for path in paths:
    def read(path=path):
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                yield block
    masker = Masker(secret=b"same", analyzer=analyzer)
    digest = hashlib.sha256()
    for chunk in mask_log(read, masker):
        digest.update(chunk.encode("utf-8", "surrogatepass"))
    out[path] = digest.hexdigest()
print(json.dumps(out))
"""


def digests(tree: Path, mode: str, paths: list[str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode],
        input=json.dumps(paths).encode(),
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
        env={**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"},
    )
    result: dict[str, str] = json.loads(done.stdout)
    return result


def default_logs(directory: Path, dense_mb: int) -> list[str]:
    logs = sorted(str(p) for p in (ROOT / "tests" / "logs").rglob("*") if p.is_file())
    corpus = ROOT / "bench" / "masking_corpus" / "corpus.jsonl"
    for i, line in enumerate(corpus.read_text().splitlines()):
        path = directory / f"corpus-{i}.log"
        path.write_text(json.loads(line)["text"])
        logs.append(str(path))
    if dense_mb:
        from bench.masking_corpus.cluster import dense_log

        path = directory / f"cluster-{dense_mb}MB.log"
        with path.open("wb") as f:
            for block in dense_log(dense_mb * MB):
                f.write(block)
        logs.append(str(path))
    return logs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--dense-mb", type=int, default=20)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("logs", nargs="*")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rootcause-same-") as tmp:
        other = Path(tmp) / "ref"
        other.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.ref, "rootcause"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(other, filter="data")
        logs = args.logs or default_logs(Path(tmp), args.dense_mb)
        differ = 0
        for mode in args.modes.split(","):
            ours, theirs = digests(ROOT, mode, logs), digests(other, mode, logs)
            bad = [p for p in logs if ours[p] != theirs[p]]
            differ += len(bad)
            same = len(logs) - len(bad)
            print(f"{mode:>12}: {same} of {len(logs)} logs masked the same as {args.ref}")
            for path in bad:
                print(f"    differs: {path} ({hashlib.sha256(path.encode()).hexdigest()[:8]})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
