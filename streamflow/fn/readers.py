"""``fn.readers``: operators that read data sets from storage (``streamflow/ops/readers/``)."""

from ..ops.readers.file import file
from ..ops.readers.nemo_asr import nemo_asr
from ..ops.readers.numpy import numpy
from ..ops.readers.sequence import sequence
from ..ops.readers.video import video

__all__ = ["file", "nemo_asr", "numpy", "sequence", "video"]
