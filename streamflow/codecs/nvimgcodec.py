"""Image decoding through nvImageCodec (the only module that imports it).

``ImageDecoder`` turns encoded images (JPEG, PNG, BMP, TIFF, WebP, JPEG 2000,
PNM) into HWC ``uint8`` arrays on the CPU, one result per input: an array, or
a ``DecodeError`` that names the source and the cause. Bad data never raises.
``GpuImageDecoder`` does the same into device (cupy) arrays for one GPU stage.

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
  CPU decoder keeps one per thread (``threading.local``, one CPU thread each)
  and the GPU decoder keeps one in all, behind a lock (a GPU decoder per
  thread would multiply its thread pool and its nvJPEG state).
* Decoding returns ``None`` on every failure, device out-of-memory included;
  ``CodeStream(bytes)`` raises ``RuntimeError`` on a header it cannot parse.
  On the CPU both become ``DecodeError``; on the GPU a ``None`` is retried and
  then checked by the CPU decoder first (``GpuImageDecoder``).
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

import contextlib
import ctypes
import os
import struct
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import DecodeError, MissingDependencyError
from ..types import Device, ImageType, parse_device, parse_image_type

__all__ = [
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
    """Decodes encoded images on the CPU into HWC ``uint8`` numpy arrays.

    Thread-safe: holds one nvimgcodec ``Decoder`` per thread
    (``threading.local``), because one ``Decoder`` used from several threads
    crashes. Each thread's decoder uses one CPU thread
    (``max_num_cpu_threads=1``): parallelism comes from the caller's threads.
    Decoding to the GPU is ``GpuImageDecoder`` (one per GPU stage).

    Args:
        device: ``Device.CPU``, the only device of this class (``GpuImageDecoder``
            is the ``mixed`` one).
        device_id: the GPU of a ``GpuImageDecoder``; unused on the CPU.
        output_type: RGB, BGR, GRAY (HWC, C=1) or YCbCr (DALI's BT.601).
        adjust_orientation: apply the EXIF orientation (default on).
        max_pixels: refuse images whose header claims more pixels than this
            (decompression-bomb guard, checked before decoding); ``None``: no limit.

    Raises:
        ValueError: an unsupported device or output type, or ``max_pixels <= 0``.
        MissingDependencyError: nvImageCodec is not installed.
    """

    # The device a class decodes for; a per-thread GPU decoder (N decoders, each
    # with its own threads and nvJPEG state) is what GpuImageDecoder avoids.
    _DEVICE: ClassVar[Device] = Device.CPU

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
        if self.device is not self._DEVICE:
            raise ValueError(
                f"{type(self).__name__} decodes on {self._DEVICE.value!r}, not {self.device.value!r}; "
                "mixed decoding is GpuImageDecoder (one per GPU stage)"
            )
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
            dec = _cpu_only_decoder()
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
        self, data: bytes | np.ndarray, source: str | None = None, *, stored_channels: bool = False
    ) -> tuple[int, int, int]:
        """(H, W, C) of the decoded output, from the header only.

        H and W follow the EXIF orientation (JPEG) when ``adjust_orientation``
        is on; C is that of ``output_type`` (``stored_channels``: the file's
        own channel count). For non-JPEG formats the stored size is returned
        (EXIF in PNG/WebP/TIFF is not read here).

        Raises:
            DecodeError: the header cannot be read (or exceeds ``max_pixels``).
        """
        parsed = self._parse(_as_input(data), source)
        if isinstance(parsed, DecodeError):
            raise parsed
        _cs, _fmt, h, w, c = parsed
        return (h, w, c if stored_channels else self._out_channels())

    # -- decoding -----------------------------------------------------------

    def decode_batch(
        self,
        data: Sequence[bytes | np.ndarray],
        sources: Sequence[str | None],
        *,
        regions: Sequence[Region | None] | None = None,
    ) -> list[Any]:
        """Decode a batch; one result per input, in order.

        Each result is an HWC uint8 array (numpy here; cupy from
        ``GpuImageDecoder``) or a ``DecodeError`` naming the source and the
        cause; never ``None``, and bad data never raises. ``regions[i]`` =
        (y0, x0, y1, x1), end exclusive, in oriented coordinates, decodes only
        that window (equal to cropping the full decode).

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
            decoded = self._decode_streams(streams, [sources[i] for i in index])
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

    def _decode_streams(self, streams: list[Any], sources: list[str | None]) -> list[Any]:
        """The parsed code streams decoded: an nvimgcodec ``Image``, or ``None`` on failure, each.

        ``sources`` names the streams, for messages.
        """
        return list(self._decoder().decode(streams, params=self._params))

    def _finish(self, img: Any, fmt: str, raw: Any, source: str | None) -> Any:
        if img is None:
            return DecodeError(self._failure_reason(fmt, raw), source)
        arr, xp = self._to_array(img)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if self.output_type is ImageType.YCbCr:
            arr = rgb_to_ycbcr(arr, xp)
        return arr

    def _to_array(self, img: Any) -> tuple[Any, Any]:
        """A decoded image as an array, and its array module."""
        return host_array(img), np

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

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(device={self.device.value!r}, output_type={self.output_type.name}, "
            f"adjust_orientation={self.adjust_orientation}, max_pixels={self.max_pixels})"
        )


def _cpu_only_decoder() -> Any:
    """An nvimgcodec Decoder on the CPU backend, with one CPU thread."""
    nv = nvimgcodec_module()
    return nv.Decoder(
        device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY,
        max_num_cpu_threads=1,
        backends=[nv.Backend(nv.BackendKind.CPU_ONLY)],
    )


def _cupy() -> Any:
    """cupy, imported on first GPU use (``import streamflow`` must not import it)."""
    try:
        import cupy
    except ImportError as exc:
        raise MissingDependencyError("cupy-cuda13x", "gpu", "GPU image decoding") from exc
    return cupy


class _ConfirmedBad:
    """Marks a sample that failed on the GPU and on the CPU decoder: the data is bad."""


_CONFIRMED_BAD = _ConfirmedBad()


class GpuImageDecoder(ImageDecoder):
    """Decodes to the GPU for one GPU stage: ONE nvImageCodec decoder, one batch at a time.

    nvImageCodec's GPU decoder holds nvJPEG and hardware-engine state and a
    pool of ``cpu_threads`` threads of its own, so a stage has one (not one per
    worker thread). It is built on the first batch, with the backends in this
    order: the hardware JPEG engine (baseline JPEG only), CUDA, hybrid
    CPU/GPU, CPU; nvImageCodec gives each image to the first that takes it.
    ``decode_batch`` holds a lock: one ``Decoder`` used from several threads
    at once crashes, so batch calls never overlap.

    Results are cupy arrays on ``device_id``, ordered on ``cuda_stream`` (the
    decode is queued there and returns before it has run): work on another
    stream must wait on that stream (an event) before reading them.

    nvImageCodec returns ``None`` for every failure, device out-of-memory
    included, so a sample that fails on the GPU is not called bad at once:
    cached device memory is freed (once per batch), the sample is retried
    alone on the GPU and, if that fails too, decoded by a CPU-only decoder.
    A CPU failure confirms bad data: a ``DecodeError`` that says so. A CPU
    success means the device could not decode a good file (memory, or a
    feature its backends lack): the CPU result is copied to the device,
    counted in ``cpu_fallbacks`` and warned about once. A full device never
    turns a good file into a ``DecodeError``.

    The device operations are the methods ``_gpu_decode``, ``_free_device_memory``,
    ``_to_device``, ``_to_array`` and ``_on_stream``: a subclass can replace them
    to run the triage without a GPU.

    Args:
        device_id: the GPU.
        cuda_stream: the stage's stream, a ``cudaStream_t`` as an int (0: the
            legacy default stream).
        cpu_threads: CPU threads of the nvImageCodec decoder (hybrid and CPU
            backends); at least 1.
        output_type: as ``ImageDecoder``.
        adjust_orientation: as ``ImageDecoder``.
        max_pixels: as ``ImageDecoder``.

    Attributes:
        cpu_fallbacks: images the GPU could not decode and the CPU did.

    Raises:
        ValueError: a bad argument (see ``ImageDecoder``; ``cpu_threads < 1``).
        MissingDependencyError: nvImageCodec is not installed.
    """

    _DEVICE: ClassVar[Device] = Device.MIXED
    device_id: int

    def __init__(
        self,
        *,
        device_id: int,
        cuda_stream: int,
        cpu_threads: int = 1,
        output_type: ImageType | str = ImageType.RGB,
        adjust_orientation: bool = True,
        max_pixels: int | None = 128_000_000,
    ) -> None:
        super().__init__(
            Device.MIXED, device_id=int(device_id), output_type=output_type,
            adjust_orientation=adjust_orientation, max_pixels=max_pixels,
        )
        if cpu_threads < 1:
            raise ValueError(f"cpu_threads must be at least 1, got {cpu_threads}")
        self.cuda_stream = int(cuda_stream)
        self.cpu_threads = int(cpu_threads)
        self.cpu_fallbacks = 0
        self._lock = threading.Lock()
        self._gpu_decoder: Any = None
        self._cpu_decoder: Any = None
        self._cupy_stream: Any = None
        self._warned = False

    def decode_batch(
        self,
        data: Sequence[bytes | np.ndarray],
        sources: Sequence[str | None],
        *,
        regions: Sequence[Region | None] | None = None,
    ) -> list[Any]:
        """Decode a batch to the GPU; one result per input, in order.

        As ``ImageDecoder.decode_batch``, with cupy arrays ordered on
        ``cuda_stream``. Callable from any thread; calls run one at a time.

        Raises:
            ValueError: lengths differ, or a region is malformed (a caller bug).
            MissingDependencyError: cupy is not installed.
        """
        with self._lock, self._on_stream():
            return super().decode_batch(data, sources, regions=regions)

    def _decoder(self) -> Any:
        """The one GPU decoder (built on first use; callers hold the lock)."""
        if self._gpu_decoder is None:
            self._gpu_decoder = self._make_gpu_decoder(nvimgcodec_module())
        return self._gpu_decoder

    def _make_gpu_decoder(self, nv: Any) -> Any:
        """The stage's nvImageCodec decoder; each image goes to the first backend that takes it."""
        backends = [
            nv.Backend(nv.BackendKind.HW_GPU_ONLY),
            nv.Backend(nv.BackendKind.GPU_ONLY),
            nv.Backend(nv.BackendKind.HYBRID_CPU_GPU),
            nv.Backend(nv.BackendKind.CPU_ONLY),
        ]
        return nv.Decoder(device_id=self.device_id, max_num_cpu_threads=self.cpu_threads, backends=backends)

    # -- failure triage --------------------------------------------------------

    def _decode_streams(self, streams: list[Any], sources: list[str | None]) -> list[Any]:
        """GPU decode; each failure retried alone, then told bad or good by the CPU decoder.

        Returns per stream an nvimgcodec device ``Image``, a device array (a
        CPU fallback), or ``_CONFIRMED_BAD``; never ``None``.
        """
        out = self._gpu_decode(streams)
        failed = [k for k, img in enumerate(out) if img is None]
        if not failed:
            return out
        # None may be a full device: make room once for the whole batch, and
        # retry each failure alone (a batch needs more memory than one image).
        self._free_device_memory()
        fallbacks: list[str | None] = []
        for k in failed:
            (again,) = self._gpu_decode([streams[k]])
            if again is not None:
                out[k] = again
                continue
            host = self._cpu_decode(streams[k])
            if host is None:
                out[k] = _CONFIRMED_BAD
                continue
            out[k] = self._to_device(host)
            self.cpu_fallbacks += 1
            fallbacks.append(sources[k])
        if fallbacks:
            self._warn_once(fallbacks)
        return out

    def _cpu_decode(self, stream: Any) -> np.ndarray | None:
        """One code stream decoded by the CPU-only decoder: a host array, or ``None`` (bad data)."""
        if self._cpu_decoder is None:
            self._cpu_decoder = _cpu_only_decoder()
        (img,) = self._cpu_decoder.decode([stream], params=self._params)
        return None if img is None else host_array(img)

    def _warn_once(self, sources: list[str | None]) -> None:
        if self._warned:
            return
        self._warned = True
        named = [s for s in sources if s]
        example = f" (e.g. {named[0]})" if named else ""
        warnings.warn(
            f"the GPU could not decode {len(sources)} image(s) of a batch{example} that the CPU "
            "decoder reads; they were decoded on the CPU and copied to the device. Likely cause: "
            "device memory is exhausted (freeing cached memory and retrying each image alone did "
            "not help); else a feature the GPU backends do not handle. Warned once; "
            "cpu_fallbacks of the decoder counts them all.",
            RuntimeWarning,
            stacklevel=2,
        )

    def _finish(self, img: Any, fmt: str, raw: Any, source: str | None) -> Any:
        if img is _CONFIRMED_BAD:
            return DecodeError(
                f"{self._failure_reason(fmt, raw)}; confirmed by the CPU decoder, which fails on "
                "it too (not a device failure)",
                source,
            )
        return super()._finish(img, fmt, raw, source)

    # -- device operations (a subclass replaces these to run without a GPU) ----

    def _gpu_decode(self, streams: list[Any]) -> list[Any]:
        """One call of the GPU decoder: an nvimgcodec device ``Image`` or ``None``, each.

        Returns once the work is queued on ``cuda_stream``.
        """
        return list(self._decoder().decode(streams, params=self._params, cuda_stream=self.cuda_stream))

    def _stream(self, cupy: Any) -> Any:
        """``cuda_stream`` as a cupy stream (made once)."""
        if self._cupy_stream is None:
            self._cupy_stream = (
                cupy.cuda.Stream.null
                if self.cuda_stream == 0
                else cupy.cuda.ExternalStream(self.cuda_stream, self.device_id)
            )
        return self._cupy_stream

    def _on_stream(self) -> contextlib.AbstractContextManager[Any]:
        """Make the device and ``cuda_stream`` current, so the batch's arrays are made there.

        ``cupy.from_dlpack`` then consumes each image on the stream that
        decoded it, and copies and conversions are queued after the decode.
        """
        cupy = _cupy()
        stack = contextlib.ExitStack()
        stack.enter_context(cupy.cuda.Device(self.device_id))
        stack.enter_context(self._stream(cupy))
        return stack

    def _free_device_memory(self) -> None:
        """Give cached device memory back, so that a retry finds room.

        Frees the blocks cupy's pool caches and trims the device's default
        CUDA memory pool, where nvImageCodec allocates its buffers
        (``cudaMallocAsync``) and which the GPU stages let keep freed memory
        (``configure_memory_pool``). Memory freed by work still queued counts
        as in use, so the stream is synchronized first.
        """
        try:
            import cupy
        except ImportError:
            return
        with cupy.cuda.Device(self.device_id):
            self._stream(cupy).synchronize()
            cupy.get_default_memory_pool().free_all_blocks()
            rt = cupy.cuda.runtime
            try:
                rt.memPoolTrimTo(rt.deviceGetDefaultMemPool(self.device_id), 0)
            except (AttributeError, rt.CUDARuntimeError):
                pass  # no stream-ordered allocator: cupy's pool was all there was to free

    def _to_device(self, host: np.ndarray) -> Any:
        """A host image copied to the device (queued on ``cuda_stream``, current in ``decode_batch``)."""
        return _cupy().asarray(host)

    def _to_array(self, img: Any) -> tuple[Any, Any]:
        """A decoded image as a cupy array (zero copy for an nvimgcodec device ``Image``)."""
        cupy = _cupy()
        if isinstance(img, cupy.ndarray):
            return img, cupy
        return cupy.from_dlpack(img), cupy

    def __repr__(self) -> str:
        return (
            f"GpuImageDecoder(device_id={self.device_id}, cuda_stream={self.cuda_stream:#x}, "
            f"cpu_threads={self.cpu_threads}, output_type={self.output_type.name}, "
            f"adjust_orientation={self.adjust_orientation}, max_pixels={self.max_pixels})"
        )
