"""Record DALI 2.4's CPU outputs for the audio operators' tests (``tests/data/dali/audio/*.npz``).

Runs with any Python that has ``nvidia-dali-cuda130`` (2.4) and numpy, on a
machine without a GPU (``device_id=None``), from the repository root::

    python tests/dali_reference/record_audio.py [section ...]

Inputs are the real recordings of ``tests/data/audio`` (see its README). Long
outputs are stored decimated (every ``step``-th value, the step saved beside
them) to keep the files small; shapes and sample rates are stored whole.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from audio_cases import (
    ERASES,
    EXCERPTS,
    FILES,
    MELS,
    MFCCS,
    NEMO_MANIFEST,
    PADS,
    SPECTROGRAMS,
    TO_DECIBELS,
    audio_resample_cases,
    nemo_cases,
    preemphasis_cases,
    write_manifest,
)
from nvidia.dali import fn, pipeline_def, types

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "tests" / "data" / "audio"
OUT = ROOT / "tests" / "data" / "dali" / "audio"


def run(graph, inputs, batch_size=None):
    """Outputs (lists of numpy arrays) of ``graph(*nodes)`` over per-input lists of samples."""
    n = batch_size or len(inputs[0])

    @pipeline_def(batch_size=n, num_threads=1, device_id=None, seed=7)
    def pipe():
        nodes = [fn.external_source(source=_constant(data), batch=True) for data in inputs]
        out = graph(*nodes)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    p = pipe()
    p.build()
    return [[np.array(t.at(i)) for i in range(n)] for t in p.run()]


def _constant(data):
    def source():
        return list(data)

    return source


def encoded():
    return [np.fromfile(AUDIO / f, dtype=np.uint8) for f in FILES]


def excerpts():
    """float32 excerpts of the speech clips, decoded by DALI."""
    enc = [np.fromfile(AUDIO / f, dtype=np.uint8) for f, _, _ in EXCERPTS]
    (decoded,) = run(lambda e: fn.decoders.audio(e, downmix=True)[0], [enc])
    return [d[a:b].copy() for d, (_, a, b) in zip(decoded, EXCERPTS)]


def decim(x, limit=1000):
    x = np.asarray(x).reshape(-1)
    step = max(1, math.ceil(x.size / limit))
    return x[::step], np.array(step)


def save(name, **arrays):
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / f"{name}.npz", **arrays)
    print("wrote", name, sum(np.asarray(a).nbytes for a in arrays.values()), "bytes raw")


def record_decoders_audio():
    cases = {
        "default": {},
        "downmix": dict(downmix=True),
        "int16": dict(dtype=types.INT16),
        "int32_downmix": dict(dtype=types.INT32, downmix=True),
        "sr16000": dict(sample_rate=16000.0),
        "sr22050_downmix_int16": dict(sample_rate=22050.0, downmix=True, dtype=types.INT16),
        "sr8000_q0": dict(sample_rate=8000.0, quality=0.0),
        "sr44100_q100": dict(sample_rate=44100.0, quality=100.0, downmix=True),
    }
    arrays = {}
    for case, kw in cases.items():
        audio, rate = run(lambda e, kw=kw: fn.decoders.audio(e, **kw), [encoded()])
        for i, f in enumerate(FILES):
            key = f"{case}/{f}"
            values, step = decim(audio[i])
            arrays[key + "/values"], arrays[key + "/step"] = values, np.array(step)
            arrays[key + "/shape"] = np.array(audio[i].shape)
            arrays[key + "/dtype"] = np.array(audio[i].dtype.name)
            arrays[key + "/rate"] = rate[i]
    save("decoders_audio", **arrays)


def record_audio_resample():
    x = excerpts()
    arrays = {}
    for case, kw in audio_resample_cases(types.INT16).items():
        (out,) = run(lambda a, kw=kw: fn.audio_resample(a, **kw), [x])
        for i, o in enumerate(out):
            arrays[f"{case}/{i}"], arrays[f"{case}/{i}/step"] = decim(o, 1500)
            arrays[f"{case}/{i}/shape"] = np.array(o.shape)
    # Per-sample scale (speed perturbation) and a stereo signal.
    (out,) = run(lambda a, s: fn.audio_resample(a, scale=s), [x, [np.float32(v) for v in (0.9, 1.1, 1.05)]])
    for i, o in enumerate(out):
        arrays[f"per_sample/{i}"], arrays[f"per_sample/{i}/step"] = decim(o, 1500)
        arrays[f"per_sample/{i}/shape"] = np.array(o.shape)
    stereo = [np.stack([v, v[::-1] * 0.5], axis=1).copy() for v in x]
    (out,) = run(lambda a: fn.audio_resample(a, scale=0.7), [stereo])
    for i, o in enumerate(out):
        arrays[f"stereo/{i}"], arrays[f"stereo/{i}/step"] = decim(o, 1500)
        arrays[f"stereo/{i}/shape"] = np.array(o.shape)
    save("audio_resample", **arrays)


def save_outputs(arrays, case, outputs, limit=2000):
    for i, o in enumerate(outputs):
        arrays[f"{case}/{i}"], arrays[f"{case}/{i}/step"] = decim(o, limit)
        arrays[f"{case}/{i}/shape"] = np.array(o.shape)


def record_preemphasis_filter():
    x = excerpts()
    arrays = {}
    for case, kw in preemphasis_cases(types.INT16).items():
        save_outputs(arrays, case, run(lambda a, kw=kw: fn.preemphasis_filter(a, **kw), [x])[0])
    ints = [(v * 32767).astype(np.int16) for v in x]
    save_outputs(arrays, "int16_in", run(lambda a: fn.preemphasis_filter(a), [ints])[0])
    coeffs = [np.float32(c) for c in (0.9, 0.0, 0.97)]
    save_outputs(arrays, "per_sample", run(lambda a, c: fn.preemphasis_filter(a, preemph_coeff=c), [x, coeffs])[0])
    save("preemphasis_filter", **arrays)


def record_spectrogram():
    x = excerpts()
    arrays = {}
    for case, kw in SPECTROGRAMS.items():
        save_outputs(arrays, case, run(lambda a, kw=kw: fn.spectrogram(a, **kw), [x])[0])
    save("spectrogram", **arrays)


def record_mel_filter_bank():
    x = excerpts()
    arrays = {}
    for case, kw in MELS.items():
        def graph(a, kw=kw):
            return fn.mel_filter_bank(fn.spectrogram(a, nfft=512, window_length=320, window_step=160), **kw)
        save_outputs(arrays, case, run(graph, [x])[0])
    def graph(a):
        return fn.mel_filter_bank(fn.spectrogram(a, nfft=512, window_length=320, window_step=160, layout="tf"),
                                             sample_rate=16000.0, nfilter=40)
    save_outputs(arrays, "tf", run(graph, [x])[0])
    save("mel_filter_bank", **arrays)


def record_mfcc():
    x = excerpts()
    arrays = {}
    for case, kw in MFCCS.items():
        def graph(a, kw=kw):
            spec = fn.spectrogram(a, nfft=512, window_length=320, window_step=160)
            mel = fn.mel_filter_bank(spec, sample_rate=16000.0, nfilter=40)
            return fn.mfcc(fn.to_decibels(mel, cutoff_db=-80.0), **kw)
        save_outputs(arrays, case, run(graph, [x])[0])
    save("mfcc", **arrays)


def record_to_decibels():
    x = excerpts()
    arrays = {}
    for case, kw in TO_DECIBELS.items():
        def graph(a, kw=kw):
            return fn.to_decibels(fn.spectrogram(a, nfft=512, window_length=320, window_step=160), **kw)
        save_outputs(arrays, case, run(graph, [x])[0])
    save("to_decibels", **arrays)


def record_nonsilent_region():
    enc = encoded()
    arrays = {}
    cases = {"default": {}, "m20_w512": dict(cutoff_db=-20.0, window_length=512), "m30": dict(cutoff_db=-30.0),
             "m25_w1024": dict(cutoff_db=-25.0, window_length=1024),
             "reference": dict(cutoff_db=-20.0, reference_power=0.01, window_length=1024),
             "m20_w100000": dict(cutoff_db=-20.0, window_length=100000, reset_interval=-1)}
    for case, kw in cases.items():
        begin, length = run(lambda e, kw=kw: fn.nonsilent_region(fn.decoders.audio(e, downmix=True)[0], **kw), [enc])
        arrays[f"{case}/begin"] = np.stack(begin)
        arrays[f"{case}/length"] = np.stack(length)
    begin, length = run(lambda e: fn.nonsilent_region(fn.decoders.audio(e, downmix=True, dtype=types.INT16)[0],
                                                                 cutoff_db=-25.0), [enc])
    arrays["int16/begin"], arrays["int16/length"] = np.stack(begin), np.stack(length)
    silent = [np.zeros(5000, np.float32), np.full(300, 0.25, np.float32)]
    begin, length = run(lambda a: fn.nonsilent_region(a), [silent])
    arrays["flat/begin"], arrays["flat/length"] = np.stack(begin), np.stack(length)
    save("nonsilent_region", **arrays)


def photo():
    """A real photo (tests/data/photos/chelsea.png), decoded by DALI, cut to 60 x 80."""
    (img,) = run(lambda e: fn.decoders.image(e), [[np.fromfile(ROOT / "tests" / "data" / "photos" / "chelsea.png",
                                                                dtype=np.uint8)]])
    return img[0][100:160, 150:230].copy()


def record_pad():
    x = excerpts()
    arrays = {}
    for case, kw in PADS.items():
        save_outputs(arrays, case, run(lambda a, kw=kw: fn.pad(a, **kw), [x])[0])
    ints = [(v * 32767).astype(np.int16) for v in x]
    save_outputs(arrays, "int16_fill", run(lambda a: fn.pad(a, fill_value=-7.9), [ints])[0])
    specs = [np.ascontiguousarray(v.reshape(-1)[: 40 * (len(v) // 40)].reshape(40, -1)) for v in x]
    for case, kw in {"nemo": dict(fill_value=0.0, axes=(0, 1), align=(16, 1), shape=(1, -1)),
                     "names_t": dict(axis_names="t", align=7)}.items():
        save_outputs(arrays, case, run(lambda a, kw=kw: fn.pad(fn.reshape(a, layout="ft"), **kw), [specs])[0])
    imgs = [photo(), np.ascontiguousarray(photo()[:41, :57])]
    save_outputs(arrays, "image_hw", run(lambda a: fn.pad(fn.reshape(a, layout="HWC"), axis_names="HW", fill_value=255),
                                         [imgs])[0])
    save("pad", **arrays)


def record_erase():
    arrays = {}
    img = [photo()]
    for case, kw in ERASES.items():
        save_outputs(arrays, case, run(lambda a, kw=kw: fn.erase(fn.reshape(a, layout="HWC"), **kw), [img])[0])
    # SpecAugment-style masks on log-mel spectrograms: per-sample anchors.
    x = excerpts()

    def spec(a):
        mel = fn.mel_filter_bank(fn.spectrogram(a, nfft=512, window_length=320, window_step=160),
                                 sample_rate=16000.0, nfilter=40)
        return fn.to_decibels(mel, cutoff_db=-80.0)

    time_anchor = [np.array([0.1, 0.6], np.float32), np.array([0.3, 0.8], np.float32), np.array([0.0, 0.5], np.float32)]
    save_outputs(arrays, "time_masks", run(lambda a, t: fn.erase(spec(a), anchor=t, shape=[5, 8], axes=[1],
                                                                   normalized_anchor=True), [x, time_anchor])[0])
    save_outputs(arrays, "freq_mask", run(lambda a: fn.erase(spec(a), anchor=[10], shape=[7], axis_names="f",
                                                             fill_value=-80.0), [x])[0])
    save("erase", **arrays)


def record_nemo_asr():
    import tempfile

    arrays = {}
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_manifest(Path(tmp), NEMO_MANIFEST, AUDIO)
        for case, kw in nemo_cases(types.INT16).items():
            n = 6 if "max_duration" not in kw else 3

            @pipeline_def(batch_size=n, num_threads=1, device_id=None)
            def pipe(kw=kw):
                out = fn.readers.nemo_asr(manifest_filepaths=[str(manifest)], **kw)
                return tuple(out) if isinstance(out, (list, tuple)) else out

            p = pipe()
            p.build()
            outputs = p.run()
            arrays[f"{case}/epoch_size"] = np.array(list(p.epoch_size().values())[0])
            for k, t in enumerate(outputs):
                save_outputs(arrays, f"{case}/out{k}", [np.array(t.at(i)) for i in range(n)], limit=500)
                for i in range(n):
                    arrays[f"{case}/out{k}/{i}/dtype"] = np.array(np.array(t.at(i)).dtype.name)
    save("nemo_asr", **arrays)


def load_example(backend_import="from nvidia.dali import fn, pipeline_def, types"):
    """examples/asr_preprocessing.py with its import line changed (nothing else), as a namespace."""
    source = (ROOT / "examples" / "asr_preprocessing.py").read_text()
    line = "from streamflow import fn, pipeline_def, types"
    assert line in source
    namespace = {"__name__": "asr_preprocessing", "__file__": str(ROOT / "examples" / "asr_preprocessing.py")}
    exec(compile(source.replace(line, backend_import), "asr_preprocessing.py", "exec"), namespace)
    return namespace


def asr_manifest(files, folder):
    """The NeMo manifest of the ASR pipeline references: the clips, no durations."""
    import json

    path = Path(folder) / "manifest.json"
    path.write_text("".join(json.dumps({"audio_filepath": f, "text": Path(f).stem}) + "\n" for f in files))
    return path


def record_asr_pipelines():
    import tempfile

    ex = load_example()
    files, labels = ex["clips"]()
    arrays = {}
    pipe = ex["rnnt_pipeline"](files, labels, 4, speed_perturbation=None, num_threads=1)
    pipe.build()
    for k, t in enumerate(pipe.run()):
        save_outputs(arrays, f"rnnt/out{k}", [np.array(t.at(i)) for i in range(4)], limit=3000)
    with tempfile.TemporaryDirectory() as tmp:
        pipe = ex["nemo_pipeline"](asr_manifest(files, tmp), 4, num_threads=1)
        pipe.build()
        for k, t in enumerate(pipe.run()):
            save_outputs(arrays, f"nemo/out{k}", [np.array(t.at(i)) for i in range(4)], limit=3000)
    arrays["files"] = np.array([Path(f).name for f in files])
    save("asr_pipelines", **arrays)


SECTIONS = {name[len("record_"):]: f for name, f in globals().items() if name.startswith("record_")}

if __name__ == "__main__":
    for section in sys.argv[1:] or SECTIONS:
        SECTIONS[section]()
