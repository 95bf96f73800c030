"""``tfrecord2idx``: write the index of a TFRecord file (``offset size`` per record), as DALI's tool does."""

from __future__ import annotations

from collections.abc import Sequence

from ..io.formats import tfrecord as fmt
from ._common import run_tool


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``tfrecord2idx FILE.tfrecord FILE.idx``."""
    return run_tool(
        "tfrecord2idx", "Write the index file of a TFRecord file for fn.readers.tfrecord.", None,
        lambda read, size, path: fmt.format_index(fmt.scan_records(read, size, path)), argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
