"""DALI 2.4's recorded outputs for the augmentation operators (``tests/data/dali/augment``).

Recorded by ``tests/dali_reference/record_augment.py`` (needs DALI; the tests
do not). Each ``<section>.npz`` holds the input crops (``in/<i>``) and the
outputs ``<case>/<i>`` per sample; the int16 and float32 inputs are derived
from the crops by ``dali_reference/augment_cases.py``, as the recorder derives them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from dali_reference.augment_cases import as_f32, as_i16

DIR = Path(__file__).parent / "data" / "dali" / "augment"


@functools.cache
def load(section: str) -> dict[str, np.ndarray]:
    with np.load(DIR / f"{section}.npz") as z:
        return {k: z[k] for k in z.files}


def batch(section: str, key: str) -> list[np.ndarray]:
    """The per-sample arrays ``key/0, key/1, ...`` of ``section``."""
    ref = load(section)
    out = []
    while f"{key}/{len(out)}" in ref:
        out.append(ref[f"{key}/{len(out)}"])
    assert out, f"no recorded outputs {key!r} in {section}.npz"
    return out


def images(section: str) -> list[np.ndarray]:
    """The uint8 HWC photo crops the section was recorded on."""
    return batch(section, "in")


def inputs(section: str, kind: str) -> list[np.ndarray]:
    """``u8`` (the crops), ``i16`` or ``f32`` inputs of ``section``."""
    imgs = images(section)
    return {"u8": imgs, "i16": as_i16(imgs), "f32": as_f32(imgs)}[kind]


def max_diff(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The largest absolute difference over a batch (shapes and dtypes must agree)."""
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"sample {i}: shape {g.shape}, DALI {w.shape}"
        assert g.dtype == w.dtype, f"sample {i}: dtype {g.dtype}, DALI {w.dtype}"
        if g.size:
            worst = max(worst, float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()))
    return worst
