"""``fn.readers``: operators that read data sets from storage (``streamflow/ops/readers/``)."""

from ..ops.readers.caffe import caffe, caffe2
from ..ops.readers.coco import coco
from ..ops.readers.file import file
from ..ops.readers.mxnet import mxnet
from ..ops.readers.nemo_asr import nemo_asr
from ..ops.readers.numpy import numpy
from ..ops.readers.sequence import sequence
from ..ops.readers.tfrecord import tfrecord
from ..ops.readers.video import video
from ..ops.readers.video_resize import video_resize
from ..ops.readers.webdataset import webdataset

__all__ = ["caffe", "caffe2", "coco", "file", "mxnet", "nemo_asr", "numpy", "sequence", "tfrecord", "video", "video_resize", "webdataset"]
