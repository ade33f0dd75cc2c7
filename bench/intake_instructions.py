"""Instructions a submission costs the web process, counted by valgrind's callgrind: the load
test's request through the WSGI application gunicorn serves (bench.in_process.wsgi_submitter),
in rounds, after warm submissions.

Instruction counts are the process's own work, whatever else the machine runs: the figure to
compare before and after a change to the intake on a shared machine, where CPU time moves by
±20 % between rounds of the same code. Valgrind's CPU has no SHA extensions, so the body's
SHA-256 is counted in full (about 1.4 M a submission, ~0.1 M on a CPU with them).

    python -m tests.with_services -- python -m bench.intake_instructions [--rounds 3] [--n 30]

It runs itself under `valgrind --tool=callgrind --instr-atstart=no`, switches the
instrumentation on from outside (`callgrind_control`) for each round, and prints each round's
instructions a submission and their median. It makes a database of its own (dropped at the end)
and its own Redis key prefix (deleted).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WARM = 60  # submissions before the first round: imports, first connections, caches


def _inside(rounds: int, count: int) -> None:
    """Under valgrind: the rounds, each dumped on its own."""
    from bench.in_process import configure, own_database, wsgi_submitter

    prefix = configure("intake-instructions")
    with own_database("intake_instructions", prefix):
        from django.conf import settings

        # The organisations' owners are made with a password; the submissions never hash one.
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
        submit = wsgi_submitter()
        submit(WARM)
        pid = str(os.getpid())
        for number in range(rounds):
            _control("--zero", pid)
            _control("--instr=on", pid)
            submit(count)
            _control("--instr=off", pid)
            _control(f"--dump=round{number}", pid)


def _control(option: str, pid: str) -> None:
    subprocess.run(["callgrind_control", option, pid], check=True, capture_output=True)


def instructions(dump: Path) -> int:
    """The instructions (Ir) a callgrind dump counts: every cost line but those of calls, which
    repeat their callee's inclusive cost."""
    total = 0
    after_calls = False
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith("calls="):
            after_calls = True
        elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
            if not after_calls:
                fields = line.split()
                total += int(fields[1]) if len(fields) > 1 else 0
            after_calls = False
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=30, help="submissions a round")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        _inside(args.rounds, args.n)
        return 0
    with tempfile.TemporaryDirectory(prefix="rootcause-instructions-") as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={tmp}/cg.%p",
            sys.executable,
            "-m",
            "bench.intake_instructions",
            "--inside",
            f"--rounds={args.rounds}",
            f"--n={args.n}",
        ]
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
        dumps = sorted(Path(tmp).glob("cg.*.*"), key=lambda p: int(p.suffix[1:]))
        per_submission = [instructions(dump) / args.n / 1e6 for dump in dumps]
    print(
        f"instructions a submission: median {statistics.median(per_submission):.2f} M "
        f"(rounds: {', '.join(f'{m:.2f}' for m in per_submission)}; {args.n} each)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
