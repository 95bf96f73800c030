"""``get_property``: layouts against DALI 2.4's recorded cases; ``source_info`` of ``readers.file``
against DALI's recorded strings (paths relative to ``file_root``), empty for external sources."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from dali_reference.breadth_cases import GET_PROPERTY, REFERENCE, check

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError


@pytest.mark.parametrize("case", GET_PROPERTY, ids=lambda c: c.name)
def test_get_property_matches_dali(case) -> None:
    check("get_property", case)


@pytest.mark.parametrize("mode", ["file_root", "files"])
def test_source_info_of_file_reader_matches_dali(tmp_path, mode) -> None:
    sys.path.insert(0, str(REFERENCE.parent.parent.parent / "dali_reference"))
    from record_breadth import source_info_tree

    want = json.loads((REFERENCE / "source_info.json").read_text())
    rels = source_info_tree(tmp_path)
    assert rels == want["tree"]

    @sf.pipeline_def(batch_size=len(rels), num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        if mode == "file_root":
            raw, _ = fn.readers.file(file_root=str(tmp_path))
        else:
            raw, _ = fn.readers.file(file_root=str(tmp_path), files=rels[::-1])
        return fn.get_property(raw, key="source_info"), fn.get_property(fn.decoders.image(raw), key="source_info")

    with pipe() as p:
        batch = p.run()
    got = [[bytes(np.asarray(t.at(i))).decode() for i in range(len(rels))] for t in batch]
    assert got == want[mode]


def test_unknown_key_is_a_definition_error() -> None:
    with pytest.raises(PipelineDefinitionError, match="source_info"):
        sf.pipeline_def(batch_size=1)(lambda: fn.get_property(fn.external_source([[np.zeros(1)]]), key="nope"))()
