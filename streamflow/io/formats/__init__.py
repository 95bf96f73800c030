"""Record formats of sharded data sets: framing, index files and the few protobuf fields read.

Pure parsing, no I/O: each function takes bytes (or a ``read(offset, n)``
callable for scanning headers) and raises a ``ValueError`` subclass naming
what is wrong. ``fn.readers.*`` and ``streamflow.tools`` build on them.

- ``protowire``: protobuf wire-format decoding;
- ``tfrecord``: TFRecord framing, ``tfrecord2idx`` index files, ``tf.train.Example``;
- ``webdataset``: tar headers, samples, ``wds2idx`` index files;
- ``recordio``: MXNet RecordIO framing, ``IRHeader``, ``.idx`` files;
- ``caffe``: Caffe ``Datum`` and Caffe2 ``TensorProtos``.
"""
