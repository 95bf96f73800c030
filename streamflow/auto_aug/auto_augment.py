"""AutoAugment (https://arxiv.org/abs/1805.09501): a random sub-policy of learned steps per sample.

As DALI's ``auto_aug.auto_augment``: per sample, one sub-policy of the policy
is drawn uniformly; each of its steps then runs with its probability, with
its fixed magnitude bin (and a random sign for the signed operations). The
policies are the paper's: ``image_net`` (default), ``reduced_image_net``,
``svhn`` and ``reduced_cifar10``. Each sample computes only its own steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode
from ..ops import conditional
from ..ops.constant import constant_node
from ..ops.random import uniform
from . import augmentations as a
from .core import (
    Augmentation,
    Policy,
    forbid_unused_kwargs,
    pretty_select,
    signed_bin,
    suite_kwargs,
)
from .seeds import sub_seed
from .translations import get_translations

__all__ = [
    "apply_auto_augment", "auto_augment", "auto_augment_image_net", "get_image_net_policy",
    "get_reduced_cifar10_policy", "get_reduced_image_net_policy", "get_svhn_policy",
]


def auto_augment(data: DataNode, policy_name: str = "image_net", shape: DataNode | Sequence[int] | None = None,
                 fill_value: int | None = 128, interp_type: Any = None, max_translate_abs: Any = None,
                 max_translate_rel: Any = None, seed: int | None = None) -> DataNode:
    """Apply one of the paper's AutoAugment policies to uint8 HWC images (or FHWC videos).

    Args:
        policy_name: ``image_net``, ``reduced_image_net``, ``svhn`` or ``reduced_cifar10``.
        shape: the images' (H, W, ...) shape: translations then move by up to
            ``max_translate_rel`` of the size (default 1), otherwise by up to
            ``max_translate_abs`` pixels (default 250).
        fill_value, interp_type: padding (None repeats the border) and interpolation of the warps.
        seed: seed of the random choices.
    """
    policies: dict[str, Callable[..., Policy]] = {
        "image_net": get_image_net_policy, "reduced_image_net": get_reduced_image_net_policy,
        "svhn": get_svhn_policy, "reduced_cifar10": get_reduced_cifar10_policy,
    }
    if not isinstance(policy_name, str) or policy_name not in policies:
        raise PipelineDefinitionError(
            f"auto_augment: policy_name must be one of {', '.join(policies)}; got {policy_name!r}")
    if policy_name == "reduced_image_net":
        for value, arg in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                           (max_translate_rel, "max_translate_rel")):
            if value is not None:
                raise PipelineDefinitionError(
                    f"auto_augment: the policy 'reduced_image_net' has no translations; {arg} must not be given")
        policy = get_reduced_image_net_policy()
    else:
        policy = policies[policy_name](shape is not None, max_translate_abs, max_translate_rel)
    return apply_auto_augment(policy, data, seed, **suite_kwargs(shape, fill_value, interp_type))


def auto_augment_image_net(data: DataNode, shape: DataNode | Sequence[int] | None = None, fill_value: int | None = 128,
                           interp_type: Any = None, max_translate_abs: Any = None, max_translate_rel: Any = None,
                           seed: int | None = None) -> DataNode:
    """``auto_augment`` with the ImageNet policy."""
    return auto_augment(data, "image_net", shape, fill_value, interp_type, max_translate_abs, max_translate_rel, seed)


def _stage_tables(policy: Policy) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[Augmentation]]]:
    """Per sub-policy and stage: probability, magnitude bin, index into that stage's augmentations.

    A stage's augmentations are the distinct ones used at that stage by any
    sub-policy, plus ``identity`` for the sub-policies that are shorter.
    """
    stages = max(len(sub) for sub in policy.sub_policies)
    count = len(policy.sub_policies)
    prob = np.zeros((count, stages), dtype=np.float32)
    mags = np.zeros((count, stages), dtype=np.int32)
    per_stage: list[list[Augmentation]] = []
    for stage in range(stages):
        augs: list[Augmentation] = []
        for sub in policy.sub_policies:
            if stage < len(sub) and all(sub[stage][0] is not x for x in augs):
                augs.append(sub[stage][0])
        per_stage.append([*augs, a.identity])
    index = np.array([[len(augs) - 1 for augs in per_stage] for _ in range(count)], dtype=np.int32)
    for i, sub in enumerate(policy.sub_policies):
        for stage, (aug, p, mag) in enumerate(sub):
            prob[i, stage] = p
            mags[i, stage] = -999 if mag is None else mag  # unused for augmentations without a magnitude
            index[i, stage] = next(k for k, x in enumerate(per_stage[stage]) if x is aug)
    return prob, mags, index, per_stage


def apply_auto_augment(policy: Policy, data: DataNode, seed: int | None = None, **kwargs: Any) -> DataNode:
    """Apply ``policy`` (see the module docstring); ``kwargs`` go to the augmentations that take them."""
    if not policy.sub_policies:
        raise PipelineDefinitionError(f"auto_augment: the policy {policy.name!r} has no sub-policies")
    prob, mags, index, per_stage = _stage_tables(policy)
    stages = prob.shape[1]
    forbid_unused_kwargs(list(policy.augmentations.values()), kwargs, "apply_auto_augment")
    draw = uniform(range=[0.0, 1.0], shape=(stages,), seed=sub_seed(seed, 0))
    sub_policy = uniform(values=list(range(len(policy.sub_policies))), dtype="int32", seed=sub_seed(seed, 1))
    run_probability = constant_node(prob)[sub_policy]
    magnitude: Any = constant_node(mags)[sub_policy]
    stage_index = constant_node(index)[sub_policy]
    if any(x.randomly_negate for x in policy.augmentations.values()):
        magnitude = signed_bin(magnitude, seed=sub_seed(seed, 2), shape=(stages,))
    for stage in range(stages):
        def run_stage(stage: int = stage, data: DataNode = data) -> DataNode:
            return pretty_select(per_stage[stage], stage_index[stage],
                                 dict(data=data, magnitude_bin=magnitude[stage],
                                      num_magnitude_bins=policy.num_magnitude_bins, **kwargs),
                                 "auto_augment", "get_image_net_policy")

        def skip(data: DataNode = data) -> DataNode:
            return data

        data = conditional.if_exp(draw[stage] < run_probability[stage], run_stage, skip, f"auto_augment stage {stage}")
    return data


def get_image_net_policy(use_shape: bool = False, max_translate_abs: Any = None, max_translate_rel: Any = None) -> Policy:
    """The AutoAugment policy learned on ImageNet (25 sub-policies of 1 or 2 steps, 11 magnitude bins)."""
    _, translate_y = get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    solarize_add = a.solarize_add.augmentation((0, 110), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ImageNetPolicy", 11, [
        [(equalize, 0.8, None), (shear_y, 0.8, 4)],
        [(color, 0.4, 9), (equalize, 0.6, None)],
        [(color, 0.4, 1), (rotate, 0.6, 8)],
        [(solarize, 0.8, 3), (equalize, 0.4, None)],
        [(solarize, 0.4, 2), (solarize, 0.6, 2)],
        [(color, 0.2, 0), (equalize, 0.8, None)],
        [(equalize, 0.4, None), (solarize_add, 0.8, 3)],
        [(shear_x, 0.2, 9), (rotate, 0.6, 8)],
        [(color, 0.6, 1), (equalize, 1.0, None)],
        [(invert, 0.4, None), (rotate, 0.6, 0)],
        [(equalize, 1.0, None), (shear_y, 0.6, 3)],
        [(color, 0.4, 7), (equalize, 0.6, None)],
        [(posterize, 0.4, 6), (auto_contrast, 0.4, None)],
        [(solarize, 0.6, 8), (color, 0.6, 9)],
        [(solarize, 0.2, 4), (rotate, 0.8, 9)],
        [(rotate, 1.0, 7), (translate_y, 0.8, 9)],
        [(solarize, 0.8, 4)],
        [(shear_y, 0.8, 0), (color, 0.6, 4)],
        [(color, 1.0, 0), (rotate, 0.6, 2)],
        [(equalize, 0.8, None)],
        [(equalize, 1.0, None), (auto_contrast, 0.6, None)],
        [(shear_y, 0.4, 7), (solarize_add, 0.6, 7)],
        [(posterize, 0.8, 2), (solarize, 0.6, 10)],
        [(solarize, 0.6, 8), (equalize, 0.6, None)],
        [(color, 0.8, 6), (rotate, 0.4, 5)],
    ])


def get_reduced_cifar10_policy(use_shape: bool = False, max_translate_abs: Any = None,
                               max_translate_rel: Any = None) -> Policy:
    """The AutoAugment policy learned on reduced CIFAR-10."""
    translate_x, translate_y = get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    brightness = a.brightness.augmentation((0.1, 1.9), False, None)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ReducedCifar10Policy", 11, [
        [(invert, 0.1, None), (contrast, 0.2, 6)],
        [(rotate, 0.7, 2), (translate_x, 0.3, 9)],
        [(sharpness, 0.8, 1), (sharpness, 0.9, 3)],
        [(shear_y, 0.5, 8), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.5, None), (equalize, 0.9, None)],
        [(shear_y, 0.2, 7), (posterize, 0.3, 7)],
        [(color, 0.4, 3), (brightness, 0.6, 7)],
        [(sharpness, 0.3, 9), (brightness, 0.7, 9)],
        [(equalize, 0.6, None), (equalize, 0.5, None)],
        [(contrast, 0.6, 7), (sharpness, 0.6, 5)],
        [(color, 0.7, 7), (translate_x, 0.5, 8)],
        [(equalize, 0.3, None), (auto_contrast, 0.4, None)],
        [(translate_y, 0.4, 3), (sharpness, 0.2, 6)],
        [(brightness, 0.9, 6), (color, 0.2, 8)],
        [(solarize, 0.5, 2)],
        [(equalize, 0.2, None), (auto_contrast, 0.6, None)],
        [(equalize, 0.2, None), (equalize, 0.6, None)],
        [(color, 0.9, 9), (equalize, 0.6, None)],
        [(auto_contrast, 0.8, None), (solarize, 0.2, 8)],
        [(brightness, 0.1, 3), (color, 0.7, 0)],
        [(solarize, 0.4, 5), (auto_contrast, 0.9, None)],
        [(translate_y, 0.9, 9), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.9, None), (solarize, 0.8, 3)],
        [(equalize, 0.8, None), (invert, 0.1, None)],
        [(translate_y, 0.7, 9), (auto_contrast, 0.9, None)],
    ])


def get_svhn_policy(use_shape: bool = False, max_translate_abs: Any = None, max_translate_rel: Any = None) -> Policy:
    """The AutoAugment policy learned on SVHN."""
    translate_x, translate_y = get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("SvhnPolicy", 11, [
        [(shear_x, 0.9, 4), (invert, 0.2, None)],
        [(shear_y, 0.9, 8), (invert, 0.7, None)],
        [(equalize, 0.6, None), (solarize, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (auto_contrast, 0.8, None)],
        [(shear_y, 0.9, 8), (invert, 0.4, None)],
        [(shear_y, 0.9, 5), (solarize, 0.2, 6)],
        [(invert, 0.9, None), (auto_contrast, 0.8, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (solarize, 0.3, 3)],
        [(shear_y, 0.8, 8), (invert, 0.7, None)],
        [(equalize, 0.9, None), (translate_y, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(contrast, 0.3, 3), (rotate, 0.8, 4)],
        [(invert, 0.8, None)],
        [(shear_y, 0.7, 6), (solarize, 0.4, 8)],
        [(invert, 0.6, None), (rotate, 0.8, 4)],
        [(shear_y, 0.3, 7), (translate_x, 0.9, 3)],
        [(shear_x, 0.1, 6), (invert, 0.6, None)],
        [(solarize, 0.7, 2), (translate_y, 0.6, 7)],
        [(shear_y, 0.8, 4), (invert, 0.8, None)],
        [(shear_x, 0.7, 9), (translate_y, 0.8, 3)],
        [(shear_y, 0.8, 5), (auto_contrast, 0.7, None)],
        [(shear_x, 0.7, 2), (invert, 0.1, None)],
    ])


def get_reduced_image_net_policy() -> Policy:
    """The AutoAugment policy learned on reduced ImageNet (no translations)."""
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ReducedImageNetPolicy", 11, [
        [(posterize, 0.4, 8), (rotate, 0.6, 9)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
        [(posterize, 0.6, 7), (posterize, 0.6, 6)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(equalize, 0.4, None), (rotate, 0.8, 8)],
        [(solarize, 0.6, 3), (equalize, 0.6, None)],
        [(posterize, 0.8, 5), (equalize, 1.0, None)],
        [(rotate, 0.2, 3), (solarize, 0.6, 8)],
        [(equalize, 0.6, None), (posterize, 0.4, 6)],
        [(rotate, 0.8, 8), (color, 0.4, 0)],
        [(rotate, 0.4, 9), (equalize, 0.6, None)],
        [(equalize, 0.8, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(rotate, 0.8, 8), (color, 1.0, 2)],
        [(color, 0.8, 8), (solarize, 0.8, 7)],
        [(sharpness, 0.4, 7), (invert, 0.6, None)],
        [(shear_x, 0.6, 5), (equalize, 1.0, None)],
        [(color, 0.4, 0), (equalize, 0.6, None)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
    ])
