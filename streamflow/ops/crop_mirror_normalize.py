"""``crop_mirror_normalize``: crop, mirror, ``scale * (x - mean) / std + shift``, layout.

With no arguments it returns the image as CHW float32, unchanged. One native
pass does all of it (the window, the mirror, the arithmetic, HWC->CHW).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import imgproc as kernels
from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, input_layout, require_node, split_arguments
from ..operator import Chunk, Operator, float_seq
from ..types import (
    DataType,
    Device,
    Number,
    OutOfBoundsPolicy,
    parse_dtype,
)
from .arguments import fn_function
from .crop import Crop, CropSpec, Window
from .sequence import add_frames_node

__all__ = ["CropMirrorNormalize", "crop_mirror_normalize"]


class CropMirrorNormalize(Operator):
    """See the module docstring; layouts ``CHW`` (default) or ``HWC``."""

    name = "crop_mirror_normalize"
    devices = frozenset({Device.CPU, Device.GPU})
    per_sample_args = frozenset({"mirror", "crop_pos_x", "crop_pos_y", "crop_h", "crop_w", "mean", "std"})

    def __init__(
        self,
        crop: CropSpec,
        *,
        mean: float | Sequence[float] = 0.0,
        std: float | Sequence[float] = 1.0,
        scale: float = 1.0,
        shift: float = 0.0,
        dtype: Any = DataType.FLOAT,
        output_layout: str = "CHW",
        pad_output: bool = False,
        mirror: int = 0,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self.crop = crop
        self.mean = float_seq(mean, "crop_mirror_normalize: mean")
        self.std = float_seq(std, "crop_mirror_normalize: std")
        if any(s == 0 for s in self.std):
            raise PipelineDefinitionError("crop_mirror_normalize: std must not contain 0")
        self.scale, self.shift = float(scale), float(shift)
        self.out_dtype = parse_dtype(dtype).numpy
        if self.out_dtype not in (np.float32, np.float16, np.uint8):
            raise PipelineDefinitionError(
                f"crop_mirror_normalize: dtype must be FLOAT, FLOAT16 or UINT8, got {self.out_dtype}"
            )
        self.output_layout = output_layout.upper()
        if self.output_layout in ("NCHW", "NHWC"):  # DALI's legacy names (types.NCHW)
            self.output_layout = self.output_layout[1:]
        if self.output_layout not in ("CHW", "HWC"):
            raise PipelineDefinitionError(
                f"crop_mirror_normalize: output_layout must be 'CHW' or 'HWC', got {output_layout!r}"
            )
        self.pad_output = bool(pad_output)
        self.mirror = int(mirror)
        # Window arithmetic is the crop operator's.
        self._cropper = Crop(crop) if crop.active else None

    def window_for(self, chunk: Chunk, row: int, height: int, width: int) -> Window | None:
        """The sample's crop window, after the out-of-bounds policy (None: whole image)."""
        if self._cropper is None and "crop_h" not in chunk.args and "crop_w" not in chunk.args:
            return None
        if self._cropper is None:
            self._cropper = Crop(CropSpec(crop_h=chunk.arg("crop_h", row, None), crop_w=chunk.arg("crop_w", row, None)))
        return self._cropper.window_for(chunk, row, height, width)

    def output_channels(self, input_channels: Sequence[int | None]) -> int | None:
        channels = input_channels[0] if input_channels else None
        if channels is None or not self.pad_output:
            return channels
        return 1 << (channels - 1).bit_length()

    def output_shape(self, image: np.ndarray, window: Window | None) -> tuple[int, int, int]:
        """The shape ``normalize`` gives for ``image`` and ``window``."""
        h, w = (window[2], window[3]) if window is not None else image.shape[:2]
        channels = image.shape[2] if image.ndim == 3 else 1
        if self.pad_output:
            channels = 1 << (channels - 1).bit_length()
        return (channels, h, w) if self.output_layout == "CHW" else (h, w, channels)

    def channel_values(self, chunk: Chunk, row: int, channels: int) -> tuple[int, list[float], list[float], list[float]]:
        """(output channels, mean, mul, fill) of ``row`` for an image of ``channels`` channels.

        Raises:
            SampleError: ``mean``/``std``/``fill_values`` do not fit this image's
                channels (when the channels are known where the pipeline is
                defined, the function checks the constants there).
        """
        try:
            return kernels.cmn_channels(
                channels,
                np.asarray(chunk.arg("mean", row, self.mean), dtype=np.float64),
                np.asarray(chunk.arg("std", row, self.std), dtype=np.float64),
                self.scale, self.pad_output, self.crop.fill_values,
            )
        except ValueError as err:
            per_sample = [k for k in ("mean", "std") if k in chunk.args]
            which = f"per-sample {'/'.join(per_sample)}: " if per_sample else ""
            raise SampleError(f"crop_mirror_normalize: {which}{err} (this image has {channels} channels)") from None

    def normalize(self, chunk: Chunk, row: int, image: np.ndarray, window: Window | None) -> np.ndarray:
        self.channel_values(chunk, row, image.shape[2] if image.ndim == 3 else 1)
        return kernels.crop_mirror_normalize(
            image,
            window=window,
            mirror=bool(int(chunk.arg("mirror", row, self.mirror))),
            mean=np.asarray(chunk.arg("mean", row, self.mean), dtype=np.float64),
            std=np.asarray(chunk.arg("std", row, self.std), dtype=np.float64),
            scale=self.scale,
            shift=self.shift,
            out_dtype=self.out_dtype,
            layout=self.output_layout,
            pad_output=self.pad_output,
            fill_values=self.crop.fill_values,
            out=chunk.output_buffer(row, self.output_shape(image, window), self.out_dtype),
        )

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def normalize(row: int, image: np.ndarray) -> np.ndarray:
            window = self.window_for(chunk, row, image.shape[0], image.shape[1])
            return self.normalize(chunk, row, image, window)

        return [chunk.each_sample(normalize)]

    def layout(self, index: int) -> str:
        return self.output_layout

@fn_function()
def crop_mirror_normalize(
    data: DataNode,
    *,
    crop: Sequence[Number] | Number | None = None,
    crop_h: Number | DataNode | None = None,
    crop_w: Number | DataNode | None = None,
    crop_pos_x: Number | DataNode = 0.5,
    crop_pos_y: Number | DataNode = 0.5,
    mean: Number | Sequence[Number] | DataNode = 0.0,
    std: Number | Sequence[Number] | DataNode = 1.0,
    scale: float = 1.0,
    shift: float = 0.0,
    mirror: int | DataNode = 0,
    dtype: DataType | str = DataType.FLOAT,
    output_layout: str = "CHW",
    pad_output: bool = False,
    out_of_bounds_policy: str | OutOfBoundsPolicy = "error",
    fill_values: Number | Sequence[Number] = 0,
    rounding: str = "round",
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Crop, mirror and normalize HWC images: ``scale * (x - mean) / std + shift``.

    Args:
        crop: ``(height, width)`` of the crop window (none: the whole image).
        mean: per-channel mean (or one value).
        std: per-channel standard deviation (or one value).
        scale: multiplier applied after normalizing.
        shift: value added last.
        mirror: 1 to flip the sample horizontally (per sample:
            ``mirror=fn.random.coin_flip()``).
        dtype: ``FLOAT`` (default), ``FLOAT16`` or ``UINT8``.
        output_layout: ``CHW`` (default) or ``HWC``.
        pad_output: pad channels to a power of two with zeros (3 -> 4).
        out_of_bounds_policy: ``error``, ``pad`` or ``trim_to_shape``.
        fill_values: value(s) of padded pixels.
    """
    constants, per_sample = split_arguments(dict(
        crop_h=crop_h, crop_w=crop_w, crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y, mean=mean, std=std, mirror=mirror,
        scale=scale, shift=shift,
    ))
    if input_layout(data, "crop_mirror_normalize").startswith("F") and output_layout.startswith("F"):
        output_layout = output_layout[1:]  # "FCHW" for sequences: each frame is CHW
    spec = CropSpec.from_args(
        "crop_mirror_normalize", crop=crop, crop_h=constants.get("crop_h"), crop_w=constants.get("crop_w"),
        crop_pos_x=constants.get("crop_pos_x", 0.5), crop_pos_y=constants.get("crop_pos_y", 0.5),
        rounding=rounding, out_of_bounds_policy=out_of_bounds_policy, fill_values=fill_values,
    )
    op = CropMirrorNormalize(
        spec, mean=constants.get("mean", 0.0), std=constants.get("std", 1.0),
        scale=constants.get("scale", 1.0), shift=constants.get("shift", 0.0),
        dtype=dtype, output_layout=output_layout, pad_output=pad_output, mirror=constants.get("mirror", 0), name=name,
    )
    channels = require_node(data, "crop_mirror_normalize").channels
    if channels is not None:  # known here (decoded images): check the per-channel constants now
        try:
            kernels.cmn_channels(channels, op.mean, op.std, op.scale, op.pad_output, op.crop.fill_values)
        except ValueError as err:
            raise PipelineDefinitionError(
                f"crop_mirror_normalize: {err} (the input {data.name} has {channels} channels)"
            ) from None
    return add_frames_node(op, data, per_sample, device=device)
