"""The region decoders' shared behaviour (``DecoderCrop``): errors name the file.
"""

from __future__ import annotations

import shutil

import pytest
from helpers import (
    DECODER_FILES,
    folder_with_bad_file,
)

import streamflow as sf
from streamflow import fn


@pytest.mark.parametrize("build", [
    lambda x: fn.decoders.image_random_crop(x),
    lambda x: fn.decoders.image_crop(x, crop=(10, 10)),
    lambda x: fn.decoders.image_slice(x, [0.1, 0.1], [0.5, 0.5]),
])
def test_errors_name_the_file(tmp_path, build) -> None:
    root = folder_with_bad_file(tmp_path)

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(root))
        return build(jpegs)

    with pipe() as p, pytest.raises(sf.PipelineError) as ei:
        p.run()
    assert "bad.jpg" in str(ei.value) or "junk.jpg" in str(ei.value)

    @sf.pipeline_def(batch_size=3, num_threads=1, seed=0, on_error="skip")
    def skipping():
        jpegs, _ = fn.readers.file(file_root=str(root))
        return build(jpegs)

    with skipping() as p:
        p.run()
        reasons = " ".join(str(s) for s in p.stats().skipped)
    assert "bad.jpg" in reasons and "junk.jpg" in reasons


def test_window_outside_the_image_names_the_file(tmp_path) -> None:
    root = tmp_path / "one" / "a"
    root.mkdir(parents=True)
    shutil.copy(DECODER_FILES[0], root / "rocket.jpg")

    @sf.pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(root.parent))
        return fn.decoders.image_crop(jpegs, crop=(5000, 10))

    with pipe() as p, pytest.raises(sf.PipelineError, match=r"rocket\.jpg.*does not fit|does not fit.*rocket\.jpg"):
        p.run()


def test_argument_errors() -> None:
    src = fn.external_source([[]])
    with pytest.raises(sf.PipelineDefinitionError, match="window size"):
        fn.decoders.image_crop(src)
    with pytest.raises(sf.PipelineDefinitionError, match="random_area"):
        fn.decoders.image_random_crop(src, random_area=[0.9, 0.1])
    with pytest.raises(sf.PipelineDefinitionError, match="2 values"):
        fn.decoders.image_slice(src, [0.1, 0.2, 0.3], [0.5, 0.5])
    with pytest.raises(sf.PipelineDefinitionError, match="axis_names"):
        fn.decoders.image_slice(src, [0.1, 0.2], [0.5, 0.5], axis_names="XY")
