"""``fn.decoders``: turn encoded images into pixels (``streamflow/ops/decoders/``)."""

from ..ops.decoders.audio import audio
from ..ops.decoders.image import image
from ..ops.decoders.image_crop import image_crop
from ..ops.decoders.image_random_crop import image_random_crop
from ..ops.decoders.image_slice import image_slice
from ..ops.decoders.inflate import inflate
from ..ops.decoders.numpy import numpy
from ..ops.decoders.video import video

__all__ = ["audio", "image", "image_crop", "image_random_crop", "image_slice", "video", "inflate", "numpy"]
