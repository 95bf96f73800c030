"""DALI's legacy operator classes (``import streamflow.ops as ops``): ``ops.X(**args)(*inputs)`` is ``fn.x``."""

from __future__ import annotations

import numpy as np
import pytest

import streamflow as sf
import streamflow.ops as ops
from streamflow import fn


def test_legacy_classes_call_the_fn_functions() -> None:
    data = [np.arange(12, dtype=np.float32).reshape(3, 4)] * 2

    class Legacy(sf.Pipeline):
        def __init__(self) -> None:
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.source = ops.ExternalSource(layout="HW")
            self.flip = ops.Flip(horizontal=1)
            self.norm = ops.Normalize()

        def define_graph(self):  # type: ignore[no-untyped-def]
            self.data = self.source()
            return self.flip(self.data), self.norm(self.data, axes=[1]), fn.flip(self.data, horizontal=1)

        def iter_setup(self) -> None:
            self.feed_input(self.data, data)

    pipe = Legacy()
    flipped, normalized, reference = pipe.run()
    np.testing.assert_array_equal(flipped.as_array(), reference.as_array())
    np.testing.assert_allclose(np.asarray(normalized.at(0)).mean(axis=1), 0, atol=1e-6)
    assert ops.readers.File.__name__ == "File" and callable(ops.decoders.ImageRandomCrop)
    assert callable(ops.FileReader) and callable(ops.ImageDecoder)  # DALI's old names
    pipe.close()


def test_unknown_legacy_class_names_the_missing_function() -> None:
    with pytest.raises(AttributeError, match="ops.NoSuchThing: streamflow has no fn.no_such_thing"):
        ops.NoSuchThing  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'lowercase'"):
        ops.lowercase  # noqa: B018
