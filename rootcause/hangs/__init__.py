"""Hangs of distributed jobs, from one job's per-rank files: which rank stalled it, and why.

Plain Python (no torch, no Django). `read_bundle` reads a directory, an archive or a list of
files within limits, masks every file and recognises each by content; `analyse` gives the
`HangSection` of the typed result; `diagnose_bundle` the whole `DiagnosisResult`.
"""

from rootcause.hangs.analysis import analyse
from rootcause.hangs.bundle import DEFAULT_LIMITS, Bundle, Limits, members, read_bundle
from rootcause.hangs.errors import BundleError, BundleTooLarge
from rootcause.hangs.report import diagnose_bundle
from rootcause.hangs.safepickle import PickleRefused

__all__ = [
    "DEFAULT_LIMITS",
    "Bundle",
    "BundleError",
    "BundleTooLarge",
    "Limits",
    "PickleRefused",
    "analyse",
    "diagnose_bundle",
    "members",
    "read_bundle",
]
