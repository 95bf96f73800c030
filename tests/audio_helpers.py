"""What the audio tests share: the shipped recordings, their excerpts and DALI's recorded outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from dali_reference.audio_cases import EXCERPTS, FILES

DATA = Path(__file__).parent / "data"
AUDIO = DATA / "audio"
DALI_AUDIO = DATA / "dali" / "audio"

BROKEN = ["broken/junk_body.wav", "broken/not_audio.wav", "broken/truncated.flac"]


def encoded(names: list[str] | None = None) -> list[np.ndarray]:
    """The files as 1-D uint8 arrays (what readers.file gives)."""
    return [np.fromfile(AUDIO / f, dtype=np.uint8) for f in (names or FILES)]


def excerpts() -> list[np.ndarray]:
    """float32 excerpts of the speech clips (PCM / 32768, as DALI's decoder gives them)."""
    import soundfile

    out = []
    for name, a, b in EXCERPTS:
        x, _ = soundfile.read(AUDIO / name, dtype="float32")
        out.append(np.ascontiguousarray(x[a:b]))
    return out


def dali(name: str) -> Any:
    """The recorded DALI outputs ``tests/data/dali/audio/<name>.npz``."""
    return np.load(DALI_AUDIO / f"{name}.npz")


def assert_close_decimated(got: np.ndarray, ref: Any, key: str, atol: float, rtol: float = 0.0) -> None:
    """``got`` against a recorded (decimated) DALI output stored under ``key``."""
    step = int(ref[f"{key}/step"])
    shape = tuple(int(s) for s in ref[f"{key}/shape"])
    assert got.shape == shape, f"{key}: shape {got.shape}, DALI {shape}"
    want = ref[key] if key in ref.files else ref[f"{key}/values"]
    np.testing.assert_allclose(got.reshape(-1)[::step].astype(np.float64), want.astype(np.float64),
                               atol=atol, rtol=rtol, err_msg=key)


def gpu_vs_cpu(ctx: Any, op: Any, samples: list[np.ndarray], args: dict[str, list[Any]] | None = None,
               rtol_of_max: float = 0.0, atol: float = 0.0) -> None:
    """The GPU implementation (through ``ctx``: numpy in CI, cupy on a GPU) against the CPU operator.

    Float outputs within ``atol + rtol_of_max * max|cpu|``; integer outputs within 1.
    """
    from helpers import run_cpu_op, run_gpu_impl

    gpu, gpu_failures = run_gpu_impl(ctx, op, samples, args)
    cpu, cpu_failures = run_cpu_op(op, samples, args)
    assert sorted(gpu_failures) == sorted(cpu_failures)
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        assert (g is None) == (c is None), i
        if c is None:
            continue
        assert g.shape == c.shape and g.dtype == c.dtype, (i, g.shape, c.shape, g.dtype, c.dtype)
        tol = atol + rtol_of_max * float(np.abs(c.astype(np.float64)).max(initial=0.0))
        if c.dtype.kind in "iu":
            tol = max(tol, 1.0)  # float sums in another order may round to the neighbouring integer
        np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), atol=tol, rtol=0, err_msg=f"sample {i}")


def photo() -> np.ndarray:
    """The 60 x 80 crop of tests/data/photos/chelsea.png the erase and pad references use."""
    from PIL import Image

    with Image.open(DATA / "photos" / "chelsea.png") as im:
        return np.ascontiguousarray(np.asarray(im.convert("RGB"))[100:160, 150:230])
