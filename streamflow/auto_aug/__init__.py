"""Automatic augmentation: AutoAugment, RandAugment and TrivialAugment Wide, as DALI's ``nvidia.dali.auto_aug``.

    from streamflow.auto_aug import auto_augment, rand_augment, trivial_augment

    images = fn.decoders.image(jpegs)
    images = auto_augment.auto_augment_image_net(images, shape=images.shape())
    images = rand_augment.rand_augment(images, n=2, m=9)
    images = trivial_augment.trivial_augment_wide(images)

The modules mirror DALI's: ``augmentations`` (the operations, their
magnitude ranges and parameters), ``core`` (``augmentation``, ``Policy``,
``signed_bin``, ``select``), ``auto_augment``, ``rand_augment``,
``trivial_augment``. The per-sample choice of operation is an ``if`` on
pipeline data (``streamflow.ops.conditional``): each sample computes only the
operations it gets. ``@pipeline_def(enable_conditionals=True)``, which DALI
requires for these, is accepted and not needed. See ``docs/augmentation.md``.
"""

from . import augmentations, auto_augment, core, rand_augment, trivial_augment
from .auto_augment import auto_augment_image_net
from .core import Policy, augmentation, select, signed_bin
from .rand_augment import apply_rand_augment
from .trivial_augment import trivial_augment_wide

__all__ = [
    "Policy",
    "apply_rand_augment",
    "augmentation",
    "augmentations",
    "auto_augment",
    "auto_augment_image_net",
    "core",
    "rand_augment",
    "select",
    "signed_bin",
    "trivial_augment",
    "trivial_augment_wide",
]
