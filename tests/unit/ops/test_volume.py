"""Volumes (DHWC): flip, crop, resize, rotate and warp_affine against DALI 2.4 on a real MRI volume.

Cases in ``tests/dali_reference/geometry_cases.py`` (``VOLUME``), recorded by
``record_geometry.py``. Tolerances (``Case.atol``): flips and crops exact;
NN resize and NN rotate exact; linear resize, rotate and warp: 1 on uint8,
1e-2 on float32 values up to 300 (separable passes and float32 sampling in another order).
"""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import VOLUME, check_case

from streamflow.ops.volume import volume_output_size


@pytest.mark.parametrize("case", VOLUME, ids=lambda c: c.name)
def test_volume_matches_dali(case) -> None:
    check_case("volume", case)


def test_volume_output_size_rules() -> None:
    # measured on DALI 2.4 for a 25 x 41 x 33 volume
    assert volume_output_size((25, 41, 33), [None, None, 66]) == (50, 82, 66)
    assert volume_output_size((25, 41, 33), [None, 50, 66]) == (39, 50, 66)  # geometric mean of the scales
    assert volume_output_size((25, 41, 33), [None, None, None], resize_shorter=50) == (50, 82, 66)


def test_volume_pipeline_from_numpy_reader(tmp_path) -> None:
    """The gallery's 3-D chain on files: read, rotate by a random angle, resize, crop, flip."""
    from dali_reference.geometry_cases import volume

    import streamflow as sf
    from streamflow import fn

    vol = ((volume().astype(np.float32) + 610) / 31000 * 255).astype(np.uint8)
    for i in range(3):
        np.save(tmp_path / f"v{i}.npy", np.roll(vol, i, axis=0))

    @sf.pipeline_def(batch_size=3, num_threads=2, seed=5)
    def pipe():
        v = fn.readers.numpy(file_root=str(tmp_path))
        v = fn.rotate(v, angle=fn.random.uniform(range=(-20, 20)), axis=(0, 0, 1), fill_value=0)
        v = fn.resize(v, size=(32, 48, 48))
        v = fn.crop(v, crop=(24, 32, 32))
        return fn.flip(v, depthwise=fn.random.coin_flip())

    def first_batch():
        with pipe() as p:
            return [np.asarray(p.run()[0].at(i)) for i in range(3)]

    a, b = first_batch(), first_batch()
    assert all(x.shape == (24, 32, 32, 1) and x.dtype == np.uint8 for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))  # deterministic from the seed
    assert not np.array_equal(a[0], a[1])
