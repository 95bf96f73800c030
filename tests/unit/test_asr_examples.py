"""examples/asr_preprocessing.py: DALI's RNN-T and NeMo pipelines, unchanged but for the import, against DALI 2.4.

DALI's outputs were recorded by running the same file with ``from nvidia.dali
import ...`` (``tests/dali_reference/record_audio.py asr_pipelines``).
Tolerance on the normalized (unit-variance) log-mel features: 5e-4 absolute
(measured: at most 7.2e-5; float32 FFT rounding in quiet bins, amplified by
the log); lengths, labels and indices identical.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from audio_helpers import dali

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("soundfile")


@pytest.fixture(scope="module")
def example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("asr_preprocessing", ROOT / "examples" / "asr_preprocessing.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["asr_preprocessing"] = module
    spec.loader.exec_module(module)
    return module


def _compare(outputs, ref, prefix: str) -> None:  # type: ignore[no-untyped-def]
    for k, tensor in enumerate(outputs):
        for i in range(len(tensor)):
            got = np.asarray(tensor.at(i))
            key = f"{prefix}/out{k}/{i}"
            want, step = ref[key], int(ref[key + "/step"])
            assert got.shape == tuple(ref[key + "/shape"]), key
            values = got.reshape(-1)[::step].astype(np.float64)
            if got.dtype.kind == "f":
                err = np.abs(values - want)
                assert err.max() < 5e-4, (key, err.max())
            else:
                assert np.array_equal(values, want), key


def test_rnnt_pipeline_matches_dali(example) -> None:  # type: ignore[no-untyped-def]
    ref = dali("asr_pipelines")
    files, labels = example.clips()
    assert [Path(f).name for f in files] == ref["files"].tolist()
    pipe = example.rnnt_pipeline(files, labels, 4, speed_perturbation=None)
    pipe.build()
    _compare(pipe.run(), ref, "rnnt")


def test_nemo_pipeline_matches_dali(example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    ref = dali("asr_pipelines")
    files, _ = example.clips()
    manifest = tmp_path / "manifest.json"
    manifest.write_text("".join(json.dumps({"audio_filepath": f, "text": Path(f).stem}) + "\n" for f in files))
    pipe = example.nemo_pipeline(manifest, 4)
    pipe.build()
    _compare(pipe.run(), ref, "nemo")


def test_speed_perturbation_and_dither_are_seeded(example) -> None:  # type: ignore[no-untyped-def]
    files, labels = example.clips()

    def lengths(seed: int) -> list[int]:
        pipe = example.rnnt_pipeline(files, labels, 4, dither=1e-5, seed=seed)
        pipe.build()
        _, shapes, _ = pipe.run()
        return [int(np.asarray(shapes.at(i))[1]) for i in range(4)]

    plain = example.rnnt_pipeline(files, labels, 4, speed_perturbation=None)
    plain.build()
    base = [int(np.asarray(plain.run()[1].at(i))[1]) for i in range(4)]
    first = lengths(1)
    assert first == lengths(1) and first != lengths(2)
    # resampling by a factor in [0.85, 1.15] scales the trimmed lengths about as much
    assert all(0.8 * b <= f <= 1.2 * b for f, b in zip(first, base))


def test_example_runs() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "examples/asr_preprocessing.py", "--batch-size", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RNN-T: features" in out.stdout and "NeMo: processed_signal" in out.stdout
