"""Pipelines with ``if`` on pipeline data, written once for DALI and streamflow.

Each case is ``body(fn, types, *inputs)``: the same code runs with
``nvidia.dali``'s ``fn`` (``record_conditionals.py``) and with streamflow's
(``tests/unit/ops/test_conditional.py``). The conditions are deterministic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"
IMAGES = [DATA / "jpeg-quirks" / n for n in ("hopper.jpg", "pil_sample_rgb.jpg", "flower2.jpg")] + [
    DATA / "photos" / "rocket.jpg"
]


def scalar_inputs() -> list[list[np.ndarray]]:
    """x: int32 of shape (1,), 0..7; f: float32 scalars."""
    x = [np.array([i], np.int32) for i in range(8)]
    f = [np.array(v, np.float32) for v in (0.0, 0.5, -1.0, 0.0, 2.0, 0.0, 3.5, 0.0)]
    return [x, f]


def image_inputs() -> list[list[np.ndarray]]:
    """Encoded JPEGs, an operation index per image, a flag per image."""
    files = IMAGES * 2
    encoded = [np.fromfile(p, dtype=np.uint8) for p in files]
    ops = [np.array(i % 4, np.int32) for i in range(len(files))]
    flags = [np.array(i % 3 == 0, np.int32) for i in range(len(files))]
    return [encoded, ops, flags]


# --------------------------------------------------------------------------- scalar cases


def elif_chain(fn: Any, types: Any, x: Any, f: Any) -> Any:
    if x[0] > 3:
        y = x * 2
    elif x[0] == 1:
        y = x + 100
    else:
        y = x - 1
    return y


def python_value_in_branch(fn: Any, types: Any, x: Any, f: Any) -> Any:
    k = 1
    if x[0] > 4:
        k = 2
    return x + k


def not_and_or(fn: Any, types: Any, x: Any, f: Any) -> Any:
    y = x
    if not x[0] > 5 and (x[0] == 0 or x[0] >= 3):
        y = x + 10
    return y


def logical_value(fn: Any, types: Any, x: Any, f: Any) -> Any:
    return x[0] > 1 and x[0] < 6


def float_condition(fn: Any, types: Any, x: Any, f: Any) -> Any:
    y = x
    if f:
        y = x * 3
    return y


def nested(fn: Any, types: Any, x: Any, f: Any) -> Any:
    if x[0] > 0:
        if x[0] > 4:
            y = x * 100
        else:
            y = x * 10
            if f:
                y = y + 1
    else:
        y = x
    return y


def early_return(fn: Any, types: Any, x: Any, f: Any) -> Any:
    if x[0] > 5:
        return x - 5
    if f:
        return x * 0
    z = x + 1
    return z * 2


def helper_with_if(fn: Any, types: Any, x: Any, f: Any) -> Any:
    return _clip_to(x, 4) + _clip_to(x * 2, 9)


def _clip_to(v: Any, limit: int) -> Any:
    if v[0] > limit:
        v = v * 0 + limit
    return v


def uses_outer_data_in_branch(fn: Any, types: Any, x: Any, f: Any) -> Any:
    doubled = x * 2
    out = x
    if x[0] >= 2:
        out = doubled + out
    return out


SCALAR_CASES = {
    "elif_chain": elif_chain,
    "python_value_in_branch": python_value_in_branch,
    "not_and_or": not_and_or,
    "logical_value": logical_value,
    "float_condition": float_condition,
    "nested": nested,
    "early_return": early_return,
    "helper_with_if": helper_with_if,
    "uses_outer_data_in_branch": uses_outer_data_in_branch,
}


# --------------------------------------------------------------------------- image cases


def random_grayscale(fn: Any, types: Any, encoded: Any, op: Any, flag: Any) -> Any:
    """DALI's "random grayscale via if" (here with a fed flag instead of a coin flip)."""
    images = fn.decoders.image(encoded, device="cpu")
    images = fn.crop(images, crop=(48, 64))
    if flag:
        gray = fn.color_space_conversion(images, image_type=types.RGB, output_type=types.GRAY)
        images = fn.cat(gray, gray, gray, axis=2)
    return images


def policy(fn: Any, types: Any, encoded: Any, op: Any, flag: Any) -> Any:
    """An AutoAugment-style policy: one operation of several per sample, then another by a flag."""
    images = fn.decoders.image(encoded, device="cpu")
    images = fn.crop(images, crop=(40, 56), crop_pos_x=0.3, crop_pos_y=0.6)
    if op == 0:
        images = fn.flip(images, horizontal=1)
    elif op == 1:
        images = fn.hsv(images, saturation=0.3)
    elif op == 2:
        images = fn.brightness_contrast(images, brightness=1.4, contrast=0.7)
    if flag:
        images = fn.flip(images, vertical=1, horizontal=0)
    return images


IMAGE_CASES = {"random_grayscale": random_grayscale, "policy": policy}
