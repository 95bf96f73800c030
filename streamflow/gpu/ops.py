"""GPU implementations of the operators, batch at a time, and the registry.

A GPU implementation is a function ``impl(op, chunk, ctx) -> outputs`` run by
a GPU stage in one worker-thread call per batch, inside ``with device,
stream:`` (so cupy allocations and kernel launches land on the stage's
stream). ``chunk`` is the whole batch (``ops.base.Chunk``); per-sample
arguments stay host values; the per-sample kernel parameters (sizes, windows,
filter geometry, mirror flags, means) are packed into one small int64 array
per launch, copied from pinned memory on the stage's stream. One launch per
operator per batch (resize: one per pass).

The operator's own host logic (window arithmetic, output-size rules, random
draws) is reused as is, so the GPU differs from the CPU reference only in the
pixel loops (``kernels.py`` says where and by how much).

The registry maps operator classes to implementations; ``supports(op)`` is
what ``Pipeline`` asks at build time. Nothing here imports cupy at import
time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..codecs.nvimgcodec import ImageDecoder
from ..errors import PipelineDefinitionError, SampleError
from ..ops.base import Chunk, Operator
from ..ops.crop import Crop
from ..ops.decoder import ImageDecode
from ..ops.flip import Flip
from ..ops.fused import _RESIZE_PREFIX, ResizeCropMirrorNormalize
from ..ops.normalize import CropMirrorNormalize
from ..ops.resize import Resize
from ..ops.transfer import CopyToGpu
from ..types import Device, InterpType
from . import kernels as K
from .streams import PinnedRing, StageStream

__all__ = ["GpuContext", "MixedImageDecoder", "find_impl", "register", "supports", "unsupported_reason"]

GpuImpl = Callable[[Any, Chunk, "GpuContext"], list[list[Any]]]
_IMPLS: dict[type, GpuImpl] = {}

F32 = np.float32
BLOCK = 256


def register(*types: type) -> Callable[[GpuImpl], GpuImpl]:
    """Decorator: ``impl`` runs operators of ``types`` (and their subclasses) on the GPU."""

    def wrap(fn: GpuImpl) -> GpuImpl:
        for t in types:
            _IMPLS[t] = fn
        return fn

    return wrap


def find_impl(op: Operator) -> GpuImpl | None:
    """The GPU implementation of ``op``'s class (most specific first), or None."""
    for klass in type(op).__mro__:
        impl = _IMPLS.get(klass)
        if impl is not None:
            return impl
    return None


def unsupported_reason(op: Operator) -> str | None:
    """Why ``op`` cannot run on its device here, or None when it can."""
    if op.device is Device.CPU:
        return None
    if find_impl(op) is None:
        return f"{op.name} has no GPU implementation yet (use device='cpu')"
    decoder = isinstance(op, (ImageDecode, CopyToGpu))
    if decoder and op.device is not Device.MIXED:
        return f"{op.name} runs on 'cpu' or 'mixed', not 'gpu'"
    if not decoder and op.device is Device.MIXED:
        return f"{op.name} runs on 'cpu' or 'gpu', not 'mixed'"
    return None


def supports(op: Operator) -> bool:
    """Whether ``op`` can run on its (GPU-side) device."""
    return unsupported_reason(op) is None


# --------------------------------------------------------------------------- context


class GpuContext:
    """What the implementations of one stage share: its stream, staging, filter tables."""

    def __init__(self, device_id: int, cpu_threads: int = 4) -> None:
        import cupy

        self.cp = cupy
        self.device_id = device_id
        self.stream = StageStream(device_id)
        self.pinned = PinnedRing()
        self.cpu_threads = cpu_threads
        self._tables: dict[int, Any] = {}

    # All methods below run inside ``with device, stream:`` (the stage sees to it).

    def table(self, code: int) -> tuple[Any, int]:
        """The device copy of a filter table (imgproc.c's, value for value)."""
        key = {2: 2, 3: 3, 4: 4}.get(code, 1)
        tab = self._tables.get(key)
        if tab is None:
            tab = self.cp.asarray(np.asarray(_host_table(key), dtype=np.float32))
            self._tables[key] = tab
        return tab, int(tab.size)

    def upload(self, host: np.ndarray) -> Any:
        """Copy a small host array to the device from pinned memory, on the stage's stream."""
        host = np.ascontiguousarray(host)
        nbytes = host.nbytes
        dev = self.cp.empty(host.shape, dtype=host.dtype)
        if nbytes == 0:
            return dev
        buf = self.pinned.take(nbytes)
        buf[:nbytes] = host.reshape(-1).view(np.uint8)
        rt = self.cp.cuda.runtime
        rt.memcpyAsync(dev.data.ptr, buf.ctypes.data, nbytes, rt.memcpyHostToDevice, self.stream.ptr)
        self.pinned.give_back(buf, self.stream.record())
        return dev

    def launch(self, name: str, params: np.ndarray, max_items: int) -> None:
        """One launch of kernel ``name`` over the batch: sample = blockIdx.y."""
        n = params.shape[0]
        if n == 0 or max_items <= 0:
            return
        if n > 65535:
            raise ValueError(f"a GPU batch holds at most 65535 samples, got {n}")
        dev = self.upload(params)
        bx = min(max(1, -(-max_items // (BLOCK * 4))), 4096)
        K.get_kernel(name)((bx, n, 1), (BLOCK, 1, 1), (dev,))

    def alloc(self, shapes: Sequence[tuple[int, ...]], dtype: Any) -> list[Any]:
        """Per-sample output arrays; views of one dense (N, ...) array when shapes agree."""
        cp = self.cp
        if not shapes:
            return []
        if all(s == shapes[0] for s in shapes):
            dense = cp.empty((len(shapes), *shapes[0]), dtype=dtype)
            return [dense[i] for i in range(len(shapes))]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        offsets = np.concatenate([[0], np.cumsum([(z + 63) // 64 * 64 for z in sizes])])
        flat = cp.empty(int(offsets[-1]) or 1, dtype=dtype)
        return [flat[int(o): int(o) + z].reshape(s) for o, z, s in zip(offsets[:-1], sizes, shapes)]

    def to_device(self, samples: Sequence[Any]) -> list[Any]:
        """Host samples to the device: one pinned staging buffer, one async copy."""
        cp = self.cp
        if all(isinstance(s, cp.ndarray) for s in samples):
            return list(samples)
        on_device = {i: s for i, s in enumerate(samples) if isinstance(s, cp.ndarray)}
        host = [np.zeros(0, np.uint8) if i in on_device else np.ascontiguousarray(s) for i, s in enumerate(samples)]
        sizes = [h.nbytes for h in host]
        offsets = np.concatenate([[0], np.cumsum([(z + 255) // 256 * 256 for z in sizes])]).astype(np.int64)
        total = int(offsets[-1])
        dev = cp.empty(max(total, 1), dtype=np.uint8)
        if total:
            buf = self.pinned.take(total)
            for h, o in zip(host, offsets[:-1]):
                buf[int(o): int(o) + h.nbytes] = h.reshape(-1).view(np.uint8)
            rt = cp.cuda.runtime
            rt.memcpyAsync(dev.data.ptr, buf.ctypes.data, total, rt.memcpyHostToDevice, self.stream.ptr)
            self.pinned.give_back(buf, self.stream.record())
        out = []
        for i, (h, o) in enumerate(zip(host, offsets[:-1])):
            if i in on_device:
                out.append(on_device[i])
                continue
            part = dev[int(o): int(o) + h.nbytes]
            out.append(part.view(h.dtype).reshape(h.shape))
        return out


def _host_table(key: int) -> list[float]:
    """imgproc.c's filter table (from the extension when built, else recomputed)."""
    from ..ops import kernels as cpu_kernels

    if cpu_kernels.native_available():
        return list(cpu_kernels._native().filter_table(key))
    f = np.float32
    if key == 4:
        x = (4 * (np.arange(65, dtype=f) - f(32)) / f(64)).astype(f)
        return list(np.exp(-x * x))
    if key == 2:
        x = np.abs((4 * (np.arange(129, dtype=f) - f(64)) / f(128)).astype(f))
        return list(np.where(x >= 2, 0, np.where(x > 1, -0.5 * x**3 + 2.5 * x**2 - 4 * x + 2, 1.5 * x**3 - 2.5 * x**2 + 1)))
    if key == 3:
        x = (6 * (np.arange(193, dtype=f) - f(96)) / f(192)).astype(f)
        return list(np.where(np.abs(x) >= 3, 0, np.sinc(x) * np.sinc(x / 3)))
    return [0.0, 1.0, 0.0]


def _fbits(v: Any) -> int:
    """A float32's bits as a signed int (what the kernels read with __int_as_float)."""
    return int(np.asarray(v, dtype=np.float32).reshape(()).view(np.int32))


def _params(n: int) -> np.ndarray:
    return np.zeros((n, K.NP), dtype=np.int64)


def _hwc(cp: Any, img: Any) -> Any:
    """A device image as 3-D HWC with contiguous pixels (copied only when needed)."""
    if not isinstance(img, cp.ndarray):
        raise SampleError(f"expected a GPU image, got {type(img).__name__}")
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3:
        raise SampleError(f"expected an HWC or HW image, got shape {tuple(img.shape)}")
    item = img.itemsize
    if img.strides[2] != item or img.strides[1] != item * img.shape[2] or img.strides[0] < 0:
        img = cp.ascontiguousarray(img)
    return img


# --------------------------------------------------------------------------- resampling plans
# Python twins of choose_filter / make_filter / plan_axis / cost_order of
# imgproc.c, in float32 where the C code uses float.

_NN, _LINEAR, _CUBIC, _LANCZOS, _GAUSS, _TRI = 0, 1, 2, 3, 4, 5
_INTERP_CODES = {
    InterpType.INTERP_NN: _NN, InterpType.INTERP_LINEAR: _LINEAR, InterpType.INTERP_CUBIC: _CUBIC,
    InterpType.INTERP_LANCZOS3: _LANCZOS, InterpType.INTERP_GAUSSIAN: _GAUSS, InterpType.INTERP_TRIANGULAR: _TRI,
}


def _choose_filter(interp: int, antialias: bool, in_size: np.float32, out_size: np.float32) -> tuple[int, int, np.float32, np.float32]:
    """(table key, table length, table entries per pixel, anchor) of one axis."""
    down = out_size < in_size
    aa = antialias and down
    ratio = F32(in_size / out_size)
    if interp == _CUBIC:
        radius = F32(F32(2) * in_size) / out_size if aa else F32(2)
        key, n, support = 2, 129, F32(2) * max(radius, F32(2))
    elif interp == _LANCZOS:
        radius = F32(F32(3) * in_size) / out_size if aa else F32(3)
        key, n, support = 3, 193, F32(2) * max(radius, F32(3))
    elif interp == _GAUSS:
        radius = ratio if aa else F32(1)
        sigma = F32(float(F32(radius * F32(0.5))) / math.sqrt(2.0))
        s = F32(4 * math.sqrt(2.0)) * sigma
        key, n, support = 4, 65, max(F32(s), F32(1))
    else:
        radius = ratio if aa else F32(1)
        key, n, support = 1, 3, max(F32(F32(2) * radius), F32(1))
    fscale = F32(F32(n - 1) / F32(support))
    anchor = F32(F32(F32(n - 1) * F32(0.5)) / fscale)
    return key, n, fscale, anchor


def _support(n: int, fscale: np.float32) -> int:
    return max(1, int(math.ceil(float(F32(F32(n - 1) / fscale)))))


class _Axis:
    """The resampling geometry of one axis of one sample."""

    __slots__ = ("anchor", "fscale", "in_len", "interp", "key", "n", "out_full", "roi0", "scale", "srcx0", "support")

    def __init__(self, interp: int, antialias: bool, in_len: int, out_full: int, roi0: float, roi1: float) -> None:
        r0, r1 = F32(roi0), F32(roi1)
        self.interp, self.in_len, self.out_full, self.roi0 = interp, in_len, out_full, r0
        in_size = F32(abs(F32(r1 - r0)))
        self.scale = F32(F32(r1 - r0) / F32(out_full))
        if interp == _NN:
            self.key, self.n, self.fscale, self.anchor, self.support, self.srcx0 = 1, 3, F32(1), F32(0), 1, F32(0)
            return
        self.key, self.n, self.fscale, self.anchor = _choose_filter(interp, antialias, in_size, F32(out_full))
        self.support = _support(self.n, self.fscale)
        self.srcx0 = F32(r0 + F32(F32(F32(F32(0.5) * self.scale) - F32(0.5)) - self.anchor))

    def fill(self, P: np.ndarray, ctx: GpuContext, d0: int, nn_acc: bool) -> None:
        S = K.RESAMPLE_SLOTS
        P[S["IN_LEN"]] = self.in_len
        P[S["D0"]] = d0
        P[S["NN"]] = int(self.interp == _NN)
        P[S["SUPPORT"]] = self.support
        tab, n = ctx.table(self.key)
        P[S["TABLE"]] = tab.data.ptr
        P[S["TABLE_N"]] = n
        P[S["FSCALE"]] = _fbits(self.fscale)
        P[S["SRCX0"]] = _fbits(self.srcx0)
        P[S["SCALE"]] = _fbits(self.scale)
        P[S["ROI0"]] = _fbits(self.roi0)
        P[S["NN_ACC"]] = int(nn_acc)


def _vertical_first(ay: _Axis, ax: _Axis, roi: tuple[float, float, float, float], H: int, W: int, C: int) -> bool:
    """cost_order of imgproc.c: True when the vertical pass should run first."""
    ry0, rx0, ry1, rx1 = roi
    in_h = max(min(abs(float(F32(ry1)) - float(F32(ry0))), H), 1.0)
    in_w = max(min(abs(float(F32(rx1)) - float(F32(rx0))), W), 1.0)
    out_h, out_w = ay.out_full, ax.out_full
    Sy, Sx = ay.support, ax.support
    hc = 1.0 if C <= 4 else C / 4.0
    vh = out_h * in_w * C * Sy / 4.0 + out_h * out_w * Sx * hc + out_h * in_w * C / 4.0
    hv = in_h * in_w * C / 4.0 + in_h * out_w * Sx * hc + out_h * out_w * C * Sy / 4.0 + in_h * out_w * C / 4.0
    return float(F32(vh)) <= float(F32(hv))


class _ResamplePlan:
    """Both passes of one sample: the window (wy0, wx0, wh, ww) of an out_h x out_w resize."""

    def __init__(self, img: Any, size: tuple[int, int], roi: Any, window: tuple[int, int, int, int],
                 interp: InterpType, antialias: bool) -> None:
        H, W, C = (int(v) for v in img.shape)
        if roi is None:
            roi = (0.0, 0.0, float(H), float(W))
        ry0, rx0, ry1, rx1 = (float(v) for v in roi)
        if ry0 == ry1 or rx0 == rx1:
            raise SampleError(f"resize roi must have a non-zero extent on both axes, got {roi!r}")
        code = _INTERP_CODES[interp]
        self.img, self.H, self.W, self.C = img, H, W, C
        self.window = window
        self.ay = _Axis(code, antialias, H, int(size[0]), ry0, ry1)
        self.ax = _Axis(code, antialias, W, int(size[1]), rx0, rx1)
        self.vh = _vertical_first(self.ay, self.ax, (ry0, rx0, ry1, rx1), H, W, C)
        _, _, wh, ww = window
        self.tmp_shape = (wh, W, C) if self.vh else (H, ww, C)


def _resample_passes(ctx: GpuContext, plans: list[_ResamplePlan]) -> tuple[np.ndarray, Any, str]:
    """Queue pass 1 for every sample; return pass-2 parameters (without the destination).

    Returns:
        (pass-2 params, the intermediate buffer to keep alive, source kind of pass 1)
    """
    n = len(plans)
    src_kind = "u8" if all(p.img.dtype == np.uint8 for p in plans) else "f32"
    if src_kind == "f32":
        for p in plans:
            if p.img.dtype != np.float32:
                p.img = p.img.astype(np.float32)
    tmps = ctx.alloc([p.tmp_shape for p in plans], np.float32)
    S = K.RESAMPLE_SLOTS
    P1, P2 = _params(n), _params(n)
    max1 = max2 = 0
    for i, p in enumerate(plans):
        wy0, wx0, wh, ww = p.window
        img, tmp = p.img, tmps[i]
        a, b = P1[i], P2[i]
        a[S["SRC"]], a[S["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
        a[S["DST"]], a[S["DST_STRIDE"]] = tmp.data.ptr, tmp.shape[1] * p.C
        b[S["SRC"]], b[S["SRC_STRIDE"]] = tmp.data.ptr, tmp.shape[1] * p.C
        a[S["C"]] = b[S["C"]] = p.C
        if p.vh:  # vertical over every source column, then horizontal over the window rows
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]] = 0, wh, p.W
            p.ay.fill(a, ctx, wy0, True)
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]] = 1, ww, wh
            p.ax.fill(b, ctx, wx0, False)
            max1 = max(max1, wh * p.W)
        else:  # horizontal over every source row, then vertical
            a[S["AXIS"]], a[S["OUT_LEN"]], a[S["OTHER_LEN"]] = 1, ww, p.H
            p.ax.fill(a, ctx, wx0, False)
            b[S["AXIS"]], b[S["OUT_LEN"]], b[S["OTHER_LEN"]] = 0, wh, ww
            p.ay.fill(b, ctx, wy0, True)
            max1 = max(max1, p.H * ww)
        max2 = max(max2, wh * ww)
    ctx.launch(f"sf_resample_{src_kind}_f32", P1, max1)
    return P2, tmps, src_kind


# --------------------------------------------------------------------------- resize


def _split_fused(chunk: Chunk) -> tuple[Chunk, Chunk]:
    resize_args = {k[len(_RESIZE_PREFIX):]: v for k, v in chunk.args.items() if k.startswith(_RESIZE_PREFIX)}
    cmn_args = {k: v for k, v in chunk.args.items() if not k.startswith(_RESIZE_PREFIX)}
    common = dict(inputs=chunk.inputs, sample_ids=chunk.sample_ids, sources=chunk.sources, epoch=chunk.epoch, key=chunk.key)
    return Chunk(args=resize_args, **common), Chunk(args=cmn_args, **common)  # type: ignore[arg-type]


@register(Resize)
def resize_gpu(op: Resize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    plans, rows, dtypes = [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = _hwc(cp, image)
            size, roi = op.plan_sample(chunk, row, img.shape[0], img.shape[1])
            plans.append(_ResamplePlan(img, size, roi, (0, 0, size[0], size[1]), op.spec.interp, op.spec.antialias))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append((row, image.ndim == 2))
        dtypes.append(np.dtype(op.spec.dtype or image.dtype))
    if not plans:
        return [out]
    out_dtype = dtypes[0] if all(d == dtypes[0] for d in dtypes) else np.dtype(np.float32)
    P2, tmps, _ = _resample_passes(ctx, plans)
    shapes = [(p.window[2], p.window[3], p.C) for p in plans]
    results = ctx.alloc(shapes, out_dtype)
    S = K.RESAMPLE_SLOTS
    for i, r in enumerate(results):
        P2[i, S["DST"]], P2[i, S["DST_STRIDE"]] = r.data.ptr, r.shape[1] * r.shape[2]
    kind = "u8" if out_dtype == np.uint8 else "f32"
    ctx.launch(f"sf_resample_f32_{kind}", P2, max(s[0] * s[1] for s in shapes))
    for (row, was_2d), r in zip(rows, results):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]


# --------------------------------------------------------------------------- crop_mirror_normalize


def _cmn_params(op: CropMirrorNormalize, chunk: Chunk, row: int, C: int, P: np.ndarray,
                window: tuple[int, int, int, int]) -> tuple[int, int, int]:
    """Fill the CMN slots of one sample; returns the output (oc, h, w)."""
    S = K.CMN_SLOTS
    y0, x0, h, w = window
    oc = C
    if op.pad_output:
        oc = 1
        while oc < C:
            oc *= 2
    if C > K.MAX_CHANNELS or oc > K.MAX_CHANNELS:
        raise SampleError(f"crop_mirror_normalize on the GPU takes at most {K.MAX_CHANNELS} channels, got {C}")
    mean = np.asarray(chunk.arg("mean", row, op.mean), dtype=np.float64).reshape(-1)
    std = np.asarray(chunk.arg("std", row, op.std), dtype=np.float64).reshape(-1)
    if mean.size == 1:
        mean = np.repeat(mean, C)
    if std.size == 1:
        std = np.repeat(std, C)
    if mean.size != C or std.size != C:
        raise SampleError(f"mean and std must have 1 or {C} values, got {mean.size} and {std.size}")
    if np.any(std == 0):
        raise SampleError("std must be non-zero")
    fill = np.asarray(op.crop.fill_values, dtype=np.float64).reshape(-1)
    if fill.size == 1:
        fill = np.repeat(fill, oc)
    elif fill.size == C:
        fill = np.concatenate([fill, np.zeros(oc - C)])
    elif fill.size != oc:
        raise SampleError(f"fill_values must have 1, {C} or {oc} values, got {fill.size}")
    P[K.RESAMPLE_SLOTS["C"]] = C
    P[S["OH"]], P[S["OW"]], P[S["OC"]] = h, w, oc
    P[S["CHW"]] = int(op.output_layout == "CHW")
    P[S["MIRROR"]] = int(bool(int(chunk.arg("mirror", row, op.mirror))))
    P[S["Y0"]], P[S["X0"]] = y0, x0
    P[S["SHIFT"]] = _fbits(op.shift)
    for c in range(C):
        P[S["MEAN"] + c] = _fbits(F32(mean[c]))
        P[S["MUL"] + c] = _fbits(F32(F32(op.scale) / F32(std[c])))
    for c in range(oc):
        P[S["FILL"] + c] = _fbits(F32(fill[c]))
    return oc, h, w


def _cmn_outputs(ctx: GpuContext, op: CropMirrorNormalize, shapes: list[tuple[int, int, int]], P: np.ndarray) -> list[Any]:
    layout_shapes = [(oc, h, w) if op.output_layout == "CHW" else (h, w, oc) for oc, h, w in shapes]
    results = ctx.alloc(layout_shapes, op.out_dtype)
    for i, r in enumerate(results):
        P[i, K.CMN_SLOTS["OUT"]] = r.data.ptr
    return results


_CMN_KIND = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.uint8): "u8"}


@register(CropMirrorNormalize)
def crop_mirror_normalize_gpu(op: CropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    rows, imgs, P_rows, shapes = [], [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = _hwc(cp, image)
            if img.dtype == np.float16:
                img = img.astype(np.float32)
            H, W, C = (int(v) for v in img.shape)
            window = op.window_for(chunk, row, H, W) or (0, 0, H, W)
            P = np.zeros(K.NP, dtype=np.int64)
            shapes.append(_cmn_params(op, chunk, row, C, P, window))
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        imgs.append(img)
        P_rows.append(P)
    if not rows:
        return [out]
    src_kind = "u8" if all(i.dtype == np.uint8 for i in imgs) else "f32"
    imgs = [i if src_kind == "u8" or i.dtype == np.float32 else i.astype(np.float32) for i in imgs]
    P = np.stack(P_rows)
    S, R = K.CMN_SLOTS, K.RESAMPLE_SLOTS
    for i, img in enumerate(imgs):
        P[i, R["SRC"]], P[i, R["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
        P[i, S["H"]], P[i, S["W"]] = img.shape[0], img.shape[1]
    results = _cmn_outputs(ctx, op, shapes, P)
    ctx.launch(f"sf_cmn_{src_kind}_{_CMN_KIND[np.dtype(op.out_dtype)]}", P, max(h * w for _, h, w in shapes))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]


@register(ResizeCropMirrorNormalize)
def resize_crop_mirror_normalize_gpu(op: ResizeCropMirrorNormalize, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """Resize + crop + mirror + normalize + layout: pass 1, then pass 2 with the CMN epilogue."""
    cp = ctx.cp
    resize_chunk, cmn_chunk = _split_fused(chunk)
    cmn = op.cmn
    out: list[Any] = [None] * len(chunk)
    rows, plans, P_rows, shapes = [], [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = _hwc(cp, image)
            H, W, C = (int(v) for v in img.shape)
            size, roi = op.resize.plan_sample(resize_chunk, row, H, W)
            window = cmn.window_for(cmn_chunk, row, size[0], size[1]) or (0, 0, size[0], size[1])
            y0, x0, h, w = window
            # the part of the window inside the resized image is what gets resampled
            ry0, rx0 = max(y0, 0), max(x0, 0)
            ry1, rx1 = min(y0 + h, size[0]), min(x0 + w, size[1])
            rh, rw = max(0, ry1 - ry0), max(0, rx1 - rx0)
            if rh == 0 or rw == 0:
                ry0 = rx0 = rh = rw = 0
            plan = _ResamplePlan(img, size, roi, (ry0, rx0, rh, rw), op.resize.spec.interp, op.resize.spec.antialias)
            P = np.zeros(K.NP, dtype=np.int64)
            shapes.append(_cmn_params(cmn, cmn_chunk, row, C, P, window))
            S = K.CMN_SLOTS
            P[S["RY0"]], P[S["RX0"]], P[S["RH"]], P[S["RW"]] = ry0, rx0, rh, rw
            P[S["ROUND_U8"]] = int(np.dtype(op.resize.spec.dtype or img.dtype) == np.uint8)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        rows.append(row)
        plans.append(plan)
        P_rows.append(P)
    if not rows:
        return [out]
    P2, tmps, _ = _resample_passes(ctx, plans)
    P = np.stack(P_rows)
    # pass-2 geometry from the resampling plan, CMN slots from P
    geometry = [v for k, v in K.RESAMPLE_SLOTS.items() if k not in ("DST", "DST_STRIDE")]
    P[:, geometry] = P2[:, geometry]
    results = _cmn_outputs(ctx, cmn, shapes, P)
    ctx.launch(f"sf_resample_cmn_{_CMN_KIND[np.dtype(cmn.out_dtype)]}", P, max(h * w for _, h, w in shapes))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]


# --------------------------------------------------------------------------- crop, flip


def _elem_bits(values: np.ndarray, dtype: np.dtype) -> list[int]:
    cast = np.asarray(values).astype(dtype)
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    return [int(v) for v in cast.view(unsigned).reshape(-1)]


@register(Crop)
def crop_gpu(op: Crop, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    rows, imgs, wins = [], [], []
    for row, image in enumerate(chunk.inputs[0]):
        try:
            img = _hwc(cp, image)
            window = op.window_for(chunk, row, img.shape[0], img.shape[1])
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
            continue
        if img.itemsize not in (1, 2, 4, 8) or img.shape[2] > K.MAX_CHANNELS:
            chunk.fail(row, SampleError(f"crop on the GPU: unsupported dtype {img.dtype} or channels {img.shape[2]}"))
            continue
        rows.append((row, image.ndim == 2))
        imgs.append(img)
        wins.append(window)
    if not rows:
        return [out]
    groups: dict[np.dtype, list[int]] = {}
    for i, img in enumerate(imgs):
        groups.setdefault(np.dtype(img.dtype), []).append(i)
    results: list[Any] = [None] * len(imgs)
    S = K.CROP_SLOTS
    fill = np.asarray(op.spec.fill_values, dtype=np.float64).reshape(-1)
    for dtype, members in groups.items():
        shapes = [(wins[i][2], wins[i][3], imgs[i].shape[2]) for i in members]
        outs = ctx.alloc(shapes, dtype)
        P = _params(len(members))
        for j, i in enumerate(members):
            img, (y0, x0, h, w) = imgs[i], wins[i]
            C = img.shape[2]
            if fill.size not in (1, C):
                raise PipelineDefinitionError(f"crop: fill_values must have 1 or {C} values, got {fill.size}")
            bits = _elem_bits(np.broadcast_to(fill, (C,)), dtype)
            P[j, S["SRC"]], P[j, S["SRC_STRIDE"]] = img.data.ptr, img.strides[0] // img.itemsize
            P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape[0], img.shape[1], C
            P[j, S["DST"]], P[j, S["OH"]], P[j, S["OW"]] = outs[j].data.ptr, h, w
            P[j, S["Y0"]], P[j, S["X0"]] = y0, x0
            for c in range(C):
                P[j, S["FILL"] + c] = np.int64(np.uint64(bits[c]).view(np.int64))
            results[i] = outs[j]
        ctx.launch(f"sf_crop_b{dtype.itemsize}", P, max(s[0] * s[1] * s[2] for s in shapes))
    for (row, was_2d), r in zip(rows, results):
        out[row] = r[:, :, 0] if was_2d else r
    return [out]


@register(Flip)
def flip_gpu(op: Flip, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    cp = ctx.cp
    out: list[Any] = [None] * len(chunk)
    rows, imgs = [], []
    for row, image in enumerate(chunk.inputs[0]):
        if not isinstance(image, cp.ndarray) or image.ndim not in (2, 3) or image.itemsize not in (1, 2, 4, 8):
            chunk.fail(row, SampleError(f"flip expects an HW or HWC image, got shape {getattr(image, 'shape', None)}"))
            continue
        rows.append(row)
        imgs.append(cp.ascontiguousarray(image))
    if not rows:
        return [out]
    S = K.FLIP_SLOTS
    results: list[Any] = [None] * len(imgs)
    groups: dict[np.dtype, list[int]] = {}
    for i, img in enumerate(imgs):
        groups.setdefault(np.dtype(img.dtype), []).append(i)
    chw = op._layout.upper() == "CHW"
    for dtype, members in groups.items():
        outs = ctx.alloc([tuple(imgs[i].shape) for i in members], dtype)
        P = _params(len(members))
        sizes = []
        for j, i in enumerate(members):
            img, row = imgs[i], rows[i]
            if img.ndim == 3 and chw:
                planes, H, W, C = img.shape[0], img.shape[1], img.shape[2], 1
            else:
                planes, H, W = 1, img.shape[0], img.shape[1]
                C = img.shape[2] if img.ndim == 3 else 1
            P[j, S["SRC"]], P[j, S["DST"]] = img.data.ptr, outs[j].data.ptr
            P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = planes, H, W, C
            P[j, S["HFLIP"]] = int(bool(int(chunk.arg("horizontal", row, op.horizontal))))
            P[j, S["VFLIP"]] = int(bool(int(chunk.arg("vertical", row, op.vertical))))
            sizes.append(planes * H * W * C)
            results[i] = outs[j]
        ctx.launch(f"sf_flip_b{dtype.itemsize}", P, max(sizes))
    for row, r in zip(rows, results):
        out[row] = r
    return [out]


# --------------------------------------------------------------------------- mixed: decode, copy


class MixedImageDecoder(ImageDecoder):
    """``ImageDecoder(Device.MIXED)`` bound to a stage: its device, stream and CPU threads.

    The nvImageCodec decoder tries the hardware JPEG engine (A100/H100), then
    the CUDA decoder, then hybrid CPU/GPU, then the CPU, per image. One
    decoder per worker thread (the base class keeps them thread-local).
    """

    def __init__(self, *, device_id: int, cuda_stream: int, cpu_threads: int, **kw: Any) -> None:
        super().__init__(Device.MIXED, device_id=device_id, **kw)
        self._stream = cuda_stream
        self._cpu_threads = max(1, cpu_threads)

    def _make_gpu_decoder(self, nv: Any) -> Any:
        backends = [
            nv.Backend(nv.BackendKind.HW_GPU_ONLY),
            nv.Backend(nv.BackendKind.GPU_ONLY),
            nv.Backend(nv.BackendKind.HYBRID_CPU_GPU),
            nv.Backend(nv.BackendKind.CPU_ONLY),
        ]
        return nv.Decoder(device_id=self.device_id, max_num_cpu_threads=self._cpu_threads, backends=backends)

    def decode_batch(self, data: Any, sources: Any, *, regions: Any = None, cuda_stream: int = 0) -> list[Any]:
        return super().decode_batch(data, sources, regions=regions, cuda_stream=cuda_stream or self._stream)


@register(ImageDecode)
def decode_gpu(op: ImageDecode, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """Mixed decoding: the operator's own logic (windows, errors) with a GPU decoder."""
    if not isinstance(op._decoder, MixedImageDecoder):
        op._decoder = MixedImageDecoder(
            device_id=ctx.device_id, cuda_stream=ctx.stream.ptr, cpu_threads=ctx.cpu_threads,
            output_type=op.output_type, adjust_orientation=op.adjust_orientation, max_pixels=op.max_pixels,
        )
    return op.run(chunk)


@register(CopyToGpu)
def copy_to_gpu(op: CopyToGpu, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    """``.gpu()``: pinned staging, one asynchronous copy per batch on the stage's stream."""
    return [ctx.to_device(chunk.inputs[0])]
