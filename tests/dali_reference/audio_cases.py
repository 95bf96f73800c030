"""The audio operators' DALI reference cases: which clips, which excerpts, which arguments.

Shared by ``record_audio.py`` (which runs them on DALI 2.4 and saves the outputs
under ``tests/data/dali/audio/``) and the tests (which run them on streamflow and
compare). Neither DALI nor streamflow is imported here: where a case names a
dtype, it is a function of the ``int16`` each side spells its own way
(``types.INT16`` for DALI, ``"int16"`` in the tests).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

#: The clips of ``tests/data/audio`` (see tests/data/README.md).
FILES = ["arctic_a0007.wav", "arctic_a0009.wav", "arctic_stereo_22k.flac", "arctic_a0007.ogg", "arctic_a0007.opus"]
#: (file, first, end) excerpts of the two 16 kHz speech clips: most operator cases run on them.
EXCERPTS = [("arctic_a0007.wav", 16000, 24000), ("arctic_a0009.wav", 4000, 10000), ("arctic_a0007.wav", 40000, 44100)]


def audio_resample_cases(int16: Any) -> dict[str, dict[str, Any]]:
    return {
        "scale_0.85": dict(scale=0.85),
        "scale_1.15": dict(scale=1.15),
        "rates_16000_22050": dict(in_rate=16000.0, out_rate=22050.0),
        "rates_16000_8000_q10": dict(in_rate=16000.0, out_rate=8000.0, quality=10.0),
        "out_length_5000_q90": dict(out_length=5000, quality=90.0),
        "scale_1.3_int16": dict(scale=1.3, dtype=int16),
    }


def preemphasis_cases(int16: Any) -> dict[str, dict[str, Any]]:
    return {"default": {}, "zero": dict(border="zero"), "reflect_0.5": dict(border="reflect", preemph_coeff=0.5),
            "int16_out": dict(dtype=int16)}


SPECTROGRAMS: dict[str, dict[str, Any]] = {
    "default": {},
    "rnnt": dict(nfft=512, window_length=320, window_step=160),
    "nfft400_power1_tf": dict(nfft=400, window_length=256, window_step=100, power=1, layout="tf"),
    "not_centered": dict(window_length=400, window_step=160, center_windows=False),
    "zero_padding": dict(window_length=300, window_step=128, reflect_padding=False),
    "hamming": dict(window_length=320, window_step=160, window_fn=list(np.hamming(320))),
}

MELS: dict[str, dict[str, Any]] = {
    "default": dict(),
    "rnnt": dict(sample_rate=16000.0, nfilter=80),
    "band_htk": dict(sample_rate=16000.0, nfilter=40, freq_low=133.0, freq_high=6800.0, mel_formula="htk"),
    "peak": dict(sample_rate=16000.0, nfilter=64, normalize=False),
}

MFCCS: dict[str, dict[str, Any]] = {
    "default": dict(),
    "ortho_13": dict(n_mfcc=13, normalize=True),
    "dct1": dict(dct_type=1, n_mfcc=10),
    "dct3_lifter": dict(dct_type=3, n_mfcc=12, lifter=22.0),
    "dct4_ortho": dict(dct_type=4, normalize=True, n_mfcc=40),
}

TO_DECIBELS: dict[str, dict[str, Any]] = {
    "default": {}, "amplitude": dict(multiplier=20.0, reference=1.0, cutoff_db=-60.0),
    "nemo": dict(multiplier=math.log(10), reference=1.0, cutoff_db=math.log(2**-24)),
}

PADS: dict[str, dict[str, Any]] = {
    "default": dict(),
    "fill_-1": dict(fill_value=-1.0),
    "shape_9000": dict(axes=(0,), shape=(9000,)),
    "align_512": dict(axes=[0], align=512),
    "shape1_align3": dict(shape=[1], align=[3]),
}

ERASES: dict[str, dict[str, Any]] = {
    "hw_two_regions": dict(anchor=[10, 20, 40, 5], shape=[15, 30, 10, 10], axis_names="HW"),
    "rgb_fill": dict(anchor=[5, 5], shape=[20, 40], fill_value=(118, 185, 0)),
    "normalized_centered": dict(anchor=[0.5, 0.5], shape=[0.35, 0.3], normalized=True, centered_anchor=True),
    "w_band": dict(anchor=[0.37], shape=[11.5], axis_names="W", normalized_anchor=True, fill_value=3.7),
    "out_of_bounds": dict(anchor=[-10, 70], shape=[30, 30], axes=[0, 1]),
}

#: The manifest of the nemo_asr references (paths relative to tests/data/audio; written out absolute).
NEMO_MANIFEST: list[dict[str, Any]] = [
    {"audio_filepath": "arctic_a0007.wav", "duration": 4.0, "text": "author of the danger trail, philip steels, etc."},
    {"audio_filepath": "arctic_a0009.wav", "offset": 0.5, "duration": 1.25, "text": "with an offset"},
    {"audio_filepath": "arctic_stereo_22k.flac", "duration": 2.5},
    {"audio_filepath": "arctic_a0007.ogg", "offset": 0.12345, "duration": 0.54321, "text": "short \u00fcn\u00efcode"},
    {"audio_filepath": "arctic_stereo_22k.flac", "offset": 0.12345, "duration": 0.54321, "text": "odd frames"},
    {"audio_filepath": "arctic_a0009.wav", "offset": 2.9, "text": "to the end"},
]


def nemo_cases(int16: Any) -> dict[str, dict[str, Any]]:
    return {
        "default": dict(),
        "idxs": dict(read_idxs=True, read_text=False, read_sample_rate=False),
        "resample_int16_stereo": dict(sample_rate=8000.0, downmix=False, dtype=int16, read_text=False),
        "durations": dict(max_duration=3.0, min_duration=0.6, read_idxs=True, read_text=False,
                          read_sample_rate=False),
    }


def write_manifest(folder: Path, entries: list[dict[str, Any]], root: Path) -> Path:
    """``entries`` as ``folder/manifest.json`` (one JSON object a line), audio paths made absolute under ``root``."""
    path = folder / "manifest.json"
    path.write_text("".join(json.dumps({**e, "audio_filepath": str(root / e["audio_filepath"])}) + "\n"
                            for e in entries), encoding="utf-8")
    return path
