"""The ``streamflow`` command: ``demo`` and ``info``."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streamflow", description="streamflow data-loading pipelines")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a training pipeline on bundled photos and show its throughput")
    demo.add_argument("--epochs", type=int, default=2)
    demo.add_argument("--batch-size", type=int, default=32)
    demo.add_argument("--threads", type=int, default=2)
    info = commands.add_parser("info", help="versions, GPUs, GPUDirect Storage")
    info.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run_demo

        run_demo(epochs=args.epochs, batch_size=args.batch_size, num_threads=args.threads)
        return 0
    from .info import collect_info, format_info

    data = collect_info()
    print(json.dumps(data, indent=2) if args.json else format_info(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
