"""Record DALI 2.4's outputs of image operators on sequences (FHWC) and of the sequence operators.

Run with any Python that has ``nvidia-dali-cuda130`` (DALI 2.4, CPU only)::

    python tests/dali_reference/record_sequence.py

Writes ``tests/data/dali/sequence/reference.npz``: the input sequences (seeded
noise, two samples of 4 frames) and each case's outputs, which
``tests/unit/ops/test_sequence.py`` compares against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from nvidia.dali import fn, pipeline_def

OUT = Path(__file__).resolve().parents[1] / "data" / "dali" / "sequence" / "reference.npz"


def sequences() -> list[np.ndarray]:
    rng = np.random.default_rng(42)
    return [rng.integers(0, 256, (4, 10, 12, 3), dtype=np.uint8) for _ in range(2)]


HUE = np.array([0.0, 30.0, -45.0, 90.0], dtype=np.float32)
BRIGHT = np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32)

CASES: dict[str, Any] = {
    "flip": lambda x: fn.flip(x, horizontal=1, vertical=1),
    "resize": lambda x: fn.resize(x, resize_x=6, resize_y=5),
    "crop": lambda x: fn.crop(x, crop=(6, 8), crop_pos_x=0.25, crop_pos_y=0.75),
    "cmn": lambda x: fn.crop_mirror_normalize(x, crop=(6, 8), mirror=1, mean=[10, 20, 30], std=[2, 3, 4],
                                              output_layout="FCHW"),
    "brightness_per_frame": lambda x: fn.brightness_contrast(x, brightness=fn.per_frame(_const(BRIGHT)), contrast=1.5),
    "hue_per_frame": lambda x: fn.hue(x, hue=fn.per_frame(_const(HUE))),
    "rearrange": lambda x: fn.sequence_rearrange(x, new_order=[3, 0, 0, 2]),
    "extract": lambda x: fn.element_extract(x, element_map=[2]),  # one element: one DataNode
}


def _const(value: np.ndarray) -> Any:
    return fn.external_source(source=lambda: [value, value], batch=True)


def main() -> None:
    data = sequences()
    results: dict[str, np.ndarray] = {f"input_{i}": s for i, s in enumerate(data)}
    for name, build in CASES.items():
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
        def pipe() -> Any:
            x = fn.external_source(source=lambda: data, batch=True, layout="FHWC")
            return build(x)

        p = pipe()
        p.build()
        out = p.run()[0]
        for i in range(2):
            results[f"{name}_{i}"] = np.asarray(out[i])
        results[f"{name}_layout"] = np.array(out.layout())
    np.savez_compressed(OUT, **results)
    print(f"wrote {OUT}: {len(CASES)} cases")


if __name__ == "__main__":
    main()
