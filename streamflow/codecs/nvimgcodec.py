"""Image decoding through nvImageCodec (the only module that imports it).

``ImageDecoder`` turns encoded images (JPEG, PNG, BMP, TIFF, WebP, JPEG 2000,
PNM) into HWC ``uint8`` arrays, one result per input: an array, or a
``DecodeError`` that names the source and the cause. Bad data never raises.

Facts this module relies on (nvImageCodec 0.9, checked on the CPU backend):

* ``nvidia.nvimgcodec`` is imported lazily, on the first decoder built, so
  ``import streamflow`` stays light. Before that import, ``PYNVIMGCODEC_VERBOSITY``
  is set to ``0`` unless the user set it: this silences the per-failure
  ``[ERROR] [jpeg_parser] ...`` lines and the ``[ERROR] [nvjpeg-ext] ...``
  lines. The ``Failed to load nvjpeg library!`` lines printed when the
  extensions load are plain ``fprintf`` calls that no setting of the library
  turns off (only installing those libraries, or pointing
  ``NVIMGCODEC_EXTENSIONS_PATH`` at a folder without the GPU extensions, does).
* One ``nvimgcodec.Decoder`` used from several threads at once crashes, so the
  decoder keeps one per thread (``threading.local``).
* Decoding returns ``None`` on failure; ``CodeStream(bytes)`` raises
  ``RuntimeError`` on a header it cannot parse. Both become ``DecodeError``.
* ``CodeStream.height/width`` are the stored (un-rotated) dimensions. The EXIF
  orientation is not exposed by the Python API, so for JPEG it is read here
  from the APP1 segment (``jpeg_exif_orientation``).
* A ``Region`` given to ``get_sub_code_stream`` is in the coordinates of the
  *oriented* output when ``apply_exif_orientation`` is on: a region decode
  equals cropping the full (oriented) decode bit for bit, for all 8 EXIF
  orientations and 4:2:0/4:2:2/4:4:4 (tested on the CPU backend). So regions
  pass through unconverted.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DecodeError, MissingDependencyError
from ..types import Device, ImageType, parse_device, parse_image_type

__all__ = [
    "CONFIRMED_BAD",
    "GpuImageDecoder",
    "ImageDecoder",
    "Region",
    "detect_format",
    "jpeg_exif_orientation",
    "nvimgcodec_module",
    "rgb_to_ycbcr",
]

Region = tuple[int, int, int, int]
"""(y0, x0, y1, x1), end-exclusive, in oriented image coordinates."""

_NV: Any = None
_NV_LOCK = threading.Lock()


def nvimgcodec_module() -> Any:
    """Import ``nvidia.nvimgcodec`` once (quietly) and return it.

    Raises:
        MissingDependencyError: the package is not installed.
    """
    global _NV
    if _NV is not None:
        return _NV
    with _NV_LOCK:
        if _NV is None:
            # Silence the library's own per-failure log lines: every failure is
            # reported to the caller as a DecodeError instead. setdefault keeps
            # a value the user chose (e.g. PYNVIMGCODEC_VERBOSITY=2 to debug).
            os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "0")
            try:
                nv = _import_without_missing_library_noise()
            except ImportError as exc:
                raise MissingDependencyError(
                    "nvidia-nvimgcodec-cu13", "gpu", "image decoding"
                ) from exc
            _NV = nv
    return _NV


# Lines nvImageCodec prints (with plain fprintf) at import when optional GPU
# codec libraries are absent, as on every CPU-only machine: noise, not errors.
_IMPORT_NOISE = ("Failed to load nvjpeg", "Failed to load nvtiff", "If using nvImageCodec's Python",
                 "Note: If using nvImageCodec", "[nvjpeg-ext]", "[nvjpeg2k_ext]", "[nvtiff_ext]",
                 "python -m pip install nvidia-nvjpeg", "python3 -m pip install nvidia-nvjpeg")


def _import_without_missing_library_noise() -> Any:
    """Import nvimgcodec with fd 2 captured, then re-print all but the known noise.

    Runs once per process, under ``_NV_LOCK``; any other stderr output in that
    short window is passed through, not lost.
    """
    import tempfile

    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr: nothing to filter
        import nvidia.nvimgcodec as nv

        return nv
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            import nvidia.nvimgcodec as nv
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    kept = [line for line in text.splitlines() if line.strip() and not any(n in line for n in _IMPORT_NOISE)]
    if kept:
        os.write(2, ("\n".join(kept) + "\n").encode())
    return nv


# --------------------------------------------------------------------------
# Host images without the reference leak of nvImageCodec 0.9
# --------------------------------------------------------------------------
# nvImageCodec 0.9's ``Image.__array_interface__`` returns the data pointer as
# a Python int that carries one reference too many, so every decoded image
# leaked 32 bytes (about 115 MB per hour at 1000 img/s; measured with
# tracemalloc and sys.getrefcount). We read the interface once, build the
# array from it ourselves, and give that one reference back. Whether the extra
# reference is there is measured at run time, against an int made the same
# way, so a fixed nvImageCodec is left alone.


class _HostView:
    """Exposes an interface dict to numpy and keeps the Image (the buffer's owner) alive."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, interface: dict[str, Any], owner: Any) -> None:
        self.__array_interface__ = interface
        self._owner = owner


_POINTER_LEAK: bool | None = None  # None: not measured yet


def _leaks_pointer_reference(img: Any) -> bool:
    interface = img.__array_interface__
    pointer = interface["data"][0]
    del interface
    control = int(str(pointer))  # a fresh int held by one local, like ``pointer``
    return sys.getrefcount(pointer) == sys.getrefcount(control) + 1


def host_array(img: Any) -> np.ndarray:
    """A numpy view of a host ``nvimgcodec.Image`` (no copy, no leak)."""
    global _POINTER_LEAK
    if _POINTER_LEAK is None:
        _POINTER_LEAK = _leaks_pointer_reference(img)
    interface = img.__array_interface__
    array = np.asarray(_HostView(interface, img))
    if _POINTER_LEAK:
        ctypes.pythonapi.Py_DecRef(ctypes.py_object(interface["data"][0]))
    return array


# --------------------------------------------------------------------------
# Header sniffing (pure Python, no nvimgcodec): format names and EXIF.
# --------------------------------------------------------------------------


def detect_format(head: bytes) -> str | None:
    """The image format named by the first bytes, or ``None`` if unknown.

    Returns one of ``jpeg png bmp tiff webp jpeg2k pnm gif`` (``gif`` is
    recognised only to say that it is unsupported).
    """
    if head[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[:2] == b"BM":
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:12] == b"\x00\x00\x00\x0cjP  \r\n\x87\n" or head[:4] == b"\xff\x4f\xff\x51":
        return "jpeg2k"
    if len(head) >= 2 and head[0:1] == b"P" and head[1:2] in b"123456":
        return "pnm"
    if head[:4] == b"GIF8":
        return "gif"
    return None


_UNSUPPORTED = {"gif": "GIF is not supported by nvImageCodec"}


def jpeg_exif_orientation(data: bytes | memoryview) -> int:
    """The EXIF orientation (1..8) stored in a JPEG's APP1 segment; 1 if none.

    Walks the markers up to the first SOF/SOS, reads the first ``Exif`` APP1
    and its IFD0 tag 0x0112. Malformed EXIF counts as "no orientation".
    """
    mv = memoryview(data)
    n = len(mv)
    i = 2
    while i + 4 <= n:
        if mv[i] != 0xFF:
            return 1
        marker = mv[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        if marker == 0xDA or 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return 1  # SOS / SOF: no EXIF before the image data
        seg_len = (mv[i + 2] << 8) | mv[i + 3]
        if seg_len < 2:
            return 1
        if marker == 0xE1 and bytes(mv[i + 4 : i + 10]) == b"Exif\x00\x00":
            return _tiff_orientation(bytes(mv[i + 10 : i + 2 + seg_len]))
        i += 2 + seg_len
    return 1


def _tiff_orientation(tiff: bytes) -> int:
    try:
        bo = tiff[:2]
        if bo == b"II":
            end = "<"
        elif bo == b"MM":
            end = ">"
        else:
            return 1
        (ifd,) = struct.unpack_from(end + "I", tiff, 4)
        (count,) = struct.unpack_from(end + "H", tiff, ifd)
        for k in range(count):
            off = ifd + 2 + 12 * k
            tag, typ, _cnt = struct.unpack_from(end + "HHI", tiff, off)
            if tag == 0x0112:
                if typ == 3:  # SHORT
                    (val,) = struct.unpack_from(end + "H", tiff, off + 8)
                elif typ == 4:  # LONG
                    (val,) = struct.unpack_from(end + "I", tiff, off + 8)
                else:
                    return 1
                return val if 1 <= val <= 8 else 1
    except struct.error:
        return 1
    return 1


# --------------------------------------------------------------------------
# Colour conversion
# --------------------------------------------------------------------------

# DALI's decoders produce YCbCr with ITU-R BT.601 "studio range" coefficients
# (Y in 16..235, Cb/Cr in 16..240): kernels::color::itu_r_bt_601::rgb_to_ycbcr,
# which dali/operators/imgcodec uses for DALI_YCbCr output. uint8 results are
# rounded and saturated; gray pixels (R == G == B) get Cb = Cr = 128 exactly.
_YCBCR_M = np.array(
    [[0.257, 0.504, 0.098], [-0.148, -0.291, 0.439], [0.439, -0.368, -0.071]],
    dtype=np.float32,
)
_YCBCR_OFF = np.array([16.0, 128.0, 128.0], dtype=np.float32)


def rgb_to_ycbcr(rgb: Any, xp: Any = np) -> Any:
    """HWC uint8 RGB -> HWC uint8 YCbCr (DALI's BT.601 formula); numpy or cupy."""
    f = rgb.astype(xp.float32)
    m = xp.asarray(_YCBCR_M)
    out = f @ m.T + xp.asarray(_YCBCR_OFF)
    gray = (rgb[..., 0] == rgb[..., 1]) & (rgb[..., 1] == rgb[..., 2])
    out[..., 1] = xp.where(gray, 128.0, out[..., 1])
    out[..., 2] = xp.where(gray, 128.0, out[..., 2])
    return xp.clip(xp.rint(out), 0, 255).astype(xp.uint8)


# --------------------------------------------------------------------------
# The decoder
# --------------------------------------------------------------------------


def _as_input(item: Any) -> bytes | bytearray | np.ndarray:
    """bytes/bytearray pass through; numpy becomes flat contiguous uint8."""
    if isinstance(item, (bytes, bytearray)):
        return item
    if isinstance(item, np.ndarray):
        arr = np.ascontiguousarray(item)
        if arr.dtype != np.uint8:
            arr = arr.view(np.uint8)
        return arr.reshape(-1)
    if isinstance(item, memoryview):  # nvimgcodec rejects memoryview
        return np.frombuffer(item, dtype=np.uint8)
    raise TypeError(f"expected bytes or a uint8 numpy array, got {type(item).__name__}")


def _check_region(region: Any) -> Region:
    if len(region) != 4:
        raise ValueError(f"region must be (y0, x0, y1, x1), got {region!r}")
    y0, x0, y1, x1 = (int(v) for v in region)
    if y0 < 0 or x0 < 0 or y1 <= y0 or x1 <= x0:
        raise ValueError(f"region (y0, x0, y1, x1) must be non-empty and non-negative: {region!r}")
    return (y0, x0, y1, x1)


class ImageDecoder:
    """Decodes encoded images on one backend.

    Thread-safe: holds one nvimgcodec ``Decoder`` per thread
    (``threading.local``), because one ``Decoder`` used from several threads
    crashes. On the CPU each thread's decoder uses one CPU thread
    (``max_num_cpu_threads=1``): parallelism comes from the caller's threads.

    Args:
        device: ``Device.CPU`` (host numpy arrays) or ``Device.MIXED`` (host
            input, GPU output; see ``_decode_batch_gpu``, untested).
        device_id: GPU for ``MIXED`` (default: the current device).
        output_type: RGB, BGR, GRAY (HWC, C=1) or YCbCr (DALI's BT.601).
        adjust_orientation: apply the EXIF orientation (default on).
        max_pixels: refuse images whose header claims more pixels than this
            (decompression-bomb guard, checked before decoding); ``None``: no limit.
    """

    def __init__(
        self,
        device: Device | str = Device.CPU,
        *,
        device_id: int | None = None,
        output_type: ImageType | str = ImageType.RGB,
        adjust_orientation: bool = True,
        max_pixels: int | None = 128_000_000,
    ) -> None:
        self.device = parse_device(device)
        if self.device is Device.GPU:
            raise ValueError("image decoders run on 'cpu' or 'mixed', not 'gpu'")
        self.output_type = parse_image_type(output_type)
        if self.output_type is ImageType.ANY_DATA:
            raise ValueError("output_type ANY_DATA is not supported by the image decoder")
        self.device_id = device_id
        self.adjust_orientation = bool(adjust_orientation)
        if max_pixels is not None and max_pixels <= 0:
            raise ValueError(f"max_pixels must be positive or None, got {max_pixels}")
        self.max_pixels = max_pixels
        self._local = threading.local()
        nv = nvimgcodec_module()  # fail early when the package is missing
        self._params = self._make_params(nv)

    # -- nvimgcodec objects -------------------------------------------------

    def _make_params(self, nv: Any) -> Any:
        kw: dict[str, Any] = {"apply_exif_orientation": self.adjust_orientation}
        if self.output_type is ImageType.GRAY:
            # Decode straight to gray, as DALI does: for JPEG this is the Y
            # plane itself (libjpeg's grayscale output), no RGB round trip.
            kw["color_spec"] = nv.ColorSpec.GRAY
        elif self.output_type is ImageType.BGR:
            kw["color_spec"] = nv.ColorSpec.SRGB
            kw["sample_format"] = nv.SampleFormat.I_BGR
        else:  # RGB, and YCbCr (converted from RGB: the CPU backend has no SYCC output)
            kw["color_spec"] = nv.ColorSpec.SRGB
            kw["sample_format"] = nv.SampleFormat.I_RGB
        return nv.DecodeParams(**kw)

    def _decoder(self) -> Any:
        """This thread's nvimgcodec Decoder (built on first use)."""
        dec = getattr(self._local, "decoder", None)
        if dec is None:
            nv = nvimgcodec_module()
            if self.device is Device.CPU:
                dec = nv.Decoder(
                    device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY,
                    max_num_cpu_threads=1,
                    backends=[nv.Backend(nv.BackendKind.CPU_ONLY)],
                )
            else:
                dec = self._make_gpu_decoder(nv)
            self._local.decoder = dec
        return dec

    # -- header inspection --------------------------------------------------

    def _parse(self, raw: Any, source: str | None) -> tuple[Any, str, int, int, int] | DecodeError:
        """CodeStream + format + oriented (H, W) + channels, or a DecodeError."""
        nv = nvimgcodec_module()
        size = len(raw)
        if size == 0:
            return DecodeError("empty input (0 bytes)", source)
        head = bytes(raw[:16])
        fmt = detect_format(head)
        if fmt is None:
            return DecodeError(
                f"not a recognised image format (first bytes {head[:8].hex(' ')}, {size} bytes)",
                source,
            )
        if fmt in _UNSUPPORTED:
            return DecodeError(_UNSUPPORTED[fmt], source)
        try:
            cs = nv.CodeStream(raw)
            h, w, c = int(cs.height), int(cs.width), int(cs.num_channels)
        except RuntimeError as exc:
            return DecodeError(
                f"bad {fmt.upper()} header: nvImageCodec cannot parse it ({exc})", source
            )
        if h <= 0 or w <= 0:
            return DecodeError(f"bad {fmt.upper()} header: image size {h}x{w}", source)
        if self.max_pixels is not None and h * w > self.max_pixels:
            return DecodeError(
                f"image of {h}x{w} = {h * w} pixels exceeds max_pixels={self.max_pixels} "
                "(refused before decoding)",
                source,
            )
        if self.adjust_orientation and fmt == "jpeg" and jpeg_exif_orientation(raw) >= 5:
            h, w = w, h
        return cs, fmt, h, w, c

    def _out_channels(self) -> int:
        return 1 if self.output_type is ImageType.GRAY else 3

    def peek_shape(
        self, data: bytes | np.ndarray, source: str | None = None
    ) -> tuple[int, int, int]:
        """(H, W, C) of the decoded output, from the header only.

        H and W follow the EXIF orientation (JPEG) when ``adjust_orientation``
        is on; C is that of ``output_type``. For non-JPEG formats the stored
        size is returned (EXIF in PNG/WebP/TIFF is not read here).

        Raises:
            DecodeError: the header cannot be read (or exceeds ``max_pixels``).
        """
        parsed = self._parse(_as_input(data), source)
        if isinstance(parsed, DecodeError):
            raise parsed
        _cs, _fmt, h, w, _c = parsed
        return (h, w, self._out_channels())

    # -- decoding -----------------------------------------------------------

    def decode_batch(
        self,
        data: Sequence[bytes | np.ndarray],
        sources: Sequence[str | None],
        *,
        regions: Sequence[Region | None] | None = None,
        cuda_stream: int = 0,
    ) -> list[Any]:
        """Decode a batch; one result per input, in order.

        Each result is an HWC uint8 array (numpy on CPU; cupy for MIXED) or a
        ``DecodeError`` naming the source and the cause; never ``None``, and
        bad data never raises. ``regions[i]`` = (y0, x0, y1, x1), end
        exclusive, in oriented coordinates, decodes only that window (equal to
        cropping the full decode). ``cuda_stream`` is used by MIXED only.

        Raises:
            ValueError: lengths differ, or a region is malformed (a caller bug).
        """
        n = len(data)
        if len(sources) != n:
            raise ValueError(f"{n} inputs but {len(sources)} sources")
        if regions is not None and len(regions) != n:
            raise ValueError(f"{n} inputs but {len(regions)} regions")
        checked = [
            None if regions is None or regions[i] is None else _check_region(regions[i])
            for i in range(n)
        ]
        results: list[Any] = [None] * n
        streams: list[Any] = []
        index: list[int] = []
        kinds: list[str] = []
        for i in range(n):
            raw = _as_input(data[i])
            parsed = self._parse(raw, sources[i])
            if isinstance(parsed, DecodeError):
                results[i] = parsed
                continue
            cs, fmt, h, w, _c = parsed
            reg = checked[i]
            if reg is not None:
                y0, x0, y1, x1 = reg
                if y1 > h or x1 > w:
                    results[i] = DecodeError(
                        f"region (y0, x0, y1, x1)={reg} lies outside the {h}x{w} image", sources[i]
                    )
                    continue
                cs = cs.get_sub_code_stream(region=nvimgcodec_module().Region(y0, x0, y1, x1))
            streams.append(cs)
            index.append(i)
            kinds.append(fmt)
        if streams:
            if self.device is Device.CPU:
                decoded = self._decoder().decode(streams, params=self._params)
            else:
                decoded = self._decode_batch_gpu(streams, cuda_stream)
            for i, fmt, img in zip(index, kinds, decoded):
                results[i] = self._finish(img, fmt, data[i], sources[i])
        return results

    def decode(
        self, data: bytes | np.ndarray, source: str | None = None, *, region: Region | None = None
    ) -> Any:
        """Decode one image; raises ``DecodeError`` instead of returning it."""
        (out,) = self.decode_batch([data], [source], regions=[region])
        if isinstance(out, DecodeError):
            raise out
        return out

    def _finish(self, img: Any, fmt: str, raw: Any, source: str | None) -> Any:
        if img is None:
            return DecodeError(self._failure_reason(fmt, raw), source)
        if self.device is Device.CPU:
            arr = host_array(img)
            xp = np
        else:
            arr, xp = self._gpu_array(img)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if self.output_type is ImageType.YCbCr:
            arr = rgb_to_ycbcr(arr, xp)
        return arr

    @staticmethod
    def _failure_reason(fmt: str, raw: Any) -> str:
        size = len(raw)
        if fmt == "jpeg":
            tail = bytes(raw[-32:]) if not isinstance(raw, np.ndarray) else raw[-32:].tobytes()
            if b"\xff\xd9" not in tail:
                return (
                    f"corrupt or truncated JPEG data ({size} bytes, no end-of-image "
                    "marker: the file looks truncated)"
                )
        return f"corrupt or truncated {fmt.upper()} data ({size} bytes): decoding failed"

    # -- GPU path (Device.MIXED): see GpuImageDecoder ------------------------

    def _make_gpu_decoder(self, nv: Any) -> Any:
        """A decoder on ``device_id`` trying the hardware JPEG engine, then CUDA,
        then hybrid CPU/GPU, then the CPU (for formats or images the GPU
        backends refuse, e.g. progressive JPEG on the hardware engine)."""
        device_id = nv.NVIMGCODEC_DEVICE_CURRENT if self.device_id is None else self.device_id
        backends = [
            nv.Backend(nv.BackendKind.HW_GPU_ONLY),
            nv.Backend(nv.BackendKind.GPU_ONLY),
            nv.Backend(nv.BackendKind.HYBRID_CPU_GPU),
            nv.Backend(nv.BackendKind.CPU_ONLY),
        ]
        return nv.Decoder(device_id=device_id, max_num_cpu_threads=self._gpu_cpu_threads(), backends=backends)

    def _gpu_cpu_threads(self) -> int:
        return 1

    def _decode_batch_gpu(self, streams: list[Any], cuda_stream: int) -> list[Any]:
        """Queue the batch on ``cuda_stream`` (an int ``cudaStream_t``).

        nvimgcodec returns once the work is queued; the images are ordered on
        that stream, not finished. ``_gpu_array`` wraps them with
        ``cupy.from_dlpack``, which makes cupy's current stream wait on the
        image's stream (no host block).
        """
        return list(self._decoder().decode(streams, params=self._params, cuda_stream=cuda_stream))

    @staticmethod
    def _gpu_array(img: Any) -> tuple[Any, Any]:
        """nvimgcodec device Image (or a cupy array already) -> cupy array (zero copy)."""
        try:
            import cupy
        except ImportError as exc:
            raise MissingDependencyError("cupy-cuda13x", "gpu", "GPU image decoding") from exc
        if isinstance(img, cupy.ndarray):
            return img, cupy
        return cupy.from_dlpack(img), cupy

    def __repr__(self) -> str:
        return (
            f"ImageDecoder(device={self.device.value!r}, output_type={self.output_type.name}, "
            f"adjust_orientation={self.adjust_orientation}, max_pixels={self.max_pixels})"
        )


class _ConfirmedBad:
    """A GPU failure that the CPU decoder reproduced: the data is bad."""


CONFIRMED_BAD = _ConfirmedBad()


class GpuImageDecoder(ImageDecoder):
    """Mixed decoding for one GPU stage: ONE nvImageCodec decoder, batch calls serialized.

    nvImageCodec's GPU decoder holds nvJPEG and hardware-engine state and a pool
    of ``cpu_threads`` CPU threads of its own; one per stage (not per worker
    thread) keeps that to one copy. Calls are serialized by a lock (one
    ``Decoder`` used from several threads at once crashes).

    nvImageCodec returns ``None`` for every failure, out-of-memory included.
    So a sample that fails on the GPU is not called bad at once: device memory
    cached by cupy is freed (once per batch), the sample is retried alone on
    the GPU, and if that fails too it is decoded on the CPU. A CPU success means
    the data is good and the device could not decode it (memory, or a feature
    its backends lack): the CPU result is copied to the device and counted in
    ``cpu_fallbacks`` (with one warning). Only a failure the CPU decoder
    confirms is a ``DecodeError``: a full device never makes a good file "bad".

    Args:
        device_id: the GPU.
        cuda_stream: the stage's stream (``cudaStream_t`` as an int); decoded
            images are ordered on it.
        cpu_threads: CPU threads of the decoder (for the CPU parts of hybrid decoding).
        output_type, adjust_orientation, max_pixels: as ``ImageDecoder``.
    """

    def __init__(self, *, device_id: int, cuda_stream: int, cpu_threads: int = 1,
                 output_type: ImageType | str = ImageType.RGB, adjust_orientation: bool = True,
                 max_pixels: int | None = 128_000_000) -> None:
        super().__init__(Device.MIXED, device_id=device_id, output_type=output_type,
                         adjust_orientation=adjust_orientation, max_pixels=max_pixels)
        self.cuda_stream = int(cuda_stream)
        self.cpu_threads = max(1, int(cpu_threads))
        self.cpu_fallbacks = 0
        self._lock = threading.Lock()
        self._gpu_decoder: Any = None
        self._cpu_decoder: Any = None
        self._warned = False

    def _gpu_cpu_threads(self) -> int:
        return self.cpu_threads

    def _decoder(self) -> Any:
        """The one GPU decoder (built on first use; callers hold ``_lock``)."""
        if self._gpu_decoder is None:
            self._gpu_decoder = self._make_gpu_decoder(nvimgcodec_module())
        return self._gpu_decoder

    def decode_batch(
        self,
        data: Sequence[bytes | np.ndarray],
        sources: Sequence[str | None],
        *,
        regions: Sequence[Region | None] | None = None,
        cuda_stream: int = 0,
    ) -> list[Any]:
        """As ``ImageDecoder.decode_batch``, on the stage's stream; one batch at a time."""
        with self._lock:
            return super().decode_batch(data, sources, regions=regions, cuda_stream=cuda_stream or self.cuda_stream)

    # -- seams (a test replaces these to run without a GPU) --------------------

    def _gpu_decode(self, streams: list[Any], cuda_stream: int) -> list[Any]:
        """The GPU decoder on ``streams``: an image or ``None`` each."""
        return ImageDecoder._decode_batch_gpu(self, streams, cuda_stream)

    def free_device_memory(self) -> None:
        """Give cupy's cached device memory back, so a retry finds room."""
        try:
            import cupy
        except ImportError:
            return
        cupy.get_default_memory_pool().free_all_blocks()

    def _cpu_decode(self, stream: Any) -> Any:
        """Decode one code stream on the CPU: a host array, or ``None`` when the data is bad."""
        if self._cpu_decoder is None:
            nv = nvimgcodec_module()
            self._cpu_decoder = nv.Decoder(
                device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY, max_num_cpu_threads=1,
                backends=[nv.Backend(nv.BackendKind.CPU_ONLY)],
            )
        (img,) = self._cpu_decoder.decode([stream], params=self._params)
        return None if img is None else host_array(img)

    def _to_device(self, host: np.ndarray) -> Any:
        """A host image copied to the device, ordered on the stage's stream."""
        import cupy

        with cupy.cuda.Device(self.device_id), cupy.cuda.ExternalStream(self.cuda_stream, self.device_id):
            return cupy.asarray(host)

    # -- the GPU path with its failure triage --------------------------------

    def _decode_batch_gpu(self, streams: list[Any], cuda_stream: int) -> list[Any]:
        out = self._gpu_decode(streams, cuda_stream)
        failed = [k for k, img in enumerate(out) if img is None]
        if not failed:
            return out
        self.free_device_memory()
        for k in failed:
            (again,) = self._gpu_decode([streams[k]], cuda_stream)
            if again is not None:
                out[k] = again
                continue
            host = self._cpu_decode(streams[k])
            if host is None:
                out[k] = CONFIRMED_BAD
                continue
            out[k] = self._to_device(host)
            self.cpu_fallbacks += 1
            if not self._warned:
                self._warned = True
                warnings.warn(
                    "the GPU could not decode an image that the CPU decoder reads (device memory "
                    "full, or a feature the GPU backends lack); such images are decoded on the CPU "
                    "and copied to the GPU (count: decoder.cpu_fallbacks)",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return out

    def _finish(self, img: Any, fmt: str, raw: Any, source: str | None) -> Any:
        if img is CONFIRMED_BAD:
            return DecodeError(f"{self._failure_reason(fmt, raw)} (the CPU decoder failed on it too)", source)
        return super()._finish(img, fmt, raw, source)

    def __repr__(self) -> str:
        return f"Gpu{super().__repr__()[:-1]}, device_id={self.device_id}, cpu_threads={self.cpu_threads})"
