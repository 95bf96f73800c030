"""``decoders.audio``: libsndfile decoding, downmix, resampling, types; against DALI 2.4 and soundfile.

Tolerances (DALI 2.4 CPU, recorded by ``tests/dali_reference/record_audio.py``):
PCM WAV/FLAC and Opus identical; OGG Vorbis within 6e-8 (the Vorbis float
decode of another libsndfile build); resampled float within 3e-7, int16 within
1 LSB; int32 within 256 LSB (2**-23 relative).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from audio_helpers import AUDIO, BROKEN, FILES, assert_close_decimated, dali, encoded
from helpers import run_batch

import streamflow as sf
from streamflow import fn
from streamflow.errors import DecodeError, PipelineDefinitionError

soundfile = pytest.importorskip("soundfile")

CASES = {
    "default": {},
    "downmix": dict(downmix=True),
    "int16": dict(dtype="int16"),
    "int32_downmix": dict(dtype="int32", downmix=True),
    "sr16000": dict(sample_rate=16000.0),
    "sr22050_downmix_int16": dict(sample_rate=22050.0, downmix=True, dtype="int16"),
    "sr8000_q0": dict(sample_rate=8000.0, quality=0.0),
    "sr44100_q100": dict(sample_rate=44100.0, quality=100.0, downmix=True),
}


def _tolerance(dtype: np.dtype) -> float:
    return {"int16": 1.0, "int32": 256.0}.get(np.dtype(dtype).name, 3e-7)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_dali(case: str) -> None:
    ref = dali("decoders_audio")
    batch = run_batch(encoded(), lambda e: fn.decoders.audio(e, **CASES[case]))
    for i, name in enumerate(FILES):
        audio, rate = np.asarray(batch[0].at(i)), np.asarray(batch[1].at(i))
        key = f"{case}/{name}"
        assert audio.dtype.name == str(ref[key + "/dtype"])
        assert rate.dtype == np.float32 and rate.shape == () and float(rate) == float(ref[key + "/rate"])
        assert_close_decimated(audio, ref, key, atol=_tolerance(audio.dtype))


@pytest.mark.parametrize("name", FILES)
def test_equals_soundfile_decode(name: str) -> None:
    want, rate = soundfile.read(AUDIO / name, dtype="float32", always_2d=True)
    want16, _ = soundfile.read(AUDIO / name, dtype="int16", always_2d=True)
    batch = run_batch(encoded([name]), lambda e: (*fn.decoders.audio(e), fn.decoders.audio(e, dtype="int16")[0],
                                                  fn.decoders.audio(e, downmix=True)[0]))
    assert np.array_equal(batch[0].at(0), want)
    assert float(np.asarray(batch[1].at(0))) == rate
    assert np.array_equal(batch[2].at(0), want16)
    assert np.allclose(batch[3].at(0), want.mean(axis=1), atol=1e-7)


def test_per_sample_sample_rate_is_speed_perturbation() -> None:
    rates = [np.float32(r) for r in (13600.0, 16000.0, 18400.0)]
    names = ["arctic_a0007.wav", "arctic_a0009.wav", "arctic_a0007.opus"]
    out = run_batch(encoded(names), lambda e, r=None: fn.decoders.audio(e, downmix=True, sample_rate=fn.external_source([rates])))
    for i, name in enumerate(names):
        frames = soundfile.info(str(AUDIO / name)).frames
        assert out[0].at(i).shape == (int(np.ceil(frames * rates[i] / 16000)),)
        assert float(np.asarray(out[1].at(i))) == rates[i]


def test_arguments_checked_when_defined() -> None:
    for bad in (dict(dtype="uint8"), dict(quality=101.0)):
        with pytest.raises(PipelineDefinitionError):
            run_batch(encoded(FILES[:1]), lambda e, bad=bad: fn.decoders.audio(e, **bad))


@pytest.mark.parametrize("name", BROKEN)
def test_broken_file_names_the_file(name: str) -> None:
    with pytest.raises(sf.PipelineError) as info:
        run_batch(encoded([name]), lambda e: fn.decoders.audio(e)[0])
    assert "decoders.audio" in str(info.value)
    cause = info.value.__cause__ or info.value
    assert "audio" in str(cause)


def test_codec_errors_say_what_is_wrong() -> None:
    from streamflow.codecs.audio import decode_audio

    for name, words in zip(BROKEN, ("data", "not recognised", "lost sync")):
        with pytest.raises(DecodeError, match=words):
            decode_audio((AUDIO / name).read_bytes())
    with pytest.raises(DecodeError, match="empty"):
        decode_audio(b"")


def test_readers_file_over_an_audio_folder_skips_broken_files(tmp_path) -> None:
    root = tmp_path / "speech"
    (root / "good").mkdir(parents=True)
    (root / "bad").mkdir()
    for name in FILES:
        shutil.copy(AUDIO / name, root / "good" / name)
    for name in BROKEN:
        shutil.copy(AUDIO / name, root / "bad" / name.split("/")[1])

    @sf.pipeline_def(batch_size=4, num_threads=2, seed=1, on_error="skip")
    def pipe():  # type: ignore[no-untyped-def]
        data, label = fn.readers.file(file_root=str(root), name="Reader")
        audio, rate = fn.decoders.audio(data, downmix=True, sample_rate=16000)
        return audio, rate, label

    with pipe() as p:
        batches = list(p.iter())
        stats = p.stats()
    assert {s.source.rsplit("/", 1)[1] for s in stats.skipped} == {"junk_body.wav", "not_audio.wav", "truncated.flac"}
    assert all("decoders.audio" in s.reason for s in stats.skipped)
    rows = [(np.asarray(b[0].at(i)), int(np.asarray(b[2].at(i))[0])) for b in batches for i in range(len(b[0]))]
    # 7 files match the default filters (.opus is not among them); the 3 broken ones are replaced
    assert len(rows) == 7 and all(label == 1 for _, label in rows)
    assert all(float(np.asarray(b[1].at(i))) == 16000.0 for b in batches for i in range(len(b[1])))
    assert {a.shape[0] for a, _ in rows} <= {64000, 49520, 40000}
