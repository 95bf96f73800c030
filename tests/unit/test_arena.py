"""Host pipeline outputs written in place into the batch array (runtime/arena.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn, types
from streamflow._native import imgproc as K
from streamflow.runtime import arena as arena_module
from streamflow.runtime.arena import BatchArena

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def test_slot_fixes_shape_on_first_request_and_take_checks_every_row() -> None:
    arena = BatchArena(3)
    rows = [arena.slot(i, (2, 4), np.float32) for i in range(3)]
    assert all(r is not None and r.shape == (2, 4) for r in rows)
    assert arena.slot(0, (2, 5), np.float32) is None  # another shape: allocate your own
    assert arena.slot(0, (2, 4), np.uint8) is None  # another dtype
    assert arena.slot(3, (2, 4), np.float32) is None  # no such row
    for i, r in enumerate(rows):
        r[...] = i
    batch = arena.take(rows)
    assert batch is arena.array and batch.shape == (3, 2, 4)
    assert batch.ctypes.data % 64 == 0  # aligned like every host batch
    assert [float(batch[i].mean()) for i in range(3)] == [0.0, 1.0, 2.0]


def test_take_refuses_anything_but_the_rows_in_order() -> None:
    arena = BatchArena(3)
    rows = [arena.slot(i, (4,), np.float32) for i in range(3)]
    assert arena.take(rows[:2]) is None  # a row was dropped
    assert arena.take([rows[0], rows[2], rows[1]]) is None  # out of order
    assert arena.take([rows[0], rows[1].copy(), rows[2]]) is None  # a replacement sample
    assert arena.take([rows[0], rows[1], None]) is None  # a failed row
    assert BatchArena(2).take([np.zeros(4), np.zeros(4)]) is None  # nobody wrote in place


@pytest.fixture
def takes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per assembled output that had an arena, whether the batch array was used."""
    seen: list[bool] = []
    original = arena_module.BatchArena.take

    def spy(self: BatchArena, samples):  # type: ignore[no-untyped-def]
        result = original(self, samples)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(arena_module.BatchArena, "take", spy)
    return seen


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(0, 256, (40 + 7 * i, 61 - 3 * i, 3), dtype=np.uint8) for i in range(6)]


def _run(build, images, **kw):  # type: ignore[no-untyped-def]
    @sf.pipeline_def(batch_size=len(images), num_threads=2, seed=1, **kw)
    def pipe():
        return build(fn.external_source([list(images)]))

    with pipe() as p:
        return p.run()


def test_fused_resize_normalize_output_is_written_in_place(takes: list[bool]) -> None:
    images = _images()
    (out,) = _run(
        lambda x: fn.crop_mirror_normalize(fn.resize(x, resize_x=24, resize_y=20), mean=MEAN, std=STD),
        images,
    )
    assert takes[0]  # the first batch (later ones are prefetched)
    want = np.stack([K.crop_mirror_normalize(K.resample(im, (20, 24)), mean=MEAN, std=STD) for im in images])
    assert np.array_equal(out.as_tensor(), want)


def test_plain_resize_and_cmn_outputs_are_written_in_place(takes: list[bool]) -> None:
    images = _images()
    resized, normalized = _run(
        lambda x: (
            fn.resize(x, resize_x=24, resize_y=20),
            fn.crop_mirror_normalize(x, crop=(16, 18), mirror=1, dtype=types.FLOAT16, output_layout="HWC"),
        ),
        images,
    )
    assert takes[:2] == [True, True]
    assert np.array_equal(resized.as_tensor(), np.stack([K.resample(im, (20, 24)) for im in images]))
    want = np.stack([
        K.crop_mirror_normalize(im, window=K.resampled_size_window(im.shape[:2], (16, 18)), mirror=True,
                                out_dtype=np.float16, layout="HWC")
        for im in images
    ])  # fmt: skip
    assert np.array_equal(normalized.as_tensor(), want)


def test_ragged_outputs_fall_back_to_per_sample_arrays(takes: list[bool]) -> None:
    images = _images()
    (out,) = _run(lambda x: fn.resize(x, resize_shorter=16, subpixel_scale=False), images)  # the whole image
    assert takes[0] is False
    assert not out.is_dense_tensor()
    for im, got in zip(images, out):
        assert np.array_equal(got, K.resample(im, got.shape[:2]))


def test_a_failed_row_is_dropped_and_the_rest_stacked(takes: list[bool]) -> None:
    images: list[object] = [*_images()]
    images[2] = np.zeros((5, 5), np.float64)  # not an image the resize accepts: its row fails
    (out,) = _run(
        lambda x: fn.crop_mirror_normalize(fn.resize(x, resize_x=24, resize_y=20), mean=MEAN, std=STD),
        images,
        on_error="skip",
    )
    assert takes[:1] != [True]  # the batch shrank: stacked, not taken in place
    good = [im for k, im in enumerate(images) if k != 2]
    want = np.stack([K.crop_mirror_normalize(K.resample(im, (20, 24)), mean=MEAN, std=STD) for im in good])
    assert np.array_equal(out.as_tensor(), want)


def test_replaced_rows_from_a_reader_are_stacked_correctly(broken_root: Path, takes: list[bool]) -> None:
    @sf.pipeline_def(batch_size=6, num_threads=2, seed=1, on_error="skip")
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(broken_root), random_shuffle=False)
        images = fn.decoders.image(jpegs)
        return fn.crop_mirror_normalize(fn.resize(images, resize_x=32, resize_y=32), mean=MEAN, std=STD), labels

    with pipe() as p:
        out, _ = p.run()
    assert len(out) == 6 and out.as_tensor().shape == (6, 3, 32, 32)
    assert np.isfinite(out.as_tensor()).all()
    assert takes[:1] != [True]  # two rows were replaced: the batch was stacked
