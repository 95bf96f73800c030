"""Spatial (H, W) planes of images and sequences, for the 2-D filters (gaussian_blur, laplacian, filter, median_blur).

DALI's filters work on the two spatial axes; channels (``C``, first or last)
and frames (``F``, first) are not filtered across. ``planes`` splits a sample
into HWC or HW views the C kernels take, ``map_planes`` reassembles their
results in the sample's layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import SampleError

__all__ = ["LAYOUTS", "map_planes", "sample_layout"]

#: Layouts the 2-D filters accept (and the one assumed for each rank when the layout is unknown).
LAYOUTS = ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW")
_DEFAULT = {2: "HW", 3: "HWC", 4: "FHWC"}


def sample_layout(layout: str, ndim: int, op_name: str) -> str:
    """The sample's layout: ``layout`` when known, else the usual one for ``ndim`` dimensions."""
    if layout:
        if layout not in LAYOUTS:
            raise SampleError(f"{op_name}: layout {layout!r} is not supported; expected one of {', '.join(LAYOUTS)} "
                              "(two spatial axes; volumes are not supported)")
        if len(layout) != ndim:
            raise SampleError(f"{op_name}: a sample with {ndim} dimensions does not match the layout {layout!r}")
        return layout
    if ndim not in _DEFAULT:
        raise SampleError(f"{op_name}: expected an image (HW, HWC) or a sequence (FHWC), got {ndim} dimensions")
    return _DEFAULT[ndim]


def _views(image: np.ndarray, layout: str) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """(index into the sample, an HW or HWC view) for every plane."""
    if layout in ("HW", "HWC"):
        return [((), image)]
    if layout == "CHW":
        return [((c,), image[c]) for c in range(image.shape[0])]
    if layout in ("FHW", "FHWC"):
        return [((f,), image[f]) for f in range(image.shape[0])]
    return [((f, c), image[f, c]) for f in range(image.shape[0]) for c in range(image.shape[1])]  # FCHW


def map_planes(image: np.ndarray, layout: str, apply: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``apply`` (HW or HWC array -> array of the same rank) on every spatial plane, reassembled.

    The planes' results must agree in shape and type (they do for one
    sample); the output keeps the sample's layout.
    """
    views = _views(image, layout)
    results: list[tuple[tuple[int, ...], Any]] = [(index, apply(view)) for index, view in views]
    first = results[0][1]
    if len(results) == 1 and not results[0][0]:
        return first
    lead = image.shape[: len(results[0][0])]
    out = np.empty((*lead, *first.shape), dtype=first.dtype)
    for index, value in results:
        out[index] = value
    return out
