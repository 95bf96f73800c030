"""Decode-only speed of ordinary JPEGs: streamflow's ImageDecoder against Pillow.

One thread decodes the JPEG set of ``_dataset.py`` to HWC uint8 RGB:
streamflow with ``ImageDecoder.decode_batch`` in chunks of 64 (the fast
route: nvImageCodec's CPU backend), Pillow with ``Image.open(...).convert("RGB")``
(the baseline not using streamflow). Per system: 1 warm-up pass, then
``--repeats`` timed passes, each in wall time and in CPU time
(``time.process_time``; far less disturbed by other jobs on a shared machine).

``--checkout DIR`` imports streamflow from another checkout (e.g. an older
commit exported with ``git archive``), to compare two versions of the decoder
on the same data: run the two alternately and compare the CPU times.

::

    python benchmarks/decode_micro.py                      # 512 images, 5 repeats
    python benchmarks/decode_micro.py --checkout /tmp/old --json /tmp/old.json
    python benchmarks/decode_micro.py --quick              # the smoke run
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common, _dataset

import _common
import _dataset

CHUNK = 64


def _time(run: Callable[[], int], repeats: int) -> dict[str, Any]:
    """Wall and CPU milliseconds per image over ``repeats`` passes, after one warm-up."""
    run()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        n = run()
        wall.append((time.perf_counter() - w) / n * 1e3)
        cpu.append((time.process_time() - c) / n * 1e3)
    return {"wall_ms_per_image": wall, "cpu_ms_per_image": cpu,
            "wall_median": statistics.median(wall), "cpu_median": statistics.median(cpu),
            "cpu_best": min(cpu)}


def run_streamflow(data: list[bytes], names: list[str], checkout: Path) -> Callable[[], int]:
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    from streamflow.codecs.nvimgcodec import ImageDecoder

    decoder = ImageDecoder()

    def run() -> int:
        for i in range(0, len(data), CHUNK):
            for out in decoder.decode_batch(data[i:i + CHUNK], names[i:i + CHUNK]):
                if not hasattr(out, "shape") or out.shape[2] != 3:
                    raise RuntimeError(f"streamflow failed on a benchmark image: {out}")
        return len(data)

    return run


def run_pillow(data: list[bytes]) -> Callable[[], int]:
    import numpy as np
    from PIL import Image

    def run() -> int:
        for raw in data:
            with Image.open(io.BytesIO(raw)) as im:
                np.asarray(im.convert("RGB"))
        return len(data)

    return run


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--checkout", type=Path, default=_dataset.REPO_ROOT,
                    help="the checkout streamflow is imported from (default: this one)")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="16 images, 1 repeat (smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.images, args.repeats = 16, 1
    info = _common.machine_info()
    _common.print_machine(info)
    files = _dataset.build_jpeg_set(args.data_dir, n=args.images)
    data = [Path(f).read_bytes() for f in files]
    names = [str(f) for f in files]
    results = {
        "streamflow": _time(run_streamflow(data, names, args.checkout.resolve()), args.repeats),
        "pillow": _time(run_pillow(data), args.repeats),
    }
    rows = [[name, f"{r['cpu_median']:.3f}", f"{r['cpu_best']:.3f}", f"{r['wall_median']:.3f}"]
            for name, r in results.items()]
    print(_common.format_table(["decoder", "CPU ms/img median", "CPU best", "wall ms/img median"], rows))
    out = args.json or (_dataset.DEFAULT_DATA_ROOT / "decode_micro-quick.json" if args.quick else
                        Path(__file__).resolve().parent / "results" / f"decode_micro-{info['tag']}.json")
    _common.write_json(out, {
        "benchmark": "decode_micro", "date": _common.now_iso(), "command": sys.argv,
        "checkout": args.checkout.name, "images": len(data), "repeats": args.repeats,
        "machine": info, "results": results,
    })
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
