"""What the DALI-tutorial recorders and their tests share: cases' results as ``.npz`` entries.

Importable without DALI or streamflow: the recorders (run with DALI) and the
tests (run with streamflow) both use it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np


def flatten(result: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``{name: value}`` as npz entries: a list becomes ``name#0``, ``name#1``...; a string a 0-d str array."""
    flat: dict[str, np.ndarray] = {}
    for name, value in result.items():
        if isinstance(value, list):
            for i, v in enumerate(value):
                flat[f"{name}#{i}"] = np.asarray(v)
        else:
            flat[name] = np.asarray(value)
    return flat


def record_each(cases: Mapping[str, Callable[[], Mapping[str, Any]]], out_dir: Path, names: list[str]) -> int:
    """Run the named cases (all if none) and write each one's flattened result to ``out_dir/<case>.npz``.

    A case that fails is reported and the others go on (one unsupported
    feature should not stop the rest); returns 1 if any failed, else 0.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names or list(cases):
        try:
            result = cases[name]()
        except Exception:
            failed += 1
            print(f"{name}: FAILED\n{traceback.format_exc()}")
            continue
        flat = flatten(result)
        path = out_dir / f"{name}.npz"
        np.savez_compressed(path, **flat)
        print(f"{name}: {len(flat)} arrays, {path.stat().st_size} bytes")
    return 1 if failed else 0


def record_into_one(run_case: Callable[[str], Mapping[str, np.ndarray]], all_names: list[str], out: Path,
                    names: list[str]) -> None:
    """Run the named cases (all if none) into one ``.npz`` whose keys start with ``<case>/``.

    Re-recording some cases keeps the other cases' arrays of an existing file.
    """
    arrays: dict[str, np.ndarray] = {}
    if out.exists() and names:
        with np.load(out) as old:
            arrays = {k: old[k] for k in old.files if k.split("/", 1)[0] not in names}
    for name in names or all_names:
        got = run_case(name)
        arrays.update(got)
        print(f"{name}: {len(got)} arrays")
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
