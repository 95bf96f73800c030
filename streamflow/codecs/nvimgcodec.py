"""Image decoding through nvImageCodec (the only module that imports it).

``ImageDecoder`` turns encoded images (JPEG, PNG, BMP, TIFF, WebP, JPEG 2000,
PNM) into HWC arrays on the CPU, one result per input: an array, or a
``DecodeError`` that names the source and the cause. Bad data never raises.
``GpuImageDecoder`` does the same into device (cupy) arrays for one GPU stage.
What nvImageCodec cannot read, or reads wrongly (``headers``), goes to the
CPU fallback decoders (``fallback``); the output conversion is ``convert``.

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
  orientation is not exposed by the Python API, so it is read from the file
  (``headers.inspect``). nvImageCodec applies it for JPEG, PNG ``eXIf`` and
  TIFF, not for WebP (the decoder does, after decoding).
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
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import DecodeError, MissingDependencyError
from ..types import DataType, Device, ImageType, parse_device, parse_dtype, parse_image_type
from . import fallback
from .convert import DTYPES, Native, convert_dtype, rgb_to_ycbcr, to_output
from .headers import Header, detect_format, inspect, jpeg_exif_orientation

__all__ = [
    "GpuImageDecoder",
    "ImageDecoder",
    "Region",
    "detect_format",
    "host_array",
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
# The decoder
# --------------------------------------------------------------------------

_UNSUPPORTED = {"gif": "GIF is not supported by nvImageCodec"}


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


def _undo(orientation: int) -> int:
    """The orientation that undoes ``orientation`` (6 and 8 are each other's inverse)."""
    return {6: 8, 8: 6}.get(orientation, orientation)


@dataclass
class _Probe:
    """One input, inspected: how it will be decoded, and its stored size when known."""

    raw: Any
    header: Header
    route: str  # "fast" | "native" | "fallback"
    stream: Any = None  # the nvimgcodec CodeStream (fast and native routes)
    size: tuple[int, int] | None = None  # stored (H, W)
    why: str = ""  # why the fallback route (for the error when it fails too)
    channels: int = 0  # stored channels, as nvImageCodec reports them

    def oriented_size(self, adjust: bool) -> tuple[int, int] | None:
        if self.size is None:
            return None
        h, w = self.size
        return (w, h) if adjust and self.header.swaps_axes else (h, w)


@dataclass
class _Job:
    """A probe with its place in the batch and the region to decode."""

    index: int
    probe: _Probe
    source: str | None
    region: Region | None


class ImageDecoder:
    """Decodes encoded images on the CPU into HWC numpy arrays (DALI's ``decoders.image``).

    Thread-safe: holds one nvimgcodec ``Decoder`` per thread
    (``threading.local``), because one ``Decoder`` used from several threads
    crashes. Each thread's decoder uses one CPU thread
    (``max_num_cpu_threads=1``): parallelism comes from the caller's threads.
    Decoding to the GPU is ``GpuImageDecoder`` (one per GPU stage).

    Each image takes one of three routes (``headers.Header``):

    * *fast*: JPEG to RGB/BGR/GRAY/YCbCr, decoded by nvImageCodec straight
      into the output colour space (a whole batch in one call);
    * *native*: the other formats (and JPEG to ``ANY_DATA``), decoded by
      nvImageCodec as stored (any bit depth, all channels), then converted
      (``convert.to_output``);
    * *fallback*: files nvImageCodec cannot read, or reads wrongly, decoded by
      Pillow or tifffile (``codecs.fallback``, optional). A fast or native
      decode that fails is retried there too.

    A file no decoder can read is a ``DecodeError`` naming it and the causes.

    Args:
        device: ``Device.CPU``, the only device of this class (``GpuImageDecoder``
            is the ``mixed`` one).
        device_id: the GPU of a ``GpuImageDecoder``; unused on the CPU.
        output_type: RGB, BGR, GRAY (HWC, C=1), YCbCr (DALI's BT.601) or
            ANY_DATA (the channels as stored).
        adjust_orientation: apply the EXIF orientation (default on).
        max_pixels: refuse images whose header claims more pixels than this
            (decompression-bomb guard, checked before decoding); ``None``: no limit.
        dtype: the output element type (DALI's ``dtype``): samples are scaled
            to its full range (``convert.convert_dtype``); default uint8.

    Raises:
        ValueError: an unsupported device, output type or dtype, or ``max_pixels <= 0``.
        MissingDependencyError: nvImageCodec is not installed.
    """

    # The device a class decodes for; a per-thread GPU decoder (N decoders, each
    # with its own threads and nvJPEG state) is what GpuImageDecoder avoids.
    _DEVICE: ClassVar[Device] = Device.CPU
    #: the name counted for images nvImageCodec decodes on the fast route
    _FAST_NAME: ClassVar[str] = "nvimgcodec"

    def __init__(
        self,
        device: Device | str = Device.CPU,
        *,
        device_id: int | None = None,
        output_type: ImageType | str = ImageType.RGB,
        adjust_orientation: bool = True,
        max_pixels: int | None = 128_000_000,
        dtype: DataType | str = DataType.UINT8,
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
        self.dtype = parse_dtype(dtype)
        if self.dtype not in DTYPES:
            raise ValueError(
                f"dtype {self.dtype.name} is not an image decoder output type; "
                f"expected one of {', '.join(d.name for d in DTYPES)}"
            )
        self.device_id = device_id
        self.adjust_orientation = bool(adjust_orientation)
        if max_pixels is not None and max_pixels <= 0:
            raise ValueError(f"max_pixels must be positive or None, got {max_pixels}")
        self.max_pixels = max_pixels
        self._local = threading.local()
        nv = nvimgcodec_module()  # fail early when the package is missing
        self._params = self._make_params(nv)
        self._native_params = nv.DecodeParams(
            apply_exif_orientation=self.adjust_orientation,
            color_spec=nv.ColorSpec.UNCHANGED,
            allow_any_depth=True,
        )
        # nvImageCodec 0.9 half-applies a TIFF's orientation when told not to
        # (flips done, transposes not): such files are decoded oriented, then undone.
        self._native_oriented_params = nv.DecodeParams(
            apply_exif_orientation=True, color_spec=nv.ColorSpec.UNCHANGED, allow_any_depth=True,
        )

    # -- nvimgcodec objects -------------------------------------------------

    def _make_params(self, nv: Any) -> Any:
        """The fast route's parameters: JPEG straight into the output colour space."""
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

    def _probe(self, raw: Any, source: str | None) -> _Probe | DecodeError:
        """How ``raw`` will be decoded, or a ``DecodeError`` when no decoder can."""
        size = len(raw)
        if size == 0:
            return DecodeError("empty input (0 bytes)", source)
        try:
            header = inspect(raw)
        except Exception as exc:  # the parsers are fuzzed never to raise; a miss names the file
            return DecodeError(f"unreadable header ({type(exc).__name__}: {exc})", source)
        if header is None:
            head = bytes(raw[:8])
            return DecodeError(
                f"not a recognised image format (first bytes {head.hex(' ')}, {size} bytes)", source
            )
        fmt = header.fmt
        if fmt in _UNSUPPORTED:
            return DecodeError(_UNSUPPORTED[fmt], source)
        route, why = self._route(header)
        if route == "fallback" and not fallback.available(fmt):
            return DecodeError(f"{why}: needs a CPU fallback decoder; {fallback.NONE_INSTALLED}", source)
        probe = _Probe(raw, header, route, why=why)
        try:
            cs = nvimgcodec_module().CodeStream(raw)
            probe.size = (int(cs.height), int(cs.width))
            probe.channels = int(cs.num_channels)
            if route != "fallback":
                probe.stream = cs
        except RuntimeError as exc:
            probe.why = f"bad {fmt.upper()} header: nvImageCodec cannot parse it ({exc})"
            if route != "fallback" and not fallback.available(fmt):
                return DecodeError(f"{probe.why}; {fallback.NONE_INSTALLED}", source)
            probe.route = "fallback"
            probe.size = fallback.image_size(raw, header)
        if probe.size is not None:
            h, w = probe.size
            if h <= 0 or w <= 0:
                return DecodeError(f"bad {fmt.upper()} header: image size {h}x{w}", source)
            if self.max_pixels is not None and h * w > self.max_pixels:
                return DecodeError(
                    f"image of {h}x{w} = {h * w} pixels exceeds max_pixels={self.max_pixels} "
                    "(refused before decoding)",
                    source,
                )
        return probe

    def _route(self, header: Header) -> tuple[str, str]:
        """(route, why) for a file, before its header is parsed by nvImageCodec."""
        fmt = header.fmt
        if header.route == "fallback":
            return "fallback", header.why
        if header.route == "prefer_fallback" and fallback.available(fmt):
            return "fallback", ""  # a choice, not a defect of the file: no reason to report
        if self.output_type is ImageType.ANY_DATA:
            if fmt == "jpeg" and header.channels == 4:
                return "fallback", "CMYK JPEG to ANY_DATA (nvImageCodec fails on it)"
            if header.alpha:
                return "fallback", "PNG transparency (tRNS) to ANY_DATA (nvImageCodec drops it)"
            return "native", ""
        return ("fast" if fmt == "jpeg" else "native"), ""

    def _out_channels(self) -> int:
        return 1 if self.output_type is ImageType.GRAY else 3

    def peek_shape(
        self, data: bytes | np.ndarray, source: str | None = None, *, stored_channels: bool = False
    ) -> tuple[int, int, int]:
        """(H, W, C) of the decoded output, from the header only.

        H and W follow the EXIF orientation (every format that carries one)
        when ``adjust_orientation`` is on; C is that of ``output_type`` (for
        ``ANY_DATA``: the stored channels, a transparency counted as alpha).
        ``stored_channels``: C is the channel count nvImageCodec's header
        parse reports, whatever ``output_type``.

        Raises:
            DecodeError: the header cannot be read (or exceeds ``max_pixels``).
        """
        probe = self._probe(_as_input(data), source)
        if isinstance(probe, DecodeError):
            raise probe
        hw = probe.oriented_size(self.adjust_orientation)
        if hw is None:
            raise DecodeError(f"bad {probe.header.fmt.upper()} header: no decoder can read its size", source)
        if stored_channels:
            c = probe.channels
        elif self.output_type is ImageType.ANY_DATA:
            c = probe.channels + (1 if probe.header.alpha and probe.channels in (1, 3) else 0)
        else:
            c = self._out_channels()
        return (hw[0], hw[1], c)

    # -- decoding -----------------------------------------------------------

    def decode_batch(
        self,
        data: Sequence[bytes | np.ndarray],
        sources: Sequence[str | None],
        *,
        regions: Sequence[Region | None] | None = None,
        decoded_by: list[str] | None = None,
    ) -> list[Any]:
        """Decode a batch; one result per input, in order.

        Each result is an HWC array of ``dtype`` (numpy here; cupy from
        ``GpuImageDecoder``) or a ``DecodeError`` naming the source and the
        cause; never ``None``, and bad data never raises. ``regions[i]`` =
        (y0, x0, y1, x1), end exclusive, in oriented coordinates, decodes only
        that window (equal to cropping the full decode). ``decoded_by``, when
        given, is filled with the name of the decoder of each input
        (``nvimgcodec``, ``pillow``, ...; ``""`` for a failure).

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
        names = [""] * n
        jobs: dict[str, list[_Job]] = {"fast": [], "native": [], "fallback": []}
        for i in range(n):
            probe = self._probe(_as_input(data[i]), sources[i])
            if isinstance(probe, DecodeError):
                results[i] = probe
                continue
            region = checked[i]
            hw = probe.oriented_size(self.adjust_orientation)
            if region is not None and hw is not None and (region[2] > hw[0] or region[3] > hw[1]):
                results[i] = DecodeError(
                    f"region (y0, x0, y1, x1)={region} lies outside the {hw[0]}x{hw[1]} image", sources[i]
                )
                continue
            jobs[probe.route].append(_Job(i, probe, sources[i], region))
        retry: list[_Job] = []
        if jobs["fast"]:
            self._run_fast(jobs["fast"], results, names, retry)
        if jobs["native"]:
            self._run_native(jobs["native"], results, names, retry)
        for job in jobs["fallback"] + retry:
            results[job.index], names[job.index] = self._run_fallback(job)
        if decoded_by is not None:
            decoded_by[:] = names
        return results

    def decode(
        self, data: bytes | np.ndarray, source: str | None = None, *, region: Region | None = None
    ) -> Any:
        """Decode one image; raises ``DecodeError`` instead of returning it."""
        (out,) = self.decode_batch([data], [source], regions=[region])
        if isinstance(out, DecodeError):
            raise out
        return out

    def _run_fast(self, jobs: list[_Job], results: list[Any], names: list[str], retry: list[_Job]) -> None:
        """JPEGs decoded by nvImageCodec into the output colour space, in one call."""
        nv = nvimgcodec_module()
        streams = []
        for job in jobs:
            cs = job.probe.stream
            if job.region is not None:
                y0, x0, y1, x1 = job.region
                cs = cs.get_sub_code_stream(region=nv.Region(y0, x0, y1, x1))
            streams.append(cs)
        decoded = self._decode_streams(streams, [job.source for job in jobs])
        for job, img in zip(jobs, decoded):
            if self._failed(img):
                job.probe.why = self._failure_reason(job.probe, img)
                retry.append(job)
                continue
            results[job.index] = self._finish_fast(img)
            names[job.index] = self._fast_name(img)

    def _run_native(self, jobs: list[_Job], results: list[Any], names: list[str], retry: list[_Job]) -> None:
        """Other formats decoded by nvImageCodec on the CPU as stored, then converted."""
        undo = [self._undo_tiff(job.probe.header) for job in jobs]
        decoded: list[Any] = [None] * len(jobs)
        for flag, params in ((False, self._native_params), (True, self._native_oriented_params)):
            group = [k for k in range(len(jobs)) if undo[k] == flag]
            if group:
                for k, img in zip(group, self._decode_native([jobs[k].probe.stream for k in group], params)):
                    decoded[k] = img
        for job, img, undone in zip(jobs, decoded, undo):
            if img is None:
                job.probe.why = self._failure_reason(job.probe, None)
                retry.append(job)
                continue
            header = job.probe.header
            bits = None
            if header.fmt == "jpeg2k":  # samples of fewer bits come unscaled (9-bit: 0..511)
                precision = int(job.probe.stream.precision)
                bits = precision if 0 < precision < img.dtype.itemsize * 8 else None
            try:
                native = Native.from_channels(host_array(img), "nvimgcodec", bits)
            except ValueError as exc:
                job.probe.why = str(exc)
                retry.append(job)
                continue
            if undone:
                orientation = _undo(header.orientation)
            else:
                orientation = 1 if header.nv_orients or not self.adjust_orientation else header.orientation
            results[job.index] = self._deliver(to_output(
                native, self.output_type, self.dtype, orientation=orientation, region=job.region))
            names[job.index] = "nvimgcodec"

    def _undo_tiff(self, header: Header) -> bool:
        """Decode oriented and undo: a TIFF with an orientation, ``adjust_orientation`` off."""
        return header.fmt == "tiff" and header.orientation != 1 and not self.adjust_orientation

    def _run_fallback(self, job: _Job) -> tuple[Any, str]:
        """One file decoded by Pillow or tifffile: (result, decoder name)."""
        probe = job.probe
        header = probe.header
        try:
            native, oriented = fallback.decode(probe.raw, header, self.max_pixels)
        except fallback.FallbackFailed as exc:
            first = probe.why or self._failure_reason(probe, None)
            return DecodeError(f"{first}; CPU fallback: {exc}", job.source), ""
        if oriented:  # Pillow orients TIFF itself
            orientation = 1 if self.adjust_orientation else _undo(header.orientation)
        else:
            orientation = header.orientation if self.adjust_orientation else 1
        if job.region is not None:
            h, w = native.array.shape[:2]
            if orientation >= 5:
                h, w = w, h
            if job.region[2] > h or job.region[3] > w:
                return DecodeError(
                    f"region (y0, x0, y1, x1)={job.region} lies outside the {h}x{w} image", job.source
                ), ""
        out = to_output(native, self.output_type, self.dtype, orientation=orientation, region=job.region)
        return self._deliver(out), native.decoder

    # -- the steps a GPU decoder replaces -------------------------------------

    def _decode_streams(self, streams: list[Any], sources: list[str | None]) -> list[Any]:
        """The fast route's code streams decoded: an nvimgcodec ``Image``, or ``None`` on failure, each.

        ``sources`` names the streams, for messages.
        """
        return list(self._decoder().decode(streams, params=self._params))

    def _decode_native(self, streams: list[Any], params: Any) -> list[Any]:
        """The native route's code streams decoded on the CPU as stored: host ``Image`` or ``None``."""
        return list(self._decoder().decode(streams, params=params))

    @staticmethod
    def _failed(img: Any) -> bool:
        return img is None

    def _fast_name(self, img: Any) -> str:
        return self._FAST_NAME

    def _finish_fast(self, img: Any) -> Any:
        arr, xp = self._to_array(img)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if self.output_type is ImageType.YCbCr:
            arr = rgb_to_ycbcr(arr, xp)
        if self.dtype is not DataType.UINT8:
            arr = convert_dtype(arr, self.dtype.numpy, xp)
        return arr

    def _deliver(self, host: np.ndarray) -> Any:
        """A host result as this decoder returns it (the GPU decoder copies it to the device)."""
        return host

    def _to_array(self, img: Any) -> tuple[Any, Any]:
        """A decoded image as an array, and its array module."""
        return host_array(img), np

    @staticmethod
    def _failure_reason(probe: _Probe, img: Any) -> str:
        raw = probe.raw
        fmt = probe.header.fmt
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
            f"dtype={self.dtype.name}, adjust_orientation={self.adjust_orientation}, "
            f"max_pixels={self.max_pixels})"
        )


def _cpu_only_decoder(threads: int = 1) -> Any:
    """An nvimgcodec Decoder on the CPU backend, with ``threads`` CPU threads."""
    nv = nvimgcodec_module()
    return nv.Decoder(
        device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY,
        max_num_cpu_threads=threads,
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

    Only the *fast* route (JPEG to RGB/BGR/GRAY/YCbCr) is decoded on the
    device. Every other image takes the CPU decoder's *native* or *fallback*
    route (``ImageDecoder``: nvImageCodec's CPU codecs with ``cpu_threads``
    threads, Pillow, tifffile) and its result is copied to the device, so the
    outputs have the CPU decoder's semantics for every format.

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
        dtype: as ``ImageDecoder``.

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
        dtype: DataType | str = DataType.UINT8,
    ) -> None:
        super().__init__(
            Device.MIXED, device_id=int(device_id), output_type=output_type,
            adjust_orientation=adjust_orientation, max_pixels=max_pixels, dtype=dtype,
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
        decoded_by: list[str] | None = None,
    ) -> list[Any]:
        """Decode a batch to the GPU; one result per input, in order.

        As ``ImageDecoder.decode_batch``, with cupy arrays ordered on
        ``cuda_stream``. Callable from any thread; calls run one at a time.

        Raises:
            ValueError: lengths differ, or a region is malformed (a caller bug).
            MissingDependencyError: cupy is not installed.
        """
        with self._lock, self._on_stream():
            return super().decode_batch(data, sources, regions=regions, decoded_by=decoded_by)

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

        Returns per stream an nvimgcodec device ``Image``, a ``_FromCpu``
        device array (a CPU fallback), or ``_CONFIRMED_BAD``; never ``None``.
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
            out[k] = _FromCpu(self._to_device(host))
            self.cpu_fallbacks += 1
            fallbacks.append(sources[k])
        if fallbacks:
            self._warn_once(fallbacks)
        return out

    def _cpu_decode(self, stream: Any) -> np.ndarray | None:
        """One code stream decoded by the CPU-only decoder: a host array, or ``None`` (bad data)."""
        (img,) = self._host_decoder().decode([stream], params=self._params)
        return None if img is None else host_array(img)

    def _host_decoder(self) -> Any:
        """The stage's CPU-only nvImageCodec decoder, ``cpu_threads`` threads (callers hold the lock)."""
        if self._cpu_decoder is None:
            self._cpu_decoder = _cpu_only_decoder(self.cpu_threads)
        return self._cpu_decoder

    def _decode_native(self, streams: list[Any], params: Any) -> list[Any]:
        """The native route on the CPU (the device's codecs differ); results are copied over."""
        return list(self._host_decoder().decode(streams, params=params))

    @staticmethod
    def _failed(img: Any) -> bool:
        return img is None or img is _CONFIRMED_BAD

    def _fast_name(self, img: Any) -> str:
        return "nvimgcodec" if isinstance(img, _FromCpu) else "nvimgcodec-gpu"

    def _finish_fast(self, img: Any) -> Any:
        return super()._finish_fast(img.array if isinstance(img, _FromCpu) else img)

    def _deliver(self, host: np.ndarray) -> Any:
        return self._to_device(host)

    @staticmethod
    def _failure_reason(probe: _Probe, img: Any) -> str:
        reason = ImageDecoder._failure_reason(probe, img)
        if img is _CONFIRMED_BAD:
            reason += "; confirmed by the CPU decoder, which fails on it too (not a device failure)"
        return reason

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
            f"cpu_threads={self.cpu_threads}, output_type={self.output_type.name}, dtype={self.dtype.name}, "
            f"adjust_orientation={self.adjust_orientation}, max_pixels={self.max_pixels})"
        )


class _FromCpu:
    """A device array the GPU decoder's triage made from a CPU decode (counted as such)."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array
