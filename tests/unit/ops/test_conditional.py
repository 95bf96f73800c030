"""``if``/``else`` on pipeline data (``enable_conditionals=True``): DALI 2.4's results, merges, errors.

The cases in ``tests/dali_reference/conditional_cases.py`` run here with
streamflow's ``fn`` and are compared with what DALI 2.4's CPU pipelines gave
for the same code and inputs (``tests/data/dali/conditionals/``, recorded by
``tests/dali_reference/record_conditionals.py``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError, PipelineError
from streamflow.graph import topological_order
from streamflow.ops.conditional import Merge

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS / "dali_reference"))

from conditional_cases import IMAGE_CASES, SCALAR_CASES, image_inputs, scalar_inputs

DALI = TESTS / "data" / "dali" / "conditionals"


def run(body: Any, inputs: list[list[Any]], *, num_threads: int = 2, seed: int = 1,
        on_error: str = "raise", device_id: Any = None) -> list[list[np.ndarray]]:
    batch = len(inputs[0])

    @sf.pipeline_def(batch_size=batch, num_threads=num_threads, device_id=device_id, seed=seed,
                     enable_conditionals=True, on_error=on_error)
    def pipe():  # type: ignore[no-untyped-def]
        nodes = [fn.external_source(source=[col]) for col in inputs]
        out = body(fn, types, *nodes)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(t))] for t in p.run()]


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_scalar_cases_match_dali(name: str) -> None:
    expected = json.loads((DALI / "scalars.json").read_text())[name]
    (got,) = run(SCALAR_CASES[name], scalar_inputs())
    assert [g.dtype for g in got] == [np.dtype(expected["dtype"])] * len(got)
    assert [g.tolist() for g in got] == expected["values"]


@pytest.mark.parametrize("name", sorted(IMAGE_CASES))
def test_image_cases_match_dali(name: str) -> None:
    """Random grayscale via `if`, and an AutoAugment-style policy, on real photos."""
    reference = np.load(DALI / "images.npz")
    (got,) = run(IMAGE_CASES[name], image_inputs())
    for i, image in enumerate(got):
        want = reference[f"{name}/{i}"]
        assert image.shape == want.shape and image.dtype == want.dtype, (i, image.shape, want.shape)
        # Color conversions round as DALI does up to one step of 8-bit.
        assert np.abs(image.astype(int) - want.astype(int)).max() <= 1, i


def test_branches_run_only_for_their_samples() -> None:
    seen: dict[str, list[int]] = {"true": [], "false": []}

    def spy(label: str):  # type: ignore[no-untyped-def]
        def f(v: np.ndarray) -> np.ndarray:
            seen[label].append(int(v[0]))
            return v
        return f

    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        if x[0] % 3 == 0:
            y = fn.python_function(x, function=spy("true"))
        else:
            y = fn.python_function(x, function=spy("false"))
        return y

    (got,) = run(body, scalar_inputs())
    # (the pipeline may already be computing the next epoch: values, not counts)
    assert set(seen["true"]) == {0, 3, 6}
    assert set(seen["false"]) == {1, 2, 4, 5, 7}
    assert [int(g[0]) for g in got] == list(range(8))


def test_branch_with_python_condition_runs_like_python() -> None:
    def body(fn, types, x, f, flip=True):  # type: ignore[no-untyped-def]
        if flip:  # a Python value: an ordinary if
            x = x + 1
        else:
            x = x - 1
        return x

    (got,) = run(body, scalar_inputs())
    assert [int(g[0]) for g in got] == list(range(1, 9))


def test_conditional_expression_and_closure() -> None:
    """`a if c else b` on pipeline data (DALI refuses it); a closure variable inside a branch."""
    factor = 7

    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        return x * factor if x[0] % 2 == 1 else x

    (got,) = run(body, scalar_inputs())
    assert [int(g[0]) for g in got] == [0, 7, 2, 21, 4, 35, 6, 49]


def test_one_merge_per_assigned_variable() -> None:
    @sf.pipeline_def(batch_size=2, enable_conditionals=True)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=[[np.array([1], np.int32), np.array([2], np.int32)]])
        untouched = x + 0
        if x[0] > 1:
            a, b = x * 2, x * 3
        else:
            a, b = x, x
        return a, b, untouched

    p = pipe()
    p.build()
    merges = [n for n in topological_order(p._outputs or ()) if isinstance(n.op, Merge)]
    assert len(merges) == 2


def test_random_values_in_branches_do_not_depend_on_threads() -> None:
    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        if fn.random.coin_flip(probability=0.5):
            y = fn.random.uniform(range=[0, 1])
        else:
            y = fn.random.uniform(range=[5, 6]) + 0
        return y, x

    one = run(body, scalar_inputs(), num_threads=1, seed=9)[0]
    two = run(body, scalar_inputs(), num_threads=3, seed=9)[0]
    assert [float(v) for v in one] == [float(v) for v in two]
    low = sum(float(v) < 1 for v in one)
    assert 0 < low < 8 and all(0 <= float(v) < 1 or 5 <= float(v) < 6 for v in one)


def test_skip_inside_a_branch_replaces_only_the_failed_sample() -> None:
    def fail_on_5(v: np.ndarray) -> np.ndarray:
        if int(v[0]) == 5:
            raise ValueError("five")
        return v

    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        if x[0] >= 4:
            y = fn.python_function(x, function=fail_on_5)
        else:
            y = x
        return y

    with pytest.raises(PipelineError, match="five"):
        run(body, scalar_inputs())
    (got,) = run(body, scalar_inputs(), on_error="skip")
    assert sorted(int(g[0]) for g in got) == [0, 1, 2, 3, 4, 6, 7]  # external sources drop the row


def test_device_auto_runs_gpu_branches_on_the_cpu() -> None:
    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        y = x.gpu()
        if x[0] > 3:
            y = y * 2
        return y

    with pytest.warns(sf.CpuFallbackWarning):
        (got,) = run(body, scalar_inputs(), device_id="auto")
    assert [int(g[0]) for g in got] == [0, 1, 2, 3, 8, 10, 12, 14]


# --------------------------------------------------------------------------- errors


def _build(body: Any) -> None:
    @sf.pipeline_def(batch_size=2, enable_conditionals=True)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=[[np.array([1], np.int32), np.array([2], np.int32)]])
        return body(x)

    pipe().build()


def test_variable_set_in_one_branch_only() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        if x[0] > 1:
            y = x * 2
        return y

    with pytest.raises(PipelineDefinitionError, match=r"'y' is set only in the true branch of the `if` at .*test_conditional.py"):
        _build(body)


def test_while_on_data_is_refused() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        while x[0] > 1:
            x = x - 1
        return x

    with pytest.raises(PipelineDefinitionError, match="`while` loops"):
        _build(body)


def test_break_inside_a_data_branch_is_refused_with_the_line() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        for _ in range(3):
            if x[0] > 1:
                break
        return x

    with pytest.raises(PipelineDefinitionError, match=r"`break`.*|test_conditional.py:\d+"):
        _build(body)


def test_reader_inside_a_branch_is_refused() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        if x[0] > 1:
            y = fn.external_source(source=[[np.zeros(1), np.zeros(1)]])
        else:
            y = x
        return y

    with pytest.raises(PipelineDefinitionError, match="cannot be inside an `if`"):
        _build(body)


def test_branch_data_leaking_out_of_its_branch_is_refused() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        kept = []
        if x[0] > 1:
            kept.append(x * 2)
        return kept[0] + 1

    with pytest.raises(PipelineDefinitionError, match="computed inside an `if` branch"):
        _build(body)


def test_condition_must_be_one_value_per_sample() -> None:
    def body(fn, types, x, f):  # type: ignore[no-untyped-def]
        y = x
        if fn.cat(x, x, axis=0):
            y = x + 1
        return y

    with pytest.raises(PipelineError, match="must be one value per sample"):
        run(body, scalar_inputs())


def test_gpu_condition_is_refused() -> None:
    def body(x):  # type: ignore[no-untyped-def]
        y = x
        if x.gpu() > 1:
            y = x + 1
        return y

    with pytest.raises(PipelineDefinitionError, match="conditions must be CPU data"):
        _build(body)


def test_if_on_data_without_conditionals_says_how() -> None:
    @sf.pipeline_def(batch_size=2)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=[[np.array([1]), np.array([2])]])
        if x[0] > 1:
            x = x + 1
        return x

    with pytest.raises(PipelineDefinitionError, match="enable_conditionals=True"):
        pipe()


# --------------------------------------------------------------------------- the GPU merge


def test_gpu_merge_picks_references_and_copies_constants() -> None:
    from streamflow.gpu.context import GpuContext
    from streamflow.gpu.ops.conditional import merge_gpu
    from streamflow.operator import Chunk

    op = Merge((0, None), (None, 5), layout="")
    a = [np.array([1], np.int32), np.array([2], np.int32), np.array([3], np.int32)]  # one type, as the constant
    chunk = Chunk(inputs=[a], args={"predicate": [np.True_, np.False_, np.array(1)]},
                  sample_ids=np.arange(3), sources=[None] * 3, epoch=0)
    (out,) = merge_gpu(op, chunk, GpuContext.on_host())
    assert out[0] is a[0] and out[2] is a[2]
    assert out[1].dtype == np.int32 and int(out[1]) == 5


def _source_factory(values: list[int]):  # type: ignore[no-untyped-def]
    def source():  # type: ignore[no-untyped-def]
        return [np.int32([v]) for v in values]

    return source


def test_do_not_convert_leaves_a_function_as_written() -> None:
    """DALI's ``nvidia.dali.pipeline.do_not_convert``: conditionals do not rewrite a marked function."""
    from streamflow import autograph
    from streamflow.pipeline import do_not_convert

    def helper(x):  # type: ignore[no-untyped-def]
        return x if x else -x

    assert autograph.converted(helper) is not helper  # user code is rewritten...
    factory = do_not_convert(_source_factory)
    assert autograph.converted(factory) is factory  # ...unless marked

    @sf.pipeline_def(enable_conditionals=True, batch_size=2, num_threads=1, seed=0)
    def pipe():  # type: ignore[no-untyped-def]
        x = fn.external_source(source=factory([3, -4]))
        if x > 0:
            y = x * 10
        else:
            y = x
        return y

    with pipe() as p:
        (y,) = p.run()
    assert np.asarray(y.as_array()).ravel().tolist() == [30, -4]


def test_branches_of_different_types_are_refused_as_in_dali() -> None:
    """DALI refuses an `if` whose branches give different types (uint8 + 10 is int32): a batch has one type."""

    @sf.pipeline_def(enable_conditionals=True, batch_size=4, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        images = fn.external_source(lambda: [np.full((2, 2), 250, np.uint8)] * 4)
        flag = fn.external_source(lambda: [np.array(i % 2 == 0) for i in range(4)])
        if flag:
            result = images + 10
        else:
            result = images
        return result

    with pipe() as p, pytest.raises(PipelineError, match=r"different types \(int32, uint8\)"):
        p.run()


def test_merge_refuses_branches_of_different_types_on_cpu_and_gpu() -> None:
    """The check lives in Merge itself: values merged inside the pipeline (not only outputs), on both devices."""
    from streamflow.gpu.context import GpuContext
    from streamflow.gpu.ops.conditional import merge_gpu
    from streamflow.operator import Chunk

    op = Merge((0, None), (None, 5), layout="")
    a = [np.array([1.5], np.float32)] * 2
    chunk = Chunk(inputs=[a], args={"predicate": [np.True_, np.False_]}, sample_ids=np.arange(2),
                  sources=[None] * 2, epoch=0)
    with pytest.raises(PipelineError, match=r"different types \(float32, int32\)"):
        op.run(chunk)
    with pytest.raises(PipelineError, match=r"different types \(float32, int32\)"):
        merge_gpu(op, chunk, GpuContext.on_host())
