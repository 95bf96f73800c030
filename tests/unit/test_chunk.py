"""``Chunk.each_sample``: one output or several, with and without inputs; a ``SampleError`` fails one row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import make_chunk

from streamflow.errors import SampleError
from streamflow.operator import Chunk, RandomKey


def _no_input_chunk(n: int) -> Chunk:
    return Chunk(inputs=[], args={}, sample_ids=np.arange(n, dtype=np.int64),
                 sources=[f"sample{i}" for i in range(n)], epoch=0, key=RandomKey(7, 3))


def _halve(row: int, sample: Any) -> Any:
    if sample % 2:
        raise SampleError(f"odd value {sample}")
    return sample // 2


def test_one_output_fails_only_the_bad_row() -> None:
    chunk = make_chunk([4, 5, 6])
    assert chunk.each_sample(_halve) == [2, None, 3]
    assert list(chunk.failures) == [1]
    assert chunk.failures[1].reason == "odd value 5"
    assert chunk.failures[1].source == "sample1"  # filled in from the chunk


def test_several_outputs_give_one_list_per_output() -> None:
    chunk = make_chunk([4, 5, 6])
    outs = chunk.each_sample(lambda row, x: (row, _halve(row, x), -x), outputs=3)
    assert outs == [[0, None, 2], [2, None, 3], [-4, None, -6]]
    assert list(chunk.failures) == [1]


def test_without_inputs_each_row_gets_none() -> None:
    chunk = _no_input_chunk(3)
    seen: list[tuple[int, Any]] = []

    def compute(row: int, sample: Any) -> int:
        seen.append((row, sample))
        if row == 2:
            raise SampleError("row 2 is bad")
        return row * 10

    assert chunk.each_sample(compute) == [0, 10, None]
    assert seen == [(0, None), (1, None), (2, None)]
    assert chunk.each_sample(lambda row, _: (row, -row), outputs=2) == [[0, 1, 2], [0, -1, -2]]
    assert list(chunk.failures) == [2]


def test_a_wrong_number_of_values_is_a_bug_not_a_sample_failure() -> None:
    chunk = make_chunk([1, 2])
    with pytest.raises(ValueError):
        chunk.each_sample(lambda row, x: (x,), outputs=2)
    assert not chunk.failures


def test_other_errors_propagate() -> None:
    chunk = make_chunk([1])
    with pytest.raises(ZeroDivisionError):
        chunk.each_sample(lambda row, x: x / 0, outputs=1)
