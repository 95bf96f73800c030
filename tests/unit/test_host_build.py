"""The host build of the CUDA kernels: launchers, caching, compiler errors, AddressSanitizer.

(The operators' GPU implementations run through it in ``tests/unit/ops/``;
this file tests the build itself.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from streamflow._native.host_build import HostBuildError, HostModule, asan_runtime
from streamflow.gpu import kernels as K

WRITE_N_PLUS = r"""
typedef long long i64;
extern "C" __global__ void write_floats(const i64* p) {
    float* out = (float*)p[0];
    const int n = (int)p[1];
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x))
        out[i] = (float)i;
}
"""


@pytest.fixture(scope="module")
def module() -> HostModule:
    return HostModule(K.module_source(), K.KERNEL_NAMES)


def test_every_kernel_has_a_launcher(module: HostModule) -> None:
    assert set(module.kernel_names) == set(K.KERNEL_NAMES)
    with pytest.raises(HostBuildError, match="no kernel 'nope'"):
        module.launch("nope", (1, 1, 1), (1, 1, 1), 0)


@pytest.mark.parametrize("grid, block", [((1, 1, 1), (1, 1, 1)), ((3, 1, 1), (7, 1, 1)), ((64, 1, 1), (128, 1, 1))])
def test_grid_stride_loops_cover_every_element_once(grid, block) -> None:
    mod = HostModule(WRITE_N_PLUS, ["write_floats"])
    out = np.full(1000, -1.0, dtype=np.float32)
    params = np.array([out.ctypes.data, 1000], dtype=np.int64)
    mod.launch("write_floats", grid, block, params.ctypes.data)
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.float32))


def test_the_flip_kernel_on_numpy_buffers(module: HostModule) -> None:
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((5, 7), (9, 4))]
    outs = [np.zeros_like(i) for i in images]
    S = K.FLIP_SLOTS
    P = np.zeros((2, K.NP), dtype=np.int64)
    for j, (img, out) in enumerate(zip(images, outs)):
        P[j, S["SRC"]], P[j, S["DST"]] = img.ctypes.data, out.ctypes.data
        P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = 1, img.shape[0], img.shape[1], 3
        P[j, S["HFLIP"]], P[j, S["VFLIP"]] = 1, j
    module.launch("sf_flip_b1", (2, 2, 1), (4, 1, 1), P.ctypes.data)
    np.testing.assert_array_equal(outs[0], images[0][:, ::-1])
    np.testing.assert_array_equal(outs[1], images[1][::-1, ::-1])


_GRIDS = [((1, 1), (1, 1, 1)), ((2, 1), (3, 1, 1)), ((64, 1), (256, 1, 1))]
_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.float32, 8: np.int64}


@pytest.mark.parametrize("gx, block", [(g[0], b) for g, b in _GRIDS])
@pytest.mark.parametrize("size", sorted(_DTYPES))
def test_flip_over_a_batch_of_odd_sizes(module: HostModule, gx: int, block, size: int) -> None:
    """Several samples (planes, odd extents, every flip combination) in one launch, any grid."""
    rng = np.random.default_rng(size)
    shapes = [(1, 5, 7, 3), (2, 9, 4, 1), (1, 1, 13, 2), (3, 11, 1, 4)]
    images = [rng.integers(0, 100, s).astype(_DTYPES[size]) for s in shapes]
    outs = [np.zeros_like(i) for i in images]
    S = K.FLIP_SLOTS
    P = np.zeros((len(images), K.NP), dtype=np.int64)
    for j, (img, out) in enumerate(zip(images, outs)):
        P[j, S["SRC"]], P[j, S["DST"]] = img.ctypes.data, out.ctypes.data
        P[j, S["P"]], P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape
        P[j, S["HFLIP"]], P[j, S["VFLIP"]] = j & 1, j >> 1
    module.launch(f"sf_flip_b{size}", (gx, len(images), 1), block, P.ctypes.data)
    for j, (img, out) in enumerate(zip(images, outs)):
        want = img[:, :, ::-1] if j & 1 else img
        want = want[:, ::-1] if j >> 1 else want
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("gx, block", [(g[0], b) for g, b in _GRIDS])
def test_crop_windows_partly_outside_take_the_fill(module: HostModule, gx: int, block) -> None:
    """Crop windows over the edges (and one wholly outside) against numpy slicing of a padded image."""
    rng = np.random.default_rng(1)
    img = rng.random((7, 10, 3), dtype=np.float32)
    fill = np.array([-1.0, -2.0, -3.0], dtype=np.float32)
    windows = [(-2, -3, 5, 6), (4, 7, 6, 5), (0, 0, 7, 10), (1, 2, 3, 4), (20, 20, 2, 3), (-1, -1, 9, 12)]
    pad = 30
    padded = np.broadcast_to(fill, (7 + 2 * pad, 10 + 2 * pad, 3)).copy()
    padded[pad:pad + 7, pad:pad + 10] = img
    outs = [np.full((oh, ow, 3), np.nan, dtype=np.float32) for _, _, oh, ow in windows]
    S = K.CROP_SLOTS
    P = np.zeros((len(windows), K.NP), dtype=np.int64)
    for j, ((y0, x0, oh, ow), out) in enumerate(zip(windows, outs)):
        P[j, S["SRC"]], P[j, S["SRC_STRIDE"]], P[j, S["DST"]], P[j, S["FILL"]] = (
            img.ctypes.data, 10 * 3, out.ctypes.data, fill.ctypes.data)
        P[j, S["H"]], P[j, S["W"]], P[j, S["C"]] = img.shape
        P[j, S["OH"]], P[j, S["OW"]], P[j, S["Y0"]], P[j, S["X0"]] = oh, ow, y0, x0
    module.launch("sf_crop_b4", (gx, len(windows), 1), block, P.ctypes.data)
    for (y0, x0, oh, ow), out in zip(windows, outs):
        np.testing.assert_array_equal(out, padded[pad + y0:pad + y0 + oh, pad + x0:pad + x0 + ow])


def test_a_compile_error_names_the_problem() -> None:
    with pytest.raises(HostBuildError, match="(?s)host build of the kernels failed.*error: expected unqualified-id"):
        HostModule("this is not C++;", ["k"])


def test_the_library_is_cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMFLOW_HOST_KERNEL_CACHE", str(tmp_path))
    HostModule(WRITE_N_PLUS, ["write_floats"])
    built = list(tmp_path.glob("kernels-*.so"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    HostModule(WRITE_N_PLUS, ["write_floats"])
    assert built[0].stat().st_mtime_ns == stamp and len(list(tmp_path.glob("kernels-*.so"))) == 1


def test_sanitize_needs_the_runtime_preloaded() -> None:
    from streamflow._native.host_build import asan_loaded

    if asan_loaded():
        pytest.skip("this process runs under AddressSanitizer")
    with pytest.raises(HostBuildError, match="LD_PRELOAD"):
        HostModule(WRITE_N_PLUS, ["write_floats"], sanitize=True)


@pytest.mark.parametrize("overflow", [False, True])
def test_asan_build_catches_an_out_of_bounds_write(tmp_path, overflow: bool) -> None:
    """A kernel that writes one float past its buffer (the old float16 resize bug) is caught."""
    runtime = asan_runtime()
    if runtime is None:
        pytest.skip("no AddressSanitizer runtime for this compiler")
    script = textwrap.dedent(f"""
        import numpy as np
        from streamflow._native.host_build import HostModule
        mod = HostModule({WRITE_N_PLUS!r}, ["write_floats"], sanitize=True)
        out = np.empty(100, dtype=np.float32)
        params = np.array([out.ctypes.data, {101 if overflow else 100}], dtype=np.int64)
        mod.launch("write_floats", (1, 1, 1), (32, 1, 1), params.ctypes.data)
        print("survived")
    """)
    env = dict(os.environ, LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0",
               STREAMFLOW_HOST_KERNEL_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    if overflow:
        assert done.returncode != 0 and "heap-buffer-overflow" in done.stderr, done.stderr[-2000:]
    else:
        assert done.returncode == 0 and "survived" in done.stdout, done.stderr[-2000:]
