"""Fast CPU image kernels: separable resampling and crop-mirror-normalize.

Thin, validating wrappers over the C extension ``streamflow._native._imgproc``.
The C code releases the GIL for all pixel work, so calls from several threads
of the engine's pool run in parallel.

Resampling follows DALI's CPU resampler (``dali/kernels/imgproc/resample``):

* The source centre of output pixel ``d`` is ``roi0 + (d + 0.5) * scale - 0.5``
  with ``scale = (roi1 - roi0) / out_size``; source indices outside the image
  are clamped to the edge. Weights are normalised to sum 1.
* Filter shapes are DALI's tables (triangle ``[0, 1, 0]``; Gaussian
  ``exp(-x^2)`` on ``[-4, 4]``, 65 samples; Catmull-Rom cubic on ``[-2, 2]``,
  129 samples; Lanczos-3 on ``[-3, 3]``, 193 samples), linearly interpolated.
* ``INTERP_LINEAR``: when an axis is downscaled and ``antialias`` is on, a
  triangle of half-width ``in/out`` (DALI's ``Triangular`` min filter);
  otherwise plain bilinear (half-width 1). ``INTERP_CUBIC`` and
  ``INTERP_LANCZOS3`` are widened by ``in/out`` when antialiasing a downscale,
  ``INTERP_GAUSSIAN`` is ``exp(-(4 d / r)^2)`` with ``r = in/out`` (antialiased
  downscale) or 1. ``INTERP_NN`` takes source index
  ``floor(roi0 + (d + 0.5) * scale)``, clamped. ``INTERP_TRIANGULAR`` is
  ``INTERP_LINEAR`` with antialiasing.
* The filter is chosen per axis: ``interp`` (DALI's ``min_filter``) where the
  output is shorter than the roi, ``mag_interp`` (``mag_filter``, never
  antialiased; default ``interp``) elsewhere.
* Each output sums its taps in tap order, one at a time (as DALI's CPU
  resampler does), so values next to a .5 round as DALI's do.
* Between the two passes the intermediate is float32, never rounded. The pass
  order depends only on the full geometry (input size, roi, full output size,
  filter), never on the computed window, so ``resample(..., window=w)`` is
  bit-identical to slicing the full result.
* uint8 output: clipped to [0, 255] and rounded half to even (measured: DALI
  2.4's CPU resize rounds x.5 to even, except in the last few (< 16) values
  of an output row, which its scalar remainder loop rounds up; its
  crop_mirror_normalize rounds half away from zero, and so does ours).
* NN: columns use the closed form; rows step the coordinate by adding
  ``scale`` in float32 row after row, as DALI's NN loop does (it lands just
  below an exact integer now and then, e.g. row 86 of 300 -> 173).

The operator-level comparison with DALI 2.4 (``fn.resize`` with DALI's
source windows, ``ops/resize_geometry.py``) is recorded and tested:
``tests/dali_reference/resize_cases.py``. Earlier kernel measurements, against
DALI 2.4.0 CPU ``fn.resize`` (``nvidia-dali-cuda130``, ``device_id=None``) on 6 photos of
``tests/data/photos`` (300x451 to 512x512), outputs 256x256, 173x301 (down)
and 700x650 (up), every interpolation, ``antialias`` on and off, uint8 and
float32, plus a flipped fractional roi:

* NN: identical (max diff 0).
* LINEAR, CUBIC, LANCZOS3, GAUSSIAN, float32 output: max |diff| 1.5e-4, mean
  <= 1e-5 (float32 rounding; LINEAR without antialias downscaled: identical).
* same, uint8 output: max 1, on 1e-6 to 9e-5 of the values (x.5 ties that
  float32 rounding puts on the other side).
* LINEAR with antialias vs Pillow ``resize(BILINEAR)``: mean |diff| 0.07-0.18,
  max 1 away from the border; on the outermost pixels up to ~13, because
  Pillow drops taps outside the image and renormalises where DALI clamps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import InterpType, parse_interp
from .binding import load_extension, require_extension

_imgproc, _IMPORT_ERROR = load_extension("_imgproc")

__all__ = [
    "AxisTaps",
    "ResamplePlan",
    "cmn_channels",
    "crop_mirror_normalize",
    "filter_table",
    "native_available",
    "normalize_multipliers",
    "resample",
    "resample_normalize",
    "resample_plan",
    "resampled_size_window",
]

_INTERP_CODES = {
    InterpType.INTERP_NN: 0,
    InterpType.INTERP_LINEAR: 1,
    InterpType.INTERP_CUBIC: 2,
    InterpType.INTERP_LANCZOS3: 3,
    InterpType.INTERP_GAUSSIAN: 4,
    InterpType.INTERP_TRIANGULAR: 5,
}

_ORDER_CODES = {None: 0, "auto": 0, "vh": 1, "hv": 2}

_RESAMPLE_DTYPES = (np.dtype(np.uint8), np.dtype(np.float32))
_CMN_OUT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.uint8))


def native_available() -> bool:
    """Whether the C extension is built and importable."""
    return _imgproc is not None


def filter_table(key: int) -> list[float]:
    """The resampling filter table ``key`` of the C code (1 linear, 2 cubic, 3 Lanczos-3, 4 Gaussian).

    The GPU kernels upload these same values, so both sides interpolate in
    identical tables.
    """
    return list(_native().filter_table(key))


def _native() -> Any:
    return require_extension(_imgproc, "_imgproc", _IMPORT_ERROR)


def _as_hwc(src: np.ndarray, what: str, dtypes: Sequence[np.dtype]) -> tuple[np.ndarray, bool]:
    """Validate an image, return it as a 3-D HWC array with contiguous pixels.

    Returns:
        The (possibly reshaped / copied) array and whether the input was 2-D.
    """
    if not isinstance(src, np.ndarray):
        raise ValueError(f"{what} must be a numpy array, got {type(src).__name__}")
    if src.ndim not in (2, 3):
        raise ValueError(f"{what} must be HWC (3-D) or HW (2-D), got an array of shape {src.shape}")
    if src.dtype not in dtypes:
        names = ", ".join(d.name for d in dtypes)
        raise ValueError(f"{what} must have dtype {names}; got {src.dtype}")
    was_2d = src.ndim == 2
    if was_2d:
        src = src[:, :, None]
    if src.shape[0] == 0 or src.shape[1] == 0 or src.shape[2] == 0:
        raise ValueError(f"{what} must not be empty, got shape {src.shape[: 2 if was_2d else 3]}")
    item = src.dtype.itemsize
    if src.strides[2] != item or src.strides[1] != item * src.shape[2] or src.strides[0] < 0:
        src = np.ascontiguousarray(src)
    if not src.dtype.isnative:
        src = src.astype(src.dtype.newbyteorder("="))
    return src, was_2d


def _check_window(
    window: tuple[int, int, int, int] | None, full_h: int, full_w: int, *, what: str, inside: bool
) -> tuple[int, int, int, int]:
    if window is None:
        return 0, 0, full_h, full_w
    if len(window) != 4:
        raise ValueError(f"{what} must be (y0, x0, h, w), got {window!r}")
    y0, x0, h, w = (int(v) for v in window)
    if (y0, x0, h, w) != tuple(window):
        raise ValueError(f"{what} must hold integers, got {window!r}")
    if h <= 0 or w <= 0:
        raise ValueError(f"{what} must have a positive size, got h={h}, w={w}")
    if inside and (y0 < 0 or x0 < 0 or y0 + h > full_h or x0 + w > full_w):
        raise ValueError(
            f"{what} {(y0, x0, h, w)} (y0, x0, h, w) is outside the output of size "
            f"{full_h}x{full_w}"
        )
    return y0, x0, h, w


@dataclass(frozen=True)
class _ResampleGeometry:
    """Validated arguments shared by ``resample`` and ``resample_normalize``."""

    src: np.ndarray  # 3-D HWC with contiguous pixels
    was_2d: bool
    out_size: tuple[int, int]
    window: tuple[int, int, int, int]  # (y0, x0, h, w)
    roi: tuple[float, float, float, float]
    interp: InterpType
    mag_interp: InterpType
    order: str | None

    def native_args(self, antialias: bool) -> tuple[Any, ...]:
        """The C entry points' arguments after ``src`` and ``out``."""
        return (
            *self.out_size, self.window[0], self.window[1], *self.roi,
            _INTERP_CODES[self.interp], _INTERP_CODES[self.mag_interp], bool(antialias),
            _ORDER_CODES[self.order],
        )  # fmt: skip


def _parse_interp(interp: InterpType | str) -> InterpType:
    interp = parse_interp(interp) if isinstance(interp, str) else interp
    if interp not in _INTERP_CODES:
        raise ValueError(f"unsupported interpolation {interp!r}")
    return interp


def _resample_geometry(
    src: np.ndarray,
    out_size: tuple[int, int],
    window: tuple[int, int, int, int] | None,
    roi: tuple[float, float, float, float] | None,
    interp: InterpType | str,
    order: str | None,
    mag_interp: InterpType | str | None = None,
) -> _ResampleGeometry:
    src3, was_2d = _as_hwc(src, "src", _RESAMPLE_DTYPES)
    H, W, _ = src3.shape
    try:
        out_h, out_w = (int(v) for v in out_size)
    except (TypeError, ValueError):
        raise ValueError(f"out_size must be (out_h, out_w), got {out_size!r}") from None
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"out_size must be positive, got {(out_h, out_w)}")
    win = _check_window(window, out_h, out_w, what="window", inside=True)
    if roi is None:
        box = (0.0, 0.0, float(H), float(W))
    else:
        if len(roi) != 4:
            raise ValueError(f"roi must be (y0, x0, y1, x1), got {roi!r}")
        ry0, rx0, ry1, rx1 = (float(v) for v in roi)
        if not all(np.isfinite([ry0, rx0, ry1, rx1])):
            raise ValueError(f"roi must be finite, got {roi!r}")
        if ry0 == ry1 or rx0 == rx1:
            raise ValueError(f"roi must have a non-zero extent on both axes, got {roi!r}")
        box = (ry0, rx0, ry1, rx1)
    interp = _parse_interp(interp)
    mag = interp if mag_interp is None else _parse_interp(mag_interp)
    if order not in _ORDER_CODES:
        raise ValueError(f"order must be 'vh', 'hv' or None, got {order!r}")
    return _ResampleGeometry(src3, was_2d, (out_h, out_w), win, box, interp, mag, order)


def resample(
    src: np.ndarray,
    out_size: tuple[int, int],
    *,
    window: tuple[int, int, int, int] | None = None,
    interp: InterpType | str = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    roi: tuple[float, float, float, float] | None = None,
    out_dtype: np.dtype | type = np.uint8,
    out: np.ndarray | None = None,
    order: str | None = None,
    mag_interp: InterpType | str | None = None,
) -> np.ndarray:
    """Resize an image with a separable filter, computing only a window of the output.

    Args:
        src: HWC image (``H, W, C``; any ``C >= 1``) or HW (one channel),
            ``uint8`` or ``float32``. Rows may be strided (a crop of a larger
            array); other layouts are copied first.
        out_size: ``(out_h, out_w)``, the size of the full resized image.
        window: ``(y0, x0, h, w)``, the part of the full output to compute
            (this is how a crop is fused into the resize); default the whole
            output. Must lie inside the output.
        interp: ``InterpType`` or its name (``"linear"``, ``"INTERP_CUBIC"``...):
            the filter of every axis, or with ``mag_interp`` of the downscaled
            ones (DALI's ``min_filter``).
        antialias: widen the filter by the scale on downscaled axes (DALI's
            default). Ignored for ``INTERP_NN``.
        roi: ``(y0, x0, y1, x1)`` region of the source in float pixel
            coordinates that is mapped onto the output (DALI's ``roi_start``
            / ``roi_end``); default the whole image. ``y1 < y0`` (or
            ``x1 < x0``) flips that axis. May extend past the image (edges are
            clamped).
        out_dtype: ``np.uint8`` (clipped, rounded half to even like DALI's
            resize) or ``np.float32`` (unrounded).
        out: optional preallocated output of shape ``(h, w, C)`` (``(h, w)``
            for a 2-D source) and ``out_dtype``; rows may be strided.
        order: ``"vh"`` (vertical pass first), ``"hv"``, or ``None`` (choose
            the cheaper from the full geometry). The result differs between
            orders only by float rounding of the intermediate.
        mag_interp: the filter of the axes that are not downscaled (the
            output at least as long as the roi; DALI's ``mag_filter``, never
            antialiased); default ``interp``.

    Returns:
        The window of the resized image, HWC (or HW for a 2-D source), of
        ``out_dtype``.

    Raises:
        ValueError: wrong dimensionality, dtype, empty image, non-positive
            output size, window outside the output, malformed roi or ``out``.
    """
    lib = _native()
    g = _resample_geometry(src, out_size, window, roi, interp, order, mag_interp)
    src3, was_2d, C = g.src, g.was_2d, g.src.shape[2]
    wh, ww = g.window[2], g.window[3]
    odt = np.dtype(out_dtype)
    if odt not in _RESAMPLE_DTYPES:
        raise ValueError(f"out_dtype must be uint8 or float32, got {odt}")
    if out is None:
        out3 = np.empty((wh, ww, C), dtype=odt)
        result = out3
    else:
        if not isinstance(out, np.ndarray) or out.dtype != odt:
            raise ValueError(f"out must be a numpy array of dtype {odt}")
        expect = (wh, ww) if was_2d else (wh, ww, C)
        if out.shape != expect:
            raise ValueError(f"out has shape {out.shape}, expected {expect}")
        out3 = out[:, :, None] if was_2d else out
        if out3.strides[2] != odt.itemsize or out3.strides[1] != odt.itemsize * C:
            raise ValueError("out must have contiguous pixels (a row-strided HWC view is fine)")
        if not out.flags.writeable:
            raise ValueError("out is read-only")
        result = out3
    lib.resample(src3, out3, *g.native_args(antialias))
    if out is not None:
        return out
    return result[:, :, 0] if was_2d else result


@dataclass(frozen=True)
class AxisTaps:
    """The source taps of one axis of a resize: output ``i`` reads ``taps[i, k]`` with ``weights[i, k]``.

    Exactly what the C resampler uses (same filters, windows, NN stepping and
    dropped all-zero taps), so a GPU pass that sums ``weights * source`` in the
    C code's order reproduces it bit for bit.
    """

    taps: np.ndarray  # int32 (n, support), clamped to the source
    weights: np.ndarray  # float32 (n, support)
    lo: int  # lowest tap
    hi: int  # highest tap

    @property
    def support(self) -> int:
        return int(self.taps.shape[1])


@dataclass(frozen=True)
class ResamplePlan:
    """Both axes of a resize of a window, and the pass order the C resampler picks."""

    vertical_first: bool
    y: AxisTaps
    x: AxisTaps


def _axis_taps(raw: tuple[int, bytes, bytes, int, int], n: int) -> AxisTaps:
    support, taps, weights, lo, hi = raw
    return AxisTaps(
        np.frombuffer(taps, dtype=np.int32).reshape(n, support),
        np.frombuffer(weights, dtype=np.float32).reshape(n, support),
        lo, hi,
    )


def resample_plan(
    src_shape: tuple[int, int, int],
    out_size: tuple[int, int],
    *,
    window: tuple[int, int, int, int] | None = None,
    interp: InterpType | str = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    roi: tuple[float, float, float, float] | None = None,
    mag_interp: InterpType | str | None = None,
) -> ResamplePlan:
    """The taps, weights and pass order ``resample`` would use (arguments as ``resample``).

    Args:
        src_shape: ``(H, W, C)`` of the source image.
    """
    H, W, C = (int(v) for v in src_shape)
    probe = np.empty((H, W, C), dtype=np.uint8) if H > 0 and W > 0 and C > 0 else np.empty((0, 0, 0), np.uint8)
    g = _resample_geometry(probe, out_size, window, roi, interp, None, mag_interp)
    y0, x0, wh, ww = g.window
    vh, ry, rx = _native().resample_plan(
        H, W, C, *g.out_size, y0, x0, wh, ww, *g.roi, _INTERP_CODES[g.interp],
        _INTERP_CODES[g.mag_interp], bool(antialias),
    )
    return ResamplePlan(bool(vh), _axis_taps(ry, wh), _axis_taps(rx, ww))


def resampled_size_window(
    full: tuple[int, int], crop: tuple[int, int], pos: tuple[float, float] = (0.5, 0.5)
) -> tuple[int, int, int, int]:
    """The ``window`` of a crop of a resized image, with DALI's anchor rounding.

    Args:
        full: ``(out_h, out_w)`` of the resized image.
        crop: ``(crop_h, crop_w)``.
        pos: ``(crop_pos_y, crop_pos_x)`` in [0, 1]; 0.5 is the centre.

    Returns:
        ``(y0, x0, h, w)`` with ``y0 = round(pos_y * (out_h - crop_h))``, halves
        away from zero (DALI's ``rounding="round"``).
    """
    (fh, fw), (ch, cw) = full, crop

    def rnd(v: float) -> int:
        return int(np.floor(abs(v) + 0.5) * np.sign(v))

    return rnd(pos[0] * (fh - ch)), rnd(pos[1] * (fw - cw)), int(ch), int(cw)


def _per_channel(values: Sequence[float] | np.ndarray | float, n: int, what: str) -> list[float]:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size == 1:
        return [float(arr[0])] * n
    if arr.size != n:
        raise ValueError(f"{what} must have 1 or {n} values, got {arr.size}")
    return [float(v) for v in arr]


def normalize_multipliers(
    mean: Sequence[float] | np.ndarray | float, std: Sequence[float] | np.ndarray | float, scale: float, channels: int
) -> tuple[list[float], list[float]]:
    """Per-channel ``mean`` and ``mul = scale / std`` (rounded to float32 like the kernel's math)."""
    mean_l = _per_channel(mean, channels, "mean")
    std_l = _per_channel(std, channels, "std")
    if any(s == 0.0 for s in std_l):
        raise ValueError("std must be non-zero")
    return mean_l, [float(np.float32(scale) / np.float32(s)) for s in std_l]


def cmn_channels(
    channels: int,
    mean: Sequence[float] | np.ndarray | float,
    std: Sequence[float] | np.ndarray | float,
    scale: float,
    pad_output: bool,
    fill_values: Sequence[float] | np.ndarray | float,
) -> tuple[int, list[float], list[float], list[float]]:
    """crop_mirror_normalize's per-channel values: (output channels, mean, mul, fill).

    ``pad_output`` rounds the channels up to a power of two; ``fill_values``
    gives one value for all output channels, one per input channel (padded
    channels 0) or one per output channel. The CPU kernel and the GPU kernels
    both take these lists, so the rules live here once.
    """
    oc = channels
    if pad_output:
        oc = 1
        while oc < channels:
            oc *= 2
    mean_l, mul_l = normalize_multipliers(mean, std, scale, channels)
    fill_arr = np.asarray(fill_values, dtype=np.float64).reshape(-1)
    if fill_arr.size == 1:
        fill_l = [float(fill_arr[0])] * oc
    elif fill_arr.size == oc:
        fill_l = [float(v) for v in fill_arr]
    elif fill_arr.size == channels:
        fill_l = [float(v) for v in fill_arr] + [0.0] * (oc - channels)
    else:
        raise ValueError(f"fill_values must have 1, {channels} or {oc} values, got {fill_arr.size}")
    return oc, mean_l, mul_l, fill_l


def resample_normalize(
    src: np.ndarray,
    out_size: tuple[int, int],
    *,
    window: tuple[int, int, int, int] | None = None,
    interp: InterpType | str = InterpType.INTERP_LINEAR,
    antialias: bool = True,
    roi: tuple[float, float, float, float] | None = None,
    resize_dtype: np.dtype | type = np.uint8,
    mirror: bool = False,
    mean: Sequence[float] | np.ndarray | float = (0.0,),
    std: Sequence[float] | np.ndarray | float = (1.0,),
    scale: float = 1.0,
    shift: float = 0.0,
    layout: str = "CHW",
    out: np.ndarray | None = None,
    order: str | None = None,
    mag_interp: InterpType | str | None = None,
) -> np.ndarray:
    """``resample`` then ``crop_mirror_normalize`` (float32 output) in one pass.

    Equal, bit for bit, to ``crop_mirror_normalize(resample(src, ...,
    out_dtype=resize_dtype), mirror=..., mean=..., std=..., layout=...)``:
    with ``resize_dtype=uint8`` each resampled value is rounded to the uint8
    grid (half to even, clipped) before the normalization, as the unfused
    pair does; the intermediate image is never stored.

    Args:
        src, out_size, window, interp, antialias, roi, order, mag_interp: as ``resample``.
        resize_dtype: the resize's output type, ``uint8`` or ``float32``.
        mirror, mean, std, scale, shift: as ``crop_mirror_normalize``.
        layout: ``"CHW"`` or ``"HWC"``.
        out: optional C-contiguous float32 output of shape ``(C, h, w)``
            (CHW) or ``(h, w, C)`` (HWC), e.g. one row of a batch array.

    Returns:
        The float32 output (``out`` when given).

    Raises:
        ValueError: as ``resample`` and ``crop_mirror_normalize``.
    """
    lib = _native()
    g = _resample_geometry(src, out_size, window, roi, interp, order, mag_interp)
    C = g.src.shape[2]
    _, _, wh, ww = g.window
    rdt = np.dtype(resize_dtype)
    if rdt not in _RESAMPLE_DTYPES:
        raise ValueError(f"resize_dtype must be uint8 or float32, got {rdt}")
    layout_u = layout.upper() if isinstance(layout, str) else layout
    if layout_u not in ("CHW", "HWC"):
        raise ValueError(f"layout must be 'CHW' or 'HWC', got {layout!r}")
    mean_l, mul_l = normalize_multipliers(mean, std, scale, C)
    shape = (C, wh, ww) if layout_u == "CHW" else (wh, ww, C)
    if out is None:
        out = np.empty(shape, dtype=np.float32)
    elif (
        not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != shape
        or not out.flags.c_contiguous or not out.flags.writeable
    ):
        got = (getattr(out, "shape", None), getattr(out, "dtype", None))
        raise ValueError(f"out must be a writeable C-contiguous float32 array of shape {shape}, got {got}")
    lib.resample_normalize(
        g.src, out, *g.native_args(antialias), rdt == np.uint8, bool(mirror), mean_l, mul_l,
        float(shift), layout_u == "CHW",
    )  # fmt: skip
    return out


def crop_mirror_normalize(
    src: np.ndarray,
    *,
    window: tuple[int, int, int, int] | None = None,
    mirror: bool = False,
    mean: Sequence[float] | np.ndarray | float = (0.0,),
    std: Sequence[float] | np.ndarray | float = (1.0,),
    scale: float = 1.0,
    shift: float = 0.0,
    out_dtype: np.dtype | type = np.float32,
    layout: str = "CHW",
    pad_output: bool = False,
    fill_values: Sequence[float] | np.ndarray | float = (0.0,),
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Crop, mirror, normalize and transpose an HWC image in one pass.

    ``out = scale * (in - mean) / std + shift`` (computed in float32 as
    ``(in - mean) * (scale / std) + shift``) over ``window``, mirrored
    horizontally inside the window when ``mirror``.

    Pixels of the window that lie outside the image are set to
    ``fill_values`` *as output values*: they are not normalized (DALI's
    ``out_of_bounds_policy="pad"`` writes ``fill_values`` straight into the
    output). With ``pad_output`` the channel count is padded to the next
    power of two (3 -> 4) and the extra channels also hold their fill value
    (DALI: "the value used for padding is determined by fill_values"), which
    is 0 by default.

    Args:
        src: HWC (or HW) image, ``uint8`` or ``float32`` (``float16`` is
            converted to float32 first).
        window: ``(y0, x0, h, w)``; may extend outside the image (padding).
            Default the whole image.
        mirror: flip the window horizontally.
        mean: one value or one per channel.
        std: one value or one per channel (non-zero).
        scale: multiplier applied after dividing by ``std``.
        shift: added last.
        out_dtype: ``float32``, ``float16`` (round to nearest even) or
            ``uint8`` (clipped, rounded half away from zero).
        layout: ``"CHW"`` or ``"HWC"`` for the output.
        pad_output: pad the channel count to a power of two.
        fill_values: one value (all channels), one per output channel
            (including the padded ones), or one per input channel (padded
            channels then get 0).
        out: optional preallocated C-contiguous output of the right shape and
            dtype (e.g. one sample's slice of a batch array).

    Returns:
        The output array (``out`` when given).

    Raises:
        ValueError: bad dimensionality, dtype, layout, window size, value
            counts, or ``out``.
    """
    lib = _native()
    if isinstance(src, np.ndarray) and src.dtype == np.float16:
        src = src.astype(np.float32)
    src3, _ = _as_hwc(src, "src", _RESAMPLE_DTYPES)
    H, W, C = src3.shape
    y0, x0, h, w = _check_window(window, H, W, what="window", inside=False)
    layout_u = layout.upper() if isinstance(layout, str) else layout
    if layout_u not in ("CHW", "HWC"):
        raise ValueError(f"layout must be 'CHW' or 'HWC', got {layout!r}")
    odt = np.dtype(out_dtype)
    if odt not in _CMN_OUT_DTYPES:
        raise ValueError(f"out_dtype must be float32, float16 or uint8, got {odt}")
    oc, mean_l, mul_l, fill_l = cmn_channels(C, mean, std, scale, pad_output, fill_values)
    shape = (oc, h, w) if layout_u == "CHW" else (h, w, oc)
    if out is None:
        out = np.empty(shape, dtype=odt)
    else:
        if not isinstance(out, np.ndarray) or out.dtype != odt or out.shape != shape:
            got = (getattr(out, "shape", None), getattr(out, "dtype", None))
            raise ValueError(f"out must be an array of shape {shape} and dtype {odt}, got {got}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be C-contiguous and writeable")
    lib.crop_mirror_normalize(
        src3, out, y0, x0, bool(mirror), mean_l, mul_l, float(shift), fill_l, layout_u == "CHW"
    )
    return out
