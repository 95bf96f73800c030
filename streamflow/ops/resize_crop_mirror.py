"""``resize_crop_mirror``: resize, then crop, then flip, in one operator (DALI 2.4's fused operator).

Images: only the crop window of the resized image is computed (the native
resampler's ``window``), so the result equals ``resize`` followed by
``crop`` and ``flip`` bit for bit, without the full resized image. Volumes
(DHWC): resize (``volume.py``), then crop and flip. ``mirror`` is DALI's
bit mask: 1 horizontal, 2 vertical, 4 depthwise. The crop window must lie
inside the resized volume; a crop that leaves a resized image samples past
its edge as DALI does (the same scale over a longer source range, whose edge
pixels the resampler repeats).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import DataType, Device, InterpType, Number, parse_dtype
from .arguments import RESAMPLING, fn_function
from .crop import CropSpec, crop_window
from .resize import Resize, ResizeSpec

__all__ = ["ResizeCropMirror", "resize_crop_mirror"]

_RESIZE_ARGS = ("resize_x", "resize_y", "resize_z", "resize_shorter", "resize_longer", "size", "roi_start",
                "roi_end")
_CROP_ARGS = ("crop_h", "crop_w", "crop_d", "crop_pos_x", "crop_pos_y", "crop_pos_z")


class ResizeCropMirror(Operator):
    """resize -> crop -> flip of HWC images (one windowed resample) and DHWC volumes."""

    keeps_channels = True
    name = "resize_crop_mirror"
    per_sample_args = frozenset({*_RESIZE_ARGS, *_CROP_ARGS, "mirror"})

    def __init__(self, resize: Resize, crop: CropSpec, mirror: int = 0, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.resize, self.crop, self.mirror = resize, crop, int(mirror)

    def _sub_chunk(self, chunk: Chunk, keys: Sequence[str]) -> Chunk:
        return Chunk(inputs=chunk.inputs, args={k: v for k, v in chunk.args.items() if k in keys},
                     sample_ids=chunk.sample_ids, sources=chunk.sources, epoch=chunk.epoch, key=chunk.key)

    def _window(self, chunk: Chunk, row: int, extents: Sequence[int], inside: bool = True
                ) -> tuple[tuple[int, int], ...]:
        """(start, size) per spatial axis (d, h, w or h, w) of the crop in the resized sample."""
        c = self.crop
        sizes = {"d": chunk.arg("crop_d", row, c.crop_d), "h": chunk.arg("crop_h", row, c.crop_h),
                 "w": chunk.arg("crop_w", row, c.crop_w)}
        pos = {"d": chunk.arg("crop_pos_z", row, c.pos_z), "h": chunk.arg("crop_pos_y", row, c.pos_y),
               "w": chunk.arg("crop_pos_x", row, c.pos_x)}
        out = []
        for axis, n in zip("dhw"[-len(extents):], extents):
            size = sizes[axis]
            start, _, length, _ = crop_window(int(n), 1, None if not size else float(size), 1.0,
                                              float(pos[axis]), 0.0, c.rounding)
            if inside and (start < 0 or start + length > n):
                raise SampleError(f"resize_crop_mirror: the crop ({length} at {start}) leaves the resized "
                                  f"volume's extent {n}")
            out.append((start, length))
        return tuple(out)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        resize_chunk = self._sub_chunk(chunk, _RESIZE_ARGS)

        def one(row: int, image: Any) -> np.ndarray:
            image = np.asarray(image)
            mirror = int(np.asarray(chunk.arg("mirror", row, self.mirror)).reshape(-1)[0])
            if image.ndim == 4:  # DHWC volume
                resized = self.resize.resample_volume(resize_chunk, row, image)
                (d0, d), (y0, h), (x0, w) = self._window(chunk, row, resized.shape[:3])
                out = resized[d0 : d0 + d, y0 : y0 + h, x0 : x0 + w]
                flips: tuple[int, ...] = (4, 2, 1)
            elif image.ndim in (2, 3):
                size, roi = self.resize.plan_sample(resize_chunk, row, image.shape[0], image.shape[1])
                (y0, h), (x0, w) = self._window(chunk, row, size, inside=False)
                size, roi, y0, x0 = _extend(size, roi, y0, x0, h, w)
                out = self.resize.resample(image, size, roi, window=(y0, x0, h, w))
                flips = (2, 1)
            else:
                raise SampleError(f"resize_crop_mirror: expects HWC images or DHWC volumes, got shape {image.shape}")
            index = tuple(slice(None, None, -1) if mirror & bit else slice(None) for bit in flips)
            return np.ascontiguousarray(out[index])

        return [chunk.each_sample(one)]

    def layout(self, index: int) -> str:
        return "HWC"


def _extend(size: tuple[int, int], r: tuple[float, float, float, float], y0: int, x0: int, h: int, w: int
            ) -> tuple[tuple[int, int], Any, int, int]:
    """A crop that leaves the resized image, as DALI: the same scale over a source range that goes past
    the image (whose edge the resampler repeats). Returns (size, roi, y0, x0) with the window inside."""
    if y0 >= 0 and x0 >= 0 and y0 + h <= size[0] and x0 + w <= size[1]:
        return size, r, y0, x0
    new_size, new_roi, starts = [], [0.0] * 4, []
    for axis, (start, length) in enumerate(((y0, h), (x0, w))):
        lo, hi = min(start, 0), max(start + length, size[axis])
        step = (r[axis + 2] - r[axis]) / size[axis]
        new_roi[axis], new_roi[axis + 2] = r[axis] + lo * step, r[axis] + hi * step
        new_size.append(hi - lo)
        starts.append(start - lo)
    return (new_size[0], new_size[1]), tuple(new_roi), starts[0], starts[1]


@fn_function(RESAMPLING)
def resize_crop_mirror(
    data: DataNode,
    *,
    crop: Number | Sequence[Number] | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_d: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    crop_pos_z: Number | DataNode = 0.5,
    rounding: str = "round",
    mirror: int | DataNode = 0,
    resize_x: Number | DataNode | None = None,
    resize_y: Number | DataNode | None = None,
    resize_z: Number | DataNode | None = None,
    resize_shorter: Number | DataNode | None = None,
    resize_longer: Number | DataNode | None = None,
    size: Number | Sequence[Number] | DataNode | None = None,
    mode: str = "default",
    max_size: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    roi_start: Sequence[Number] | DataNode | None = None,
    roi_end: Sequence[Number] | DataNode | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
    min_filter: str | InterpType | None = None,
    mag_filter: str | InterpType | None = None,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Resize, crop and flip HWC images (or DHWC volumes) in one operator, as ``resize`` ->
    ``crop`` -> ``flip``.

    Args:
        crop: the window, ``(h, w)`` or ``(d, h, w)`` (or ``crop_h``, ``crop_w``, ``crop_d``; *per sample*).
        crop_pos_x, crop_pos_y, crop_pos_z: the window's relative position (*per sample*).
        rounding: anchor rounding, ``round`` or ``truncate``.
        mirror: bit mask, 1 horizontal, 2 vertical, 4 depthwise (*per sample*).
        resize_x, resize_y, resize_z, resize_shorter, resize_longer, size, mode, max_size,
        interp_type, antialias, roi_start, roi_end, roi_relative, subpixel_scale, min_filter,
        mag_filter: as ``fn.resize``.
        dtype: the input's type or ``FLOAT``.
    """
    constants, per_sample = split_arguments(dict(
        resize_x=resize_x, resize_y=resize_y, resize_z=resize_z, resize_shorter=resize_shorter,
        resize_longer=resize_longer, size=size, roi_start=roi_start, roi_end=roi_end, crop_h=crop_h,
        crop_w=crop_w, crop_d=crop_d, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y, crop_pos_z=crop_pos_z,
        mirror=mirror,
    ))
    if dtype is not None and parse_dtype(dtype) not in (DataType.FLOAT, DataType.UINT8):
        raise PipelineDefinitionError("resize_crop_mirror: dtype must be the input's type or FLOAT")
    spec = ResizeSpec.from_args(
        **{k: v for k, v in constants.items() if k in _RESIZE_ARGS}, mode=mode, max_size=max_size,
        interp_type=interp_type, antialias=antialias, dtype=dtype, roi_relative=roi_relative,
        subpixel_scale=subpixel_scale, min_filter=min_filter, mag_filter=mag_filter,
    )
    crop_spec = CropSpec.from_args(
        "resize_crop_mirror", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5),
        rounding=rounding, crop_d=constants.get("crop_d"), crop_pos_z=constants.get("crop_pos_z", 0.5),
    )
    op = ResizeCropMirror(Resize(spec), crop_spec, int(constants.get("mirror", 0)), name=name)
    return add_node(op, [data], per_sample, device=device)[0]
