"""Stage 1 of the pipeline: mask secrets and personal data in a training log.

Plain Python (no Django): Hyperscan finds every candidate in one pass, bounded Python checks
confirm them, and replacements keep what a diagnosis needs (library frames, shapes, ranks).
"""

from rootcause.masking.chunks import iter_line_chunks
from rootcause.masking.masker import Masker, mask_log

__all__ = ["Masker", "iter_line_chunks", "mask_log"]
