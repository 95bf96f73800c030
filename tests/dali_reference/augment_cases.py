"""The augmentation operators' DALI reference cases: derived inputs and argument sets.

Shared by ``record_augment.py`` (which runs them on DALI 2.4 and saves the
outputs, with the uint8 crops, under ``tests/data/dali/augment/``) and the
tests (``tests/augment_refs.py`` and the operator tests). Neither DALI nor
streamflow is imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_i16(images: list[np.ndarray]) -> list[np.ndarray]:
    """The int16 inputs derived from the uint8 crops."""
    return [(im.astype(np.int16) * 120 - 15000).astype(np.int16) for im in images]


def as_f32(images: list[np.ndarray]) -> list[np.ndarray]:
    """The float32 inputs in [0, 1] derived from the uint8 crops."""
    return [(im / np.float32(255)).astype(np.float32) for im in images]


GAUSSIAN_BLURS: dict[str, dict[str, Any]] = {
    "sigma_0.7": dict(sigma=0.7),
    "sigma_2": dict(sigma=2.0),
    "sigma_1_3": dict(sigma=(1.0, 3.0)),
    "window_5": dict(window_size=5),
    "window_7_sigma_4": dict(window_size=7, sigma=4.0),
    "window_3_9": dict(window_size=(3, 9)),
    "sigma_6_big": dict(sigma=6.0),
}

LAPLACIANS: dict[str, dict[str, Any]] = {
    "default": dict(),
    "window_5": dict(window_size=5),
    "window_5_smooth_1": dict(window_size=5, smoothing_size=1),
    "window_3_7": dict(window_size=(3, 7), smoothing_size=(5, 1)),
    "normalized_7": dict(window_size=7, normalized_kernel=True),
    "scale": dict(window_size=3, scale=(0.5, 2.0)),
}

GRID_MASKS: dict[str, dict[str, Any]] = {
    "default": dict(),
    "tile_16_ratio_0.3": dict(tile=16, ratio=0.3),
    "rotated_shifted": dict(tile=20, ratio=0.5, angle=0.5, shift_x=3.5, shift_y=-7.2),
    "angle_2": dict(tile=10, ratio=0.7, angle=2.0),
    "ratio_1": dict(tile=7, ratio=1.0),
}
