"""A strict parser for the header of ``.npy`` files (format versions 1.0, 2.0, 3.0).

The header is never evaluated and nothing is ever unpickled: the dictionary
text is parsed with :func:`ast.parse` and only a dict literal with exactly
the keys ``descr``, ``fortran_order`` and ``shape`` holding plain constants
is accepted. Only numeric dtypes (bool, signed and unsigned integers,
floats, complex; either byte order) are accepted; object arrays (whose data
is a pickle), structured/record arrays, strings, void and datetime types are
refused with a :class:`~streamflow.errors.ReadError`.

Every error names the file, says what is wrong and what was expected.

Layout of a ``.npy`` file::

    \\x93NUMPY  major minor  header_len  header (dict text, padded)  data
    6 bytes    1     1      2 (v1) or 4 (v2, v3) little-endian bytes

Version 1.0 and 2.0 headers are latin-1 text, 3.0 headers are UTF-8.
"""

from __future__ import annotations

import ast
import re
import struct
from dataclasses import dataclass

import numpy as np

from streamflow.errors import ReadError

__all__ = [
    "MAGIC",
    "MAX_HEADER_LEN",
    "NpyHeader",
    "npy_header_length",
    "parse_npy_header",
]

MAGIC = b"\x93NUMPY"
#: Headers longer than this are refused as absurd (numpy itself writes
#: headers of a few hundred bytes; its reader refuses more than 10 000).
MAX_HEADER_LEN = 1 << 20
#: More dimensions than numpy supports.
MAX_NDIM = 64
_INT64_MAX = (1 << 63) - 1

_SUPPORTED_VERSIONS = {(1, 0): 2, (2, 0): 4, (3, 0): 4}  # version -> size of header_len
_DESCR_RE = re.compile(r"^([<>|=])([biufc])([0-9]{1,2})$")
_KIND_NAMES = {
    "b": "bool",
    "i": "signed integer",
    "u": "unsigned integer",
    "f": "float",
    "c": "complex",
}
_EXPECTED_DESCR = "a numeric dtype such as '<f4', '>i8', '|u1', '|b1' or '<c8'"


@dataclass(frozen=True)
class NpyHeader:
    """What the header of a ``.npy`` file says.

    Attributes:
        version: the format version, ``(1, 0)``, ``(2, 0)`` or ``(3, 0)``.
        dtype: the numpy dtype of the elements, in the file's byte order.
        shape: the logical shape of the array (as ``np.load`` returns it).
        fortran_order: whether the data is stored column-major.
        data_offset: byte offset of the first data byte in the file.
        nbytes: number of data bytes (``prod(shape) * itemsize``).
    """

    version: tuple[int, int]
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    data_offset: int
    nbytes: int

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n


def _fail(source: str, what: str) -> ReadError:
    return ReadError(f"not a valid .npy file: {what}", source)


def _prefix_layout(prefix: bytes, source: str, file_size: int) -> tuple[tuple[int, int], int, int]:
    """Check magic and version; return ``(version, header_start, header_len)``."""
    if file_size < 10 or len(prefix) < min(10, file_size):
        raise _fail(
            source,
            f"the file has {file_size} bytes, too short for a .npy header "
            "(expected at least 10 bytes: magic, version, header length)",
        )
    if prefix[:6] != MAGIC:
        raise _fail(
            source,
            f"bad magic {bytes(prefix[:6])!r}; expected {MAGIC!r} at the start of the file",
        )
    version = (prefix[6], prefix[7])
    len_size = _SUPPORTED_VERSIONS.get(version)
    if len_size is None:
        raise _fail(
            source,
            f"unknown format version {version[0]}.{version[1]}; expected 1.0, 2.0 or 3.0",
        )
    header_start = 8 + len_size
    if file_size < header_start or len(prefix) < header_start:
        raise _fail(
            source,
            f"the file has {file_size} bytes, too short for a version "
            f"{version[0]}.{version[1]} header (expected at least {header_start})",
        )
    fmt = "<H" if len_size == 2 else "<I"
    (header_len,) = struct.unpack(fmt, bytes(prefix[8:header_start]))
    if header_len > MAX_HEADER_LEN:
        raise _fail(
            source,
            f"header length {header_len} bytes is absurd (expected at most {MAX_HEADER_LEN})",
        )
    if header_start + header_len > file_size:
        raise _fail(
            source,
            f"header length {header_len} bytes runs past the end of the file "
            f"({file_size} bytes); expected the header to fit in the file",
        )
    return version, header_start, header_len


def npy_header_length(prefix: bytes, source: str, file_size: int) -> int:
    """How many bytes from the start of the file the header takes (the data offset).

    ``prefix`` needs only the first 12 bytes (10 for version 1.0). Use it to
    know how much to read before calling :func:`parse_npy_header`.

    Raises:
        ReadError: bad magic, unknown version, absurd or truncated header.
    """
    _, header_start, header_len = _prefix_layout(prefix, source, file_size)
    return header_start + header_len


def parse_npy_header(prefix: bytes, source: str, file_size: int) -> NpyHeader:
    """Parse and validate the header of a ``.npy`` file.

    Args:
        prefix: the first bytes of the file; at least the whole header
            (:func:`npy_header_length` tells how many bytes that is).
        source: the file's name, used in error messages.
        file_size: the size of the file in bytes (to check the header's claims).

    Returns:
        The validated :class:`NpyHeader`.

    Raises:
        ReadError: the file is not a ``.npy`` file this reader accepts (see
            the module docstring); the message names ``source``.
        ValueError: ``prefix`` is shorter than the header although the file
            is long enough (a caller error, not a file error).
    """
    version, header_start, header_len = _prefix_layout(prefix, source, file_size)
    data_offset = header_start + header_len
    if len(prefix) < data_offset:
        raise ValueError(
            f"{source}: prefix has {len(prefix)} bytes but the header ends at byte "
            f"{data_offset}; read that many bytes first (see npy_header_length)"
        )
    raw = bytes(prefix[header_start:data_offset])
    encoding = "utf-8" if version == (3, 0) else "latin-1"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise _fail(source, f"header is not valid {encoding} text ({e.reason} at byte {e.start})") from None
    descr_node, fortran_node, shape_node = _parse_dict(text, source)
    dtype = _parse_descr(descr_node, text, source)
    fortran_order = _parse_fortran(fortran_node, source)
    shape = _parse_shape(shape_node, source)

    # Size checks, without trusting anything: Python ints do not overflow, but
    # every product is bounded so that numpy can represent the array.
    itemsize = dtype.itemsize
    nonzero = 1
    for d in shape:
        if d:
            nonzero *= d
            if nonzero * itemsize > _INT64_MAX:
                raise _fail(
                    source,
                    f"shape {shape} with itemsize {itemsize} overflows 64-bit sizes; "
                    "expected an array that fits in memory",
                )
    count = 0 if 0 in shape else nonzero
    nbytes = count * itemsize
    available = file_size - data_offset
    if nbytes > available:
        raise _fail(
            source,
            f"header claims shape {shape} of {dtype.str} = {nbytes} data bytes, but the file "
            f"has only {available} bytes after the {data_offset}-byte header "
            "(truncated file or lying header)",
        )
    return NpyHeader(
        version=version,
        dtype=dtype,
        shape=shape,
        fortran_order=fortran_order,
        data_offset=data_offset,
        nbytes=nbytes,
    )


_KEYS = ("descr", "fortran_order", "shape")


def _parse_dict(text: str, source: str) -> tuple[ast.expr, ast.expr, ast.expr]:
    stripped = text.strip(" \t\r\n")
    expected = (
        "expected a dict literal like {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"
    )
    if not (stripped.startswith("{") and stripped.endswith("}")):
        raise _fail(source, f"header is not a dict literal; {expected}")
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        raise _fail(source, f"header dict does not parse ({type(e).__name__}); {expected}") from None
    node = tree.body
    if not isinstance(node, ast.Dict):
        raise _fail(source, f"header is not a dict literal; {expected}")
    keys: list[str] = []
    for k in node.keys:
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise _fail(source, f"header dict has a key that is not a string; {expected}")
        keys.append(k.value)
    if len(keys) != len(set(keys)):
        raise _fail(source, f"header dict repeats a key ({sorted(keys)}); {expected}")
    if set(keys) != set(_KEYS):
        raise _fail(
            source,
            f"header dict has keys {sorted(keys)}; expected exactly {list(_KEYS)}",
        )
    values = dict(zip(keys, node.values))
    return values["descr"], values["fortran_order"], values["shape"]


def _parse_descr(node: ast.expr, text: str, source: str) -> np.dtype:
    if isinstance(node, (ast.List, ast.Tuple)):
        segment = ast.get_source_segment(text.strip(" \t\r\n"), node) or ""
        has_object = "'O" in segment or '"O' in segment or "|O" in segment
        what = (
            "a structured dtype with object fields (pickled data)"
            if has_object
            else "a structured (record) dtype"
        )
        raise _fail(
            source,
            f"descr is {what}, which this reader refuses (pickled data is never loaded); "
            f"expected {_EXPECTED_DESCR}",
        )
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise _fail(source, f"descr is not a string; expected {_EXPECTED_DESCR}")
    descr = node.value
    m = _DESCR_RE.match(descr)
    if m is None:
        core = descr.lstrip("<>|=")
        if core.startswith("O"):
            why = "an object array (its data is a pickle, which is never loaded)"
        elif core[:1] in ("V",):
            why = "a void/opaque dtype"
        elif core[:1] in ("S", "U", "a"):
            why = "a string dtype"
        elif core[:1] in ("M", "m"):
            why = "a datetime/timedelta dtype"
        else:
            why = "not a numeric dtype"
        raise _fail(source, f"descr {descr!r} is {why}; expected {_EXPECTED_DESCR}")
    _, kind, size_s = m.groups()
    size = int(size_s)
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError):
        raise _fail(
            source,
            f"descr {descr!r} is not a {size}-byte {_KIND_NAMES[kind]} type numpy knows; "
            f"expected {_EXPECTED_DESCR}",
        ) from None
    if dtype.kind != kind or dtype.itemsize != size or dtype.fields is not None:
        raise _fail(source, f"descr {descr!r} is inconsistent; expected {_EXPECTED_DESCR}")
    return dtype


def _parse_fortran(node: ast.expr, source: str) -> bool:
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return bool(node.value)
    raise _fail(source, "fortran_order is not True or False")


def _parse_shape(node: ast.expr, source: str) -> tuple[int, ...]:
    if not isinstance(node, ast.Tuple):
        raise _fail(source, "shape is not a tuple; expected a tuple of non-negative ints")
    if len(node.elts) > MAX_NDIM:
        raise _fail(source, f"shape has {len(node.elts)} dimensions; expected at most {MAX_NDIM}")
    dims: list[int] = []
    for e in node.elts:
        if isinstance(e, ast.Constant) and type(e.value) is int:
            v = e.value
        elif (
            isinstance(e, ast.UnaryOp)
            and isinstance(e.op, ast.USub)
            and isinstance(e.operand, ast.Constant)
            and type(e.operand.value) is int
        ):
            v = -e.operand.value
        else:
            raise _fail(
                source,
                "shape holds something other than ints; expected a tuple of non-negative ints",
            )
        if v < 0:
            raise _fail(source, f"shape has a negative dimension {v}; expected non-negative ints")
        if v > _INT64_MAX:
            raise _fail(source, f"shape dimension {v} overflows 64 bits")
        dims.append(v)
    return tuple(dims)
