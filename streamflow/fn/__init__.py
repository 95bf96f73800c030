"""The operator functions: each call adds a node to the pipeline graph.

Use them inside a function decorated with ``streamflow.pipeline_def``::

    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_shorter=256)
"""

from . import decoders, random, readers
from .image import crop, crop_mirror_normalize, flip, resize
from .sources import external_source

__all__ = [
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "external_source",
    "flip",
    "random",
    "readers",
    "resize",
]
