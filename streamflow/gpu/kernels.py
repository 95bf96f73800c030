"""CUDA C sources of the GPU operators, and their loader (cupy ``RawModule``).

Everything here mirrors the CPU reference in ``_native/imgproc.c`` operation
for operation, so the GPU results match it bit for bit where the order of the
float operations is the same, and within one uint8 step (1 LSB) otherwise:

* the module is compiled with ``--fmad=false`` (the C code is built with
  ``-ffp-contract=off``: no fused multiply-adds on either side);
* resampling filter weights are computed per output pixel with the C code's
  formulas, from the *same* filter tables (uploaded from
  ``_imgproc.filter_table``), and normalised by dividing by their sum;
* the horizontal pass accumulates taps in order (``acc = p0*w0; acc += pk*wk``),
  the vertical pass in pairs (``acc = wa*a + wb*b; acc += wa*a + wb*b``) as
  ``vrow_f32`` does. The CPU drops all-zero leading taps of a window; the GPU
  keeps them, which can regroup the vertical pairs: a float32 rounding
  difference, hence "within 1 LSB" for resize;
* uint8 resize output: clip to [0, 255], round half to even (``rintf``);
  crop_mirror_normalize uint8 output: round half away from zero; float16:
  round to nearest even (a port of ``f32_to_f16``).

Per-sample parameters travel in one ``int64`` device array per launch, ``NP``
slots per sample (floats bit-cast into the low 32 bits); the slot numbers are
the ``*_SLOTS`` dicts below, emitted into the source as ``#define``s so the
Python packing and the CUDA reading cannot drift apart. Each launch covers a
whole batch: ``gridDim.y`` is the sample, blocks stride over its pixels.

The sources need no headers, so they compile with plain NVRTC (the unit test
``tests/unit/test_nvrtc.py`` compiles them for compute_80 and compute_90
without a GPU). cupy is imported only by ``get_kernel``.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = [
    "CMN_SLOTS",
    "COMPILE_OPTIONS",
    "CROP_SLOTS",
    "FLIP_SLOTS",
    "KERNEL_NAMES",
    "MAX_CHANNELS",
    "NP",
    "RESAMPLE_SLOTS",
    "get_kernel",
    "module_source",
]

#: int64 slots per sample in a parameter array.
NP = 64
#: Channels a GPU kernel handles (input and padded output).
MAX_CHANNELS = 8

#: One resampling pass (and, for the fused kernel, its CMN epilogue: CMN_SLOTS).
RESAMPLE_SLOTS = {
    "SRC": 0,          # source pointer (uint8 or float32)
    "SRC_STRIDE": 1,   # source row stride [elements]
    "DST": 2,          # destination pointer
    "DST_STRIDE": 3,   # destination row stride [elements]
    "C": 4,            # channels
    "AXIS": 5,         # 0: vertical pass, 1: horizontal pass
    "OUT_LEN": 6,      # outputs along the pass axis (window length)
    "OTHER_LEN": 7,    # extent along the other axis
    "IN_LEN": 8,       # source extent along the pass axis (edge clamp)
    "D0": 9,           # window start along the pass axis (full-output coordinates)
    "NN": 10,          # 1: nearest neighbour
    "SUPPORT": 11,     # taps per output
    "TABLE": 12,       # filter table pointer (float32)
    "TABLE_N": 13,     # filter table length
    "FSCALE": 14,      # f: table entries per source pixel
    "SRCX0": 15,       # f: roi0 + (0.5 * scale - 0.5 - anchor)
    "SCALE": 16,       # f: (roi1 - roi0) / out_full
    "ROI0": 17,        # f: roi start (NN)
    "NN_ACC": 18,      # 1: NN coordinate stepped by repeated addition (DALI's row loop)
}

#: crop_mirror_normalize, alone (over a source image) or fused after a resize.
CMN_SLOTS = {
    "H": 19,           # source height (alone)
    "OUT": 20,         # output pointer
    "OH": 21,
    "OW": 22,
    "OC": 23,          # output channels (>= C with pad_output)
    "CHW": 24,         # 1: CHW output, 0: HWC
    "MIRROR": 25,
    "Y0": 26,          # window origin (source image, or the virtual resized image)
    "X0": 27,
    "RY0": 28,         # fused: computed resize window origin / size (resized coords)
    "RX0": 29,
    "RH": 30,
    "RW": 31,
    "ROUND_U8": 32,    # fused: the resize output is uint8 (round before normalizing)
    "SHIFT": 33,       # f
    "W": 34,           # source width (alone)
    "MEAN": 40,        # f x MAX_CHANNELS
    "MUL": 48,         # f x MAX_CHANNELS (scale / std)
    "FILL": 56,        # f x MAX_CHANNELS (output values of padded pixels / channels)
}

CROP_SLOTS = {
    "SRC": 0, "SRC_STRIDE": 1, "H": 2, "W": 3, "C": 4, "DST": 5, "OH": 6, "OW": 7,
    "Y0": 8, "X0": 9,
    "FILL": 16,        # raw element bits x MAX_CHANNELS
}

FLIP_SLOTS = {"SRC": 0, "DST": 1, "P": 2, "H": 3, "W": 4, "C": 5, "HFLIP": 6, "VFLIP": 7}

_ELEM = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_CMN_OUT = {"f32": "float", "f16": "unsigned short", "u8": "unsigned char"}
_SRC = {"u8": "unsigned char", "f32": "float"}

#: Every kernel of the module (the NVRTC test looks each one up).
KERNEL_NAMES: tuple[str, ...] = (
    *(f"sf_resample_{s}_{d}" for s in _SRC for d in ("u8", "f32")),
    *(f"sf_resample_cmn_{o}" for o in _CMN_OUT),
    *(f"sf_cmn_{s}_{o}" for s in _SRC for o in _CMN_OUT),
    *(f"sf_crop_b{b}" for b in _ELEM),
    *(f"sf_flip_b{b}" for b in _ELEM),
)

COMPILE_OPTIONS: tuple[str, ...] = ("--fmad=false", "--std=c++14")


def _defines() -> str:
    lines = [f"#define SF_NP {NP}", f"#define SF_MAXC {MAX_CHANNELS}"]
    for prefix, slots in (("RS", RESAMPLE_SLOTS), ("CM", CMN_SLOTS), ("CR", CROP_SLOTS), ("FL", FLIP_SLOTS)):
        lines += [f"#define {prefix}_{k} {v}" for k, v in slots.items()]
    return "\n".join(lines)


_BODY = r"""
typedef long long i64;
#define PF(P, k) __int_as_float((int)((P)[k]))

__device__ __forceinline__ int sf_clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* filter_eval of imgproc.c: linear interpolation in the table, 0 outside */
__device__ __forceinline__ float sf_filter_eval(const float* tab, int n, float x) {
    if (!(x > -1.0f)) return 0.0f;
    if (x >= (float)n) return 0.0f;
    int x0 = (int)floorf(x);
    int x1 = x0 + 1;
    float d = x - (float)x0;
    float f0 = x0 < 0 ? 0.0f : tab[x0];
    float f1 = x1 >= n ? 0.0f : tab[x1];
    return f0 + d * (f1 - f0);
}

__device__ __forceinline__ float sf_load(const unsigned char* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float sf_load(const float* p, i64 i) { return p[i]; }

/* uint8 resize output: clip, round half to even (store_row) */
__device__ __forceinline__ void sf_store(unsigned char* p, i64 i, float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v > 255.0f ? 255.0f : v;
    p[i] = (unsigned char)(int)rintf(v);
}
__device__ __forceinline__ void sf_store(float* p, i64 i, float v) { p[i] = v; }

/* crop_mirror_normalize outputs: uint8 half away from zero (sat_u8), f16 RNE (f32_to_f16) */
__device__ __forceinline__ unsigned short sf_f32_to_f16(float f) {
    unsigned int x = __float_as_uint(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int mant = x & 0x007FFFFFu;
    int exp = (int)((x >> 23) & 0xFF);
    if (exp == 0xFF) return (unsigned short)(sign | 0x7C00u | (mant ? 0x200u : 0u));
    int e = exp - 127 + 15;
    if (e >= 0x1F) return (unsigned short)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10) return (unsigned short)sign;
        mant |= 0x00800000u;
        int shift = 14 - e;
        unsigned int half = mant >> shift;
        unsigned int rem = mant & ((1u << shift) - 1u);
        unsigned int mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (unsigned short)(sign | half);
    }
    unsigned int half = sign | ((unsigned int)e << 10) | (mant >> 13);
    unsigned int rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (unsigned short)half;
}
__device__ __forceinline__ void sf_put(float* p, i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void sf_put(unsigned short* p, i64 i, float v) { p[i] = sf_f32_to_f16(v); }
__device__ __forceinline__ void sf_put(unsigned char* p, i64 i, float v) {
    unsigned char r;
    if (!(v > 0.0f)) r = 0;
    else if (v >= 255.0f) r = 255;
    else r = (unsigned char)(v + 0.5f);
    p[i] = r;
}

/* One output pixel of a resampling pass: output index d along the pass axis
 * (window coordinates), o along the other axis; acc gets C channels. */
template <typename S>
__device__ __forceinline__ void sf_resample_px(const i64* P, int d, int o, float* acc) {
    const S* src = (const S*)P[RS_SRC];
    const i64 stride = P[RS_SRC_STRIDE];
    const int C = (int)P[RS_C];
    const int axis = (int)P[RS_AXIS];
    const int in_len = (int)P[RS_IN_LEN];
    const int x = (int)P[RS_D0] + d;
    const i64 tap_step = axis == 0 ? stride : (i64)C;
    const i64 base = axis == 0 ? (i64)o * C : (i64)o * stride;
    const float scale = PF(P, RS_SCALE);
    if (P[RS_NN]) {
        const float roi0 = PF(P, RS_ROI0);
        float s;
        if (P[RS_NN_ACC]) {
            s = roi0 + 0.5f * scale;
            for (int i = 0; i < x; i++) s += scale;
        } else {
            s = roi0 + ((float)x + 0.5f) * scale;
        }
        const i64 at = base + (i64)sf_clampi((int)floorf(s), 0, in_len - 1) * tap_step;
#pragma unroll
        for (int c = 0; c < SF_MAXC; c++)
            if (c < C) acc[c] = sf_load(src, at + c) * 1.0f;
        return;
    }
    const int S_ = (int)P[RS_SUPPORT];
    const float* tab = (const float*)P[RS_TABLE];
    const int n = (int)P[RS_TABLE_N];
    const float fscale = PF(P, RS_FSCALE);
    const float sx0f = (float)x * scale + PF(P, RS_SRCX0);
    const int sx0 = (int)ceilf(sx0f);
    const float f0 = (float)sx0 - sx0f;
    float sum = 0.0f;
    for (int k = 0; k < S_; k++) sum += sf_filter_eval(tab, n, (f0 + (float)k) * fscale);
#define SF_W(k) (sum != 0.0f ? sf_filter_eval(tab, n, (f0 + (float)(k)) * fscale) / sum \
                             : sf_filter_eval(tab, n, (f0 + (float)(k)) * fscale))
#define SF_AT(k) (base + (i64)sf_clampi(sx0 + (k), 0, in_len - 1) * tap_step)
    if (axis == 1) {
        /* hrow: acc = p0 * w0; acc += pk * wk */
        float w = SF_W(0);
        i64 at = SF_AT(0);
#pragma unroll
        for (int c = 0; c < SF_MAXC; c++)
            if (c < C) acc[c] = sf_load(src, at + c) * w;
        for (int k = 1; k < S_; k++) {
            w = SF_W(k);
            at = SF_AT(k);
#pragma unroll
            for (int c = 0; c < SF_MAXC; c++)
                if (c < C) acc[c] += sf_load(src, at + c) * w;
        }
    } else {
        /* vrow_f32: pairs of taps */
        int k;
        if (S_ >= 2) {
            const float wa = SF_W(0), wb = SF_W(1);
            const i64 a = SF_AT(0), b = SF_AT(1);
#pragma unroll
            for (int c = 0; c < SF_MAXC; c++)
                if (c < C) acc[c] = wa * sf_load(src, a + c) + wb * sf_load(src, b + c);
            k = 2;
        } else {
            const float wa = SF_W(0);
            const i64 a = SF_AT(0);
#pragma unroll
            for (int c = 0; c < SF_MAXC; c++)
                if (c < C) acc[c] = wa * sf_load(src, a + c);
            k = 1;
        }
        for (; k + 1 < S_; k += 2) {
            const float wa = SF_W(k), wb = SF_W(k + 1);
            const i64 a = SF_AT(k), b = SF_AT(k + 1);
#pragma unroll
            for (int c = 0; c < SF_MAXC; c++)
                if (c < C) acc[c] += wa * sf_load(src, a + c) + wb * sf_load(src, b + c);
        }
        for (; k < S_; k++) {
            const float wa = SF_W(k);
            const i64 a = SF_AT(k);
#pragma unroll
            for (int c = 0; c < SF_MAXC; c++)
                if (c < C) acc[c] += wa * sf_load(src, a + c);
        }
    }
#undef SF_W
#undef SF_AT
}

/* A resampling pass over a whole batch: sample = blockIdx.y. */
template <typename S, typename D>
__device__ void sf_resample_pass(const i64* params) {
    const i64* P = params + (i64)blockIdx.y * SF_NP;
    const int out_len = (int)P[RS_OUT_LEN], other = (int)P[RS_OTHER_LEN];
    const int axis = (int)P[RS_AXIS], C = (int)P[RS_C];
    const i64 total = (i64)out_len * other;
    D* dst = (D*)P[RS_DST];
    const i64 dstride = P[RS_DST_STRIDE];
    const int ncols = axis == 0 ? other : out_len;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
        const int row = (int)(i / ncols), col = (int)(i % ncols);
        float acc[SF_MAXC];
        sf_resample_px<S>(P, axis == 0 ? row : col, axis == 0 ? col : row, acc);
        const i64 at = (i64)row * dstride + (i64)col * C;
#pragma unroll
        for (int c = 0; c < SF_MAXC; c++)
            if (c < C) sf_store(dst, at + c, acc[c]);
    }
}

/* crop_mirror_normalize over a batch. RESAMPLE: the pixels come from the
 * second resampling pass (fused resize); otherwise from a source image. */
template <typename S, typename D, bool RESAMPLE>
__device__ void sf_cmn(const i64* params) {
    const i64* P = params + (i64)blockIdx.y * SF_NP;
    const int oh = (int)P[CM_OH], ow = (int)P[CM_OW], oc = (int)P[CM_OC], C = (int)P[RS_C];
    const int chw = (int)P[CM_CHW], mirror = (int)P[CM_MIRROR];
    const int y0 = (int)P[CM_Y0], x0 = (int)P[CM_X0];
    const float shift = PF(P, CM_SHIFT);
    D* out = (D*)P[CM_OUT];
    const i64 total = (i64)oh * ow;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
        const int y = (int)(i / ow), x = (int)(i % ow);
        const int wy = y0 + y, wx = x0 + (mirror ? ow - 1 - x : x);
        float v[SF_MAXC];
        bool inside;
        if (RESAMPLE) {
            const int ry0 = (int)P[CM_RY0], rx0 = (int)P[CM_RX0];
            inside = wy >= ry0 && wy < ry0 + (int)P[CM_RH] && wx >= rx0 && wx < rx0 + (int)P[CM_RW];
            if (inside) {
                if (P[RS_AXIS] == 0) sf_resample_px<float>(P, wy - ry0, wx - rx0, v);
                else sf_resample_px<float>(P, wx - rx0, wy - ry0, v);
                if (P[CM_ROUND_U8]) {
#pragma unroll
                    for (int c = 0; c < SF_MAXC; c++) {
                        float t = v[c] > 0.0f ? v[c] : 0.0f;
                        t = t > 255.0f ? 255.0f : t;
                        v[c] = rintf(t);
                    }
                }
            }
        } else {
            inside = wy >= 0 && wy < (int)P[CM_H] && wx >= 0 && wx < (int)P[CM_W];
            if (inside) {
                const S* src = (const S*)P[RS_SRC];
                const i64 at = (i64)wy * P[RS_SRC_STRIDE] + (i64)wx * C;
#pragma unroll
                for (int c = 0; c < SF_MAXC; c++)
                    if (c < C) v[c] = sf_load(src, at + c);
            }
        }
#pragma unroll
        for (int c = 0; c < SF_MAXC; c++) {
            if (c >= oc) break;
            const float r = (inside && c < C) ? (v[c] - PF(P, CM_MEAN + c)) * PF(P, CM_MUL + c) + shift
                                              : PF(P, CM_FILL + c);
            const i64 at = chw ? ((i64)c * oh + y) * ow + x : ((i64)y * ow + x) * oc + c;
            sf_put(out, at, r);
        }
    }
}

/* crop (pad with fill bits outside the image), any element size */
template <typename T>
__device__ void sf_crop(const i64* params) {
    const i64* P = params + (i64)blockIdx.y * SF_NP;
    const T* src = (const T*)P[CR_SRC];
    T* dst = (T*)P[CR_DST];
    const i64 stride = P[CR_SRC_STRIDE];
    const int H = (int)P[CR_H], W = (int)P[CR_W], C = (int)P[CR_C];
    const int ow = (int)P[CR_OW], y0 = (int)P[CR_Y0], x0 = (int)P[CR_X0];
    const i64 total = (i64)P[CR_OH] * ow * C;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        const i64 px = i / C;
        const int y = (int)(px / ow), x = (int)(px % ow);
        const int sy = y0 + y, sx = x0 + x;
        if (sy >= 0 && sy < H && sx >= 0 && sx < W) dst[i] = src[(i64)sy * stride + (i64)sx * C + c];
        else dst[i] = (T)P[CR_FILL + (c < SF_MAXC ? c : 0)];
    }
}

/* flip of a contiguous (planes, H, W, C) sample, any element size */
template <typename T>
__device__ void sf_flip(const i64* params) {
    const i64* P = params + (i64)blockIdx.y * SF_NP;
    const T* src = (const T*)P[FL_SRC];
    T* dst = (T*)P[FL_DST];
    const int H = (int)P[FL_H], W = (int)P[FL_W], C = (int)P[FL_C];
    const int hf = (int)P[FL_HFLIP], vf = (int)P[FL_VFLIP];
    const i64 total = (i64)P[FL_P] * H * W * C;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        i64 t = i / C;
        const int x = (int)(t % W);
        t /= W;
        const int y = (int)(t % H);
        const i64 p = t / H;
        const int sx = hf ? W - 1 - x : x, sy = vf ? H - 1 - y : y;
        dst[i] = src[((p * H + sy) * W + sx) * C + c];
    }
}
"""


def _wrappers() -> str:
    out = []
    for s, st in _SRC.items():
        for d, dt in (("u8", "unsigned char"), ("f32", "float")):
            out.append(f'extern "C" __global__ void sf_resample_{s}_{d}(const i64* p) {{ sf_resample_pass<{st}, {dt}>(p); }}')
    for o, ot in _CMN_OUT.items():
        out.append(f'extern "C" __global__ void sf_resample_cmn_{o}(const i64* p) {{ sf_cmn<float, {ot}, true>(p); }}')
        for s, st in _SRC.items():
            out.append(f'extern "C" __global__ void sf_cmn_{s}_{o}(const i64* p) {{ sf_cmn<{st}, {ot}, false>(p); }}')
    for b, t in _ELEM.items():
        out.append(f'extern "C" __global__ void sf_crop_b{b}(const i64* p) {{ sf_crop<{t}>(p); }}')
        out.append(f'extern "C" __global__ void sf_flip_b{b}(const i64* p) {{ sf_flip<{t}>(p); }}')
    return "\n".join(out)


def module_source() -> str:
    """The complete CUDA source of the operator kernels (no includes needed)."""
    return "\n".join([_defines(), _BODY, _wrappers(), ""])


_modules: dict[int, Any] = {}
_lock = threading.Lock()


def get_kernel(name: str) -> Any:
    """The compiled kernel ``name`` for the current device (compiled once, cached).

    Kernels launch on cupy's *current* stream: call them inside ``with stream:``
    in the thread that launches (never across an ``await``).
    """
    import cupy

    device = cupy.cuda.Device().id
    with _lock:
        module = _modules.get(device)
        if module is None:
            module = cupy.RawModule(code=module_source(), options=COMPILE_OPTIONS)
            _modules[device] = module
    return module.get_function(name)
