"""Geometric operators of ``fn``: rotate, warp_affine, random_resized_crop, transpose.

Per-sample arguments (``DataNode``s) are accepted where DALI accepts them:
``rotate(angle=, size=)``, ``warp_affine(matrix=, size=)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PipelineDefinitionError
from ..graph import DataNode, add_node, split_arguments
from ..ops.geometry import Rotate, Transpose, WarpAffine
from ..ops.random_crop import RandomCropParams, RandomResizedCrop
from ..types import DataType, Device, InterpType, parse_device

__all__ = ["random_resized_crop", "rotate", "transpose", "warp_affine"]

Number = float | int


def _place(op: Any, device: str | Device, op_name: str) -> Any:
    dev = parse_device(device)
    if dev is Device.MIXED:
        raise PipelineDefinitionError(f"{op_name} runs on 'cpu' or 'gpu', not 'mixed'")
    op.device = dev
    return op


def _input_layout(data: DataNode) -> str:
    producer = data.producer.op
    return producer.layout(data.index) if hasattr(producer, "layout") else ""


def rotate(
    data: DataNode,
    *,
    angle: Number | DataNode,
    keep_size: bool = False,
    size: Sequence[Number] | DataNode | None = None,
    fill_value: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    dtype: DataType | str | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Rotate HWC images counter-clockwise by ``angle`` degrees.

    Args:
        angle: degrees, counter-clockwise on screen (per sample:
            ``angle=fn.random.uniform(range=[-10, 10])``).
        keep_size: keep the input size (corners are cut off).
        size: ``(height, width)`` of the output canvas (rounded to nearest).
            Default: the smallest canvas that holds the whole rotated image.
        fill_value: value of the area outside the source image. ``None``
            (DALI's default) repeats the border pixels instead.
        interp_type: ``INTERP_LINEAR`` (default) or ``INTERP_NN``.
        dtype: output type (default: the input's).
        device: ``"cpu"`` (``"gpu"``: not yet).
    """
    constants, per_sample = split_arguments(dict(angle=angle, size=size))
    op = Rotate(
        constants.get("angle"), keep_size=keep_size, size=constants.get("size"), fill_value=fill_value,
        interp=interp_type, dtype=dtype, name=name,
    )
    if op.angle is None and "angle" not in per_sample:
        raise PipelineDefinitionError("rotate: give the angle (a number or a DataNode)")
    if keep_size and "size" in per_sample:
        raise PipelineDefinitionError("rotate: give keep_size=True or size, not both")
    return add_node(_place(op, device, "rotate"), [data], per_sample)[0]


def warp_affine(
    data: DataNode,
    *,
    matrix: Sequence[Number] | DataNode,
    inverse_map: bool = True,
    size: Sequence[Number] | DataNode | None = None,
    fill_value: Number | Sequence[Number] | None = None,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    dtype: DataType | str | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Apply an affine transform to HWC images.

    Args:
        matrix: ``(m11, m12, m13, m21, m22, m23)`` (or 2x3): with
            ``inverse_map=True`` (default) a destination-to-source map,
            ``dst(x, y) = src(m11 x + m12 y + m13, m21 x + m22 y + m23)``, where
            ``(0, 0)`` is the top-left corner of the first pixel. Per sample allowed.
        inverse_map: ``False`` if ``matrix`` maps source to destination (it is inverted).
        size: ``(height, width)`` of the output (default: the input's).
        fill_value: value outside the source image; ``None`` repeats the border.
        interp_type: ``INTERP_LINEAR`` (default) or ``INTERP_NN``.
        dtype: output type (default: the input's).
        device: ``"cpu"`` (``"gpu"``: not yet).
    """
    constants, per_sample = split_arguments(dict(matrix=matrix, size=size))
    op = WarpAffine(
        constants.get("matrix"), inverse_map=inverse_map, size=constants.get("size"), fill_value=fill_value,
        interp=interp_type, dtype=dtype, name=name,
    )
    if op.matrix is None and "matrix" not in per_sample:
        raise PipelineDefinitionError("warp_affine: give the matrix (6 numbers or a DataNode)")
    return add_node(_place(op, device, "warp_affine"), [data], per_sample)[0]


def random_resized_crop(
    data: DataNode,
    *,
    size: Sequence[Number] | Number,
    random_area: Sequence[float] = (0.08, 1.0),
    random_aspect_ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    num_attempts: int = 10,
    interp_type: str | InterpType = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    dtype: DataType | str | None = None,
    seed: int | None = None,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Crop a random window (area and aspect ratio drawn at random) and resize it to ``size``.

    Args:
        size: ``(height, width)`` of the output.
        random_area: range of the window's area, as a fraction of the image's.
        random_aspect_ratio: range of the window's width / height (drawn log-uniformly).
        num_attempts: draws before falling back to the largest window of a
            clamped aspect ratio.
        interp_type: resampling filter (as ``fn.resize``); default ``INTERP_LINEAR``.
        antialias: widen the filter when downscaling (default on).
        dtype: ``UINT8`` or ``FLOAT`` (default: the input's).
        seed: a fixed seed for this operator (default: derived from the pipeline seed).
        device: ``"cpu"`` (``"gpu"``: not yet).
    """
    params = RandomCropParams.from_args("random_resized_crop", random_area, random_aspect_ratio, num_attempts)
    op = RandomResizedCrop(size, params, interp=interp_type, antialias=antialias, dtype=dtype, seed=seed, name=name)
    return add_node(_place(op, device, "random_resized_crop"), [data])[0]


def transpose(
    data: DataNode,
    *,
    perm: Sequence[int] | None = None,
    output_layout: str | None = None,
    transpose_layout: bool = True,
    device: str | Device = "cpu",
    name: str | None = None,
) -> DataNode:
    """Reorder dimensions: output dimension ``i`` is input dimension ``perm[i]``.

    Args:
        perm: a permutation, e.g. ``[2, 0, 1]`` for HWC -> CHW. Default: reverse.
        output_layout: the layout name of the result (default: the input's,
            permuted when ``transpose_layout``).
        transpose_layout: permute the input's layout name too (default on).
        device: ``"cpu"`` (``"gpu"``: not yet).
    """
    op = Transpose(perm, input_layout=_input_layout(data), output_layout=output_layout,
                   transpose_layout=transpose_layout, name=name)
    return add_node(_place(op, device, "transpose"), [data])[0]
