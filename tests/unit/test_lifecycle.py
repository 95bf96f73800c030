"""Resources are released however a pipeline ends: close, GC, Ctrl-C, errors."""

from __future__ import annotations

import _thread
import gc
import threading
import time

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn


def counting_pipe(delay: float = 0.0, fail_at: int | None = None):
    def source(info):
        if delay:
            time.sleep(delay)
        if fail_at is not None and info.iteration == fail_at:
            raise RuntimeError("boom")
        return [np.full((2, 3), info.iteration)] * 2

    @sf.pipeline_def(batch_size=2, num_threads=2, seed=0)
    def pipe():
        return fn.flip(fn.external_source(source, batch_info=True), horizontal=1)

    return pipe()


def test_garbage_collected_pipeline_releases_threads(no_leaks) -> None:
    pipe = counting_pipe()
    assert pipe.run()[0].at(0).tolist() == [[0, 0, 0]] * 2
    del pipe
    gc.collect()


def test_abandoned_iterator_mid_epoch_then_close(no_leaks) -> None:
    pipe = counting_pipe()
    it = pipe.iter()
    next(it)
    del it
    gc.collect()
    assert pipe.run().batch_index == 1  # the epoch goes on where it was
    pipe.close()


def test_keyboard_interrupt_during_iter_leaves_pipeline_closable(no_leaks, ctrl_c) -> None:
    pipe = counting_pipe(delay=0.3)
    timer = threading.Timer(0.1, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in pipe.iter():
            pass
    timer.join()
    pipe.close()


def test_source_error_reaches_consumer_once_then_pipeline_is_failed(no_leaks) -> None:
    pipe = counting_pipe(fail_at=2)
    pipe.run()
    pipe.run()
    with pytest.raises(sf.PipelineError, match="boom") as info:
        pipe.run()
    assert info.value.stage == "read"
    assert pipe.state is sf.PipelineState.FAILED
    with pytest.raises(sf.PipelineError):
        pipe.run()
    pipe.close()


def test_asyncio_run_without_aclose_then_close_releases_threads(no_leaks) -> None:
    pipe = counting_pipe()

    async def main():
        await pipe.arun()  # started on this loop, never closed inside it

    import asyncio

    asyncio.run(main())
    pipe.close()  # the loop is gone: the threads must still be joined


def test_aclose_of_a_sync_started_pipeline_from_async_code(no_leaks) -> None:
    pipe = counting_pipe()
    pipe.run()  # background loop thread

    import asyncio

    asyncio.run(pipe.aclose())
    assert pipe.state is sf.PipelineState.CLOSED
