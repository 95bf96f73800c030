"""``resize`` + ``crop_mirror_normalize`` as one operator (made by the planner's fusion pass,
``runtime/fusion.py``; not an ``fn`` function).

The pair runs as one pass:

* the resize computes only the pixels of the crop window (a 224x224 window of
  a 256x256 resize costs ~77% of the full resize, and the uncropped image is
  never stored);
* for float32 output, the normalization (and mirror, layout) happens in the
  resampler's last pass (``kernels.resample_normalize``): the resized image
  is never stored either, and the result goes straight into the batch array
  when this is a pipeline output (``Chunk.output_buffer``).

The result is bit-identical to the unfused pair: the resampler computes every
output pixel independently of the window, and the fused store rounds to the
uint8 grid before normalizing exactly as the pair does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import imgproc as kernels
from ..operator import Chunk, Operator
from ..types import Device
from .crop import Window
from .crop_mirror_normalize import CropMirrorNormalize
from .resize import Resize

__all__ = ["RESIZE_PREFIX", "ResizeCropMirrorNormalize"]

RESIZE_PREFIX = "resize."


class ResizeCropMirrorNormalize(Operator):
    """resize + crop_mirror_normalize in one pass per sample."""

    name = "resize+crop_mirror_normalize"
    devices = frozenset({Device.CPU, Device.GPU})

    def __init__(self, resize: Resize, cmn: CropMirrorNormalize) -> None:
        super().__init__(device=cmn.device, name=None)
        self.resize = resize
        self.cmn = cmn
        self.per_sample_args = frozenset(  # type: ignore[misc]
            {RESIZE_PREFIX + a for a in resize.per_sample_args} | cmn.per_sample_args
        )

    def split_chunk(self, chunk: Chunk) -> tuple[Chunk, Chunk]:
        """The chunk as the resize sees it and as the crop_mirror_normalize sees it."""
        resize_args = {k[len(RESIZE_PREFIX):]: v for k, v in chunk.args.items() if k.startswith(RESIZE_PREFIX)}
        cmn_args = {k: v for k, v in chunk.args.items() if not k.startswith(RESIZE_PREFIX)}
        common = dict(inputs=chunk.inputs, sample_ids=chunk.sample_ids, sources=chunk.sources, epoch=chunk.epoch, key=chunk.key)
        return Chunk(args=resize_args, **common), Chunk(args=cmn_args, **common)  # type: ignore[arg-type]

    def run(self, chunk: Chunk) -> list[list[Any]]:
        resize_chunk, cmn_chunk = self.split_chunk(chunk)

        def resize_and_normalize(row: int, image: Any) -> Any:
            self.cmn.channel_values(cmn_chunk, row, image.shape[2] if image.ndim == 3 else 1)
            size, roi = self.resize.plan_sample(resize_chunk, row, image.shape[0], image.shape[1])
            window = self.cmn.window_for(cmn_chunk, row, size[0], size[1])
            if self._one_pass(image) and (window is None or _inside(window, size)):
                return self._one_pass_sample(chunk, cmn_chunk, row, image, size, roi, window)
            if window is not None and _inside(window, size):
                resized = self.resize.resample(image, size, roi, window=window)
                window = None
            else:
                resized = self.resize.resample(image, size, roi)
            return self.cmn.normalize(cmn_chunk, row, resized, window)

        return [chunk.each_sample(resize_and_normalize)]

    def _one_pass(self, image: Any) -> bool:
        """Whether ``kernels.resample_normalize`` computes this pair (float32 output, no padding)."""
        return (
            self.cmn.out_dtype == np.float32
            and not self.cmn.pad_output
            and image.ndim == 3
            and image.dtype in (np.uint8, np.float32)
            and (self.resize.spec.dtype or image.dtype) in (np.uint8, np.float32)
        )

    def _one_pass_sample(
        self, chunk: Chunk, cmn_chunk: Chunk, row: int, image: Any, size: tuple[int, int], roi: Any, window: Window | None
    ) -> Any:
        y0, x0, h, w = window if window is not None else (0, 0, size[0], size[1])
        channels = image.shape[2]
        layout = self.cmn.output_layout
        shape = (channels, h, w) if layout == "CHW" else (h, w, channels)
        spec = self.resize.spec
        return kernels.resample_normalize(
            image, size, window=(y0, x0, h, w), interp=spec.interp, mag_interp=spec.mag_interp,
            antialias=spec.antialias, roi=roi,
            resize_dtype=spec.dtype or image.dtype,
            mirror=bool(int(cmn_chunk.arg("mirror", row, self.cmn.mirror))),
            mean=np.asarray(cmn_chunk.arg("mean", row, self.cmn.mean), dtype=np.float64),
            std=np.asarray(cmn_chunk.arg("std", row, self.cmn.std), dtype=np.float64),
            scale=self.cmn.scale, shift=self.cmn.shift, layout=layout,
            out=chunk.output_buffer(row, shape, np.float32),
        )  # fmt: skip

    def layout(self, index: int) -> str:
        return self.cmn.layout(index)


def _inside(window: Window, size: tuple[int, int]) -> bool:
    y0, x0, h, w = window
    return y0 >= 0 and x0 >= 0 and y0 + h <= size[0] and x0 + w <= size[1]
