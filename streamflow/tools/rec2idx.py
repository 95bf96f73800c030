"""``rec2idx``: write the ``.idx`` of an MXNet RecordIO file (``key<TAB>offset``), without MXNet."""

from __future__ import annotations

from collections.abc import Sequence

from ..io.formats import recordio as fmt
from ._common import run_tool


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``rec2idx FILE.rec FILE.idx``."""
    return run_tool(
        "rec2idx", "Write the index file of an MXNet RecordIO file for fn.readers.mxnet.", None,
        lambda read, size, path: "".join(f"{i}\t{o}\n" for i, o in enumerate(fmt.scan_records(read, size, path))),
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
