"""Regions of .npy arrays, end to end: a pipeline with fn.readers.numpy, and sf.io.read_npy.

Writes a few 3-D arrays (C and Fortran order, little and big endian) to a
temporary folder, then reads regions of them

1. through a pipeline: a constant region, and a random per-sample region
   (``rel_roi_start=fn.random.uniform(...)``);
2. directly, with ``await read_npy(path, roi=...)`` and ``read_npy_sync``;

and checks every result against ``np.load(path)[region]``.

    PYTHONPATH=. python examples/numpy_roi.py
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile

import numpy as np

import streamflow as sf
from streamflow import fn
from streamflow.fn.readers import numpy as read_numpy
from streamflow.io import ReadStats, read_npy, read_npy_sync


def write_arrays(folder: str) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for i, (dtype, order) in enumerate([("<f4", "C"), (">f4", "C"), ("<i2", "F"), ("<f8", "F")]):
        arr = np.asarray(rng.normal(size=(32, 48, 64)) * 100, order=order).astype(dtype, order=order)
        path = os.path.join(folder, f"volume_{i}.npy")
        np.save(path, arr)
        paths.append(path)
    return paths


def reference(path: str, region: tuple[slice, ...]) -> np.ndarray:
    return np.load(path)[region]


def pipeline_part(folder: str) -> None:
    @sf.pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=1)
    def constant_roi():
        return read_numpy(file_root=folder, roi_start=(4, 8, 16), roi_shape=(8, 16, 32))

    with constant_roi() as pipe:
        for batch in pipe.iter():
            (regions,) = batch
            shapes = [(os.path.basename(s), regions.at(i).dtype.str, regions.at(i).shape) for i, s in enumerate(batch.sources)]
            print("constant ROI  :", shapes)
            for i, src in enumerate(batch.sources):
                assert np.array_equal(regions.at(i), reference(src, np.s_[4:12, 8:24, 16:48]))

    @sf.pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=1)
    def random_roi():
        start = fn.random.uniform(range=(0.0, 0.5), shape=3)
        return read_numpy(file_root=folder, rel_roi_start=start, rel_roi_shape=(0.5, 0.5, 0.5)), start

    with random_roi() as pipe:
        for batch in pipe.iter():
            regions, starts = batch
            for i, src in enumerate(batch.sources):
                rel = starts.at(i).astype(np.float32)
                lo = [math.floor(float(r) * d + 0.5) for r, d in zip(rel, (32, 48, 64))]
                hi = [math.floor((float(r) + 0.5) * d + 0.5) for r, d in zip(rel, (32, 48, 64))]
                region = tuple(slice(a, b) for a, b in zip(lo, hi))
                assert np.array_equal(regions.at(i), reference(src, region))
                print(f"random ROI    : {os.path.basename(src)} start {lo} -> {regions.at(i).shape}")


async def direct_part(paths: list[str]) -> None:
    stats = ReadStats()
    region = (slice(10, 20), slice(0, 48), slice(30, 40))
    arrays = await asyncio.gather(*(read_npy(p, roi=region, stats=stats) for p in paths))
    for path, arr in zip(paths, arrays):
        assert np.array_equal(arr, reference(path, region)) and arr.dtype.isnative
        print(f"read_npy      : {os.path.basename(path)} {arr.dtype} {arr.shape}")
    print(f"read amplification {stats.amplification:.3f} ({stats.bytes_read} bytes for {stats.useful_bytes})")
    padded = read_npy_sync(paths[0], roi={"roi_start": [-2, 0, 0], "roi_shape": [4, 2, 2]},
                           out_of_bounds_policy="pad", fill_value=-1)
    assert (padded[:2] == -1).all() and np.array_equal(padded[2:], np.load(paths[0])[0:2, 0:2, 0:2])
    print("read_npy_sync : padded region", padded.shape)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = write_arrays(folder)
        pipeline_part(folder)
        asyncio.run(direct_part(paths))
    print("all regions equal np.load(path)[region]")


if __name__ == "__main__":
    main()
