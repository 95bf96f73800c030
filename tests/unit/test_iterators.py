"""Training iterators: epoch arithmetic, last-batch policies, several pipelines,
checkpoint/resume (framework-free), and zero-copy into torch / jax (skipped
when the framework is missing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamflow as sf
from streamflow import fn
from streamflow.errors import PipelineDefinitionError
from streamflow.plugin import LastBatchPolicy
from streamflow.plugin._iterator import BaseIterator, ReaderShape, plan_epoch

FILL, DROP, PARTIAL = LastBatchPolicy.FILL, LastBatchPolicy.DROP, LastBatchPolicy.PARTIAL


# --- epoch arithmetic (pure) ----------------------------------------------------
@pytest.mark.parametrize(
    "policy, batches, last",
    [(FILL, 7, 10), (DROP, 6, 10), (PARTIAL, 7, 4)],
)
def test_dali_reference_64_samples_batch_10(policy, batches, last):
    plan = plan_epoch(policy, 10, reader={"epoch_size": 64, "number_of_shards": 1, "shard_id": 0})
    assert plan.batches == batches
    assert [plan.rows(k) for k in range(batches)] == [10] * (batches - 1) + [last]


@pytest.mark.parametrize(
    "n, shards, bs, pad, policy, batches, rows_per_shard",
    [
        # 64 over 3 shards: 21, 21, 22
        (64, 3, 10, False, FILL, 3, {0: [10, 10, 10], 1: [10, 10, 10], 2: [10, 10, 10]}),
        (64, 3, 10, False, PARTIAL, 3, {0: [10, 10, 1], 1: [10, 10, 1], 2: [10, 10, 2]}),
        (64, 3, 10, False, DROP, 2, {0: [10, 10], 1: [10, 10], 2: [10, 10]}),
        (64, 3, 10, True, PARTIAL, 3, {0: [10, 10, 1], 1: [10, 10, 1], 2: [10, 10, 2]}),
        (64, 3, 10, True, FILL, 3, {0: [10, 10, 10], 1: [10, 10, 10], 2: [10, 10, 10]}),
        # 41 over 2 shards: 20, 21. Lock-step: shard 0 gets an extra batch.
        (41, 2, 10, False, PARTIAL, 3, {0: [10, 10, 0], 1: [10, 10, 1]}),
        (41, 2, 10, False, DROP, 2, {0: [10, 10], 1: [10, 10]}),
        (64, 4, 16, False, PARTIAL, 1, {i: [16] for i in range(4)}),
        (64, 1, 64, False, DROP, 1, {0: [64]}),
        (5, 1, 10, False, DROP, 0, {0: []}),
        (5, 1, 10, False, FILL, 1, {0: [10]}),
        (5, 1, 10, False, PARTIAL, 1, {0: [5]}),
    ],
)
def test_sharded_arithmetic(n, shards, bs, pad, policy, batches, rows_per_shard):
    for shard, rows in rows_per_shard.items():
        meta = {"epoch_size": n, "number_of_shards": shards, "shard_id": shard, "pad_last_batch": pad}
        plan = plan_epoch(policy, bs, epoch=0, reader=meta)
        assert plan.batches == batches
        assert [plan.rows(k) for k in range(plan.batches)] == rows


def test_shard_rotates_with_epoch_unless_stick_to_shard():
    shape = ReaderShape(epoch_size=64, number_of_shards=3, shard_id=0)
    assert [shape.shard_size(e) for e in range(3)] == [21, 21, 22]
    stuck = ReaderShape(epoch_size=64, number_of_shards=3, shard_id=0, stick_to_shard=True)
    assert [stuck.shard_size(e) for e in range(3)] == [21, 21, 21]
    # PARTIAL's last batch follows the shard of the epoch
    assert plan_epoch(PARTIAL, 10, epoch=2, reader=shape).rows(2) == 2


def test_size_and_unknown_plans():
    assert plan_epoch(FILL, 10, size=64).batches == 7
    assert plan_epoch(DROP, 10, size=64).batches == 6
    assert plan_epoch(PARTIAL, 10, size=64).rows(6) == 4
    unknown = plan_epoch(PARTIAL, 10)
    assert unknown.batches is None and unknown.rows(0) is None
    assert plan_epoch("drop", 10, size=64).policy is DROP
    with pytest.raises(ValueError, match="last_batch_policy"):
        plan_epoch("sometimes", 10, size=64)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 500), shards=st.integers(1, 9), bs=st.integers(1, 40),
       pad=st.booleans(), epoch=st.integers(0, 5))
def test_lockstep_and_coverage_properties(n, shards, bs, pad, epoch):
    if n < shards:
        return
    metas = [{"epoch_size": n, "number_of_shards": shards, "shard_id": s, "pad_last_batch": pad}
             for s in range(shards)]
    for policy in (FILL, DROP, PARTIAL):
        plans = [plan_epoch(policy, bs, epoch, m) for m in metas]
        assert len({p.batches for p in plans}) == 1  # every rank steps together
        b = plans[0].batches
        if policy is PARTIAL:  # every sample exactly once per epoch
            assert sum(p.rows(k) for p in plans for k in range(b)) == n
        if policy is DROP:
            assert b * bs <= n // shards and (b + 1) * bs > n // shards
        if policy is FILL:
            assert b == math.ceil(math.ceil(n / shards) / bs)
        # the pipeline itself yields at most one batch fewer than the plan
        assert all(not p.synthesize or math.ceil(p.real / bs) == b - 1 for p in plans)


# --- real pipelines -----------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("iterfiles")
    paths = []
    for i in range(64):
        p = root / f"f{i:03d}.bin"
        p.write_bytes(bytes([i % 256]) * (i + 1))
        paths.append(str(p))
    return paths


def make_pipe(files, n=64, bs=10, shard_id=0, num_shards=1, pad=False, shuffle=True, seed=7,
              checkpoint=None, randoms=True):
    @sf.pipeline_def(batch_size=bs, num_threads=2, seed=seed)
    def p():
        _, label = fn.readers.file(files=files[:n], labels=list(range(n)), random_shuffle=shuffle,
                                   shard_id=shard_id, num_shards=num_shards, pad_last_batch=pad,
                                   name="R")
        if not randoms:
            return (label,)
        return label, fn.random.coin_flip(), fn.random.uniform(range=(0.0, 1.0))

    return p(checkpoint=checkpoint)


def ids(step, key="label"):
    return [int(x) for x in np.asarray(step[key]).ravel()]


def epoch_steps(it):
    return [[{k: np.asarray(v).copy() for k, v in d.items()} for d in step] for step in it]


OUT = ["label", "coin", "u"]


@pytest.mark.parametrize("policy, sizes", [(FILL, [10] * 7), (DROP, [10] * 6), (PARTIAL, [10] * 6 + [4])])
def test_pipeline_epochs_per_policy(files, policy, sizes):
    with BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=policy) as it:
        assert len(it) == len(sizes)
        for _ in range(2):
            steps = epoch_steps(it)
            assert [len(s[0]["label"]) for s in steps] == sizes
            labels = [x for s in steps for x in ids(s[0])]
            if policy is PARTIAL:
                assert sorted(labels) == list(range(64))
            elif policy is FILL:
                assert set(labels) == set(range(64))
                assert labels[64:] == [labels[63]] * 6  # padded with the last sample
            else:
                assert len(set(labels)) == 60
            with pytest.raises(StopIteration):  # stays at the end until reset()
                next(it)
            it.reset()


def test_auto_reset_and_epoch_shuffle(files):
    with BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=PARTIAL,
                      auto_reset=True) as it:
        e0 = [x for s in it for x in ids(s[0])]
        e1 = [x for s in it for x in ids(s[0])]
        assert sorted(e0) == sorted(e1) == list(range(64))
        assert e0 != e1  # reshuffled every epoch
        assert it.epoch == 2


def test_iter_on_a_consumed_iterator_starts_the_next_epoch(files):
    """DALI: ``iter(it)`` after an epoch was consumed resets it (Lightning calls iter() once per
    epoch and never reset()); on a fresh iterator or mid-epoch it changes nothing."""
    with BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=PARTIAL) as it:
        e0 = [x for s in iter(it) for x in ids(s[0])]
        e1 = [x for s in iter(it) for x in ids(s[0])]
        assert sorted(e0) == sorted(e1) == list(range(64)) and it.epoch == 1
        first = ids(next(iter(it))[0])
        assert it.epoch == 2 and ids(next(iter(it))[0]) != first  # mid-epoch: continues
        for _ in range(5):
            next(it)
        assert it.epoch == 2
        iter(it)  # every batch taken, StopIteration not seen yet: the next epoch too
        assert it.epoch == 3 and len(epoch_steps(it)) == 7


def test_size_counts_all_pipelines_together(files):
    """DALI: without reader_name, ``size`` is the samples of all N pipelines together:
    ceil(size / (N*B)) steps (floor for DROP), and PARTIAL's last step leaves out the pipelines
    with nothing left (recorded on DALI 2.4 in tests/integration/test_dali_framework_notebooks.py)."""
    def run(size, policy):
        pipes = [make_pipe(files, shard_id=s, num_shards=2, shuffle=False, randoms=False) for s in range(2)]
        with BaseIterator(pipes, ["label"], size=size, last_batch_policy=policy) as it:
            return len(it), [[len(d["label"]) for d in step] for step in it]

    assert run(50, PARTIAL) == (3, [[10, 10], [10, 10], [10]])
    assert run(50, FILL) == (3, [[10, 10]] * 3)
    assert run(50, DROP) == (2, [[10, 10]] * 2)


def test_reset_mid_epoch_skips_the_rest(files):
    with BaseIterator(make_pipe(files), OUT, reader_name="R") as it:
        next(it)
        next(it)
        it.reset()
        assert it.epoch == 1
        steps = epoch_steps(it)
        assert len(steps) == 7
        assert it.last_batches[0].epoch == 1


def test_pad_last_batch_reader(files):
    with BaseIterator(make_pipe(files, pad=True), OUT, reader_name="R", last_batch_policy=PARTIAL) as it:
        sizes = [len(s[0]["label"]) for s in epoch_steps(it)]
        assert sizes == [10] * 6 + [4]  # padding removed
    with BaseIterator(make_pipe(files, pad=True), OUT, reader_name="R", last_batch_policy=FILL) as it:
        steps = epoch_steps(it)
        assert [len(s[0]["label"]) for s in steps] == [10] * 7


@pytest.mark.parametrize("n, shards, pad", [(64, 3, False), (64, 3, True), (41, 2, False), (64, 2, False)])
@pytest.mark.parametrize("policy", [FILL, PARTIAL, DROP])
def test_several_pipelines_one_per_shard(files, n, shards, pad, policy):
    pipes = [make_pipe(files, n=n, shard_id=s, num_shards=shards, pad=pad) for s in range(shards)]
    with BaseIterator(pipes, OUT, reader_name="R", last_batch_policy=policy, auto_reset=True) as it:
        for epoch in range(2):
            seen: list[list[int]] = [[] for _ in range(shards)]
            count = 0
            for step in it:
                assert len(step) == shards
                count += 1
                for s in range(shards):
                    seen[s].extend(ids(step[s]))
                    if policy is not PARTIAL:
                        assert len(step[s]["label"]) == 10
            assert count == len(it)
            sets = [set(x) for x in seen]
            for a in range(shards):
                for b in range(a + 1, shards):
                    assert not sets[a] & sets[b], "shards overlap"
            if policy is PARTIAL:
                assert sorted(x for s in seen for x in s) == list(range(n))
            elif policy is FILL:
                assert set().union(*sets) == set(range(n))
            # shards rotate: epoch e of pipeline s reads shard (s + e) % shards
            for s in range(shards):
                lo, hi = (((s + epoch) % shards) * n) // shards, ((((s + epoch) % shards) + 1) * n) // shards
                assert sets[s] <= set(range(lo, hi))


def test_uneven_shards_fill_repeats_last_sample(files):
    # 41 samples over 2 shards: 20 and 21. With batch 10, shard 0's pipeline ends
    # after 2 batches; the iterator makes a third (repeats) so ranks stay in step.
    pipes = [make_pipe(files, n=41, shard_id=s, num_shards=2, shuffle=False) for s in range(2)]
    with BaseIterator(pipes, OUT, reader_name="R", last_batch_policy=FILL) as it:
        steps = epoch_steps(it)
    assert len(steps) == 3
    assert ids(steps[2][0]) == [19] * 10
    assert ids(steps[2][1]) == [40] * 10
    np.testing.assert_array_equal(steps[2][0]["u"], np.repeat(steps[1][0]["u"][-1:], 10, axis=0))


def test_size_argument_and_unknown_length(files):
    with BaseIterator(make_pipe(files), OUT, size=64, last_batch_policy=PARTIAL) as it:
        assert len(it) == 7
        assert [len(s[0]["label"]) for s in epoch_steps(it)] == [10] * 6 + [4]
    with BaseIterator(make_pipe(files), OUT, size=25, last_batch_policy=PARTIAL) as it:
        assert [len(s[0]["label"]) for s in epoch_steps(it)] == [10, 10, 5]
        it.reset()
        assert it.epoch == 1 and len(epoch_steps(it)) == 3
    with BaseIterator(make_pipe(files), OUT) as it:  # no size: the pipeline's epoch
        with pytest.raises(TypeError, match="unknown"):
            len(it)
        assert [len(s[0]["label"]) for s in epoch_steps(it)] == [10] * 7  # FILL pads
    with BaseIterator(make_pipe(files), OUT, last_batch_policy=DROP) as it:
        assert [len(s[0]["label"]) for s in epoch_steps(it)] == [10] * 6


def test_argument_errors(files):
    with pytest.raises(ValueError, match="either size or reader_name"):
        BaseIterator(make_pipe(files), OUT, size=10, reader_name="R")
    with pytest.raises(ValueError, match="batch_size"):
        BaseIterator([make_pipe(files), make_pipe(files, bs=5)], OUT, reader_name="R")
    it = BaseIterator(make_pipe(files), ["a", "b"], reader_name="R")
    with pytest.raises(ValueError, match="output_map"):
        next(it)
    it.close()


# --- checkpoint / resume ---------------------------------------------------------------
def _run(it, steps):
    out = []
    for _ in range(steps):
        try:
            out.append([{k: np.asarray(v).copy() for k, v in d.items()} for d in next(it)])
        except StopIteration:
            out.append("stop")
            it.reset()
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x == "stop" or y == "stop":
            assert x == y
            continue
        for dx, dy in zip(x, y):
            assert dx.keys() == dy.keys()
            for k in dx:
                np.testing.assert_array_equal(dx[k], dy[k])


@pytest.mark.parametrize("policy", [FILL, DROP, PARTIAL])
@pytest.mark.parametrize("stop_after", [0, 3, 7, 8, 12])
def test_checkpoint_resume_equals_uninterrupted(files, policy, stop_after):
    total = 22
    ref_it = BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=policy)
    reference = _run(ref_it, total)
    ref_it.close()
    first = BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=policy)
    head = _run(first, stop_after)
    saved = first.checkpoint()
    first.close()
    resumed = BaseIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=policy,
                           checkpoint=saved)
    tail = _run(resumed, total - stop_after)
    resumed.close()
    _same(head + tail, reference)
    coins = [x["coin"] for step in reference if step != "stop" for x in step]
    assert 0 < np.concatenate(coins).mean() < 1  # random values really vary


def test_resume_from_pipeline_checkpoints(files):
    ref = BaseIterator(make_pipe(files), OUT, reader_name="R", auto_reset=True)
    reference = _run(ref, 12)
    ref.close()
    it = BaseIterator(make_pipe(files), OUT, reader_name="R", auto_reset=True)
    head = _run(it, 5)
    ckpts = it.checkpoints()
    it.close()
    # DALI's way: the checkpoints go to the pipelines, the iterator follows them.
    again = BaseIterator(make_pipe(files, checkpoint=ckpts[0]), OUT, reader_name="R", auto_reset=True)
    _same(head + _run(again, 7), reference)
    again.close()


def _two_uneven_shards(files, ck=None):
    """An iterator over both shards of one 41-file reader (uneven shards), filling the last batch."""
    pipes = [make_pipe(files, n=41, shard_id=s, num_shards=2) for s in range(2)]
    return BaseIterator(pipes, OUT, reader_name="R", last_batch_policy=FILL, checkpoint=ck)


def test_resume_several_uneven_shards(files):
    ref = _two_uneven_shards(files)
    reference = _run(ref, 9)
    ref.close()
    for cut in (1, 3, 4, 5):  # 3: right after the made-up batch of shard 0
        it = _two_uneven_shards(files)
        head = _run(it, cut)
        saved = it.checkpoint()
        it.close()
        again = _two_uneven_shards(files, saved)
        _same(head + _run(again, 9 - cut), reference)
        again.close()


def test_resume_needing_a_made_up_batch_explains(files):
    it = _two_uneven_shards(files)
    _run(it, 2)  # the next batch of shard 0 repeats its last sample
    saved = it.checkpoint()
    it.close()
    again = _two_uneven_shards(files, saved)
    with pytest.raises(RuntimeError, match="pad_last_batch=True"):
        next(again)
    again.close()


def test_checkpoint_rejects_started_pipeline(files):
    it = BaseIterator(make_pipe(files), OUT, reader_name="R")
    next(it)
    saved = it.checkpoint()
    pipe = make_pipe(files)
    pipe.run()
    pipe.run()
    with pytest.raises(PipelineDefinitionError, match="already run"):
        BaseIterator(pipe, OUT, reader_name="R", checkpoint=saved)
    pipe.close()
    it.close()


# --- torch ----------------------------------------------------------------------------
def test_torch_zero_copy_and_policies(files):
    torch = pytest.importorskip("torch")
    from streamflow.plugin.pytorch import ClassificationIterator, GenericIterator

    it = GenericIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=PARTIAL)
    assert len(it) == 7
    steps = list(it)
    assert [s[0]["label"].shape[0] for s in steps] == [10] * 6 + [4]
    first = next(iter([]), None)
    assert first is None
    it.reset()
    step = next(it)
    t = step[0]["u"]
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    batch_array = it.last_batches[0][2].as_tensor()
    assert t.data_ptr() == batch_array.ctypes.data  # the same memory, no copy
    assert np.shares_memory(t.numpy(), batch_array)
    assert step[0]["label"].dtype == torch.int32
    it.close()

    @sf.pipeline_def(batch_size=10, num_threads=1, seed=1)
    def classify():
        _data, label = fn.readers.file(files=files, name="R")
        return fn.random.uniform(shape=3), label

    cit = ClassificationIterator(classify(), reader_name="R", last_batch_policy=DROP)
    assert len(cit) == 6
    steps = list(cit)
    assert [s[0]["label"].shape[0] for s in steps] == [10] * 6
    assert steps[0][0]["data"].shape == (10, 3)
    cit.close()


def test_dali_positional_order_fill_last_batch_and_dynamic_shape(files):
    """DALI's signature: (pipelines, output_map, size, reader_name, auto_reset, fill_last_batch,
    dynamic_shape, last_batch_padded, last_batch_policy, ...); the deprecated fill_last_batch
    (False: PARTIAL) warns as DALI does; dynamic_shape is accepted."""
    pytest.importorskip("torch")
    from streamflow.plugin.pytorch import DALIClassificationIterator, DALIGenericIterator

    with pytest.warns(Warning, match="fill_last_batch"):
        it = DALIGenericIterator(make_pipe(files, randoms=False), ["label"], -1, "R", False, False, True)
    with it:
        assert [len(s[0]["label"]) for s in it] == [10] * 6 + [4]
    with pytest.warns(Warning, match="fill_last_batch"):
        cls = DALIGenericIterator(make_pipe(files), OUT, -1, "R", True, True)
    with cls:
        assert [len(s[0]["label"]) for s in cls] == [10] * 7 and cls.epoch == 1  # auto_reset positional
    with pytest.raises(ValueError, match="3 outputs"):  # ClassificationIterator: the same order after reader_name
        next(DALIClassificationIterator(make_pipe(files), -1, "R", True, None, True))


def test_torch_ragged_outputs_become_lists(files):
    torch = pytest.importorskip("torch")
    from streamflow.plugin.pytorch import GenericIterator

    @sf.pipeline_def(batch_size=4, num_threads=1, seed=1)
    def p():
        data, label = fn.readers.file(files=files[:8], name="R")
        return data, label

    with GenericIterator(p(), ["data", "label"], reader_name="R") as it:
        step = next(it)[0]
        assert isinstance(step["data"], list) and len(step["data"]) == 4
        assert all(isinstance(x, torch.Tensor) for x in step["data"])
        assert [len(x) for x in step["data"]] == [1, 2, 3, 4]


def test_torch_checkpoint_resume(files):
    pytest.importorskip("torch")
    from streamflow.plugin.pytorch import GenericIterator

    ref = GenericIterator(make_pipe(files), OUT, reader_name="R", auto_reset=True)
    reference = _run(ref, 10)
    ref.close()
    it = GenericIterator(make_pipe(files), OUT, reader_name="R", auto_reset=True)
    head = _run(it, 4)
    saved = it.checkpoint()
    it.close()
    again = GenericIterator(make_pipe(files), OUT, reader_name="R", auto_reset=True, checkpoint=saved)
    _same(head + _run(again, 6), reference)
    again.close()


# --- jax --------------------------------------------------------------------------------
def test_jax_iterator(files):
    jax = pytest.importorskip("jax")
    from streamflow.plugin.jax import GenericIterator

    with GenericIterator(make_pipe(files), OUT, reader_name="R", last_batch_policy=PARTIAL) as it:
        steps = list(it)
        assert [s["label"].shape[0] for s in steps] == [10] * 6 + [4]  # one dict per step, as DALI's
        assert all(isinstance(s["u"], jax.Array) for s in steps)
        labels = sorted(int(x) for s in steps for x in np.asarray(s["label"]).ravel())
        assert labels == list(range(64))
        it.reset()
        step = next(it)
        src = it.last_batches[0][2].as_tensor()
        np.testing.assert_array_equal(np.asarray(step["u"]), src)
        assert src.ctypes.data % 64 == 0  # host batches are 64-byte aligned ...
        assert step["u"].unsafe_buffer_pointer() == src.ctypes.data  # ... so XLA imports them without a copy


def test_jax_data_iterator_decorator(files):
    """DALI's ``plugin.jax.data_iterator``: the decorated definition, called with the pipeline's arguments and
    its own, gives a DALIGenericIterator over the pipeline; used as a decorator or as a function."""
    jax = pytest.importorskip("jax")
    from streamflow.plugin.jax import GenericIterator, data_iterator

    def definition(scale):  # type: ignore[no-untyped-def]
        data, label = fn.readers.file(files=files, name="R")
        return label * scale, fn.shapes(data)

    decorated = data_iterator(output_map=["label", "shape"], reader_name="R", last_batch_policy=PARTIAL)(definition)
    with decorated(3, batch_size=10, num_threads=1, seed=1) as it:
        steps = list(it)
    assert [s["label"].shape[0] for s in steps] == [10] * 6 + [4] and isinstance(steps[0]["label"], jax.Array)
    assert sorted(int(x) for s in steps for x in np.asarray(s["label"]).ravel()) == [3 * i for i in range(64)]
    functional = data_iterator(definition, output_map=["label", "shape"], reader_name="R")
    with functional(scale=1, batch_size=16, num_threads=1) as it:
        assert np.asarray(next(it)["shape"]).ravel().tolist() == list(range(1, 17))
    two_shards = [make_pipe(files, shard_id=i, num_shards=2, pad=True) for i in range(2)]
    with GenericIterator(two_shards, OUT, reader_name="R") as it:  # several pipelines: one joined dict
        step = next(it)
        assert step["label"].shape[0] == 20 and len(set(np.asarray(step["label"]).ravel().tolist())) == 20
    with pytest.raises(sf.PipelineDefinitionError, match="sharding"):
        data_iterator(definition, output_map=["label"], sharding=object())
