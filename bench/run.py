"""`make bench`: masking, matching, end-to-end and whole-process offline figures, each beside its
baseline, and `rootcause run`'s overhead on a chatty job, in one run."""

from __future__ import annotations

import sys

from bench import e2e, live, masking, matching, offline


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
