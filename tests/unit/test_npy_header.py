"""The .npy header parser: every version and dtype numpy writes, and hostile files."""

from __future__ import annotations

import io
import os
import pickle
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamflow.errors import ReadError, SampleError
from streamflow.io import npy_header_length, parse_npy_header, read_npy_header, read_npy_sync
from streamflow.io.npy_header import MAX_HEADER_LEN

NUMERIC = [
    "|b1", "|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4",
    "<i8", ">i8", "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c8",
    "<c16", ">c16",
]  # fmt: skip


def npy_bytes(arr: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, arr, version=version, allow_pickle=True)
    return b.getvalue()


def craft(header: str | bytes, *, version=(1, 0), data: bytes = b"", pad: bool = True) -> bytes:
    """A .npy file with an arbitrary header text."""
    raw = (
        header.encode("utf-8" if version == (3, 0) else "latin-1")
        if isinstance(header, str)
        else header
    )
    len_size = 2 if version == (1, 0) else 4
    if pad:
        total = 8 + len_size + len(raw) + 1
        raw = raw + b" " * (-total % 64) + b"\n"
    fmt = "<H" if len_size == 2 else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(raw)) + raw + data


def parse(blob: bytes, name: str = "x.npy"):
    return parse_npy_header(blob, name, len(blob))


# ---------------------------------------------------------------- valid files


@pytest.mark.parametrize("descr", NUMERIC)
@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_numpy_written_headers(descr: str, version, order: str) -> None:
    arr = np.zeros((3, 4), dtype=descr, order=order)
    blob = npy_bytes(arr, version)
    h = parse(blob)
    assert h.version == version
    assert h.dtype == np.dtype(descr)
    assert h.shape == (3, 4)
    assert h.fortran_order == (order == "F")
    assert h.nbytes == arr.nbytes
    assert h.data_offset == len(blob) - arr.nbytes
    assert npy_header_length(blob[:12], "x.npy", len(blob)) == h.data_offset


@pytest.mark.parametrize("shape", [(), (0,), (5,), (0, 7), (2, 0, 3), (1, 1, 1, 1)])
def test_zero_d_and_empty(shape) -> None:
    arr = np.ones(shape, dtype="<f4")
    h = parse(npy_bytes(arr))
    assert h.shape == shape and h.nbytes == arr.nbytes and h.size == arr.size


def test_v3_utf8_header_and_key_order() -> None:
    # key order and spacing are free; a v3 header is utf-8
    text = "{'shape': (2,), 'fortran_order': False, 'descr': '<i2'}  "
    blob = craft(text, version=(3, 0), data=b"\x01\x00\x02\x00")
    h = parse(blob)
    assert h.shape == (2,) and h.dtype == np.dtype("<i2")
    # the same bytes are not utf-8 text under a v3 header if mangled
    bad = craft(b"{'descr': '<i2', 'fortran_order': False, 'shape': (2,)}\xff", version=(3, 0))
    with pytest.raises(ReadError, match="utf-8"):
        parse(bad)


def test_header_longer_than_first_read(tmp_path) -> None:
    text = "{'descr': '<u1', 'fortran_order': False, 'shape': (3,)}" + " " * 10000
    blob = craft(text, version=(2, 0), data=b"abc")
    p = tmp_path / "long.npy"
    p.write_bytes(blob)
    assert read_npy_header(p).data_offset == len(blob) - 3
    assert read_npy_sync(p).tobytes() == b"abc"


def test_short_prefix_is_a_caller_error() -> None:
    blob = npy_bytes(np.zeros(3))
    with pytest.raises(ValueError, match="npy_header_length"):
        parse_npy_header(blob[:20], "x.npy", len(blob))


# ---------------------------------------------------------------- hostile files


def expect_error(blob: bytes, match: str, name: str = "evil.npy") -> ReadError:
    with pytest.raises(ReadError, match=match) as info:
        parse(blob, name)
    err = info.value
    assert isinstance(err, SampleError)
    assert err.source == name and name in str(err)
    return err


def test_bad_magic() -> None:
    blob = bytearray(npy_bytes(np.zeros(3)))
    blob[0:6] = b"\x93NUMPX"
    expect_error(bytes(blob), "bad magic")
    expect_error(b"PK\x03\x04" + b"\0" * 60, "bad magic")


@pytest.mark.parametrize("size", [0, 1, 9])
def test_too_short(size: int) -> None:
    expect_error(npy_bytes(np.zeros(3))[:size], "too short")


@pytest.mark.parametrize("version", [(0, 9), (1, 1), (4, 0), (255, 255)])
def test_unknown_version(version) -> None:
    blob = bytearray(npy_bytes(np.zeros(3)))
    blob[6:8] = bytes(version)
    expect_error(bytes(blob), "unknown format version")


def test_absurd_header_length() -> None:
    blob = b"\x93NUMPY\x02\x00" + struct.pack("<I", MAX_HEADER_LEN + 1) + b" " * 64
    expect_error(blob, "absurd")
    blob = b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + b" " * 64
    expect_error(blob, "absurd")


def test_header_past_end_of_file() -> None:
    blob = npy_bytes(np.zeros(3))
    expect_error(blob[:100], "past the end")


@pytest.mark.parametrize(
    "shape_text, match",
    [
        ("(10000000,)", "only 24 bytes"),  # lying shape: bigger than the file
        ("(2, 3, 4)", "only 24 bytes"),
        ("(-1,)", "negative"),
        ("(3, -2)", "negative"),
        ("[3]", "not a tuple"),
        ("3", "not a tuple"),
        ("(3.0,)", "other than ints"),
        ("(True,)", "other than ints"),
        ("('3',)", "other than ints"),
        ("(2**62, 2**62)", "other than ints"),
        ("(4611686018427387904, 4611686018427387904)", "overflow"),
        ("(99999999999999999999999,)", "overflows 64 bits"),
        ("(" + "1, " * 65 + ")", "dimensions"),
    ],
)
def test_lying_or_malformed_shape(shape_text: str, match: str) -> None:
    text = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape_text}}}"
    expect_error(craft(text, data=b"\0" * 24), match)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[1, 2, 3]", "not a dict"),
        ("{'descr': '<f8', 'fortran_order': False}", "expected exactly"),
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}", "expected exactly"),
        ("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", "repeats"),
        ("{'descr': '<f8', 'fortran_order': 0, 'shape': (3,)}", "fortran_order"),
        ("{'descr': '<f8', 'fortran_order': 'no', 'shape': (3,)}", "fortran_order"),
        ("{'descr': 8, 'fortran_order': False, 'shape': (3,)}", "descr is not a string"),
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (3,)", "not a dict"),
        ("{'descr': '<f8' 'fortran_order': False, 'shape': (3,)}", "does not parse"),
        ("{1: '<f8', 'fortran_order': False, 'shape': (3,)}", "not a string"),
        ("{**x, 'shape': (3,)}", "not a string"),
        ("{'descr': '<f3', 'fortran_order': False, 'shape': (3,)}", "numpy knows"),
        ("{'descr': '<S8', 'fortran_order': False, 'shape': (3,)}", "string dtype"),
        ("{'descr': '<U8', 'fortran_order': False, 'shape': (3,)}", "string dtype"),
        ("{'descr': '|V8', 'fortran_order': False, 'shape': (3,)}", "void"),
        ("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (3,)}", "datetime"),
        ("{'descr': 'float64', 'fortran_order': False, 'shape': (3,)}", "not a numeric"),
        ("{" + "(" * 500 + ")" * 500 + "}", "does not parse|not a dict"),
        ("\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", "not a dict"),
    ],
)
def test_malformed_header_dict(text: str, match: str) -> None:
    expect_error(craft(text, data=b"\0" * 24), match)


@pytest.mark.parametrize("descr", ["|O", "O", "<O", "|O8"])
def test_object_dtype_refused(descr: str) -> None:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': (3,)}}"
    expect_error(craft(text, data=b"\0" * 24), "object array")


def test_structured_dtypes_refused() -> None:
    arr = np.zeros(3, dtype=[("a", "<f4"), ("b", "<i2")])
    expect_error(npy_bytes(arr), "structured")
    text = "{'descr': [('a', '<f8'), ('b', '|O')], 'fortran_order': False, 'shape': (3,)}"
    expect_error(craft(text, data=b"\0" * 48), "object fields")


def test_code_in_header_is_never_run(tmp_path) -> None:
    marker = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    for text in (
        f"{{'descr': {payload}, 'fortran_order': False, 'shape': (3,)}}",
        f"{{'descr': '<f8', 'fortran_order': {payload}, 'shape': (3,)}}",
        f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({payload},)}}",
        payload,
    ):
        with pytest.raises(ReadError):
            parse(craft(text, data=b"\0" * 24))
    assert not marker.exists()


class _Boom:
    """Unpickling this creates a marker file: it must never happen."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickled_object_array_is_never_unpickled(tmp_path) -> None:
    marker = tmp_path / "unpickled"
    arr = np.empty(2, dtype=object)
    arr[0] = _Boom(str(marker))
    arr[1] = _Boom(str(marker))
    path = tmp_path / "evil.npy"
    np.save(path, arr, allow_pickle=True)
    assert b"unpickled" in path.read_bytes()  # the payload is really in there
    for call in (read_npy_header, read_npy_sync):
        with pytest.raises(ReadError, match="object array") as info:
            call(path)
        assert str(path) in str(info.value)
    assert not marker.exists()


def test_pickle_payload_behind_numeric_header_is_data(tmp_path) -> None:
    marker = tmp_path / "unpickled2"
    payload = pickle.dumps(_Boom(str(marker)))
    n = len(payload)
    text = f"{{'descr': '|u1', 'fortran_order': False, 'shape': ({n},)}}"
    p = tmp_path / "bytes.npy"
    p.write_bytes(craft(text, data=payload))
    out = read_npy_sync(p)
    assert out.dtype == np.uint8 and out.tobytes() == payload
    assert not marker.exists()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    version=st.sampled_from([(1, 0), (2, 0), (3, 0)]),
    body=st.binary(max_size=300),
    size_delta=st.integers(-20, 20),
)
def test_random_headers_only_raise_read_error(version, body: bytes, size_delta: int) -> None:
    blob = craft(body, version=version, pad=False)
    size = max(0, len(blob) + size_delta)
    try:
        h = parse_npy_header(blob, "fuzz.npy", size)
    except ReadError as e:
        assert "fuzz.npy" in str(e)
    except ValueError as e:  # only when the file is longer than the prefix we gave
        assert size > len(blob) and "npy_header_length" in str(e)
    else:
        assert h.data_offset + h.nbytes <= size


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_random_files_only_raise_read_error(data: bytes) -> None:
    for blob in (data, b"\x93NUMPY" + data):
        try:
            parse_npy_header(blob, "fuzz.npy", len(blob))
        except ReadError:
            pass
        except ValueError:
            raise AssertionError("prefix was the whole file")


def test_missing_file_names_it(tmp_path) -> None:
    p = tmp_path / "nope.npy"
    with pytest.raises(ReadError, match="cannot open") as info:
        read_npy_header(p)
    assert info.value.source == os.fspath(p)
