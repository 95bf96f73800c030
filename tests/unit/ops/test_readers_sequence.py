"""``readers.sequence`` against DALI 2.4: one epoch over streams of PNG frames cut from real photos
(with a stray text file), for three configurations: every sequence in DALI's order, RGB frames
exact (PNG), GRAY within 1 (the image decoder's RGB-to-gray rounding, see docs/decoding.md)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from dali_reference.breadth_cases import REFERENCE

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.ops.readers.sequence import sequence_starts

sys.path.insert(0, str(REFERENCE.parent.parent.parent / "dali_reference"))
from record_breadth import SEQUENCE_CONFIGS, sequence_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("streams")
    sequence_tree(root)
    return root


@pytest.mark.parametrize("key", list(SEQUENCE_CONFIGS))
def test_one_epoch_matches_dali(tree, key) -> None:
    with np.load(REFERENCE / "readers_sequence.npz") as ref:
        want = [ref[f"{key}/{i}"] for i in range(int(ref[f"{key}/size"]))]

    @sf.pipeline_def(batch_size=1, num_threads=2, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        seq = fn.sequence_reader(file_root=str(tree), name="r", **SEQUENCE_CONFIGS[key])
        return seq, fn.get_property(seq, key="source_info")

    with pipe() as p:
        assert p.epoch_size("r") == len(want)
        for i, w in enumerate(want):
            seq, info = p.run()
            got = np.asarray(seq.at(0))
            assert got.shape == w.shape and got.dtype == w.dtype, f"{key} sequence {i}"
            # RGB frames: exact; GRAY: the image decoder's RGB -> gray conversion, within 1 of DALI's
            tol = 1 if "gray" in key else 0
            assert np.abs(got.astype(int) - w.astype(int)).max() <= tol, f"{key} sequence {i}"
            assert np.asarray(info.at(0)).size == 0  # DALI gives sequences no source info
        assert seq.layout == "FHWC"


def test_starts_and_errors(tmp_path) -> None:
    assert list(sequence_starts(7, 3, 1, 1)) == [0, 1, 2, 3, 4]
    assert list(sequence_starts(7, 2, 2, 2)) == [0, 2, 4]
    assert list(sequence_starts(2, 3, 1, 1)) == []
    with pytest.raises(PipelineDefinitionError, match="not a directory"):
        fn.readers.sequence(file_root=str(tmp_path / "missing"), sequence_length=2)
    (tmp_path / "s").mkdir()
    with pytest.raises(PipelineDefinitionError, match="no stream"):
        fn.readers.sequence(file_root=str(tmp_path), sequence_length=2)
    with pytest.raises(PipelineDefinitionError, match="sequence_length"):
        fn.readers.sequence(file_root=str(tmp_path), sequence_length=0)


def test_broken_frame_is_skipped(tree, tmp_path) -> None:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(tree, root)
    (root / "stream1" / "0001.png").write_bytes(b"\x89PNG broken")

    @sf.pipeline_def(batch_size=2, num_threads=1, seed=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        return fn.readers.sequence(file_root=str(root), sequence_length=2, name="r")

    with pipe() as p:
        batches = [p.run() for _ in range(3)]
    assert all(len(b[0]) == 2 for b in batches)  # replacements keep batches full
