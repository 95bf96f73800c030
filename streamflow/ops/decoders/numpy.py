"""``decoders.numpy``: arrays from the bytes of ``.npy`` files (1-D uint8 samples), as DALI 2.4.

Each sample is the whole content of a ``.npy`` file (e.g. from
``fn.readers.file`` or a webdataset); the output has the array's shape and
type (``dtype`` converts it with ``cast``'s saturating rounding). The header
is parsed by ``io/npy_header.py`` (a literal parser: nothing is unpickled;
object and structured arrays are refused), so a corrupt or truncated file
fails its sample with a message that names it.

Beyond DALI 2.4's CPU operator: Fortran-order arrays decode (DALI's CPU
operator needs a GPU for them), big-endian arrays are converted to the native
order (DALI refuses them), and format versions 2.0 and 3.0 are read (DALI
reads only 1.0). Complex arrays are refused, as DALI does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...errors import SampleError
from ...graph import DataNode, add_node
from ...io.npy_header import npy_header_length, parse_npy_header
from ...operator import Chunk, Operator
from ...types import DataType, Device
from ..arguments import fn_function
from ..cast import cast_array, parse_output_dtype

__all__ = ["NumpyDecode", "decode_npy", "numpy"]


def decode_npy(data: Any, source: str) -> np.ndarray:
    """The array stored in the ``.npy`` bytes ``data`` (native byte order, C order)."""
    raw = np.asarray(data)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise SampleError(f"decoders.numpy: expected the bytes of a .npy file (1-D uint8), got {raw.dtype} of "
                          f"shape {raw.shape}", source)
    buf = raw.tobytes()
    header = parse_npy_header(buf[: npy_header_length(buf[:12], source, len(buf))], source, len(buf))
    if header.dtype.kind == "c":
        raise SampleError(f"decoders.numpy: complex arrays ({header.dtype.str}) are not supported", source)
    flat = np.frombuffer(buf, dtype=header.dtype, count=header.size, offset=header.data_offset)
    arr = flat.reshape(header.shape, order="F" if header.fortran_order else "C")
    return np.array(arr, dtype=header.dtype.newbyteorder("="), order="C")


class NumpyDecode(Operator):
    """Decodes ``.npy`` bytes; ``dtype`` converts the arrays."""

    name: ClassVar[str] = "decoders.numpy"

    def __init__(self, dtype: np.dtype | None = None, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.dtype = dtype

    def run(self, chunk: Chunk) -> list[list[Any]]:
        def one(row: int, data: Any) -> Any:
            arr = decode_npy(data, chunk.sources[row] or f"sample {row}")
            return arr if self.dtype is None else cast_array(arr, self.dtype)

        return [chunk.each_sample(one)]


@fn_function()
def numpy(data: DataNode, *, dtype: DataType | str | None = None, device: str | Device | None = None,
          name: str | None = None) -> DataNode:
    """Arrays decoded from the bytes of ``.npy`` files (one 1-D uint8 sample per file).

    Args:
        data: the encoded files.
        dtype: convert the arrays to this type (default: keep the file's).
    """
    out_dtype = None if dtype is None else parse_output_dtype(dtype, "decoders.numpy: dtype")
    return add_node(NumpyDecode(out_dtype, name=name), [data], device=device)[0]
