"""``docs/operators.md``'s status table is generated from the code: it fails here when stale."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _tool():
    spec = importlib.util.spec_from_file_location("operator_table", DOCS / "operator_table.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_operator_table_is_current() -> None:
    tool = _tool()
    assert tool.main(["--check"]) == 0, "docs/operators.md is stale: run python docs/operator_table.py"


def test_operator_table_reads_the_code() -> None:
    rows = {name: (status, note) for name, status, note in _tool().status_rows()}
    assert len(rows) > 150  # every public DALI 2.4 operator is listed
    assert rows["slice"][0] == "CPU + GPU"
    assert rows["multi_paste"][0] == "CPU"
    assert rows["resize"][0] == "CPU + GPU"
    assert rows["decoders.image"][0] == "CPU + mixed"
    assert rows["image_decoder"][1] == "deprecated alias of `decoders.image`"
    assert rows["optical_flow"][0] == "missing"  # DALI runs it on the GPU optical-flow engine only

