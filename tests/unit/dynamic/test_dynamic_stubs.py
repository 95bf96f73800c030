"""The type stubs of ``streamflow.dynamic`` follow ``fn`` (regenerate: ``python -m streamflow.dynamic.stubs``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import streamflow.dynamic as ndd
from streamflow.dynamic import stubs
from streamflow.dynamic.namespace import walk

ROOT = Path(__file__).resolve().parents[3]


def test_stubs_are_current() -> None:
    behind = stubs.stale()
    assert not behind, (
        f"streamflow/dynamic stubs out of date: {behind}; run `python -m streamflow.dynamic.stubs` "
        "(an fn operator was added or changed)"
    )


def test_every_dynamic_function_is_in_the_stubs() -> None:
    text = "".join(stubs.render().values())
    for name, obj in walk(ndd):
        short = name.rsplit(".", 1)[-1]
        if callable(obj) and not isinstance(obj, type):
            assert f"def {short}(" in text or f"{short} = " in text or f"import {short}" in text, name


def test_sub_namespaces_are_their_packages_own() -> None:
    # aio.decoders is aio's (async) decoders, experimental.readers experimental's: "from . import", never "from .."
    import re

    for rel, text in stubs.render().items():
        assert not re.search(r"^from \.{2,} import ", text, re.M), rel
    text = stubs.render()["aio/__init__.pyi"]
    assert "from . import decoders as decoders" in text
    assert "async def image(" in stubs.render()["aio/decoders.pyi"]
    assert "from . import file as file" in stubs.render()["io/__init__.pyi"]


def test_a_reader_named_like_an_annotation_type() -> None:
    # DALI's readers.Sequence (readers.sequence) must not hide collections.abc.Sequence in the annotations
    import ast
    import types
    from collections.abc import Sequence

    from streamflow.graph import DataNode

    def sequence(*, file_root: str, steps: Sequence[int] = (1,), name: str | None = None) -> DataNode:
        """Frames of image sequences."""
        raise NotImplementedError

    readers = types.ModuleType("readers")
    readers.__all__ = ["sequence"]  # type: ignore[attr-defined]
    readers.sequence = sequence  # type: ignore[attr-defined]
    text = stubs._module("readers", readers, False, 0)
    ast.parse(text)
    assert "from collections.abc import Sequence as _Sequence" in text
    assert "steps: _Sequence[int] = ..." in text and "\nSequence = sequence\n" in text
    assert "Sequence[" not in text.replace("_Sequence[", "")


@pytest.mark.slow
def test_a_type_checker_sees_tensors_and_batches(tmp_path: Path) -> None:
    if shutil.which("mypy") is None and not (Path(sys.executable).parent / "mypy").exists():
        pytest.skip("mypy is not installed")
    good = tmp_path / "good.py"
    good.write_text(
        "import numpy as np\nimport streamflow.dynamic as ndd\n"
        "img = np.zeros((4, 4, 3), np.uint8)\n"
        "t: ndd.Tensor = ndd.flip(img, horizontal=1)\n"
        "b: ndd.Batch = ndd.resize([img, img], size=(2, 2))\n"
        "u: ndd.Batch = ndd.random.uniform(batch_size=3, rng=ndd.random.RNG(1))\n"
        "r: ndd.Reader = ndd.readers.File(file_root='x')\n"
        "async def f() -> ndd.Batch:\n    return await ndd.aio.resize([img], size=4)\n"
        "async def g() -> ndd.Tensor:\n    return await ndd.aio.decoders.image(img)\n"
        "d: ndd.Tensor = ndd.io.file.read(np.frombuffer(b'x.jpg', np.uint8))\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\nimport streamflow.dynamic as ndd\n"
                   "t: ndd.Tensor = ndd.resize([np.zeros((2, 2, 3), np.uint8)], size=4)\n")
    run = [sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports"]
    ok = subprocess.run([*run, str(good)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout
    ko = subprocess.run([*run, str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ko.returncode == 1 and 'has type "Batch"' in ko.stdout, ko.stdout
