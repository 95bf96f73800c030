"""Regions of big .npy files: streamflow's read_npy vs np.load(mmap_mode="r")[region].

For one float32 array of ``--size-mib`` MiB (default 256, shape (Z, 512, 512);
built once under ``.bench-data/numpy_roi/``) and regions of 1 %, 10 % and
100 % of it, in two shapes:

* ``slab``: whole (Y, X) planes, ``[z0:z1, :, :]``, contiguous in the file;
* ``cube``: the same fraction on every axis, ``[z0:z1, y0:y1, x0:x1]``, one
  short run per (z, y) row in the file;

(at 100 % both are the whole array, measured once as ``full``) it measures:

* throughput: region bytes per second [GB/s, 1e9], median of the repeats;
* read amplification, two ways:
  ``requested`` = bytes asked of the OS / region bytes (streamflow: its
  ``ReadStats``; mmap: the 4 KiB pages the region touches, the least a page
  fault can bring in); ``device`` = bytes the kernel fetched from storage
  (``read_bytes`` of ``/proc/self/io``, readahead included; meaningful only
  when the cache is cold) / region bytes.

Systems: ``streamflow.read_npy`` (async, reads split over ``--threads``
threads), ``streamflow.read_npy_sync`` (one thread), and the baseline
``np.array(np.load(path, mmap_mode="r")[region], order="C", copy=True)``. Every result
is compared with the baseline's.

Cache: ``cold`` drops the file from the page cache before every repeat with
``posix_fadvise(POSIX_FADV_DONTNEED)`` (and checks that it worked: a cold
full read must fetch the file from storage, else the run is reported as
``warm``); ``warm`` reads the cached file. ``--cache cold,warm`` (default) runs both.

``--gpu`` adds ``cupy.asarray(np.load(mmap)[region])`` and
``read_npy(device="gpu")`` (kvikio; run twice with ``KVIKIO_COMPAT_MODE=ON``
and ``OFF`` to compare compat mode and GDS: the mode is recorded). Without
cupy/kvikio or a GPU it is reported as skipped.

Usage::

    python benchmarks/numpy_roi.py                    # 256 MiB, cold + warm
    python benchmarks/numpy_roi.py --quick            # 4 MiB smoke run, seconds
    python benchmarks/numpy_roi.py --size-mib 1024 --repeats 5 --gpu

Writes ``benchmarks/results/numpy_roi-<machine tag>.json`` (``--quick``:
``.bench-data/quick-numpy_roi-<tag>.json``) unless ``--output`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

sys.path.insert(0, str(_common.REPO_ROOT))
from streamflow.io import ReadStats, read_npy, read_npy_header, read_npy_sync
from streamflow.io.roi import plan_reads

FRACTIONS = (0.01, 0.10, 1.0)
PAGE = 4096


# --------------------------------------------------------------------------- data


def array_shape(size_mib: int) -> tuple[int, int, int]:
    """(Z, Y, X) float32 of ``size_mib`` MiB: 512x512 planes (256x256 below 64 MiB)."""
    side = 512 if size_mib >= 64 else 256
    plane = side * side * 4
    z = max(1, round(size_mib * 2**20 / plane))
    return (z, side, side)


def build_array(folder: Path, size_mib: int) -> Path:
    """The test array (reused when its header matches), written and fsynced."""
    shape = array_shape(size_mib)
    path = folder / f"vol-{shape[0]}x{shape[1]}x{shape[2]}-f4.npy"
    if path.exists():
        try:
            h = read_npy_header(path)
            if h.shape == shape and h.dtype == np.dtype("<f4") and not h.fortran_order:
                return path
        except Exception:
            pass
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype="<f4", shape=shape)
    plane = np.arange(shape[1] * shape[2], dtype=np.float32).reshape(shape[1:])
    for z in range(shape[0]):
        arr[z] = plane + z * 0.5
    arr.flush()
    del arr
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(path)
    return path


def regions(shape: tuple[int, ...]) -> list[tuple[str, float, tuple[slice, ...]]]:
    """(name, nominal fraction, slices) of the measured regions, centred."""
    out = []
    for frac in FRACTIONS:
        if frac >= 1.0:
            out.append(("full", frac, tuple(slice(0, d) for d in shape)))
            continue
        nz = max(1, round(shape[0] * frac))
        z0 = (shape[0] - nz) // 2
        out.append(("slab", frac, (slice(z0, z0 + nz), slice(0, shape[1]), slice(0, shape[2]))))
        c = frac ** (1 / 3)
        sizes = [max(1, round(d * c)) for d in shape]
        out.append(("cube", frac, tuple(slice((d - n) // 2, (d - n) // 2 + n) for d, n in zip(shape, sizes))))
    return out


# --------------------------------------------------------------------------- cache


def drop_cache(path: Path) -> bool:
    """Ask the kernel to drop ``path`` from the page cache; False where unsupported."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def storage_bytes() -> int | None:
    """``read_bytes`` of /proc/self/io: bytes this process made the kernel fetch from storage."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cold_cache_works(path: Path) -> bool:
    """Drop the file, read it whole, and check the kernel really went to storage."""
    if not drop_cache(path):
        return False
    before = storage_bytes()
    if before is None:
        return False
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass
    fetched = storage_bytes() - before  # type: ignore[operator]
    return fetched >= 0.5 * path.stat().st_size


# --------------------------------------------------------------------------- systems


def mmap_pages(path: Path, region: tuple[slice, ...]) -> int:
    """Bytes of the 4 KiB pages the region touches (what mmap faults in at the least)."""
    header = read_npy_header(path)
    plan = plan_reads(header, region, alignment=PAGE, max_gap=0, max_waste=0.0, max_reads=1 << 62,
                      file_size=path.stat().st_size)
    return plan.buffer_size


def load_mmap_copy(path: Path, region: tuple[slice, ...]) -> np.ndarray:
    """The baseline: ``np.load(mmap_mode="r")[region]`` copied into a new C-order array.

    (``np.ascontiguousarray`` would return a view of the mapping for
    contiguous regions, reading nothing and keeping the pages mapped.)
    """
    return np.array(np.load(path, mmap_mode="r")[region], order="C", copy=True)


class Systems:
    """The ways of reading a region, each returning (array, requested bytes or None)."""

    def __init__(self, threads: int, gpu: bool) -> None:
        self.threads = threads
        self.loop = asyncio.new_event_loop()
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="bench-io")
        self.gpu = gpu
        self.cupy: Any = None

    def close(self) -> None:
        self.pool.shutdown()
        self.loop.close()

    def names(self) -> list[str]:
        names = ["streamflow.read_npy", "streamflow.read_npy_sync", "np.load(mmap)"]
        if self.gpu:
            names += ["streamflow.read_npy(gpu)", "cupy.asarray(np.load(mmap))"]
        return names

    def run(self, name: str, path: Path, region: tuple[slice, ...]) -> tuple[Any, int | None]:
        if name == "streamflow.read_npy":
            st = ReadStats()
            arr = self.loop.run_until_complete(
                read_npy(path, roi=region, executor=self.pool, max_concurrency=self.threads, stats=st)
            )
            return arr, st.bytes_read
        if name == "streamflow.read_npy_sync":
            st = ReadStats()
            return read_npy_sync(path, roi=region, stats=st), st.bytes_read
        if name == "np.load(mmap)":
            return load_mmap_copy(path, region), None
        cupy = self.cupy
        if name == "streamflow.read_npy(gpu)":
            st = ReadStats()
            arr = self.loop.run_until_complete(read_npy(path, roi=region, device="gpu", executor=self.pool, stats=st))
            cupy.cuda.runtime.deviceSynchronize()
            return arr, st.bytes_read
        if name == "cupy.asarray(np.load(mmap))":
            arr = cupy.asarray(np.load(path, mmap_mode="r")[region])
            cupy.cuda.runtime.deviceSynchronize()
            return arr, None
        raise ValueError(name)


def gpu_status() -> tuple[bool, str, dict[str, Any]]:
    """(usable, reason, details) for the --gpu part."""
    try:
        import cupy
        import kvikio
    except ImportError as e:
        return False, f"needs cupy and kvikio ({e.name} missing): pip install 'streamflow[gpu]'", {}
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no usable GPU ({type(e).__name__}: {e})", {}
    if count < 1:
        return False, "no GPU", {}
    details: dict[str, Any] = {"kvikio": getattr(kvikio, "__version__", None),
                               "KVIKIO_COMPAT_MODE": os.environ.get("KVIKIO_COMPAT_MODE")}
    try:
        details["compat_mode"] = str(kvikio.defaults.compat_mode())
    except Exception:
        try:
            details["compat_mode"] = str(kvikio.defaults.get("compat_mode"))
        except Exception:
            details["compat_mode"] = None
    details["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return True, "", details


# --------------------------------------------------------------------------- measuring


def measure(systems: Systems, name: str, path: Path, region: tuple[slice, ...], reference: np.ndarray,
            cold: bool, repeats: int, warmup: int) -> dict[str, Any]:
    region_bytes = reference.nbytes
    seconds: list[float] = []
    device: list[int] = []
    requested: int | None = None
    correct = True
    for i in range(warmup + repeats):
        if cold:
            drop_cache(path)
        before = storage_bytes()
        start = time.perf_counter()
        arr, requested = systems.run(name, path, region)
        elapsed = time.perf_counter() - start
        after = storage_bytes()
        if i == 0:
            host = arr.get() if hasattr(arr, "get") else arr
            correct = bool(host.shape == reference.shape and np.array_equal(host, reference))
        del arr
        if i >= warmup:
            seconds.append(elapsed)
            if before is not None and after is not None:
                device.append(after - before)
    if requested is None:
        requested = mmap_pages(path, region)
    med = statistics.median(seconds)
    return {
        "method": name,
        "cache": "cold" if cold else "warm",
        "region_bytes": region_bytes,
        "seconds": seconds,
        "seconds_median": med,
        "gbps_median": region_bytes / med / 1e9,
        "gbps_best": region_bytes / min(seconds) / 1e9,
        "requested_bytes": requested,
        "amplification": requested / region_bytes,
        "page_bound_amplification": mmap_pages(path, region) / region_bytes,
        "device_bytes_median": statistics.median(device) if device else None,
        "device_amplification": (statistics.median(device) / region_bytes) if device and cold else None,
        "reads": reads_of(path, region) if name.startswith("streamflow") else None,
        "correct": correct,
    }


def reads_of(path: Path, region: tuple[slice, ...]) -> int:
    """How many positioned reads streamflow plans for the region (CPU path)."""
    return len(plan_reads(read_npy_header(path), region, file_size=path.stat().st_size).reads)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=None, help="array size in MiB (256; --quick: 4)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats per case (5; --quick: 1)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (1)")
    ap.add_argument("--threads", type=int, default=4, help="threads of read_npy's executor (4)")
    ap.add_argument("--cache", default="cold,warm", help="cold, warm or both (cold,warm)")
    ap.add_argument("--gpu", action="store_true", help="also cupy and read_npy(device='gpu')")
    ap.add_argument("--data-dir", type=Path, default=None, help="where the array lives (.bench-data/numpy_roi)")
    ap.add_argument("--output", type=Path, default=None, help="JSON result path")
    ap.add_argument("--quick", action="store_true", help="4 MiB, 1 repeat: a smoke test")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    size = args.size_mib or (4 if args.quick else 256)
    repeats = args.repeats or (1 if args.quick else 5)
    caches = [c.strip() for c in args.cache.split(",") if c.strip()]
    if not set(caches) <= {"cold", "warm"}:
        print(f"--cache takes cold and/or warm, got {args.cache!r}", file=sys.stderr)
        return 2
    info = _common.machine_info(("streamflow", "numpy", "cupy-cuda13x", "kvikio-cu13"))
    _common.print_machine(info)
    data_dir = args.data_dir or (_common.REPO_ROOT / ".bench-data" / "numpy_roi")
    path = build_array(data_dir, size)
    shape = array_shape(size)
    print(f"array   : {path} shape {shape} float32, {path.stat().st_size / 2**20:.1f} MiB")
    cold_ok = "cold" in caches and cold_cache_works(path)
    if "cold" in caches and not cold_ok:
        print("cache   : posix_fadvise(DONTNEED) does not drop this file here; 'cold' runs are WARM")
    gpu_ok, gpu_reason, gpu_details = gpu_status() if args.gpu else (False, "not asked (--gpu)", {})
    if args.gpu and not gpu_ok:
        print(f"gpu     : skipped: {gpu_reason}")
    systems = Systems(args.threads, gpu_ok)
    if gpu_ok:
        import cupy

        systems.cupy = cupy
    rows: list[dict[str, Any]] = []
    try:
        for shape_name, frac, region in regions(shape):
            reference = load_mmap_copy(path, region)
            for cache in caches:
                cold = cache == "cold" and cold_ok
                for name in systems.names():
                    r = measure(systems, name, path, region, reference, cold, repeats, args.warmup)
                    r.update(shape=shape_name, fraction=frac, region=[[s.start, s.stop] for s in region],
                             region_fraction=reference.nbytes / (path.stat().st_size - 128),
                             cache_requested=cache)
                    rows.append(r)
            del reference
    finally:
        systems.close()

    headers = ["region", "cache", "method", "GB/s", "ampl.req", "ampl.pages", "ampl.dev", "reads", "ok"]
    table = []
    for r in rows:
        dev = r["device_amplification"]
        table.append([
            f"{r['shape']} {100 * r['region_fraction']:.2f}%", r["cache"], r["method"],
            f"{r['gbps_median']:.2f}", f"{r['amplification']:.3f}", f"{r['page_bound_amplification']:.3f}",
            "-" if dev is None else f"{dev:.2f}", "-" if r["reads"] is None else str(r["reads"]),
            "yes" if r["correct"] else "NO",
        ])
    print(_common.format_table(headers, table))
    print("ampl.req: bytes asked of the OS (mmap: 4 KiB pages touched) / region bytes; ampl.pages: "
          "4 KiB pages the region touches / region bytes (the least any page-cache read fetches); "
          "ampl.dev: bytes fetched from storage (cold runs, readahead included) / region bytes")
    out = args.output or (
        (_common.REPO_ROOT / ".bench-data" / f"quick-numpy_roi-{info['tag']}.json") if args.quick
        else _common.RESULTS_DIR / f"numpy_roi-{info['tag']}.json"
    )
    _common.write_json(out, {
        "benchmark": "numpy_roi",
        "date": _common.now_iso(),
        "machine": info,
        "config": {"size_mib": size, "shape": list(shape), "dtype": "float32", "repeats": repeats,
                   "warmup": args.warmup, "threads": args.threads, "caches": caches,
                   "cold_cache_works": cold_ok, "quick": args.quick},
        "gpu": {"ran": gpu_ok, "skipped": None if gpu_ok else gpu_reason, **gpu_details},
        "results": rows,
    })
    print(f"\nwrote {out}")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
