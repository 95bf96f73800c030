"""Speech recognition preprocessing as DALI users write it: the RNN-T training pipeline and NeMo's.

Both functions are DALI code: change the import below to
``from nvidia.dali import fn, pipeline_def, types`` and they run on DALI
(``tests/dali_reference/record_audio.py`` does exactly that to record DALI's
outputs, and ``tests/unit/test_asr_examples.py`` checks streamflow's against them).

* ``rnnt_pipeline``: the MLPerf / DeepLearningExamples RNN-T (and QuartzNet)
  chain: decode with speed perturbation (resampling by a random factor),
  trim silence (``nonsilent_region`` + ``slice``), optional dither,
  preemphasis, power spectrogram, 80 mel filters, natural log, per-feature
  normalization, pad to the longest in the batch.
* ``nemo_pipeline``: NeMo's ``AudioToMelSpectrogramPreprocessor`` as its DALI
  data layer builds it (``nemo/collections/asr/data/audio_to_text_dali.py``):
  ``readers.nemo_asr``, trim, dither, preemphasis, spectrogram, mel bank, log
  with a zero guard, per-feature normalization (ddof=1), lengths, padding of
  the feature axis to a multiple of 16.

Run ``python examples/asr_preprocessing.py`` (the shipped clips) or
``--data FOLDER`` (sub-folders of .wav/.flac/.ogg files).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from streamflow import fn, pipeline_def, types  # DALI: from nvidia.dali import ...

CLIPS = Path(__file__).resolve().parents[1] / "tests" / "data" / "audio"


def rnnt_pipeline(files, labels, batch_size, *, sample_rate=16000, speed_perturbation=(0.85, 1.15),
                  silence_threshold=-60, window_size=0.02, window_stride=0.01, nfft=512, nfeatures=80,
                  preemph_coeff=0.97, dither=0.0, num_threads=2, device_id=None, seed=42):
    """The RNN-T training data pipeline; outputs (features [80 x T, padded], feature lengths, labels)."""

    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=seed)
    def pipe():
        encoded, label = fn.readers.file(files=files, labels=labels, name="Reader")
        if speed_perturbation is not None:
            rate = fn.random.uniform(range=speed_perturbation) * sample_rate
        else:
            rate = float(sample_rate)
        audio, _ = fn.decoders.audio(encoded, downmix=True, sample_rate=rate, dtype=types.FLOAT)
        begin, length = fn.nonsilent_region(audio, cutoff_db=silence_threshold)
        audio = fn.slice(audio, begin, length, axes=[0])
        if dither > 0:
            audio = audio + fn.random.normal(audio) * dither
        audio = fn.preemphasis_filter(audio, preemph_coeff=preemph_coeff)
        spec = fn.spectrogram(audio, nfft=nfft, window_length=int(window_size * sample_rate),
                              window_step=int(window_stride * sample_rate))
        mel = fn.mel_filter_bank(spec, sample_rate=sample_rate, nfilter=nfeatures)
        log = fn.to_decibels(mel, multiplier=math.log(10), reference=1.0, cutoff_db=math.log(1e-20))
        lengths = fn.shapes(log)
        features = fn.pad(fn.normalize(log, axes=[1]), fill_value=0)
        return features, lengths, label

    return pipe()


def nemo_pipeline(manifest, batch_size, *, sample_rate=16000, trim=True, dither=0.0, preemph=0.97,
                  window_size=0.02, window_stride=0.01, n_fft=512, n_mels=64, lowfreq=0.0, highfreq=None,
                  log_zero_guard_value=2**-24, pad_to=16, pad_value=0.0, shuffle=False, num_threads=2,
                  device_id=None, seed=42):
    """NeMo's DALI mel-spectrogram data layer; outputs (processed_signal, processed_signal_len, manifest_indices)."""
    win = int(window_size * sample_rate)
    hop = int(window_stride * sample_rate)
    highfreq = highfreq or sample_rate / 2.0

    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=seed)
    def pipe():
        audio, indices = fn.readers.nemo_asr(
            name="Reader", manifest_filepaths=[str(manifest)], dtype=types.FLOAT, downmix=True,
            sample_rate=float(sample_rate), min_duration=0.0, max_duration=0.0, read_sample_rate=False,
            read_text=False, read_idxs=True, random_shuffle=shuffle, shard_id=0, num_shards=1, pad_last_batch=True,
        )
        if trim:
            roi_start, roi_len = fn.nonsilent_region(audio, cutoff_db=-60)
            audio = fn.slice(audio, roi_start, roi_len, normalized_anchor=False, normalized_shape=False, axes=[0])
        if dither > 0.0:
            audio = audio + dither * fn.normal_distribution(audio)
        audio = fn.preemphasis_filter(audio, preemph_coeff=preemph)
        spec = fn.spectrogram(audio, nfft=n_fft, window_length=win, window_step=hop)
        spec = fn.mel_filter_bank(spec, sample_rate=sample_rate, nfilter=n_mels, normalize=True, freq_low=lowfreq,
                                  freq_high=highfreq)
        spec = spec + log_zero_guard_value
        spec = fn.to_decibels(spec, multiplier=math.log(10), reference=1.0, cutoff_db=math.log(log_zero_guard_value))
        spec = fn.normalize(spec, axes=(1,), epsilon=1e-5**2, ddof=1)
        spec_len = fn.slice(fn.shapes(spec), 1, 1, axes=(0,))
        spec = fn.pad(spec, fill_value=pad_value, axes=(0, 1), align=(pad_to, 1), shape=(1, -1))
        return spec, spec_len, indices

    return pipe()


def clips(folder=CLIPS):
    """The audio files of ``folder`` (recursively) and a label per sub-folder."""
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix in (".wav", ".flac", ".ogg") and "broken" not in p.parts)
    folders = sorted({p.parent for p in files})
    return [str(p) for p in files], [folders.index(p.parent) for p in files]


def write_manifest(files, folder):
    """A NeMo manifest of ``files`` (duration from the file's header)."""
    import soundfile

    path = Path(folder) / "manifest.json"
    with open(path, "w", encoding="utf-8") as f:
        for name in files:
            info = soundfile.info(name)
            f.write(json.dumps({"audio_filepath": name, "duration": info.frames / info.samplerate,
                                "text": Path(name).stem}) + "\n")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(CLIPS), help="folder of audio files (default: the shipped clips)")
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    files, labels = clips(args.data)
    pipe = rnnt_pipeline(files, labels, args.batch_size)
    pipe.build()
    start = time.perf_counter()
    features, lengths, label = pipe.run()
    print(f"RNN-T: features {[np.asarray(features.at(i)).shape for i in range(len(features))]}, "
          f"lengths {[int(np.asarray(lengths.at(i))[1]) for i in range(len(lengths))]} "
          f"({time.perf_counter() - start:.3f} s)")
    with tempfile.TemporaryDirectory() as tmp:
        pipe = nemo_pipeline(write_manifest(files, tmp), args.batch_size, dither=1e-5)
        pipe.build()
        spec, spec_len, idx = pipe.run()
        print(f"NeMo: processed_signal {[np.asarray(spec.at(i)).shape for i in range(len(spec))]}, "
              f"processed_signal_len {[int(np.asarray(spec_len.at(i))[0]) for i in range(len(spec_len))]}, "
              f"manifest_indices {[int(np.asarray(idx.at(i))[0]) for i in range(len(idx))]}")


if __name__ == "__main__":
    main()
