"""The CUDA kernels built as host C++ and run on the CPU: their arithmetic checked in CI.

streamflow's kernels (``gpu/kernels/``) use no shared memory, no
``__syncthreads``, no atomics and no warp intrinsics: every thread is
independent. So the *same* source compiles as ordinary C++ once a small shim
(``SHIM`` below) defines ``__global__``/``__device__`` away, makes
``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` variables, and supplies the
CUDA bit-cast intrinsics; a generated launcher per kernel loops over the grid
and calls the kernel for every thread. ``GpuContext.on_host()`` runs the GPU
implementations of the operators through this build on numpy arrays.

It checks what the kernels compute and which memory they touch (with
``sanitize=True``, under AddressSanitizer). It does not check streams, events,
decoding, kvikio reads or the hand-off to frameworks, and it is not a GPU
test. It is built with ``-ffp-contract=off`` like ``_native/imgproc.c``; it
does not reproduce cupy's ``-ftz=true`` (subnormals are kept on the host).

Compiled libraries are cached in ``$STREAMFLOW_HOST_KERNEL_CACHE`` (default
``$XDG_CACHE_HOME/streamflow/host-kernels``, else ``~/.cache/...``), keyed by
the source, the flags and the compiler version, and written atomically, so
parallel test processes share them.

AddressSanitizer: a sanitized library can only be loaded into a Python that
started with the ASan runtime preloaded::

    LD_PRELOAD=$(g++ -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 python ...

``HostModule(..., sanitize=True)`` refuses (``HostBuildError``) when it is not.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SHIM", "HostBuildError", "HostModule", "asan_runtime", "asan_loaded"]

#: What turns the CUDA sources into host C++ (prepended to them).
SHIM = r"""
#include <math.h>
#include <cstring>
#include <cstdint>
struct sf_dim3 { unsigned x, y, z; };
static thread_local sf_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
static inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline int __float_as_int(float f) { int v; std::memcpy(&v, &f, 4); return v; }
static inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
static inline float __uint_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }

"""

_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c++14", "-ffp-contract=off", "-fno-math-errno")
_ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-O1")


class HostBuildError(RuntimeError):
    """The host build of the kernels could not be made or loaded (the compiler's words included)."""


def _launchers(names: Sequence[str]) -> str:
    """One C launcher per kernel: every block, then every thread, in order."""
    out = []
    for name in names:
        out.append(
            f'extern "C" void sf_host_launch_{name}(unsigned gx, unsigned gy, unsigned gz, '
            "unsigned bx, unsigned by, unsigned bz, const long long* params) {\n"
            "  gridDim = {gx, gy, gz}; blockDim = {bx, by, bz};\n"
            "  for (unsigned z = 0; z < gz; z++) for (unsigned y = 0; y < gy; y++) for (unsigned x = 0; x < gx; x++) {\n"
            "    blockIdx = {x, y, z};\n"
            "    for (unsigned tz = 0; tz < bz; tz++) for (unsigned ty = 0; ty < by; ty++) for (unsigned tx = 0; tx < bx; tx++) {\n"
            f"      threadIdx = {{tx, ty, tz}}; {name}(params);\n"
            "    }\n  }\n}\n"
        )
    return "\n".join(out)


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise HostBuildError("no C++ compiler found (install g++, or set CXX) for the host build of the kernels")
    return cxx


@functools.lru_cache(maxsize=4)
def _compiler_version(cxx: str) -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False).stdout


def _cache_dir() -> Path:
    env = os.environ.get("STREAMFLOW_HOST_KERNEL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "streamflow" / "host-kernels"


def asan_runtime() -> str | None:
    """The path of the AddressSanitizer runtime to preload, or None when there is none."""
    try:
        cxx = _compiler()
    except HostBuildError:
        return None
    path = subprocess.run([cxx, "-print-file-name=libasan.so"], capture_output=True, text=True, check=False).stdout.strip()
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


def asan_loaded() -> bool:
    """Whether the AddressSanitizer runtime is loaded in this process."""
    try:
        with open("/proc/self/maps") as maps:
            return "libasan" in maps.read()
    except OSError:
        return False


_lock = threading.Lock()


class HostModule:
    """CUDA kernel sources compiled as host C++ (see the module docstring).

    Args:
        source: the kernels' CUDA source (no includes).
        kernel_names: the ``extern "C" __global__`` kernels to launch; each
            takes one ``const long long*`` parameter array.
        sanitize: build and load with AddressSanitizer.

    Raises:
        HostBuildError: no compiler, a compilation error (its message
            included), or ``sanitize`` without the ASan runtime preloaded.
    """

    def __init__(self, source: str, kernel_names: Sequence[str], *, sanitize: bool = False) -> None:
        if sanitize and not asan_loaded():
            raise HostBuildError(
                "the AddressSanitizer build needs the ASan runtime preloaded: run Python with "
                f"LD_PRELOAD={asan_runtime() or '$(g++ -print-file-name=libasan.so)'} ASAN_OPTIONS=detect_leaks=0"
            )
        self.kernel_names = tuple(kernel_names)
        self.sanitize = sanitize
        path = self._build("\n".join([SHIM, source, _launchers(self.kernel_names)]))
        try:
            self._lib = ctypes.CDLL(str(path))
        except OSError as err:
            raise HostBuildError(f"cannot load the host build {path}: {err}") from None
        self._launch: dict[str, ctypes._CFuncPtr] = {}  # type: ignore[name-defined]
        for name in self.kernel_names:
            fn = getattr(self._lib, f"sf_host_launch_{name}")
            fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_void_p]
            fn.restype = None
            self._launch[name] = fn

    def _build(self, code: str) -> Path:
        cxx = _compiler()
        flags = _FLAGS + (_ASAN_FLAGS if self.sanitize else ())
        key = hashlib.sha256("\0".join([code, " ".join(flags), _compiler_version(cxx)]).encode()).hexdigest()[:24]
        folder = _cache_dir()
        target = folder / f"kernels-{key}{'-asan' if self.sanitize else ''}.so"
        if target.exists():
            return target
        with _lock:
            if target.exists():
                return target
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder) as tmp:
                src = Path(tmp) / "kernels.cpp"
                src.write_text(code)
                out = Path(tmp) / "kernels.so"
                done = subprocess.run([cxx, *flags, str(src), "-o", str(out)], capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise HostBuildError(f"the host build of the kernels failed ({cxx}):\n{done.stderr.strip()}")
                os.replace(out, target)  # atomic: a parallel build of the same key writes the same bytes
        return target

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], params_address: int) -> None:
        """Run kernel ``name`` over ``grid`` x ``block`` with the int64 parameter array at ``params_address``.

        The call releases the GIL (ctypes does) and returns when every thread has run.
        """
        try:
            fn = self._launch[name]
        except KeyError:
            raise HostBuildError(f"no kernel {name!r} in this module") from None
        fn(*(int(v) for v in grid), *(int(v) for v in block), ctypes.c_void_p(params_address))
