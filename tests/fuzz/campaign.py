"""The long fuzz campaign: the generators of test_fuzz_decode.py, for N inputs or M minutes.

::

    python -m tests.fuzz.campaign --minutes 3            # from the repository root
    python -m tests.fuzz.campaign --inputs 200000 --seed 7

Batches of ``--batch`` mutated real images go through one
``ImageDecoder.decode_batch`` call and are checked by
``mutators.check_decode`` (an array of the header's shape, or a
``DecodeError`` naming the source; never another exception). One batch in
twenty also fuzzes ``parse_file_list`` with random text. Batch ``k`` is a
pure function of ``(--seed, k)``.

The decoding runs in a child process, so a crash (a signal in native code)
is caught too: the parent rebuilds the batch that was running, saves its
inputs under ``--out`` and starts a new child after it. Prints the number of
inputs tried and every failure; exits 1 if there was any. With ``--json``
the summary is also written as JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.fuzz import mutators

LIST_LINES = ["#c", "", "a.jpg 1", "a b 2", "x 2147483648", "x -1", "x\x00y 1", "\ufeffa 0", "caf\udce9 3"]


def make_batch(seed: int, k: int, size: int) -> tuple[list[bytes], list[str]]:
    rng = random.Random(seed * 1_000_003 + k)
    seeds = mutators.seeds()
    inputs, names = [], []
    for j in range(size):
        name, data = rng.choice(seeds)
        inputs.append(mutators.apply(data, mutators.random_mutations(rng), seeds))
        names.append(f"fuzz/{k}/{j}/{name}")
    return inputs, names


def random_list_text(seed: int, k: int) -> bytes:
    rng = random.Random(seed * 7_000_003 + k)
    lines = []
    for _ in range(rng.randrange(0, 8)):
        if rng.random() < 0.5:
            lines.append(rng.choice(LIST_LINES))
        else:
            lines.append("".join(chr(rng.choice((rng.randrange(32, 127), rng.randrange(0, 0x3000))))
                                 for _ in range(rng.randrange(0, 20))))
    text = "\n".join(lines).encode("utf-8", "surrogateescape" if rng.random() < 0.5 else "surrogatepass")
    return text if rng.random() < 0.9 else bytes(rng.randrange(256) for _ in range(rng.randrange(100)))


def check_file_list(text: bytes, workdir: str) -> list[str]:
    from streamflow.errors import PipelineDefinitionError
    from streamflow.ops.readers.file import FileReader, parse_file_list

    path = os.path.join(workdir, "list.txt")
    with open(path, "wb") as f:
        f.write(text)
    try:
        entries = parse_file_list(path, "/data")
    except PipelineDefinitionError as exc:
        return [] if "list.txt" in str(exc) else [f"file list error does not name the list: {exc}"]
    except Exception as exc:
        return [f"parse_file_list raised {type(exc).__name__}: {exc} on {text!r}"]
    try:
        FileReader(file_list=path, file_root="/data")
    except Exception as exc:
        return [f"FileReader raised {type(exc).__name__}: {exc} on {text!r}"]
    bad = [e for e in entries if not (0 <= e[1] < 2**31 and "\x00" not in e[0])]
    return [f"bad entries {bad} from {text!r}"] if bad else []


def worker(seed: int, start: int, size: int, deadline: float, max_batches: int,
           progress: Any, failures: Any) -> None:
    from streamflow.codecs.nvimgcodec import ImageDecoder

    decoder = ImageDecoder(max_pixels=4_000_000)
    workdir = tempfile.mkdtemp(prefix="sf-fuzz-")
    k = start
    while k < max_batches and time.monotonic() < deadline:
        progress.value = k  # the batch now running (read by the parent after a crash)
        inputs, names = make_batch(seed, k, size)
        for problem in mutators.check_decode(decoder, inputs, names):
            failures.put((k, problem))
        if k % 20 == 0:
            for problem in check_file_list(random_list_text(seed, k), workdir):
                failures.put((k, problem))
        k += 1
    progress.value = k
    failures.put(None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="time limit (default 3)")
    parser.add_argument("--inputs", type=int, default=0, help="stop after this many images (0: time only)")
    parser.add_argument("--batch", type=int, default=8, help="images per decode_batch call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fuzz-crashes"),
                        help="where the inputs of a crashing batch are saved")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    args = parser.parse_args(argv)

    began = time.monotonic()
    deadline = began + args.minutes * 60
    max_batches = -(-args.inputs // args.batch) if args.inputs else 1 << 62
    mutators.seeds()  # built once here, inherited by the forked child
    ctx = mp.get_context("fork")
    start, crashes, failures = 0, [], []
    while start < max_batches and time.monotonic() < deadline:
        progress, queue = ctx.Value("q", start), ctx.Queue()
        child = ctx.Process(target=worker, args=(args.seed, start, args.batch, deadline, max_batches, progress, queue))
        child.start()
        while True:
            item = queue.get()  # the child always ends with None, unless it dies
            if item is None:
                break
            failures.append(item)
            print(f"FAIL batch {item[0]}: {item[1]}", flush=True)
        child.join()
        if child.exitcode != 0:
            k = progress.value
            inputs, names = make_batch(args.seed, k, args.batch)
            folder = args.out / f"seed{args.seed}-batch{k}"
            folder.mkdir(parents=True, exist_ok=True)
            for data, name in zip(inputs, names):
                (folder / name.replace("/", "_")).write_bytes(data)
            crashes.append({"batch": k, "exitcode": child.exitcode, "saved": str(folder)})
            print(f"CRASH in batch {k} (exit code {child.exitcode}); inputs saved in {folder}", flush=True)
            start = k + 1
        else:
            start = progress.value
    batches = start
    summary = {
        "inputs": batches * args.batch,
        "file_lists": (batches + 19) // 20,
        "batches": batches,
        "seconds": round(time.monotonic() - began, 1),
        "seed": args.seed,
        "seeds": len(mutators.seeds()),
        "failures": [{"batch": k, "problem": p} for k, p in failures],
        "crashes": crashes,
    }
    print(f"fuzz campaign: {summary['inputs']} mutated images in {batches} batches and "
          f"{summary['file_lists']} random file lists in {summary['seconds']} s (seed {args.seed}, "
          f"{summary['seeds']} seed images): {len(failures)} failures, {len(crashes)} crashes")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if failures or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
