"""The operator functions, in DALI's namespaces: each call adds a node to the pipeline graph.

Use them inside a function decorated with ``streamflow.pipeline_def``::

    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_shorter=256)

This package only re-exports: each function lives with its operator in
``streamflow/ops/<name>.py`` (``fn.resize`` in ``ops/resize.py``,
``fn.decoders.image_crop`` in ``ops/decoders/image_crop.py``).
"""

from ..ops.audio_resample import audio_resample
from ..ops.batch_permutation import batch_permutation
from ..ops.bb_flip import bb_flip
from ..ops.bbox_paste import bbox_paste
from ..ops.bbox_rotate import bbox_rotate
from ..ops.box_encoder import box_encoder
from ..ops.cast import cast
from ..ops.cast_like import cast_like
from ..ops.cat import cat, stack
from ..ops.clahe import clahe
from ..ops.color import brightness, brightness_contrast, color_twist, contrast, hsv, hue, saturation
from ..ops.color_space_conversion import color_space_conversion
from ..ops.constant import constant, full, full_like, ones, ones_like, zeros, zeros_like
from ..ops.coord_flip import coord_flip
from ..ops.coord_transform import coord_transform
from ..ops.copy import copy
from ..ops.crop import crop
from ..ops.crop_mirror_normalize import crop_mirror_normalize
from ..ops.debayer import debayer
from ..ops.displacement import jitter, sphere, water
from ..ops.dump_image import dump_image
from ..ops.equalize import equalize
from ..ops.erase import erase
from ..ops.external_source import external_source
from ..ops.filter import filter
from ..ops.flip import flip
from ..ops.gaussian_blur import gaussian_blur
from ..ops.get_property import get_property
from ..ops.grid_mask import grid_mask
from ..ops.jpeg_compression_distortion import jpeg_compression_distortion
from ..ops.laplacian import laplacian
from ..ops.lookup_table import lookup_table
from ..ops.mel_filter_bank import mel_filter_bank
from ..ops.mfcc import mfcc
from ..ops.nonsilent_region import nonsilent_region
from ..ops.normalize import normalize
from ..ops.one_hot import one_hot
from ..ops.pad import pad
from ..ops.paste import multi_paste, paste
from ..ops.peek_image_shape import peek_image_shape
from ..ops.permute_batch import permute_batch
from ..ops.power_spectrum import power_spectrum
from ..ops.preemphasis_filter import preemphasis_filter
from ..ops.python_function import dl_tensor_python_function, python_function, torch_python_function
from ..ops.random_bbox_crop import random_bbox_crop
from ..ops.random_crop_generator import random_crop_generator
from ..ops.random_resized_crop import random_resized_crop
from ..ops.reinterpret import reinterpret
from ..ops.reshape import expand_dims, reshape, squeeze
from ..ops.resize import resize
from ..ops.resize_crop_mirror import resize_crop_mirror
from ..ops.roi_random_crop import roi_random_crop
from ..ops.rotate import rotate
from ..ops.sequence import element_extract, per_frame, sequence_rearrange
from ..ops.shapes import shapes
from ..ops.slice import slice
from ..ops.spectrogram import spectrogram
from ..ops.tensor_resize import tensor_resize
from ..ops.to_decibels import to_decibels
from ..ops.transpose import transpose
from ..ops.warp_affine import warp_affine
from . import (
    decoders,
    experimental,
    io,
    noise,
    random,
    readers,
    reductions,
    segmentation,
    transforms,
)

# DALI's deprecated names, still used by many pipelines.
image_decoder = decoders.image
image_decoder_crop = decoders.image_crop
image_decoder_random_crop = decoders.image_random_crop
image_decoder_slice = decoders.image_slice
file_reader = readers.file
numpy_reader = readers.numpy
normal_distribution = random.normal
# More deprecated top-level names of DALI 2.4, each the operator it points to.
coin_flip = random.coin_flip
uniform = random.uniform
audio_decoder = decoders.audio
nemo_asr_reader = readers.nemo_asr
video_reader = readers.video
fast_resize_crop_mirror = resize_crop_mirror
sequence_reader = readers.sequence
coco_reader = readers.coco
transform_translation = transforms.translation
caffe_reader = readers.caffe
caffe2_reader = readers.caffe2
mxnet_reader = readers.mxnet
tfrecord_reader = readers.tfrecord
ssd_random_crop = random_bbox_crop
video_reader_resize = readers.video_resize

__all__ = [
    "audio_resample",
    "brightness_contrast",
    "cast",
    "cat",
    "color_space_conversion",
    "color_twist",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "element_extract",
    "dl_tensor_python_function",
    "expand_dims",
    "experimental",
    "external_source",
    "file_reader",
    "flip",
    "hsv",
    "hue",
    "image_decoder",
    "image_decoder_crop",
    "image_decoder_random_crop",
    "image_decoder_slice",
    "io",
    "normalize",
    "numpy_reader",
    "per_frame",
    "permute_batch",
    "python_function",
    "random",
    "random_resized_crop",
    "readers",
    "reshape",
    "resize",
    "rotate",
    "saturation",
    "sequence_rearrange",
    "shapes",
    "squeeze",
    "stack",
    "torch_python_function",
    "transpose",
    "warp_affine",
    "mel_filter_bank",
    "mfcc",
    "nonsilent_region",
    "preemphasis_filter",
    "spectrogram",
    "to_decibels",
    "slice",
    "paste",
    "multi_paste",
    "peek_image_shape",
    "experimental",
    "roi_random_crop",
    "erase",
    "pad",
    "normal_distribution",
    "resize_crop_mirror",
    "batch_permutation",
    "cast_like",
    "constant",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
    "copy",
    "get_property",
    "random_crop_generator",
    "reinterpret",
    "coin_flip",
    "uniform",
    "audio_decoder",
    "nemo_asr_reader",
    "video_reader",
    "fast_resize_crop_mirror",
    "jitter",
    "sphere",
    "water",
    "dump_image",
    "power_spectrum",
    "debayer",
    "clahe",
    "sequence_reader",
    "tensor_resize",
    "bb_flip",
    "bbox_paste",
    "box_encoder",
    "coord_flip",
    "coord_transform",
    "transforms",
    "random_bbox_crop",
    "segmentation",
    "lookup_table",
    "one_hot",
    "bbox_rotate",
    "coco_reader",
    "transform_translation",
    "caffe_reader",
    "caffe2_reader",
    "mxnet_reader",
    "tfrecord_reader",
    "ssd_random_crop",
    "video_reader_resize",
    "brightness",
    "contrast",
    "reductions",
    "filter",
    "gaussian_blur",
    "laplacian",
    "equalize",
    "grid_mask",
    "jpeg_compression_distortion",
    "noise",
]
from . import legacy as _legacy  # noqa: E402,F401  (DALI's legacy ops.<CamelCase> classes)
