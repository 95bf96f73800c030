"""Plan pass: fuse ``resize`` -> ``crop_mirror_normalize`` pairs into one operator.

The fused operator (``ops/resize_crop_mirror_normalize.py``) computes only the
crop window of the resize and, for float32 output, normalizes in the
resampler's last pass; its result is bit-identical to the pair.
"""

from __future__ import annotations

from ..graph import OpNode
from ..ops.crop_mirror_normalize import CropMirrorNormalize
from ..ops.resize import Resize
from ..ops.resize_crop_mirror_normalize import RESIZE_PREFIX, ResizeCropMirrorNormalize

__all__ = ["fuse_graph"]


def fuse_graph(order: list[OpNode], protected: set[int]) -> list[OpNode]:
    """Fuse resize -> crop_mirror_normalize pairs in place; returns the new order.

    ``protected`` holds ids of nodes whose outputs must stay visible (the
    pipeline outputs). A resize is fused only when the cmn is its sole user.
    """
    users: dict[int, list[OpNode]] = {}
    for node in order:
        for data in node.upstream:
            users.setdefault(id(data.producer), []).append(node)
    removed: set[int] = set()
    for node in order:
        if not isinstance(node.op, CropMirrorNormalize) or not node.inputs:
            continue
        producer = node.inputs[0].producer
        if not isinstance(producer.op, Resize) or id(producer) in protected:
            continue
        if users.get(id(producer), []) != [node] or node.op.device is not producer.op.device:
            continue
        if _conditions(producer) != _conditions(node):  # in different branches of an `if`
            continue
        cmn = node.op
        node.op = ResizeCropMirrorNormalize(producer.op, cmn)
        node.inputs = producer.inputs
        node.arg_inputs = {**{RESIZE_PREFIX + k: v for k, v in producer.arg_inputs.items()}, **node.arg_inputs}
        node.name = f"{producer.name}+{node.name}"
        removed.add(id(producer))
    return [n for n in order if id(n) not in removed]


def _conditions(node: OpNode) -> list[tuple[int, bool]]:
    return [(id(predicate), value) for predicate, value in node.guard]
