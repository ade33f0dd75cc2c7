"""`make bench`: the whole offline diagnosis as a user runs it, and hostile input.

1. **Whole process**: `rootcause diagnose --offline` on generated training logs with PII
   (`bench.genlog`: NCCL lines with hosts and IPs, home paths, planted tokens, an OOM at the end)
   of 1, 20 and 100 MB, and issue 33's 20 MB cluster log dense with personal data (a finding
   every ~140 bytes: `bench.masking_corpus.cluster`), beside a naive pure-Python grep for the
   taxonomy's phrases (`bench.naive_grep`) over the same file in the same run. In this
   checkout's virtualenv (Presidio installed) and in the light install (`pip install .` into a
   fresh virtualenv, as `.ci/check-client` does; built once per lock file under the temporary
   directory).
2. **Start-up** in the light install: `rootcause --version` and a 20 KB log, the best of five,
   with the compiled databases cached (`rootcause.hscache`), and once with an empty cache.
3. **Hostile shapes** (issue 14) beside a benign log: CPU seconds per MB to mask (both passes)
   and diagnose, with the Hyperscan recognizers alone and with Presidio's analyzer.

Wall times are given with the process's CPU time (user + system, children included): on a
shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.genlog import generate_log
from bench.naive_grep import TAXONOMY

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
SIZES = (1, 20, 100)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process; its output is discarded."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False, cwd=ROOT
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a failure was diagnosed
        raise RuntimeError(f"{cmd}: exit {done.returncode}: {done.stderr.decode()[-2000:]}")
    return wall, _children_cpu() - cpu


def best(cmd: list[str], runs: int, env: dict[str, str] | None = None) -> tuple[float, float]:
    results = [timed(cmd, env) for _ in range(runs)]
    return min(r[0] for r in results), min(r[1] for r in results)


def write_log(directory: Path, size_mb: int, cluster: bool = False) -> Path:
    """A generated training log, or (``cluster``) issue 33's log dense with personal data: a
    finding every ~140 bytes (bench/masking_corpus/cluster.py)."""
    path = directory / f"{'cluster' if cluster else 'train'}-{size_mb}MB.log"
    if cluster:
        from bench.masking_corpus.cluster import dense_log

        blocks = dense_log(size_mb * MB)
    else:
        blocks = generate_log(size_mb * MB, seed=size_mb)
    with path.open("wb") as f:
        for block in blocks:
            f.write(block)
    return path


def light_install() -> Path | None:
    """A virtualenv with `pip install .` only (the light client), reused while the client lock
    and the source are unchanged; None when it cannot be built (no PyPI)."""
    files = sorted(
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
    )
    digest = hashlib.sha256()
    for name in files:
        path = ROOT / name.decode()
        if name and path.is_file() and (name.startswith(b"rootcause/") or b"/" not in name):
            digest.update(name + b"\0" + path.read_bytes())
    venv = Path(tempfile.gettempdir()) / f"rootcause-bench-light-{digest.hexdigest()[:12]}"
    if (venv / "ok").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    src = venv.with_name(venv.name + "-src")
    shutil.rmtree(src, ignore_errors=True)
    try:
        src.mkdir(parents=True)
        for name in files:
            path = ROOT / name.decode()
            if name and path.is_file() and (name.startswith(b"rootcause/") or b"/" not in name):
                (src / name.decode()).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, src / name.decode())
        python = shutil.which("python3.11") or sys.executable
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
        lock = str(ROOT / "requirements-client.lock")
        subprocess.run([*pip, "--require-hashes", "--no-deps", "-r", lock], check=True)
        subprocess.run([*pip, "--no-deps", str(src)], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"  (no light install: {exc})", flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        return None
    finally:
        shutil.rmtree(src, ignore_errors=True)
    (venv / "ok").touch()
    return venv


def whole_process(directory: Path, sizes: tuple[int, ...], light: Path | None) -> None:
    commands = {"this checkout (Presidio installed)": str(ROOT / ".venv" / "bin" / "rootcause")}
    if light is not None:
        commands["light install"] = str(light / "bin" / "rootcause")
    tiny = directory / "tiny.log"
    tiny.write_bytes(next(iter(generate_log(20_000, seed=1))))
    for command in commands.values():  # the cache of compiled databases, as after a first run
        timed([command, "diagnose", "--offline", str(tiny)])
    print(
        f"{'log':>7}  {'naive grep':>16}  "
        + "  ".join(f"{name:>36}" for name in commands)
        + "   (wall s / CPU s, speed-up in CPU time)"
    )
    # the sizes given, then issue 33's dense cluster log of 20 MB
    for size, cluster in [*((s, False) for s in sizes), (20, True)]:
        path = write_log(directory, size, cluster)
        runs = 3 if size <= 1 else 1
        if TAXONOMY.exists():
            grep = best([sys.executable, "-m", "bench.naive_grep", str(path)], runs)
        else:
            grep = (float("nan"), float("nan"))
        label = f"{size:>4} MB" + (" dense cluster" if cluster else "")
        row = f"{label}  {grep[0]:>7.2f} / {grep[1]:>6.2f}"
        for command in commands.values():
            wall, cpu = best([command, "diagnose", "--offline", str(path)], runs)
            mb_s = size / wall
            row += f"  {wall:>7.2f} / {cpu:>6.2f} ({mb_s:>5.1f} MB/s, {grep[1] / cpu:>4.1f}x)"
        print(row, flush=True)
        path.unlink()
    if not TAXONOMY.exists():
        print(f"  (no {TAXONOMY}: the naive grep needs the shared taxonomy)")


def start_up(directory: Path, light: Path) -> None:
    command = str(light / "bin" / "rootcause")
    tiny = directory / "tiny.log"
    version = best([command, "--version"], 5)
    small = best([command, "diagnose", "--offline", str(tiny)], 5)
    cold_env = {**os.environ, "ROOTCAUSE_CACHE_DIR": str(directory / "cold-cache")}
    cold = timed([command, "diagnose", "--offline", str(tiny)], cold_env)
    print(f"rootcause --version                    {version[0]:.3f} s wall, {version[1]:.3f} s CPU")
    print(f"diagnose --offline, 20 KB log          {small[0]:.3f} s wall, {small[1]:.3f} s CPU")
    print(f"  the same with an empty cache (first) {cold[0]:.3f} s wall, {cold[1]:.3f} s CPU")
    print("target: under 0.5 s")


def _repeat(unit: bytes, size: int) -> bytes:
    return (unit * (size // len(unit) + 1))[:size]


HOSTILE = {
    "1.": b"1.",
    "1:": b"1:",
    ":": b":",
    "a@": b"a@",
    "fe80:": b"fe80:",
    "1. lines": b"1." * 40 + b"\n",
    "many short lines": b"1:\n",
    "separators": b"-_.,;/=",
    "digits": b"0123456789",
    "brackets": b"[]()",
    "unterminated keys": b"-----BEGIN PRIVATE KEY-----\nMIIEv\n",
}


def hostile(size: int = 2 * MB) -> None:
    from rootcause.engine import get_engine
    from rootcause.masking import Masker, mask_log

    engine = get_engine()
    benign = b"".join(generate_log(size, seed=7))[:size]
    shapes = {"benign (generated log)": benign, "one line (benign, no breaks)": b""}
    shapes["one line (benign, no breaks)"] = benign.replace(b"\n", b" ")
    shapes.update({name: _repeat(unit, size) for name, unit in HOSTILE.items()})
    makers: dict[str, Callable[[], Masker]] = {
        "Hyperscan alone": lambda: Masker(analyzer=None),
        "production (Presidio)": Masker,
    }
    print(f"{'shape':<30}" + "".join(f"{name:>32}" for name in makers) + "   (CPU s per MB)")
    base: dict[str, float] = {}
    for shape, data in shapes.items():
        row = f"{shape:<30}"
        for name, make in makers.items():
            masker = make()
            list(mask_log(lambda: [b"warm up\n"], make()))
            start = time.process_time()
            engine.diagnose(mask_log(functools.partial(list, [data]), masker))
            per_mb = (time.process_time() - start) / (len(data) / MB)
            base.setdefault(name, per_mb)
            row += f"{per_mb:>20.3f} ({per_mb / base[name]:>4.1f}x)"
            dense = masker.counts.get("DENSE_LINE", 0)
            row += f" {dense:>5}" if dense else "      "
        print(row, flush=True)
    print("target: every shape under 3x the benign log; the last column: lines masked whole")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--no-light", action="store_true", help="skip the light install")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    light = None if args.no_light else light_install()
    with tempfile.TemporaryDirectory(prefix="rootcause-bench-offline-") as tmp:
        directory = Path(tmp)
        print("-- whole process: rootcause diagnose --offline vs a naive grep --", flush=True)
        whole_process(directory, sizes, light)
        print("target: at least 3x faster than the naive grep (CPU time)")
        if light is not None:
            print("\n-- start-up in the light install --", flush=True)
            start_up(directory, light)
    print("\n-- hostile input: mask and diagnose, per MB --", flush=True)
    hostile()


if __name__ == "__main__":
    main()
