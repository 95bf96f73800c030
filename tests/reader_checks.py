"""Checks every shard reader's tests run: DALI's recorded outputs, loose-file equality, exact resume.

``make(**reader_kw)`` builds the reader's outputs inside a pipeline
definition (a tuple of ``DataNode``s), so one check serves every reader.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import streamflow as sf
from streamflow import fn

DALI_RECORD = Path(__file__).parent / "data" / "dali" / "shards" / "readers.json"

Make = Callable[..., Any]


def describe(array: Any) -> dict[str, Any]:
    """As the DALI recording script describes an output sample."""
    a = np.ascontiguousarray(np.asarray(array))
    d = {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "shape": list(a.shape), "dtype": a.dtype.name}
    if a.size <= 16:
        d["values"] = a.tolist()
    return d


def dali_record() -> dict[str, Any]:
    return json.loads(DALI_RECORD.read_text())  # type: ignore[no-any-return]


def pipeline(make: Make, batch_size: int = 1, checkpoint: bytes | None = None, on_error: str = "raise",
             **reader_kw: Any) -> sf.Pipeline:
    @sf.pipeline_def(batch_size=batch_size, num_threads=2, seed=11, on_error=on_error)
    def pipe():  # type: ignore[no-untyped-def]
        outs = make(**reader_kw)
        return tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)

    return pipe(checkpoint=checkpoint)  # type: ignore[no-any-return]


def run_described(make: Make, n: int, **reader_kw: Any) -> list[list[dict[str, Any]]]:
    """``n`` samples through ``pipe.run()`` (batch size 1, wrapping like DALI), described."""
    with pipeline(make, **reader_kw) as pipe:
        return [[describe(t.at(0)) for t in pipe.run()] for _ in range(n)]


def assert_matches_dali(make: Make, reader: str) -> None:
    """Same samples, in the same order, as DALI 2.4's reader: whole data set and shard 1 of 2."""
    record = dali_record()["readers"][reader]
    assert run_described(make, len(record["all"])) == record["all"]
    assert run_described(make, len(record["shard1of2"]), shard_id=1, num_shards=2) == record["shard1of2"]


def epoch(pipe: sf.Pipeline) -> list[tuple[list[str | None], list[list[np.ndarray]]]]:
    """One epoch: per batch, (sources, per output the samples)."""
    return [(list(b.sources), [[np.asarray(t.at(i)) for i in range(len(t))] for t in b]) for b in pipe.iter()]


def assert_resumes_exactly(make: Make, batch_size: int = 2, stop_after: int = 2, **reader_kw: Any) -> None:
    """A pipeline resumed from ``checkpoint()`` yields what the uninterrupted one does (two epochs)."""
    kw = dict(random_shuffle=True, initial_fill=3, **reader_kw)
    with pipeline(make, batch_size, **kw) as pipe:
        reference = epoch(pipe) + epoch(pipe)
    with pipeline(make, batch_size, **kw) as pipe:
        it = pipe.iter()
        head = [next(it) for _ in range(stop_after)]
        saved = pipe.checkpoint()
        head_sources = [list(b.sources) for b in head]
    assert head_sources == [s for s, _ in reference[:stop_after]]
    with pipeline(make, batch_size, checkpoint=saved, **kw) as pipe:
        tail = epoch(pipe) + epoch(pipe)
    rest = reference[stop_after:]
    assert [s for s, _ in tail] == [s for s, _ in rest]
    for (_, got), (_, want) in zip(tail, rest):
        for g_out, w_out in zip(got, want):
            for g, w in zip(g_out, w_out):
                np.testing.assert_array_equal(g, w)
    shuffled = [s for s, _ in reference]
    assert shuffled[0] != shuffled[len(shuffled) // 2]  # the two epochs differ: shuffling is on


def decoded(make_images: Callable[[], tuple[Any, Any]], n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` (decoded image, label) pairs of a pipeline whose reader gives (encoded, label)."""

    @sf.pipeline_def(batch_size=1, num_threads=2, seed=3)
    def pipe():  # type: ignore[no-untyped-def]
        data, label = make_images()
        return fn.decoders.image(data), label

    with pipe() as p:
        return [(np.asarray(img.at(0)), np.asarray(lab.at(0))) for img, lab in (p.run() for _ in range(n))]


def assert_equals_loose_files(make_images: Callable[[], tuple[Any, Any]], files: list[str], labels: list[int],
                              cast_label: Callable[[np.ndarray], np.ndarray] = lambda x: x) -> None:
    """The reader + decode gives the pixels and labels of ``readers.file`` + decode on the same images."""
    got = decoded(make_images, len(files))
    want = decoded(lambda: fn.readers.file(files=files, labels=labels), len(files))
    for (g_img, g_lab), (w_img, w_lab) in zip(got, want):
        np.testing.assert_array_equal(g_img, w_img)
        np.testing.assert_array_equal(cast_label(g_lab).reshape(-1), w_lab.reshape(-1).astype(cast_label(g_lab).dtype))


def assert_skips_only(pipe: sf.Pipeline, batch: sf.Batch, bad: str, size: int) -> None:
    """Under ``on_error="skip"``: ``batch`` is full, holds no sample of ``bad``, and every skipped
    sample (read-ahead batches may have skipped it again) is ``bad``."""
    assert len(batch.sources) == size and not any(bad in (s or "") for s in batch.sources)
    skipped = pipe.stats().skipped
    assert skipped and all(bad in (s.source or "") for s in skipped), skipped


def assert_fails_then_skips(make: Make, bad: str, match: str, size: int = 4) -> None:
    """Reading a batch of ``size`` raises a ``PipelineError`` matching ``match``; under
    ``on_error="skip"`` the batch is full and only ``bad``'s sample is skipped (``assert_skips_only``)."""
    import pytest

    with pipeline(make, batch_size=size) as pipe, pytest.raises(sf.PipelineError, match=match):
        pipe.run()
    with pipeline(make, batch_size=size, on_error="skip") as pipe:
        assert_skips_only(pipe, pipe.run(), bad, size)
