"""`import streamflow` needs only the core dependencies, and exports exactly its API."""

from __future__ import annotations

import subprocess
import sys

import streamflow


def test_import_without_optional_packages() -> None:
    code = (
        "import sys\n"
        "for m in ('cupy', 'cupyx', 'kvikio', 'torch', 'jax'):\n"
        "    sys.modules[m] = None\n"
        "import streamflow, streamflow.fn, streamflow.types\n"
        "assert 'nvidia.nvimgcodec' not in sys.modules, 'nvimgcodec imported eagerly'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_public_names_are_exactly_the_api() -> None:
    public = {name for name in dir(streamflow) if not name.startswith("_")}
    # Subpackages imported as a side effect are modules, not API.
    modules = {name for name in public if type(getattr(streamflow, name)).__name__ == "module"}
    assert public - modules == set(streamflow.__all__) - modules - {"__version__"}
    for name in streamflow.__all__:
        assert hasattr(streamflow, name), name


def test_types_parse_once_with_clear_errors() -> None:
    from streamflow import types

    assert types.parse_device("GPU") is types.Device.GPU
    assert types.parse_interp("linear") is types.INTERP_LINEAR
    assert types.parse_dtype("float32") is types.FLOAT
    import pytest

    with pytest.raises(ValueError, match="expected one of: 'cpu', 'mixed', 'gpu'"):
        types.parse_device("tpu")
