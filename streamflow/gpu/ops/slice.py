"""``slice`` on the GPU: one ``slice.cu`` launch per element size and batch (``paste`` uses it too).

The regions are planned on the host exactly as on the CPU (``Slice.region``);
anchor/shape inputs that live on the GPU are copied to
the host first (as DALI does). ``dtype`` conversion of ``slice`` converts the
sample with the array module before the copy (the same element-wise rule as
the CPU, ``convert_like_slice``). Adjacent whole dimensions are merged so any
number of dimensions fits the kernel's six.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SampleError
from ...operator import Chunk
from ...ops.slice import Slice, convert_like_slice, typed_fill
from .. import kernels as K
from ..context import GpuContext, group_by_dtype, param_rows
from .registry import register

__all__ = ["collapse", "launch_regions", "plan_region", "slice_gpu"]

_POLICY = {"constant": 0, "edge": 1, "reflect_1001": 2, "reflect_101": 3, "wrap": 4}
_MAX_INT = (1 << 31) - 1


def collapse(shape: tuple[int, ...], starts: tuple[int, ...], ends: tuple[int, ...], policy: str,
             keep: int | None) -> tuple[list[int], list[int], list[int], int | None]:
    """(in, start, out extents, kept dim) with each whole inner dimension merged into the one before.

    A dimension taken whole (start 0, end n) folds into the previous one when
    that one's coordinates outside the sample stay outside after the merge
    (the constant policy, or a region inside on it); ``keep`` (the channel
    dimension of per-channel fills) never merges.
    """
    ins, sts, outs, kept = [shape[0]], [starts[0]], [ends[0] - starts[0]], 0 if keep == 0 else None
    for d in range(1, len(shape)):
        whole = starts[d] == 0 and ends[d] == shape[d]
        prev_inside = 0 <= sts[-1] and sts[-1] + outs[-1] <= ins[-1]
        last_is_kept = kept is not None and kept == len(ins) - 1
        if whole and d != keep and not last_is_kept and (policy == "constant" or prev_inside):
            ins[-1], sts[-1], outs[-1] = ins[-1] * shape[d], sts[-1] * shape[d], outs[-1] * shape[d]
            continue
        if d == keep:
            kept = len(ins)
        ins.append(shape[d])
        sts.append(starts[d])
        outs.append(ends[d] - starts[d])
    return ins, sts, outs, kept


def launch_regions(ctx: GpuContext, jobs: list[dict[str, Any]]) -> list[Any]:
    """Run the planned regions (one dict per sample): the outputs, by job."""
    results: list[Any] = [None] * len(jobs)
    if not jobs:
        return results
    staged, addresses = ctx.stage([j["fill"] for j in jobs])
    S = K.SLICE_SLOTS
    for dtype, members in group_by_dtype([job["src"] for job in jobs]).items():
        outs = ctx.alloc([jobs[i]["shape"] for i in members], dtype)
        P = param_rows(len(members))
        rows = []
        for j, i in enumerate(members):
            job = jobs[i]
            P[j, S["SRC"]], P[j, S["DST"]], P[j, S["FILL"]] = ctx.address(job["src"]), ctx.address(outs[j]), addresses[i]
            P[j, S["NDIM"]], P[j, S["POLICY"]] = len(job["in"]), _POLICY[job["policy"]]
            P[j, S["CDIM"]] = -1 if job["cdim"] is None else job["cdim"]
            P[j, S["NFILL"]] = job["fill"].size
            for d, (n, s0, o) in enumerate(zip(job["in"], job["start"], job["out"])):
                P[j, S[f"IN{d}"]], P[j, S[f"START{d}"]], P[j, S[f"OUT{d}"]] = n, s0, o
            rows.append(int(np.prod(job["out"][:-1], dtype=np.int64)))
            results[i] = outs[j]
        ctx.launch(f"sf_slice_b{dtype.itemsize}", P, max(rows))
    del staged
    return results


def plan_region(ctx: GpuContext, src: Any, starts: tuple[int, ...], ends: tuple[int, ...], policy: str,
                fill: np.ndarray, cdim: int | None) -> dict[str, Any]:
    """One sample's launch parameters: region ``[starts, ends)`` of ``src`` (canonical ``policy``)."""
    shape = tuple(int(v) for v in src.shape)
    out_shape = tuple(e - s for s, e in zip(starts, ends))
    if max((*shape, *out_shape, *(abs(s) for s in starts)), default=0) > _MAX_INT or \
            int(np.prod(out_shape, dtype=np.int64)) > _MAX_INT:
        raise SampleError(f"slice on the GPU: the sample {shape} or region {out_shape} is too large for 32-bit indices")
    if 0 in shape and policy != "constant":
        raise SampleError(f"slice: out_of_bounds_policy={policy!r} cannot extend an empty sample {shape}")
    keep = cdim if fill.size > 1 else None
    ins, sts, outs, kept = collapse(shape, starts, ends, policy, keep)
    if len(ins) > K.SLICE_MAX_DIMS:
        raise SampleError(f"slice on the GPU: at most {K.SLICE_MAX_DIMS} sliced dimensions, got {len(ins)}")
    src = ctx.xp.ascontiguousarray(src)
    return {"src": src, "in": ins, "start": sts, "out": outs, "cdim": kept, "policy": policy, "fill": fill,
            "shape": out_shape}


@register(Slice)
def slice_gpu(op: Slice, chunk: Chunk, ctx: GpuContext) -> list[list[Any]]:
    xp = ctx.xp
    out: list[Any] = [None] * len(chunk)
    # Region inputs (anchor/shape) are read on the host.
    host_inputs = [chunk.inputs[0]] + [[ctx.to_host(v) if ctx.is_array(v) and xp is not np else v for v in col]
                                       for col in chunk.inputs[1:]]
    host = Chunk(inputs=host_inputs, args=chunk.args, sample_ids=chunk.sample_ids, sources=chunk.sources,
                 epoch=chunk.epoch, key=chunk.key)
    rows, jobs = [], []
    for row, sample in enumerate(chunk.inputs[0]):
        try:
            if not ctx.is_array(sample) or sample.dtype.kind not in "uif" or sample.ndim == 0:
                raise SampleError(f"slice: the input must be a numeric array on the GPU, got {type(sample).__name__}")
            shape = tuple(int(v) for v in sample.shape)
            starts, ends = op.region(host, row, shape)
            inside = all(0 <= s and e <= n for s, e, n in zip(starts, ends, shape))
            policy = op.policy
            if not inside and policy == "error":
                raise SampleError(
                    f"slice: the region [{list(starts)}, {list(ends)}) leaves the sample of shape {shape}; "
                    "use out_of_bounds_policy='pad' (or edge, reflect, wrap, trim_to_shape) or a smaller region")
            if policy in ("error", "trim_to_shape"):
                starts = tuple(min(max(s, 0), n) for s, n in zip(starts, shape))
                ends = tuple(max(min(e, n), s) for s, e, n in zip(starts, ends, shape))
                policy = "constant"
            src = sample if op.out_dtype is None else convert_like_slice(sample, op.out_dtype, xp)
            fill = typed_fill(op.fill_values, np.dtype(src.dtype))
            cdim = op.channel_dim(sample.ndim)
            if fill.size > 1:
                if cdim is None:
                    raise SampleError(f"slice: {fill.size} fill_values were given but the sample has no channel "
                                      "axis (no 'C' in its layout); give one fill value")
                if ends[cdim] - starts[cdim] != fill.size:
                    raise SampleError(f"slice: {fill.size} fill_values do not match the {ends[cdim] - starts[cdim]} "
                                      "channels of the output; give one value or one per channel")
            jobs.append(plan_region(ctx, src, starts, ends, policy, fill, cdim))
            rows.append(row)
        except (SampleError, ValueError) as err:
            chunk.fail(row, err)
    for row, result in zip(rows, launch_regions(ctx, jobs)):
        out[row] = result
    return [out]
