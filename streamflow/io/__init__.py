"""File input: ``.npy`` arrays and regions of them (CPU ``pread``, GPU kvikio).

``sf.io.read_npy(path, roi=..., device="cpu" | "gpu")`` is the entry point;
see docs/numpy.md.
"""

from __future__ import annotations

from .npy import ReadStats, read_npy, read_npy_header, read_npy_sync, read_stats
from .npy_header import NpyHeader, npy_header_length, parse_npy_header
from .roi import (
    ROI_ARGUMENTS,
    ByteRange,
    ReadPlan,
    Roi,
    RoiError,
    byte_ranges,
    plan_reads,
    resolve_roi,
    roi_from_slices,
)

__all__ = [
    "ROI_ARGUMENTS",
    "ByteRange",
    "NpyHeader",
    "ReadPlan",
    "ReadStats",
    "Roi",
    "RoiError",
    "byte_ranges",
    "npy_header_length",
    "parse_npy_header",
    "plan_reads",
    "read_npy",
    "read_npy_header",
    "read_npy_sync",
    "read_stats",
    "resolve_roi",
    "roi_from_slices",
]
