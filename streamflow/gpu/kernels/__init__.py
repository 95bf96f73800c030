"""The CUDA C sources of the GPU operators, their parameter layouts and their compiled module.

One ``.cu`` file per operator family beside this module (``resample.cu``:
resize and the fused resize + crop_mirror_normalize pass;
``crop_mirror_normalize.cu``; ``crop.cu``; ``flip.cu``; ``slice.cu``: slice and paste;
``brightness_contrast.cu``; ``convolution.cu``: gaussian_blur; ``color.cu``: the
color twists and color_space_conversion; ``cast.cu``; ``warp.cu``: warp_affine and
rotate), sharing ``common.cuh`` (and ``convert.cuh``: saturating stores). They need no headers, so they compile with plain NVRTC (the
unit tests compile them for compute_80 and compute_90 without a GPU) and, with
a thin shim, as host C++ (``_native/host_build.py``: CI runs every kernel on the CPU).

Per-sample parameters travel in one ``int64`` array per launch, ``NP`` slots
per sample (floats bit-cast into the low 32 bits, pointers as addresses); the
slot numbers below are emitted into the source as ``#define``s, so the Python
packing and the CUDA reading cannot drift apart. Each launch covers a whole
batch: ``gridDim.y`` is the sample, ``blockIdx.x`` strides over output rows,
``threadIdx.x`` over a row.

Arithmetic (kept equal to ``_native/imgproc.c``, which is built with
``-ffp-contract=off``):

* compiled with ``--fmad=false``: no fused multiply-adds on either side;
* resize uses the C planner's own taps and weights (``imgproc.resample_plan``)
  and sums them in the C code's order, so it is bit-identical to the CPU;
  uint8 outputs round half to even, crop_mirror_normalize's uint8 outputs half
  away from zero, float16 to nearest even;
* cupy adds ``-ftz=true`` to every compilation (``CUPY_ADDED_OPTIONS``):
  subnormal intermediates flush to zero on the GPU and not on the CPU. No
  image value, mean or weight of the filters is subnormal, so this shows only
  for inputs that are themselves subnormal floats.

cupy is imported only by ``device_module``.
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

__all__ = [
    "BC_ROW",
    "BC_SLOTS",
    "CAST_SLOTS",
    "CAST_TYPES",
    "CMN_SLOTS",
    "CSC_SLOTS",
    "CT_ROW",
    "CT_SLOTS",
    "CONVERT_TYPES",
    "CONV_SLOTS",
    "COMPILE_OPTIONS",
    "CROP_SLOTS",
    "CUPY_ADDED_OPTIONS",
    "FLIP_SLOTS",
    "KERNEL_NAMES",
    "MAX_CHANNELS",
    "NP",
    "RESAMPLE_SLOTS",
    "SLICE_MAX_DIMS",
    "SLICE_SLOTS",
    "WARP_SLOTS",
    "device_module",
    "module_source",
]

#: int64 slots per sample in a parameter array.
NP = 32
#: Channels a thread accumulates at once (any count works: channels go in groups of this many).
MAX_CHANNELS = 8

#: One resampling pass (and, for the fused kernel, its normalize epilogue: CMN_SLOTS).
RESAMPLE_SLOTS = {
    "SRC": 0,          # source pointer (uint8 or float32)
    "SRC_STRIDE": 1,   # source row stride [elements]
    "DST": 2,          # destination pointer (plain pass)
    "DST_STRIDE": 3,   # destination row stride [elements]
    "C": 4,            # channels
    "AXIS": 5,         # 0: vertical pass, 1: horizontal pass
    "OUT_LEN": 6,      # outputs along the pass axis
    "OTHER_LEN": 7,    # lines of the other axis
    "OTHER0": 8,       # first source line of the other axis
    "TAP0": 9,         # subtracted from every tap (the source starts at this line)
    "SUPPORT": 10,     # taps per output
    "IDX": 11,         # int32 taps pointer, OUT_LEN x SUPPORT
    "W": 12,           # float32 weights pointer, OUT_LEN x SUPPORT
}

#: crop_mirror_normalize, alone (over a source image) or fused after a resize.
CMN_SLOTS = {
    "H": 13,           # source height (alone)
    "W": 14,           # source width (alone)
    "OUT": 15,         # output pointer
    "OH": 16,
    "OW": 17,
    "OC": 18,          # output channels (>= C with pad_output)
    "CHW": 19,         # 1: CHW output, 0: HWC
    "MIRROR": 20,
    "Y0": 21,          # window origin (source image, or the virtual resized image)
    "X0": 22,
    "RY0": 23,         # fused: the resampled region (resized coordinates)
    "RX0": 24,
    "RH": 25,
    "RW": 26,
    "ROUND_U8": 27,    # fused: the resize output is uint8 (round before normalizing)
    "SHIFT": 28,       # f
    "CHAN": 29,        # float32 pointer: mean x C, mul x C (scale / std), fill x OC
}

CROP_SLOTS = {
    "SRC": 0, "SRC_STRIDE": 1, "H": 2, "W": 3, "C": 4, "DST": 5, "OH": 6, "OW": 7,
    "Y0": 8, "X0": 9,
    "FILL": 10,        # pointer to C elements of the image's type (raw bits)
}

FLIP_SLOTS = {"SRC": 0, "DST": 1, "P": 2, "H": 3, "W": 4, "C": 5, "HFLIP": 6, "VFLIP": 7}

#: slice and paste: an N-D region, up to SLICE_MAX_DIMS dimensions (see slice.cu).
SLICE_MAX_DIMS = 6
SLICE_SLOTS = {
    "SRC": 0, "DST": 1,
    "FILL": 2,         # pointer to NFILL elements of the sample's type (raw bits)
    "NDIM": 3, "POLICY": 4, "CDIM": 5, "NFILL": 6,
    **{f"IN{d}": 7 + d for d in range(SLICE_MAX_DIMS)},        # source extents
    **{f"OUT{d}": 13 + d for d in range(SLICE_MAX_DIMS)},      # output extents
    **{f"START{d}": 19 + d for d in range(SLICE_MAX_DIMS)},    # region start (may be negative)
}

#: brightness_contrast: out = in * MUL + ADD (floats); N elements per sample.
BC_SLOTS = {"SRC": 0, "DST": 1, "N": 2, "MUL": 3, "ADD": 4}
#: Elements of a brightness_contrast sample per grid row.
BC_ROW = 4096

#: separable convolution (gaussian_blur): P planes of H x W x C, float32 windows KY, KX.
CONV_SLOTS = {"SRC": 0, "DST": 1, "TMP": 2, "P": 3, "H": 4, "W": 5, "C": 6, "KY": 7, "NY": 8, "KX": 9, "NX": 10}
#: Element types of brightness_contrast and the convolution passes (suffix -> C type).
CONVERT_TYPES = {"u8": "unsigned char", "u16": "unsigned short", "i16": "short", "f32": "float"}

#: color_twist (hue, saturation, hsv): out = M @ pixel + OFFSET; N pixels of 3 channels per sample.
CT_SLOTS = {"SRC": 0, "DST": 1, "N": 2, **{f"M{k}": 3 + k for k in range(9)}, "OFFSET": 12}
#: Pixels of a color kernel's sample per grid row.
CT_ROW = 1024
#: color_space_conversion (uint8): N pixels; MODE, channel orders; K: the float32 constants.
CSC_SLOTS = {"SRC": 0, "DST": 1, "N": 2, "MODE": 3, "REV_IN": 4, "REV_OUT": 5, "K": 6, "CIN": 7, "COUT": 8}
#: cast: N elements per sample (BC_ROW per grid row).
CAST_SLOTS = {"SRC": 0, "DST": 1, "N": 2}
#: Element types of cast (suffix -> C type; float16 as sf_half bits).
CAST_TYPES = {"u8": "unsigned char", "i8": "signed char", "u16": "unsigned short", "i16": "short",
              "f16": "sf_half", "f32": "float"}
#: warp_affine / rotate of HWC images: M0..M5 the destination-to-source matrix (float32 bits);
#: INTERP 0 nearest, 1 linear; FILL: float32 per channel, or 0 to clamp to the edge.
WARP_SLOTS = {"SRC": 0, "DST": 1, "FILL": 2, "H": 3, "W": 4, "C": 5, "OH": 6, "OW": 7,
              **{f"M{k}": 8 + k for k in range(6)}, "INTERP": 14}

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
    *(f"sf_slice_b{b}" for b in _ELEM),
    *(f"sf_brightness_contrast_{i}_{o}" for i in CONVERT_TYPES for o in CONVERT_TYPES),
    *(f"sf_conv_h_{t}" for t in CONVERT_TYPES),
    *(f"sf_conv_v_{t}" for t in CONVERT_TYPES),
    *(f"sf_color_twist_{i}_{o}" for i in CONVERT_TYPES for o in CONVERT_TYPES),
    "sf_csc",
    *(f"sf_cast_{i}_{o}" for i in CAST_TYPES for o in CAST_TYPES),
    *(f"sf_warp_affine_{i}_{o}" for i in CONVERT_TYPES for o in CONVERT_TYPES),
)

#: What streamflow passes to NVRTC.
COMPILE_OPTIONS: tuple[str, ...] = ("--fmad=false", "--std=c++14")
#: What cupy adds to every compilation after ours (so the NVRTC test compiles with both).
CUPY_ADDED_OPTIONS: tuple[str, ...] = ("-ftz=true",)

_FILES = ("common.cuh", "resample.cu", "crop_mirror_normalize.cu", "crop.cu", "flip.cu", "slice.cu", "convert.cuh",
          "brightness_contrast.cu", "convolution.cu", "color.cu", "cast.cu", "warp.cu")


def _defines() -> str:
    lines = [f"#define SF_NP {NP}", f"#define SF_MAXC {MAX_CHANNELS}"]
    for prefix, slots in (("RS", RESAMPLE_SLOTS), ("CM", CMN_SLOTS), ("CR", CROP_SLOTS), ("FL", FLIP_SLOTS),
                          ("SL", SLICE_SLOTS), ("BC", BC_SLOTS), ("CV", CONV_SLOTS), ("CSC", CSC_SLOTS),
                          ("CA", CAST_SLOTS), ("CT", CT_SLOTS), ("WA", WARP_SLOTS)):
        lines += [f"#define {prefix}_{k} {v}" for k, v in slots.items()]
    lines += ["#define CT_M CT_M0", "#define WA_M WA_M0"]  # the matrices: M0 + k
    lines.append(f"#define BC_ROW {BC_ROW}")
    lines.append(f"#define CT_ROW {CT_ROW}")
    return "\n".join(lines)


def _wrappers() -> str:
    out = []
    for s, st in _SRC.items():
        for d, dt in (("u8", "unsigned char"), ("f32", "float")):
            out.append(f'extern "C" __global__ void sf_resample_{s}_{d}(const i64* p) {{ sf_resample_pass<{st}, {dt}>(p); }}')
    for o, ot in _CMN_OUT.items():
        out.append(f'extern "C" __global__ void sf_resample_cmn_{o}(const i64* p) {{ sf_resample_cmn<{ot}>(p); }}')
        for s, st in _SRC.items():
            out.append(f'extern "C" __global__ void sf_cmn_{s}_{o}(const i64* p) {{ sf_cmn<{st}, {ot}>(p); }}')
    for b, t in _ELEM.items():
        out.append(f'extern "C" __global__ void sf_crop_b{b}(const i64* p) {{ sf_crop<{t}>(p); }}')
        out.append(f'extern "C" __global__ void sf_flip_b{b}(const i64* p) {{ sf_flip<{t}>(p); }}')
        out.append(f'extern "C" __global__ void sf_slice_b{b}(const i64* p) {{ sf_slice<{t}>(p); }}')
    for i, it in CONVERT_TYPES.items():
        for o, ot in CONVERT_TYPES.items():
            out.append(f'extern "C" __global__ void sf_brightness_contrast_{i}_{o}(const i64* p) '
                       f'{{ sf_brightness_contrast<{it}, {ot}>(p); }}')
        out.append(f'extern "C" __global__ void sf_conv_h_{i}(const i64* p) {{ sf_conv_h<{it}>(p); }}')
        out.append(f'extern "C" __global__ void sf_conv_v_{i}(const i64* p) {{ sf_conv_v<{it}>(p); }}')
        for o, ot in CONVERT_TYPES.items():
            out.append(f'extern "C" __global__ void sf_color_twist_{i}_{o}(const i64* p) {{ sf_color_twist<{it}, {ot}>(p); }}')
            out.append(f'extern "C" __global__ void sf_warp_affine_{i}_{o}(const i64* p) {{ sf_warp_affine<{it}, {ot}>(p); }}')
    out.append('extern "C" __global__ void sf_csc(const i64* p) { sf_csc_impl(p); }')
    for i, it in CAST_TYPES.items():
        for o, ot in CAST_TYPES.items():
            out.append(f'extern "C" __global__ void sf_cast_{i}_{o}(const i64* p) {{ sf_cast<{it}, {ot}>(p); }}')
    return "\n".join(out)


def module_source() -> str:
    """The complete CUDA source of the operator kernels (no includes needed)."""
    folder = resources.files(__package__)
    parts = [_defines(), *(folder.joinpath(name).read_text() for name in _FILES), _wrappers(), ""]
    return "\n".join(parts)


_modules: dict[int, Any] = {}
_lock = threading.Lock()


def device_module(device_id: int) -> Any:
    """The kernels compiled for GPU ``device_id`` (a cupy ``RawModule``, compiled once).

    Kernels launch on cupy's *current* stream unless one is passed.
    """
    import cupy

    with _lock:
        module = _modules.get(device_id)
        if module is None:
            with cupy.cuda.Device(device_id):
                module = cupy.RawModule(code=module_source(), options=COMPILE_OPTIONS)
                module.compile()
            _modules[device_id] = module
    return module
