"""The ``streamflow`` command: ``demo``, ``info`` and ``profile``."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from . import __version__

    parser = argparse.ArgumentParser(prog="streamflow", description="streamflow data-loading pipelines")
    parser.add_argument("--version", action="version", version=f"streamflow {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a training pipeline on bundled photos and show its throughput")
    demo.add_argument("--epochs", type=int, default=2)
    demo.add_argument("--batch-size", type=int, default=32)
    demo.add_argument("--threads", type=int, default=2)
    info = commands.add_parser("info", help="versions, GPUs, GPUDirect Storage")
    info.add_argument("--json", action="store_true", help="print JSON")
    prof = commands.add_parser(
        "profile",
        help="run a pipeline from a script for N batches and name the bottleneck stage",
        description="Run the pipeline a Python script defines and print, per stage and for the "
        "consumer, busy / wait-for-input / wait-for-output-space shares and queue occupancy, "
        "per operator the time per batch, and the bottleneck. The script must define a "
        "module-level function pipeline() returning a Pipeline (a @pipeline_def function "
        "works), or name another object with --pipeline-name. It is run with "
        "__name__ == '__streamflow_profile__', so its __main__ block does not run.",
    )
    prof.add_argument("script", help="Python file that defines the pipeline")
    prof.add_argument("--batches", type=int, default=50, help="batches to time (50)")
    prof.add_argument("--warmup", type=int, default=2, help="untimed batches first (2)")
    prof.add_argument("--trace", metavar="OUT.json", default=None,
                      help="write a Chrome trace (chrome://tracing, ui.perfetto.dev)")
    prof.add_argument("--pipeline-name", metavar="NAME", default=None,
                      help="module-level Pipeline, or function returning one, to use instead of pipeline()")
    prof.add_argument("--json", action="store_true", help="print the report as JSON")
    prof.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    prof.epilog = "Arguments after -- are passed to the script as its sys.argv[1:]."
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if argv[:1] == ["profile"] and "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)

    if args.command == "profile":
        from .profile import main as profile_main

        args.script_args = script_args
        return profile_main(args)

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
