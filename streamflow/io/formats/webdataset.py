"""WebDataset archives: tar members grouped into samples, and DALI's index files.

A WebDataset shard is a POSIX tar archive; members with the same base name
(the path up to the first dot of the file name) form one sample, and the
rest of the name is the component's extension: ``cats/0001.jpg`` and
``cats/0001.cls`` are the ``jpg`` and ``cls`` components of sample
``cats/0001``. Only regular files count; names whose file name starts with a
dot are skipped. Consecutive members with the same base name form a sample.

Index files (DALI's ``wds2idx``), version ``v1.1`` or ``v1.2``::

    v1.2 <number of samples>
    <ext> <data offset> <size> [<member name>] <ext> <data offset> <size> [<member name>] ...

one line per sample (``v1.1`` lines have no member names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "Component",
    "IndexError_",
    "format_index",
    "parse_index",
    "scan_tar",
    "split_name",
]

BLOCK = 512


class IndexError_(ValueError):
    """A tar archive or index file is malformed (the message names it)."""


@dataclass(frozen=True)
class Component:
    """One member of a sample: extension, data offset and size in the archive, member name."""

    ext: str
    offset: int
    size: int
    name: str = ""


def split_name(path: str) -> tuple[str, str]:
    """(base name, extension): the split is at the first dot of the file name."""
    slash = path.rfind("/") + 1
    dot = path.find(".", slash)
    if dot < 0:
        return path, ""
    return path[:dot], path[dot + 1 :]


def _octal(field: bytes, what: str, where: str) -> int:
    if field and field[0] & 0x80:  # GNU base-256 for big numbers
        value = int.from_bytes(field[1:], "big") | ((field[0] & 0x3F) << (8 * (len(field) - 1)))
        return value
    text = field.split(b"\0", 1)[0].strip(b" \0")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise IndexError_(f"{where}: bad tar {what} field {field!r}; not a tar archive?") from None


def _checksum_ok(header: bytes) -> bool:
    stored = header[148:156].split(b"\0", 1)[0].strip(b" \0")
    if not stored:
        return False
    try:
        expected = int(stored, 8)
    except ValueError:
        return False
    total = sum(header[:148]) + 8 * 32 + sum(header[156:])
    return total == expected


def _pax_path(data: bytes) -> dict[str, str]:
    """Records of a pax extended header (``"<len> key=value\\n"``...)."""
    out = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            break
        if length <= 0:
            break
        record = data[space + 1 : pos + length - 1]
        key, _, value = record.partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def scan_tar(read: Callable[[int, int], bytes], size: int, where: str) -> list[tuple[str, int, int]]:
    """(member name, data offset, size) of every regular file in a tar of ``size`` bytes.

    ``read(offset, n)`` returns the archive's bytes. Only headers are read:
    each member's data is skipped over. GNU long names (``L``) and pax
    headers (``x``: ``path``, ``size``) are honoured.
    """
    members = []
    pos = 0
    long_name: str | None = None
    pax: dict[str, str] = {}
    while pos + BLOCK <= size:
        header = read(pos, BLOCK)
        if len(header) < BLOCK:
            raise IndexError_(f"{where}: truncated tar header at byte {pos}")
        if header == b"\0" * BLOCK:
            break  # end-of-archive marker
        if not _checksum_ok(header):
            raise IndexError_(f"{where}: bad tar header checksum at byte {pos}; not a tar archive, or corrupt")
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        if header[257:262] == b"ustar":
            prefix = header[345:500].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            if prefix:
                name = f"{prefix}/{name}"
        length = _octal(header[124:136], "size", where)
        kind = header[156:157]
        data_at = pos + BLOCK
        if data_at + length > size:
            raise IndexError_(f"{where}: member {name!r} at byte {pos} runs past the end of the archive (truncated?)")
        if kind == b"L":  # GNU long name for the next member
            long_name = read(data_at, length).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        elif kind == b"x":  # pax header for the next member
            pax = _pax_path(read(data_at, length))
        elif kind == b"g":  # pax global header: nothing this reader uses
            pass
        else:
            if long_name is not None:
                name = long_name
            if "path" in pax:
                name = pax["path"]
            if "size" in pax:
                length = int(pax["size"])
            if kind in (b"0", b"\0", b"7"):
                members.append((name, data_at, length))
            long_name, pax = None, {}
        pos = data_at + -(-length // BLOCK) * BLOCK
    return members


def group_samples(members: list[tuple[str, int, int]]) -> list[list[Component]]:
    """Members as samples: consecutive members with the same base name; hidden files skipped."""
    samples: list[list[Component]] = []
    last: str | None = None
    for name, offset, length in members:
        base, ext = split_name(name)
        if not base or base.endswith("/"):  # the file name starts with a dot
            continue
        if base != last:
            samples.append([])
            last = base
        samples[-1].append(Component(ext, offset, length, name))
    return samples


def format_index(samples: list[list[Component]]) -> str:
    """A ``v1.2`` index file for ``samples``."""
    lines = [f"v1.2 {len(samples)}"]
    for sample in samples:
        lines.append(" ".join(f"{c.ext} {c.offset} {c.size} {c.name}" for c in sample))
    return "\n".join(lines) + "\n"


def parse_index(text: str, where: str) -> list[list[Component]]:
    """The samples of a ``v1.1``/``v1.2`` index file."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if len(head) != 2 or head[0] not in ("v1.1", "v1.2"):
        raise IndexError_(
            f"{where}: not a webdataset index (expected a first line 'v1.2 <samples>', got {lines[:1]!r}); "
            "make one with `python -m streamflow.tools.wds2idx`"
        )
    named = head[0] == "v1.2"
    per = 4 if named else 3
    samples = []
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if not parts:
            continue
        if len(parts) % per:
            raise IndexError_(f"{where}:{number}: expected groups of {per} fields (ext offset size{' name' if named else ''})")
        sample = []
        for i in range(0, len(parts), per):
            try:
                offset, size = int(parts[i + 1]), int(parts[i + 2])
                if offset < 0 or size < 0:
                    raise ValueError
            except ValueError:
                raise IndexError_(f"{where}:{number}: bad offset or size in {parts[i:i + per]}") from None
            sample.append(Component(parts[i], offset, size, parts[i + 3] if named else ""))
        samples.append(sample)
    try:
        expected = int(head[1])
    except ValueError:
        raise IndexError_(f"{where}: bad sample count {head[1]!r} on the first line") from None
    if expected != len(samples):
        raise IndexError_(f"{where}: the first line announces {expected} samples, the file lists {len(samples)}")
    if not samples:
        raise IndexError_(f"{where}: the index lists no samples")
    return samples
