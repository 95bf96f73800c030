"""The GPU implementations chained as DALI's classification and SSD recipes use them, data kept on the device.

Each step's output (a device array on a GPU, the host build's array in CI)
feeds the next step's GPU implementation directly, as in a GPU stage; the
chain's results must equal the CPU operators' chain on the same real photos
and COCO boxes: bit for bit (normalize: within its reductions' rounding on a
real GPU). This checks that every output is a valid input of the next
operator (layouts, views, contiguity), which per-operator tests cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from dali_reference.record_detection import ANCHORS, load
from helpers import DECODER_FILES, make_chunk

from streamflow import fn, types
from streamflow.codecs import ImageDecoder
from streamflow.gpu.ops import find_impl

Step = tuple[Any, dict[str, list[Any]]]


def _op(build: Callable[..., Any], *inputs: int, **per_sample: list[Any]) -> Step:
    """The operator ``build(node, ..., **argument nodes)`` adds, with the per-sample values given here."""
    nodes = [fn.external_source([[np.zeros((4, 4, 3), np.uint8)]]) for _ in range(max(1, len(inputs)))]
    args = {k: fn.external_source([[np.float32(0)]]) for k in per_sample}
    out = build(*nodes, **args)
    node = (out[0] if isinstance(out, (tuple, list)) else out).producer
    return node.op, dict(per_sample)


def _run_gpu(ctx: Any, steps: list[Step], inputs: list[list[Any]]) -> list[list[Any]]:
    with ctx.activate():
        data = [ctx.to_device(samples) for samples in inputs]
        for op, args in steps:
            chunk = make_chunk(data[0], args)
            chunk.inputs.extend(data[1:op_inputs(op)])
            impl = find_impl(op)
            assert impl is not None, op.name
            data = impl(op, chunk, ctx) + data[op_inputs(op):]
            assert not chunk.failures, (op.name, chunk.failures)
    ctx.synchronize()
    return [[ctx.to_host(s) for s in out] for out in data]


def _run_cpu(steps: list[Step], inputs: list[list[Any]]) -> list[list[Any]]:
    data = [list(samples) for samples in inputs]
    for op, args in steps:
        chunk = make_chunk(data[0], args)
        chunk.inputs.extend(data[1:op_inputs(op)])
        data = op.run(chunk) + data[op_inputs(op):]
        assert not chunk.failures, (op.name, chunk.failures)
    return data


def op_inputs(op: Any) -> int:
    """Inputs an operator of these recipes reads (box_encoder: boxes and labels)."""
    return 2 if op.name == "box_encoder" else 1


def _photos() -> list[np.ndarray]:
    dec = ImageDecoder()
    return [dec.decode(np.frombuffer(f.read_bytes(), np.uint8)) for f in DECODER_FILES]


def _same(gpu: list[Any], cpu: list[Any], ctx: Any, ulp: int = 0) -> None:
    for g, c in zip(gpu, cpu):
        c = np.asarray(c)
        assert g.dtype == c.dtype and g.shape == c.shape
        if ctx.xp is np or not ulp:
            np.testing.assert_array_equal(g, c)
        else:
            np.testing.assert_array_max_ulp(g, c, maxulp=ulp)


def test_gpu_classification_recipe_equals_cpu(kernel_ctx) -> None:
    """random_resized_crop -> flip -> color_twist -> rotate -> normalize -> transpose -> cast."""
    photos = _photos()
    n = len(photos)
    steps = [
        _op(lambda x: fn.random_resized_crop(x, size=(96, 112))),
        _op(lambda x, horizontal: fn.flip(x, horizontal=horizontal), horizontal=[np.int32(i % 2) for i in range(n)]),
        _op(lambda x, hue, saturation: fn.color_twist(x, hue=hue, saturation=saturation, contrast=1.2),
            hue=[np.float32(v) for v in (-20, 0, 35, 90)][:n], saturation=[np.float32(v) for v in (0.6, 1, 1.4, 0)][:n]),
        _op(lambda x, angle: fn.rotate(x, angle=angle, fill_value=0, keep_size=True),
            angle=[np.float32(v) for v in (10, -7.5, 0, 180)][:n]),
        _op(lambda x: fn.normalize(x, axes=(0, 1), scale=64.0, shift=128.0)),
        _op(lambda x: fn.transpose(x, perm=[2, 0, 1])),
        _op(lambda x: fn.cast(x, dtype=types.FLOAT16)),
    ]
    (gpu,) = _run_gpu(kernel_ctx, steps, [photos])
    (cpu,) = _run_cpu(steps, [photos])
    _same(gpu, cpu, kernel_ctx, ulp=1)


def test_gpu_ssd_recipe_equals_cpu(kernel_ctx) -> None:
    """DALI's SSD example after decoding: resize -> hsv (float) -> brightness_contrast (uint8) ->
    crop_mirror_normalize; bb_flip -> box_encoder on COCO-style boxes."""
    photos = _photos()
    n = len(photos)
    flip = [np.int32(i % 2) for i in range(n)]
    image_steps = [
        _op(lambda x: fn.resize(x, resize_x=300, resize_y=300, min_filter=types.INTERP_TRIANGULAR)),
        _op(lambda x, hue, saturation: fn.hsv(x, dtype=types.FLOAT, hue=hue, saturation=saturation),
            hue=[np.float32(v) for v in (-0.5, 0.2, 0.4, 0)][:n], saturation=[np.float32(v) for v in (0.5, 1.2, 1.5, 1)][:n]),
        _op(lambda x, brightness, contrast: fn.brightness_contrast(
            x, contrast_center=128, dtype=types.UINT8, brightness=brightness, contrast=contrast),
            brightness=[np.float32(v) for v in (0.9, 1.1, 1.0, 0.875)][:n],
            contrast=[np.float32(v) for v in (0.5, 1.5, 1.2, 1.0)][:n]),
        _op(lambda x, mirror: fn.crop_mirror_normalize(
            x, crop=(300, 300), mean=[0.485 * 255, 0.456 * 255, 0.406 * 255], std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
            mirror=mirror, dtype=types.FLOAT, output_layout="CHW"), mirror=flip),
    ]
    (gpu,) = _run_gpu(kernel_ctx, image_steps, [photos])
    (cpu,) = _run_cpu(image_steps, [photos])
    _same(gpu, cpu, kernel_ctx)

    inputs, _ = load("box_encoder_ssd")
    boxes, labels = inputs[0][:n], inputs[1][:n]
    box_steps = [
        _op(lambda b, horizontal: fn.bb_flip(b, ltrb=True, horizontal=horizontal), horizontal=flip),
        _op(lambda b, lab: fn.box_encoder(b, lab, criteria=0.5, anchors=ANCHORS), 0, 1),
    ]
    gpu_boxes, gpu_labels = _run_gpu(kernel_ctx, box_steps, [boxes, labels])
    cpu_boxes, cpu_labels = _run_cpu(box_steps, [boxes, labels])
    _same(gpu_boxes, cpu_boxes, kernel_ctx)
    _same(gpu_labels, cpu_labels, kernel_ctx)
    assert sum(int((np.asarray(v) > 0).sum()) for v in gpu_labels) > 0  # boxes were matched
