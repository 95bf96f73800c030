"""Video decoding on the GPU (NVDEC) through NVIDIA's PyNvVideoCodec: the only module that imports it.

Written against PyNvVideoCodec 2.x's documented ``SimpleDecoder``
(``SimpleDecoder(path, gpu_id=, cuda_stream=, use_device_memory=True,
output_color_type=OutputColorType.RGB)``, ``len(decoder)``,
``get_batch_frames_by_index(indices)`` returning frames that export DLPack,
HWC for ``RGB``). It has not run here: no GPU machine has been available to
this code yet (``tests/gpu/test_gpu_video.py`` checks it where one is).

* Decoding is queued on the GPU stage's stream (``cuda_stream``), and the
  frames are copied out of the decoder's surfaces on that same stream at
  once (the surfaces are reused by later calls, which queue behind the copy).
* ``SimpleDecoder`` opens a file path; encoded bytes (``decoders.video``) are
  written to a temporary file first.
* Frame numbers and padding follow the CPU path: the caller passes the frame
  numbers it computed from the CPU index (``-1`` for constant padding).
* NVDEC converts YUV to RGB with its own kernels: frames are close to the
  CPU decoder's, not bit-identical.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ..errors import DecodeError, MissingDependencyError

__all__ = ["NvdecDecoder", "nvc_module"]


def nvc_module() -> Any:
    """The ``PyNvVideoCodec`` module, imported on first use."""
    try:
        import PyNvVideoCodec
    except ImportError as exc:
        raise MissingDependencyError("pynvvideocodec", "gpu", "Video decoding on the GPU (NVDEC)") from exc
    return PyNvVideoCodec


class NvdecDecoder:
    """NVDEC decoders of one GPU stage: one ``SimpleDecoder`` per open file (a few kept), behind a lock.

    Args:
        device_id: the GPU.
        cuda_stream: the stage's stream handle (``stream.ptr``).
        cache_size: files kept open.
    """

    def __init__(self, device_id: int, cuda_stream: int, cache_size: int = 4) -> None:
        self.device_id = device_id
        self.cuda_stream = cuda_stream
        self.cache_size = cache_size
        self._open: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def _decoder(self, path: str) -> Any:
        decoder = self._open.get(path)
        if decoder is None:
            nvc = nvc_module()
            try:
                decoder = nvc.SimpleDecoder(
                    path, gpu_id=self.device_id, cuda_stream=self.cuda_stream, use_device_memory=True,
                    output_color_type=nvc.OutputColorType.RGB,
                )
            except Exception as err:  # PyNvVideoCodec raises its own exception types
                raise DecodeError(f"NVDEC cannot open the video: {err}", path) from None
            self._open[path] = decoder
            while len(self._open) > self.cache_size:
                self._open.popitem(last=False)
        self._open.move_to_end(path)
        return decoder

    def decode(self, path: str, frames: np.ndarray, fill: np.ndarray, shape: tuple[int, int, int]) -> Any:
        """Frames ``frames`` of ``path`` as a cupy ``(F, H, W, 3)`` uint8 array (``-1``: ``fill``).

        Queued on the stage's stream (the caller made it current).
        """
        import cupy as cp

        frames = np.asarray(frames, dtype=np.int64)
        out = cp.empty((len(frames), *shape), dtype=cp.uint8)
        pad = np.flatnonzero(frames < 0)
        if len(pad):
            out[cp.asarray(pad)] = cp.asarray(np.broadcast_to(fill, (3,)).astype(np.uint8))
        real = np.flatnonzero(frames >= 0)
        if not len(real):
            return out
        unique, inverse = np.unique(frames[real], return_inverse=True)
        with self._lock:
            decoder = self._decoder(path)
            if unique[-1] >= len(decoder):
                raise DecodeError(f"frame {int(unique[-1])} is out of range: NVDEC sees {len(decoder)} frames", path)
            try:
                decoded = decoder.get_batch_frames_by_index([int(i) for i in unique])
            except Exception as err:
                self._open.pop(path, None)
                raise DecodeError(f"NVDEC cannot decode frames {unique.tolist()}: {err}", path) from None
            if len(decoded) != len(unique):
                raise DecodeError(f"NVDEC returned {len(decoded)} of {len(unique)} frames", path)
            views = [cp.from_dlpack(f) for f in decoded]
            for slot, which in zip(real.tolist(), inverse.tolist()):
                view = views[which]
                if tuple(view.shape) != shape:
                    raise DecodeError(f"NVDEC frame shape {tuple(view.shape)}, expected {shape}", path)
                out[slot] = view  # copied on the current (stage) stream before the surface is reused
        return out

    def decode_bytes(self, data: np.ndarray, name: str, frames: np.ndarray, fill: np.ndarray,
                     shape: tuple[int, int, int]) -> Any:
        """As ``decode``, for a video held in memory (written to a temporary file for NVDEC)."""
        fd, path = tempfile.mkstemp(suffix=".video", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(np.asarray(data, dtype=np.uint8).tobytes())
            try:
                return self.decode(path, frames, fill, shape)
            except DecodeError as err:
                raise DecodeError(err.reason, name) from None
        finally:
            with self._lock:
                self._open.pop(path, None)
            os.unlink(path)
