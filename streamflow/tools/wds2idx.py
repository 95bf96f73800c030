"""``wds2idx``: write the ``v1.2`` index of a WebDataset tar archive, as DALI's tool does."""

from __future__ import annotations

from collections.abc import Sequence

from ..io.formats import webdataset as fmt
from ._common import run_tool


def default_index(archive: str) -> str:
    """DALI's default: the archive's name up to its first dot (after the folder), plus ``.idx``."""
    slash = archive.rfind("/") + 2
    dot = archive.find(".", slash)
    return (archive[:dot] if dot >= 0 else archive) + ".idx"


def make_index(read, size, path):
    samples = fmt.group_samples(fmt.scan_tar(read, size, path))
    if not samples:
        raise ValueError(f"{path}: the archive holds no samples (no regular files)")
    return fmt.format_index(samples)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``wds2idx ARCHIVE.tar [INDEX]``."""
    return run_tool("wds2idx", "Write the index file of a WebDataset archive for fn.readers.webdataset.",
                    default_index, make_index, argv)


if __name__ == "__main__":
    raise SystemExit(main())
