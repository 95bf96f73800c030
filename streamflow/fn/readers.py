"""``fn.readers``: operators that read data sets from storage (``streamflow/ops/readers/``)."""

from ..ops.readers.file import file
from ..ops.readers.numpy import numpy

__all__ = ["file", "numpy"]

# Sharded data sets (TFRecord, WebDataset, RecordIO, Caffe/Caffe2 LMDB).
from ..ops.readers.caffe import caffe, caffe2
from ..ops.readers.mxnet import mxnet
from ..ops.readers.tfrecord import tfrecord
from ..ops.readers.webdataset import webdataset

__all__ += ["caffe", "caffe2", "mxnet", "tfrecord", "webdataset"]
