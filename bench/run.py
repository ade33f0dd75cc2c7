"""`make bench`: masking, matching, end-to-end and whole-process offline figures, each beside its
baseline, in one run."""

from __future__ import annotations

import sys

from bench import e2e, masking, matching, offline


def main() -> int:
    print("== Masking (ours vs Presidio's default AnalyzerEngine) ==", flush=True)
    masking.main([])
    print("\n== Matching (catalogue vs 10x synthetic fingerprints) ==", flush=True)
    matching.main()
    print("\n== End to end ==", flush=True)
    print(e2e.report(e2e.run()), flush=True)
    print("\n== Offline diagnosis, whole process; start-up; hostile input ==", flush=True)
    offline.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
