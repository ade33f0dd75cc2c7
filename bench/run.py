"""`make bench`: masking, matching and end-to-end figures, each beside its baseline, in one run."""

from __future__ import annotations

import sys

from bench import e2e, masking, matching


def main() -> int:
    print("== Masking (ours vs Presidio's default AnalyzerEngine) ==", flush=True)
    masking.main([])
    print("\n== Matching (catalogue vs 10x synthetic fingerprints) ==", flush=True)
    matching.main()
    print("\n== End to end ==", flush=True)
    print(e2e.report(e2e.run()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
