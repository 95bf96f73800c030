"""What the index tools share: argument parsing, reading headers, writing the index."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import StreamflowError
from ..io import storage

__all__ = ["run_tool"]


def run_tool(prog: str, description: str, default_index: Callable[[str], str] | None,
             make_index: Callable[[Callable[[int, int], bytes], int, str], str],
             argv: Sequence[str] | None = None) -> int:
    """Parse ``DATA [INDEX]``, build the index text with ``make_index(read, size, path)``, write it."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("data", help="the data file (a local path or a URL)")
    parser.add_argument("index", nargs=None if default_index is None else "?", help="the index file to write")
    args = parser.parse_args(argv)
    index = args.index if args.index is not None else default_index(args.data)  # type: ignore[misc]
    try:
        reader = storage.open_range_reader(args.data)
        try:
            text = make_index(reader.read, reader.size, args.data)
        finally:
            reader.close()
    except (StreamflowError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    with open(index, "w") as f:
        f.write(text)
    return 0
