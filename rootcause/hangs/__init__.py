"""Hangs of distributed jobs, from one job's per-rank files: which rank stalled it, and why.

Plain Python (no torch, no Django). `read_bundle` reads a directory, an archive or a list of
files within limits, masks every file and recognises each by content; `analyse` gives the
`HangSection` of the typed result; `diagnose_bundle` the whole `DiagnosisResult`.
"""

from rootcause.hangs.analysis import analyse
from rootcause.hangs.bundle import (
    DEFAULT_LIMITS,
    Bundle,
    Limits,
    is_archive,
    members,
    read_bundle,
)
from rootcause.hangs.errors import BundleError, BundleTooLarge
from rootcause.hangs.report import RankState, diagnose_bundle, parse_ranks, rank_states, result_for
from rootcause.hangs.safepickle import PickleRefused

__all__ = [
    "DEFAULT_LIMITS",
    "Bundle",
    "BundleError",
    "BundleTooLarge",
    "Limits",
    "PickleRefused",
    "RankState",
    "analyse",
    "diagnose_bundle",
    "is_archive",
    "members",
    "parse_ranks",
    "rank_states",
    "read_bundle",
    "result_for",
]
