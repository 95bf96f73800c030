"""Drafts of ``CASES`` entries for the ``fn`` functions that have none: run after merging operators.

::

    python tests/unit/dynamic/draft_cases.py            # stubs regenerated, then the drafts
    python tests/unit/dynamic/draft_cases.py --no-stubs

1. Regenerates the dynamic stubs (``python -m streamflow.dynamic.stubs``).
2. Lists the ``fn`` functions that ``test_dynamic_every_operator.py`` has no
   case for (aliases, the same object under another name, are covered by
   their operator's case and are not listed).
3. For each, tries the table's sample data (images, photo crops, floats,
   boxes and labels, points, audio, spectrograms, sequences, masks, encoded
   images) as its data inputs, in a pipeline and in dynamic mode, and prints
   the first entry with which both run and give the same values, ready to
   paste into ``CASES``. Readers, and functions with required arguments or
   whose inputs none of the samples fit, get a template to fill in.

A draft only shows that the operator runs in dynamic mode on some data: make
the entry realistic before committing it (real data, the arguments that
matter, per-sample arguments), as docs/dynamic.md ("Adding an operator")
says. Exit status: 0 when no function lacks a case, 1 otherwise.
"""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the test module and tests/ (helpers, shard_writers)

import test_dynamic_every_operator as table

from streamflow.dynamic.invoke import ANY, DATA, signature_of

#: (how the draft writes the inputs, the inputs, their layout): tried in this order.
POOLS: list[tuple[str, Callable[[], list[Any]], str]] = [
    ("IMGS", lambda: table.IMGS, "HWC"),
    ("FLOATS", lambda: table.FLOATS, ""),
    ("BOXES", lambda: table.BOXES, ""),
    ("POINTS", lambda: table.POINTS, ""),
    ("WAVES", lambda: table.WAVES, ""),
    ("SPECS", lambda: table.SPECS, "ft"),
    ("SEQS", lambda: table.SEQS, "FHWC"),
    ("_masks()", table._masks, ""),
    ("CLASSES", lambda: table.CLASSES, ""),
    ("ENCODED", lambda: table.ENCODED, ""),
]
#: Inputs that go together (boxes with their labels), for functions of two data inputs.
PAIRS: list[tuple[str, Callable[[], list[list[Any]]], str]] = [
    ("[BOXES, LABELS]", lambda: [table.BOXES, table.LABELS], ""),
]


def _data_inputs(function: Callable[..., Any]) -> tuple[int, bool, list[str]]:
    """(required data inputs, takes *inputs, required constant arguments) of ``function``."""
    sig = inspect.signature(inspect.unwrap(function))
    kinds = signature_of(function).kinds
    required_data, variadic, required_args = 0, False, []
    for name, p in sig.parameters.items():
        if p.kind is p.VAR_POSITIONAL:
            variadic = True
        elif p.kind is p.VAR_KEYWORD:
            continue
        elif p.default is p.empty:
            if kinds.get(name) in (DATA, ANY):
                required_data += 1
            else:
                required_args.append(name)
    return required_data, variadic, required_args


def _agrees(name: str, case: table.Case) -> str | None:
    """None when ``case`` runs in a pipeline and in dynamic mode with the same values, else why not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.ready()
            want, position = table._pipeline(table.FN_FUNCTIONS[name], case)
            got = table._dynamic(table._resolve(table.ndd, name), case, position)
            table._same(got, want, name)
    except Exception as e:  # any failure means: not this draft
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    return None


def _entry(name: str, inputs: str, layout: str) -> str:
    parts = [inputs] if inputs else []
    if layout:
        parts.append(f'layout="{layout}"')
    return f'    "{name}": Case({", ".join(parts)}),'


def draft(name: str) -> tuple[str, str]:
    """(CASES entry or template, note) for fn function ``name``."""
    function = table.FN_FUNCTIONS[name]
    module = inspect.unwrap(function).__module__
    if ".readers." in module or name.startswith("readers.") or name.endswith("_reader"):
        return (f'    "{name}": Case(reader=_TODO_files, batch_size=2),',
                "a reader: write a function (tmp folder -> the reader's keyword arguments) that makes small "
                "files as the reader's own tests do (see _webdataset, _tfrecord, _coco)")
    n_data, variadic, required = _data_inputs(function)
    if required:
        args = ", ".join(f'"{a}": TODO' for a in required)
        inputs = f"[{', '.join(['TODO'] * n_data)}], " if n_data else ""
        return (f'    "{name}": Case({inputs}{{{args}}}),', f"required arguments {required}: give them values")
    if n_data == 0 and not variadic:
        why = _agrees(name, table.Case(batch_size=3))
        if why is None:
            return f'    "{name}": Case(),', "no data inputs: ran with batch_size=3; give it arguments that matter"
        return f'    "{name}": Case(),', f"no data inputs, and it does not run without arguments ({why})"
    counts = [n_data] if not variadic else [max(n_data, 1), 2]
    first: str | None = None
    for count in counts:
        tries: list[tuple[str, Callable[[], list[list[Any]]], str]] = [
            (f"[{', '.join([label] * count)}]", (lambda make=make, count=count: [list(make())] * count), layout)
            for label, make, layout in POOLS]
        if count == 2:
            tries = [*PAIRS, *tries]
        for label, make, layout in tries:
            why = _agrees(name, table.Case(make, layout=layout))
            if why is None:
                return _entry(name, label, layout), f"runs on {label} and agrees: make the inputs realistic"
            first = first or why
    return _entry(name, "[TODO]", ""), f"none of the sample data fits (with {POOLS[0][0]}: {first})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-stubs", action="store_true", help="do not regenerate the dynamic stubs first")
    args = ap.parse_args(argv)
    if not args.no_stubs:
        subprocess.run([sys.executable, "-m", "streamflow.dynamic.stubs"], check=True, stdout=subprocess.DEVNULL)
        print("stubs regenerated (python -m streamflow.dynamic.stubs)")
    missing = table.missing_cases()
    if not missing:
        print("every fn function has a dynamic-mode case")
        return 0
    print(f"{len(missing)} fn function(s) without a case; drafts for CASES in "
          "tests/unit/dynamic/test_dynamic_every_operator.py:\n")
    covered: dict[int, str] = {}  # an alias of a function drafted above needs no entry of its own
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # operators that write files (dump_image) write them here
        try:
            for name in sorted(missing, key=_preference):
                function = id(table.FN_FUNCTIONS[name])
                if function in covered:
                    continue
                covered[function] = name
                entry, note = draft(name)
                others = [n for n in missing if n != name and id(table.FN_FUNCTIONS[n]) == function]
                also = f" (also covers {', '.join(others)}: the same function)" if others else ""
                print(f"    # {note}{also}\n{entry}")
        finally:
            os.chdir(here)
    return 1


def _preference(name: str) -> tuple[int, str]:
    """Draft the case under the operator's own name: not an experimental.* or older *_reader one."""
    return (name.startswith("experimental.") or name.endswith("_reader") or "_reader_" in name, name)


if __name__ == "__main__":
    sys.exit(main())
