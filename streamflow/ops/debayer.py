"""``debayer`` (and DALI's deprecated ``experimental.debayer``): demosaic single-channel Bayer images
to RGB, as DALI 2.4's CPU operator, which runs OpenCV's demosaicing (so does this: bit-identical).

Inputs: uint8 or uint16, ``HW`` or ``HWC`` with one channel, or sequences of
them (``FHW``/``FHWC``), with even height and width. ``blue_position`` (per
sample) is where blue sits in the 2x2 tile that starts at the sensor's
second row and column, OpenCV's convention: ``(0, 0)`` BGGR, ``(0, 1)`` GBRG,
``(1, 0)`` GRBG, ``(1, 1)`` RGGB. ``algorithm``: ``bilinear_ocv`` (the CPU
default), ``edgeaware_ocv``, ``vng_ocv`` (uint8 only), ``gray_ocv`` (one
output channel); ``default_npp`` (DALI's GPU default, NPP's bilinear with
chroma correlation) is accepted and runs OpenCV's bilinear here. Outputs
are ``HWC`` (``FHWC`` for sequences). Needs OpenCV: ``pip install
'streamflow[opencv]'``. CPU only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, input_layout, split_arguments
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function
from .opencv import opencv

__all__ = ["ALGORITHMS", "Debayer", "debayer", "demosaic"]

#: DALI's algorithm names and the suffix of OpenCV's conversion code.
ALGORITHMS = {"bilinear_ocv": "2RGB", "edgeaware_ocv": "2RGB_EA", "vng_ocv": "2RGB_VNG", "gray_ocv": "2GRAY",
              "default_npp": "2RGB"}
_PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}


def demosaic(image: np.ndarray, blue_position: tuple[int, int], algorithm: str) -> np.ndarray:
    """One Bayer image (H x W) to H x W x 3 (x 1 for ``gray_ocv``) with OpenCV."""
    cv2 = opencv("debayer")
    code = getattr(cv2, f"COLOR_Bayer{_PATTERNS[blue_position]}{ALGORITHMS[algorithm]}")
    out = cv2.cvtColor(np.ascontiguousarray(image), code)
    return out[..., None] if out.ndim == 2 else out


class Debayer(Operator):
    """Demosaics Bayer images (and sequences of them) with OpenCV."""

    name: ClassVar[str] = "debayer"
    per_sample_args = frozenset({"blue_position"})

    def __init__(self, algorithm: str, blue_position: tuple[int, int] | None, *, sequence: bool,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.algorithm = algorithm
        self.blue_position = blue_position
        self.sequence = sequence

    def _blue(self, chunk: Chunk, row: int, frames: int) -> list[tuple[int, int]]:
        value = np.asarray(chunk.arg("blue_position", row, self.blue_position))
        per_frame = value.reshape(-1, 2) if value.size % 2 == 0 and value.size else None
        if per_frame is None or (len(per_frame) != 1 and len(per_frame) != frames):
            raise SampleError(f"debayer: blue_position must be 2 values (or 2 per frame), got {value.tolist()}")
        blues = [(int(a), int(b)) for a, b in per_frame]
        bad = [b for b in blues if b not in _PATTERNS]
        if bad:
            raise SampleError(f"debayer: blue_position must be (0|1, 0|1), got {list(bad[0])}")
        return blues * frames if len(blues) == 1 else blues

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, sample: Any) -> Any:
            arr = np.asarray(sample)
            frames = arr if self.sequence else arr[None]
            if frames.ndim == 4:
                if frames.shape[3] != 1:
                    raise SampleError(f"debayer: expects one channel, got {frames.shape[3]}")
                frames = frames[..., 0]
            if frames.ndim != 3:
                raise SampleError(f"debayer: expects HW or HWC (1 channel) images, got shape {arr.shape}")
            if arr.dtype not in (np.uint8, np.uint16):
                raise SampleError(f"debayer: expects uint8 or uint16 images, got {arr.dtype}")
            if self.algorithm == "vng_ocv" and arr.dtype != np.uint8:
                raise SampleError("debayer: vng_ocv supports only uint8 images")
            h, w = frames.shape[1:]
            if h % 2 or w % 2:
                raise SampleError(f"debayer: the height and width must be even, got {h} x {w}")
            blues = self._blue(chunk, row, len(frames))
            out = np.stack([demosaic(f, b, self.algorithm) for f, b in zip(frames, blues)])
            return out if self.sequence else out[0]

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "FHWC" if self.sequence else "HWC"


@fn_function()
def debayer(
    input: DataNode,
    *,
    blue_position: Sequence[int] | DataNode,
    algorithm: str | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Demosaic Bayer images (uint8/uint16, HW or HWC with 1 channel, or FHW/FHWC sequences) to RGB.

    Args:
        input: the Bayer images.
        blue_position: ``(y, x)`` of blue in the 2x2 tile (OpenCV's convention: (0, 0) BGGR,
            (0, 1) GBRG, (1, 0) GRBG, (1, 1) RGGB); per sample (or per frame) as a DataNode.
        algorithm: ``bilinear_ocv`` (default), ``edgeaware_ocv``, ``vng_ocv``, ``gray_ocv``.
    """
    algo = algorithm or "bilinear_ocv"
    if algo not in ALGORITHMS:
        raise PipelineDefinitionError(f"debayer: algorithm must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    constants, per_sample = split_arguments({"blue_position": blue_position})
    fixed = constants.get("blue_position")
    if fixed is not None:
        values = tuple(int(v) for v in np.asarray(fixed).reshape(-1))
        if values not in _PATTERNS:
            raise PipelineDefinitionError(f"debayer: blue_position must be (0|1, 0|1), got {list(values)}")
        fixed = values
    layout = input_layout(input, "debayer")
    if layout and layout not in ("HW", "HWC", "FHW", "FHWC"):
        raise PipelineDefinitionError(f"debayer: expects HW, HWC, FHW or FHWC data, got layout {layout!r}")
    op = Debayer(algo, fixed, sequence=layout.startswith("F"), name=name)
    return add_node(op, [input], per_sample, device=device)[0]
