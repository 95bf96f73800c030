"""Every CUDA kernel source compiles with NVRTC for compute_80 and compute_90.

NVRTC needs no driver or GPU, so this runs on CPU-only CI whenever the ``gpu``
extra (cupy, with the NVRTC library) is installed; it is skipped otherwise.
"""

from __future__ import annotations

import pytest

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="cupy (the gpu extra) is not installed")

from streamflow.gpu import kernels as K


def _compile(arch: str) -> str:
    try:
        prog = nvrtc.createProgram(K.module_source(), "streamflow_ops.cu", [], [])
    except Exception as exc:  # the NVRTC library itself is missing
        pytest.skip(f"NVRTC is not usable here ({type(exc).__name__}: {exc}); pip install nvidia-cuda-nvrtc")
    try:
        nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", *K.COMPILE_OPTIONS, *K.CUPY_ADDED_OPTIONS])
    except Exception as exc:
        log = nvrtc.getProgramLog(prog)
        raise AssertionError(f"NVRTC failed for {arch}: {exc}\n{log}") from None
    ptx = nvrtc.getPTX(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
def test_kernels_compile(arch: str) -> None:
    ptx = _compile(arch)
    missing = [name for name in K.KERNEL_NAMES if f".entry {name}(" not in ptx]
    assert not missing, f"kernels missing from the PTX: {missing}"


def test_slot_tables_fit_and_do_not_overlap() -> None:
    rs, cm = K.RESAMPLE_SLOTS, K.CMN_SLOTS
    # the fused kernel reads both tables from one parameter row
    assert not set(rs.values()) & set(cm.values())
    for table in (rs, cm, K.CROP_SLOTS, K.FLIP_SLOTS):
        assert max(table.values()) < K.NP
        assert len(set(table.values())) == len(table)


def test_sources_need_no_headers() -> None:
    assert "#include" not in K.module_source()


def test_importing_the_gpu_package_does_not_import_cupy() -> None:
    import subprocess
    import sys

    code = "import sys, streamflow.gpu, streamflow.gpu.stage; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
