"""``readers.nemo_asr``: NeMo manifests, against DALI 2.4 CPU (recorded; same shapes, types, transcripts and
indices; audio as ``decoders.audio``: identical on PCM, 6e-8 on Vorbis, 1 LSB on resampled int16)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from audio_helpers import AUDIO, assert_close_decimated, dali
from dali_reference import audio_cases
from dali_reference.audio_cases import NEMO_MANIFEST, nemo_cases

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError

pytest.importorskip("soundfile")

MANIFEST = NEMO_MANIFEST
CASES = nemo_cases(int16="int16")


def write_manifest(folder: Path, entries: list[dict] = MANIFEST, root: Path = AUDIO) -> Path:
    return audio_cases.write_manifest(folder, entries, root)


def run_reader(manifest: Path, batch_size: int, epochs: int = 1, **kw):  # type: ignore[no-untyped-def]
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=2, **kw.pop("pipe", {}))
    def pipe():  # type: ignore[no-untyped-def]
        out = fn.readers.nemo_asr(manifest_filepaths=[str(manifest)], name="Reader", **kw)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        size = p.epoch_size("Reader")
        return size, [p.run() for _ in range(epochs)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(tmp_path: Path, case: str) -> None:
    ref = dali("nemo_asr")
    n = 3 if "max_duration" in CASES[case] else 6
    size, (batch,) = run_reader(write_manifest(tmp_path), n, **CASES[case])
    assert size == int(ref[f"{case}/epoch_size"])
    for k, tensor in enumerate(batch):
        for i in range(n):
            got = np.asarray(tensor.at(i))
            key = f"{case}/out{k}/{i}"
            assert got.dtype.name == str(ref[key + "/dtype"]), key
            tol = {"int16": 1.0}.get(got.dtype.name, 6e-8 if got.dtype == np.float32 else 0)
            assert_close_decimated(got, ref, key, atol=tol)


def test_text_and_original_rate(tmp_path: Path) -> None:
    _, (batch,) = run_reader(write_manifest(tmp_path), 6, sample_rate=8000.0)
    texts = [bytes(np.asarray(batch[2].at(i))).decode("utf-8") for i in range(6)]
    assert texts == [e.get("text", "") for e in MANIFEST]
    assert [float(np.asarray(batch[1].at(i))) for i in range(6)] == [16000.0, 16000.0, 22050.0, 16000.0, 22050.0,
                                                                      16000.0]


def test_relative_paths_from_the_manifest_folder_and_sharding(tmp_path: Path) -> None:
    for name in ("arctic_a0007.wav", "arctic_a0009.wav"):
        shutil.copy(AUDIO / name, tmp_path / name)
    entries = [{"audio_filepath": n, "duration": 1.0} for n in ["arctic_a0007.wav", "arctic_a0009.wav"] * 3]
    manifest = tmp_path / "m.json"
    manifest.write_text("".join(json.dumps(e) + "\n" for e in entries))
    seen = []
    for shard in range(2):
        _, batches = run_reader(manifest, 3, read_idxs=True, read_text=False, read_sample_rate=False,
                                shard_id=shard, num_shards=2, random_shuffle=True)
        seen += [int(np.asarray(batches[0][1].at(i))[0]) for i in range(3)]
    assert sorted(seen) == list(range(6))


def test_corrupt_file_is_named_and_skipped(tmp_path: Path) -> None:
    entries = [{"audio_filepath": "arctic_a0007.wav"}, {"audio_filepath": "broken/truncated.flac"},
               {"audio_filepath": "arctic_a0009.wav"}]
    manifest = write_manifest(tmp_path, entries)
    with pytest.raises(sf.PipelineError, match="truncated.flac"):
        run_reader(manifest, 3)
    _, (batch,) = run_reader(manifest, 3, read_idxs=True, pipe=dict(on_error="skip"))
    assert len(batch[0]) == 3 and 1 not in [int(np.asarray(batch[3].at(i))[0]) for i in range(3)]


def test_manifest_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"audio_filepath": "a.wav"}\n{"duration": 1}\n')
    with pytest.raises(PipelineDefinitionError, match="bad.json:2"):
        run_reader(bad, 1)
    with pytest.raises(PipelineDefinitionError, match="no entries left"):
        run_reader(write_manifest(tmp_path), 1, min_duration=100.0)
    with pytest.raises(PipelineDefinitionError, match="cannot read manifest"):
        run_reader(tmp_path / "missing.json", 1)
