"""``experimental.dilate`` / ``erode``: DALI 2.4 runs them only on the GPU (CV-CUDA), so there is no
DALI output to record; checked exactly against OpenCV's ``cv2.dilate``/``cv2.erode`` (rectangular
element, anchor, iterations, border modes) on real photos, and the GPU version (the same code over
cupy) through the host context."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import photo
from helpers import assert_same_outputs, make_chunk, run_arrays

from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.morphology import Morphology

cv2 = pytest.importorskip("cv2")

_CV_BORDER = {"constant": None, "replicate": "BORDER_REPLICATE", "reflect": "BORDER_REFLECT",
              "reflect_101": "BORDER_REFLECT_101"}


def _opencv(image, dilate, size, anchor, iterations, border):  # type: ignore[no-untyped-def]
    kernel = np.ones((size[1], size[0]), np.uint8)
    a = tuple(s // 2 if v == -1 else v for v, s in zip(anchor, size))
    kw = {} if border == "constant" else {"borderType": getattr(cv2, _CV_BORDER[border])}
    f = cv2.dilate if dilate else cv2.erode
    out = f(image, kernel, anchor=a, iterations=iterations, **kw)
    return out.reshape(image.shape)


@pytest.mark.parametrize("dilate", [True, False])
@pytest.mark.parametrize("size, anchor, iterations, border", [
    ((3, 3), (-1, -1), 1, "constant"), ((5, 2), (1, 0), 2, "constant"), ((4, 4), (-1, -1), 1, "replicate"),
    ((3, 7), (2, 6), 1, "reflect"), ((6, 3), (0, 1), 3, "reflect_101"),
])
def test_matches_opencv(dilate, size, anchor, iterations, border) -> None:
    images = [photo("chelsea.png", 3), photo("camera.png", 3), photo("coffee.png", 4).astype(np.float32) / 7]
    f = fn.experimental.dilate if dilate else fn.experimental.erode
    out = run_arrays(images, lambda x: f(x, mask_size=list(size), anchor=list(anchor), iterations=iterations,
                                         border_mode=border))[0]
    for got, image in zip(out, images):
        assert np.array_equal(got, _opencv(image, dilate, size, anchor, iterations, border))


def test_wrap_chw_and_per_sample_sizes() -> None:
    img = photo("chelsea.png", 5)
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    got = run_arrays([chw], lambda x: fn.experimental.dilate(fn.reshape(x, layout="CHW"), border_mode="wrap"))[0][0]
    padded = np.pad(img, ((1, 1), (1, 1), (0, 0)), mode="wrap")
    want = cv2.dilate(padded, np.ones((3, 3), np.uint8))[1:-1, 1:-1]
    assert np.array_equal(got, want.transpose(2, 0, 1))
    sizes = [np.array([5, 1], np.int32), np.array([1, 5], np.int32)]
    out = run_arrays([img, img], lambda x, s: fn.experimental.erode(x, mask_size=s), s=sizes)[0]
    assert np.array_equal(out[0], _opencv(img, False, (5, 1), (-1, -1), 1, "constant"))
    assert np.array_equal(out[1], _opencv(img, False, (1, 5), (-1, -1), 1, "constant"))


def test_errors() -> None:
    img = [photo("chelsea.png", 6)]
    with pytest.raises(PipelineDefinitionError, match="border_mode"):
        run_arrays(img, lambda x: fn.experimental.dilate(x, border_mode="mirror"))
    with pytest.raises(Exception, match="anchor"):
        run_arrays(img, lambda x: fn.experimental.dilate(x, mask_size=[3, 3], anchor=[5, 0]))
    with pytest.raises(Exception, match="uint8, uint16, int16 or float32"):
        run_arrays([img[0].astype(np.int32)], lambda x: fn.experimental.erode(x))


def test_gpu_equals_cpu(kernel_ctx) -> None:
    from streamflow.gpu.ops import find_impl

    op = Morphology(False, mask_size=(4, 3), anchor=(1, -1), iterations=2, border_mode="reflect_101", layout="HWC")
    images = [photo("coffee.png", 5), photo("chelsea.png", 4)]
    want = op.run(make_chunk(images))[0]
    with kernel_ctx.activate():
        got = find_impl(op)(op, make_chunk(kernel_ctx.to_device(images)), kernel_ctx)[0]
    assert_same_outputs([kernel_ctx.to_host(g) for g in got], want, "erode")
