"""MXNet RecordIO (``.rec``) files and their ``.idx`` index, as ``im2rec`` writes them.

Framing (dmlc-core's ``RecordIOWriter``)::

    uint32 magic 0xced7230a | uint32 lrec = cflag << 29 | length | data | zero padding to 4 bytes

``cflag`` is 0 for a whole record; a payload that contains the magic word
at a 4-byte boundary is split there into parts flagged 1 (first), 2
(middle), 3 (last), and the magic word is put back between the parts when
reading. An image record's payload is ``IRHeader`` (uint32 flag, float32
label, uint64 id, uint64 id2) + ``flag`` float32 labels + the image bytes.

The index has one ``key<TAB>offset`` line per record; offsets are global
across the ``.rec`` files of a reader (as if they were concatenated).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

__all__ = ["MAGIC", "RecordIOError", "parse_image_record", "parse_index", "record_extents", "scan_records"]

MAGIC = 0xCED7230A
_HEADER = struct.Struct("<IfQQ")


class RecordIOError(ValueError):
    """A RecordIO record or index line is malformed."""


def _padded(n: int) -> int:
    return (n + 3) & ~3


def _payload(record: memoryview) -> bytes | memoryview:
    """The payload of the record starting at the beginning of ``record`` (parts joined)."""
    end = len(record)
    pos = 0
    parts: list[memoryview] = []
    while True:
        if pos + 8 > end:
            raise RecordIOError(f"truncated record header at byte {pos} of the record")
        magic, lrec = struct.unpack_from("<II", record, pos)
        if magic != MAGIC:
            raise RecordIOError(f"wrong magic number {magic:#010x} at byte {pos} of the record (expected {MAGIC:#010x})")
        flag, length = lrec >> 29, lrec & ((1 << 29) - 1)
        pos += 8
        if pos + length > end:
            raise RecordIOError(f"the record says {length} bytes but only {end - pos} are there (truncated file?)")
        parts.append(record[pos : pos + length])
        pos += _padded(length)
        if flag in (0, 3):
            break
        if flag == 2 and len(parts) == 1:
            raise RecordIOError("the record starts with a middle part (flag 2): a wrong index offset?")
    if len(parts) == 1:
        return parts[0]
    return struct.pack("<I", MAGIC).join(bytes(p) for p in parts)


def parse_image_record(record: memoryview) -> tuple[np.ndarray, np.ndarray]:
    """(image bytes as uint8, float32 label of shape (1,) or (flag,)) of one image record."""
    payload = _payload(record)
    if len(payload) < _HEADER.size:
        raise RecordIOError(f"record payload of {len(payload)} bytes is shorter than the {_HEADER.size}-byte IRHeader")
    flag, label, _, _ = _HEADER.unpack_from(payload, 0)
    label_bytes = 4 * flag
    if label_bytes > len(payload) - _HEADER.size:
        raise RecordIOError(f"IRHeader says {flag} labels, more than the record holds")
    start = _HEADER.size + label_bytes
    if flag == 0:
        labels = np.array([label], dtype=np.float32)
    else:
        labels = np.frombuffer(payload, dtype="<f4", count=flag, offset=_HEADER.size).astype(np.float32)
    image = np.frombuffer(payload, dtype=np.uint8, offset=start).copy()
    return image, labels


def parse_index(text: str, where: str) -> list[int]:
    """The record offsets of an ``.idx`` file (``key offset`` per line), sorted."""
    offsets = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) != 2:
                raise ValueError
            offset = int(parts[1])
            if offset < 0:
                raise ValueError
        except ValueError:
            raise RecordIOError(f"{where}:{number}: expected 'key offset' (a non-negative int offset), got {line!r}") from None
        offsets.append(offset)
    if not offsets:
        raise RecordIOError(f"{where}: the index file lists no records")
    return sorted(offsets)


def record_extents(offsets: list[int], file_sizes: list[int]) -> list[tuple[int, int, int]]:
    """(file index, offset in the file, size) of each record, from global sorted offsets.

    A record runs to the next offset (or the end of all files), as in DALI;
    zero-sized entries are dropped.
    """
    starts = np.cumsum([0, *file_sizes])
    total = int(starts[-1])
    out = []
    for i, offset in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < len(offsets) else total
        if offset >= total:
            raise RecordIOError(f"index offset {offset} is past the end of the .rec files ({total} bytes)")
        if end == offset:
            continue
        f = int(np.searchsorted(starts, offset, side="right") - 1)
        end = min(end, int(starts[f + 1]))
        out.append((f, offset - int(starts[f]), end - offset))
    return out


def scan_records(read: Callable[[int, int], bytes], size: int, where: str) -> list[int]:
    """Offsets of the records (first parts) of one ``.rec`` file, reading headers with ``read``."""
    out = []
    pos = 0
    in_record = False
    while pos + 8 <= size:
        magic, lrec = struct.unpack("<II", read(pos, 8))
        if magic != MAGIC:
            raise RecordIOError(f"{where}: wrong magic number at byte {pos}; not a RecordIO file?")
        flag, length = lrec >> 29, lrec & ((1 << 29) - 1)
        if not in_record:
            out.append(pos)
        in_record = flag in (1, 2)
        pos += 8 + _padded(length)
    if pos != size and pos - size >= 4:
        raise RecordIOError(f"{where}: the last record runs past the end of the file (truncated?)")
    return out
