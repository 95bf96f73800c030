"""DALI's audio and video tutorials, followed with only the imports changed, against DALI 2.4's CPU outputs.

The tutorials are DALI's notebooks ``docs/examples/audio_processing/{audio_decoder, spectrogram}``
(pipeline and dynamic mode) and ``docs/examples/sequence_processing/``:
``video/video_reader_simple`` (pipeline and dynamic mode), ``video/video_reader_label``,
``video/video_file_list_outputs``, ``sequence_reader_simple_example`` and
``video/video_per_frame_arguments`` (per-frame arguments, ``sequence_rearrange``,
``element_extract``). ``optical_flow`` is not covered: it needs NVIDIA's optical-flow
hardware. Their code is not copied: ``tests/dali_reference/av_notebook_cases.py``
holds this project's own pipelines using the same operators, arguments and call
styles; the same functions ran under DALI (``record_av_notebooks.py`` wrote
``tests/data/dali/avnotebooks/*.npz``) and run here.

DALI 2.4 decodes video on the CPU only with ``fn.experimental.readers.video``; the
video tutorials use ``fn.readers.video(device="gpu")``, which DALI runs on a GPU
only. Both run here: the experimental reader against DALI directly, the
tutorials' reader (``device_id="auto"``: FFmpeg on the CPU, with a warning)
against the same recordings.

Tolerances: frames, audio samples, labels, frame numbers and shapes exact (frames
by hash); shuffled readers: every sequence is one DALI reads in order (the two
libraries shuffle with different random streams; DALI's shuffle buffer may
repeat a sequence within an epoch); float outputs as documented per operator
(``docs/audio.md``): spectrogram and mel 2e-5 of the output's maximum, decibels
2e-3 dB, MFCC 1e-4 of the maximum; Laplacian and transformed points 1e-4; warp_affine's linear interpolation within 1.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("soundfile")
pytest.importorskip("av")

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "dali_reference"))

# --- the imports a DALI user changes: nvidia.dali -> streamflow ---------------------------------
import av_notebook_cases as cases
from npz_cases import flatten

import streamflow as dali
import streamflow.experimental.dynamic as ndd
from streamflow import fn, types

REF = TESTS / "data" / "dali" / "avnotebooks"

#: output name -> (absolute tolerance as a share of the output's maximum, absolute floor)
FLOAT_TOLERANCES: dict[str, tuple[float, float]] = {
    "spectrogram": (2e-5, 0.0), "mel": (2e-5, 0.0), "mfcc": (1e-4, 0.0),
    "spectrogram_db": (0.0, 2e-3), "mel_db": (0.0, 2e-3), "edges": (0.0, 1e-4), "moved": (0.0, 1e-4),
}
#: integer outputs compared within a bound: warp_affine's linear interpolation, resize (docs/dali-differences.md)
INT_TOLERANCES: dict[str, int] = {"warped": 1, "frames": 1}


#: (case, output) -> what streamflow gives instead (docs/dali-differences.md): per_frame of data without a layout
#: has layout "F" (DALI pads it with "*" to the data's rank, so the transformed points are "F**" there)
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {("per_frame_arguments", "moved_layout"): ""}


def _reference(name: str) -> dict[str, np.ndarray]:
    with np.load(REF / f"{name}.npz") as data:
        return {k: data[k] for k in data.files}


def compare(name: str, result: dict[str, Any], ref_name: str | None = None) -> None:
    """Every recorded DALI output of case ``name`` against streamflow's."""
    got = flatten(result)
    want = _reference(ref_name or name)
    assert sorted(got) == sorted(want), f"{name}: outputs differ: {sorted(set(got) ^ set(want))}"
    ordered = {str(v) for k, v in want.items() if k.startswith("ordered#")}
    problems = []
    for key, ref in want.items():
        out = got[key]
        base = key.split("#")[0]
        if (name, key) in KNOWN_DIFFERENCES:
            assert str(out) == KNOWN_DIFFERENCES[name, key], f"{key}: {str(out)!r}"
            continue
        if base == "shuffled":  # order-free: each shuffled sequence is one read in order
            if str(out) not in ordered:
                problems.append(f"{key}: not a sequence DALI reads ({str(out)[:40]}...)")
            continue
        if ref.dtype.kind == "U":
            if str(out) != str(ref):
                problems.append(f"{key}: {str(out)[:60]!r}, DALI {str(ref)[:60]!r}")
            continue
        if out.shape != ref.shape or out.dtype != ref.dtype:
            problems.append(f"{key}: {out.dtype}{out.shape}, DALI {ref.dtype}{ref.shape}")
            continue
        if ref.dtype.kind == "f":
            share, floor = FLOAT_TOLERANCES.get(base, (0.0, 1e-6))
            bound = max(floor, share * float(np.abs(ref).max()))
            diff = float(np.abs(out.astype(np.float64) - ref).max()) if ref.size else 0.0
            if diff > bound:
                problems.append(f"{key}: max difference {diff:.3g} > {bound:.3g}")
        else:
            diff = np.abs(out.astype(np.int64) - ref.astype(np.int64))
            if diff.size and diff.max() > INT_TOLERANCES.get(base, 0):
                problems.append(f"{key}: {(diff > 0).sum()}/{diff.size} values differ (max {diff.max()})")
    assert not problems, f"{name} differs from DALI 2.4:\n" + "\n".join(problems)


def run(name: str, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tutorials' GPU reader falling back to the CPU says so once
        return cases.PIPELINE_CASES[name](dali, fn, types, ndd, tmp_path, **kw)


# --- audio_processing -----------------------------------------------------------------------------
def test_audio_decoder(tmp_path: Path) -> None:
    """audio_decoder (pipeline mode): readers.file(file_root) + decoders.audio(dtype=INT16), ``.at(0)``,
    ``.flatten()``, the sample-rate output; plus the default float output, downmixed."""
    out = run("audio_decoder", tmp_path)
    compare("audio_decoder", out)
    assert out["dtype"] == ["int16"] * 3
    assert [s[1] for s in out["shape"]] == [2, 1, 1]  # interleaved (frames, channels): the stereo FLAC first


def test_audio_decoder_dynamic(tmp_path: Path) -> None:
    """audio_decoder (dynamic mode): ``ndd.readers.File(file_root=Path)``, ``reader()`` sample by sample (going on
    into the next epoch), ``ndd.decoders.audio(dtype=ndd.int16)``, ``np.asarray`` of audio and rate."""
    compare("audio_decoder_dynamic", run("audio_decoder_dynamic", tmp_path))


def test_spectrogram(tmp_path: Path) -> None:
    """spectrogram (pipeline mode): a parametrised ``@pipeline_def`` over ``types.Constant(device="cpu",
    value=audio)``; spectrogram, to_decibels, mel_filter_bank, mfcc."""
    compare("spectrogram", run("spectrogram", tmp_path))


def test_spectrogram_dynamic(tmp_path: Path) -> None:
    """spectrogram (dynamic mode): ``ndd.as_tensor`` through ndd.spectrogram / to_decibels / mel_filter_bank /
    mfcc."""
    compare("spectrogram_dynamic", run("spectrogram_dynamic", tmp_path))


# --- sequence_processing --------------------------------------------------------------------------
@pytest.mark.parametrize("legacy", [False, True], ids=["experimental_reader", "tutorial_gpu_reader"])
def test_video_reader_simple(tmp_path: Path, legacy: bool) -> None:
    """video_reader_simple (pipeline mode): readers.video over several files, shards, ``initial_fill``, seed,
    ``pipe_out[0].as_cpu().as_array()``, in order and shuffled."""
    compare("video_reader_simple", run("video_reader_simple", tmp_path, legacy=legacy))


@pytest.mark.parametrize("legacy", [False, True], ids=["experimental_reader", "tutorial_gpu_reader"])
def test_video_reader_simple_dynamic(tmp_path: Path, legacy: bool) -> None:
    """video_reader_simple (dynamic mode): ``ndd.readers.Video`` / ``ndd.experimental.readers.Video``,
    ``islice(reader.next_epoch(batch_size=2), n)`` of 1-tuples, ``ndd.as_tensor(videos).shape``, frame indexing."""
    compare("video_reader_simple_dynamic", run("video_reader_simple_dynamic", tmp_path, legacy=legacy))


@pytest.mark.parametrize("legacy", [False, True], ids=["experimental_reader", "tutorial_gpu_reader"])
def test_video_reader_label(tmp_path: Path, legacy: bool) -> None:
    """video_reader_label: ``file_root`` of labelled folders, ``sequences_out, labels = pipe.run()``, labels
    ``(N, 1)``, shuffled with a seed."""
    compare("video_reader_label", run("video_reader_label", tmp_path, legacy=legacy))


@pytest.mark.parametrize("legacy", [False, True], ids=["experimental_reader", "tutorial_gpu_reader"])
def test_video_file_list(tmp_path: Path, legacy: bool) -> None:
    """video_file_list_outputs: a ``file_list`` of frame ranges (tutorial: ``file_list_frame_num=True``,
    ``file_list_include_preceding_frame``, float RGB frames), labels, ``enable_frame_num``, ``enable_timestamps``."""
    out = run("video_file_list", tmp_path, legacy=legacy)
    compare("video_file_list", out)


def test_sequence_reader(tmp_path: Path) -> None:
    """sequence_reader_simple_example: readers.sequence over folders of frame files (sequence_length, step,
    stride), ``epoch_size("Reader")``, ``.at(i)``, layout FHWC."""
    compare("sequence_reader", run("sequence_reader", tmp_path))


def test_per_frame_arguments(tmp_path: Path) -> None:
    """video_per_frame_arguments: ``fn.per_frame`` arguments of gaussian_blur, laplacian, rotate, transforms
    (rotation, scale, translation, combine) into warp_affine and coord_transform; sequence_rearrange,
    element_extract."""
    compare("per_frame_arguments", run("per_frame_arguments", tmp_path))


def test_video_reader_label_dynamic(tmp_path: Path) -> None:
    """video_reader_label (dynamic mode): a reader over labelled folders, ``next_epoch(batch_size=3)`` pairs,
    ``np.asarray(ndd.as_tensor(labels))``."""
    compare("video_reader_label_dynamic", run("video_reader_label_dynamic", tmp_path))


def test_per_frame_arguments_dynamic(tmp_path: Path) -> None:
    """video_per_frame_arguments (dynamic mode): ``ndd.per_frame`` of a batch into ndd.gaussian_blur, ndd.rotate,
    ndd.transforms.rotation -> ndd.warp_affine (matrix as the second input), ``ndd.as_tensor(batch.cpu())``."""
    compare("per_frame_arguments_dynamic", run("per_frame_arguments_dynamic", tmp_path))


@pytest.mark.parametrize("legacy", [False, True], ids=["cpu_reader_and_resize", "tutorial_video_resize"])
def test_video_resize(tmp_path: Path, legacy: bool) -> None:
    """The per-frame tutorial's reader, ``readers.video_resize(device="gpu", resize_x, resize_y)``, against DALI's
    CPU reader followed by ``fn.resize`` (resize: within 1)."""
    compare("video_resize", run("video_resize", tmp_path, legacy=legacy))
