"""Build script for streamflow's C extension; metadata lives in pyproject.toml."""

from setuptools import Extension, setup

# -O3 and IEEE-exact float math (no fused multiply-add contraction), so results
# are the same on x86-64 and arm64; no -march flags: the wheel must run on any
# CPU of the architecture.
ext_modules = [
    Extension(
        "streamflow._native._imgproc",
        sources=["streamflow/_native/imgproc.c"],
        depends=["streamflow/_native/sf_common.h", "streamflow/_native/sf_simd.h"],
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno"],
    ),
    Extension(
        "streamflow._native._audio",
        sources=["streamflow/_native/audio.c"],
        depends=["streamflow/_native/sf_simd.h"],
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno"],
    ),
    Extension(
        "streamflow._native._filters",
        sources=["streamflow/_native/filters.c"],
        depends=["streamflow/_native/sf_common.h", "streamflow/_native/sf_simd.h"],
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno"],
    ),
    Extension(
        "streamflow._native._warp",
        sources=["streamflow/_native/warp.c"],
        depends=["streamflow/_native/sf_common.h", "streamflow/_native/sf_simd.h"],
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno"],
    ),
]

setup(ext_modules=ext_modules)
