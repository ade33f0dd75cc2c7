"""`make bench`: masking, matching, end-to-end and whole-process offline figures, each beside its
baseline, `rootcause run`'s overhead on a chatty job, and the hang analyser's figures on the
run-produced bundles with its time and memory on simulated 512- and 2,048-rank jobs, in one run."""

from __future__ import annotations

import subprocess
import sys

from bench import e2e, hangs, live, masking, matching, offline


def main() -> int:
    print("== Masking (ours vs Presidio's default AnalyzerEngine) ==", flush=True)
    masking.main([])
    print("\n== Matching (catalogue vs 10x synthetic fingerprints) ==", flush=True)
    matching.main()
    print("\n== End to end ==", flush=True)
    print(e2e.report(e2e.run()), flush=True)
    print("\n== Offline diagnosis, whole process; start-up; hostile input ==", flush=True)
    offline.main([])
    print("\n== rootcause run on a job printing 50,000 lines a second ==", flush=True)
    live.main([])
    print("\n== Hangs: bench/hangruns bundles (fr_trace's column: make eval) ==", flush=True)
    for part in ("dev", "sealed"):
        print("\n".join(hangs.report_lines(part, hangs.evaluate(part, with_fr_trace=False))))
    # its own process: the peak RSS is the analyser's, not that of the benches before it
    print("\n== Hangs: simulated 512 and 2,048 ranks ==", flush=True)
    scale = [sys.executable, "-m", "bench.hangs", "--scale", "512", "2048"]
    subprocess.run(scale, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
