"""Command-line tools that make index files for the shard readers (DALI's tools, same formats).

- ``python -m streamflow.tools.tfrecord2idx FILE.tfrecord FILE.idx`` (or ``streamflow-tfrecord2idx``)
- ``python -m streamflow.tools.wds2idx ARCHIVE.tar [INDEX]`` (or ``streamflow-wds2idx``)
- ``python -m streamflow.tools.rec2idx FILE.rec FILE.idx`` (or ``streamflow-rec2idx``)

Inputs may be local paths or URLs (``s3://``, ``gs://``, ``http(s)://``); only
the records' headers are read.
"""
