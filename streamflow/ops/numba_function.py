"""``experimental.numba_function``: your own step as Numba-compiled functions (DALI's ``numba_function``).

``run_fn(out_0, ..., out_n, in_0, ..., in_m)`` fills preallocated output arrays
from the inputs; it is compiled with ``numba.njit`` (nopython mode, as in DALI)
and runs on the worker threads without the interpreter. ``setup_fn(outs,
ins)``, also compiled, fills the output shapes (``outs[i][sample]``, int64
arrays of ``outs_ndim[i]`` values) from the input shapes; without it, output
``i`` has the shape of input ``i``. ``batch_processing=True`` hands
``run_fn`` lists of the samples instead of one sample. Outputs start
uninitialised, as in DALI: ``run_fn`` must write every element.

Numba is optional: ``pip install 'streamflow[numba]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import MissingDependencyError, PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, require_node
from ..operator import Chunk, Operator
from ..types import DataType, Device, parse_dtype
from .arguments import fn_function

__all__ = ["NumbaFunction", "numba_function"]

_MAX_IO = 6  # DALI's limit of inputs and of outputs


def _numba() -> Any:
    try:
        import numba
    except ImportError as exc:
        raise MissingDependencyError("numba", "numba", "fn.experimental.numba_function") from exc
    return numba


def _as_list(value: Any, what: str) -> list[Any]:
    if value is None:
        raise PipelineDefinitionError(f"numba_function: give {what}")
    return list(value) if isinstance(value, (list, tuple)) else [value]


class NumbaFunction(Operator):
    """Runs a ``numba.njit``-compiled ``run_fn`` per sample (or per batch) into preallocated outputs."""

    name: ClassVar[str] = "numba_function"

    def __init__(self, run_fn: Callable[..., Any], out_types: Sequence[DataType], in_types: Sequence[DataType],
                 outs_ndim: Sequence[int], ins_ndim: Sequence[int], setup_fn: Callable[..., Any] | None = None,
                 batch_processing: bool = False, name: str | None = None) -> None:
        super().__init__(device=Device.CPU, name=name)
        numba = _numba()
        self.out_types, self.in_types = list(out_types), list(in_types)
        self.outs_ndim, self.ins_ndim = [int(n) for n in outs_ndim], [int(n) for n in ins_ndim]
        self.batch_processing = bool(batch_processing)
        self.whole_batch = self.batch_processing
        self.num_outputs = len(self.out_types)
        self._label = getattr(run_fn, "__qualname__", repr(run_fn))
        self._run = numba.njit(run_fn)
        self._setup = numba.njit(setup_fn) if setup_fn is not None else None
        self._typed_list = numba.typed.List

    # --- shapes --------------------------------------------------------------------------
    def _out_shapes(self, inputs: list[list[np.ndarray]]) -> list[list[tuple[int, ...]]]:
        n = len(inputs[0]) if inputs else 0
        if self._setup is None:  # checked at definition: as many outputs as inputs
            return [[tuple(inputs[i][s].shape) for s in range(n)] for i in range(self.num_outputs)]
        List = self._typed_list
        outs = List([List([np.zeros(nd, np.int64) for _ in range(n)]) for nd in self.outs_ndim])
        ins = List([List([np.array(x.shape, np.int64) for x in col]) for col in inputs])
        try:
            self._setup(outs, ins)
        except Exception as err:
            raise SampleError(f"numba_function setup_fn raised {type(err).__name__}: {err}") from err
        return [[tuple(int(v) for v in outs[i][s]) for s in range(n)] for i in range(self.num_outputs)]

    def _check_inputs(self, inputs: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        checked = []
        for i, col in enumerate(inputs):
            want, nd = self.in_types[i].numpy, self.ins_ndim[i]
            for x in col:
                if x.dtype != want or x.ndim != nd:
                    raise SampleError(f"numba_function {self._label}: input {i} is {x.dtype} with {x.ndim} "
                                      f"dimensions, but in_types/ins_ndim say {want} with {nd}")
            checked.append([np.ascontiguousarray(x) for x in col])
        return checked

    # --- running -------------------------------------------------------------------------
    def run(self, chunk: Chunk) -> list[list[Any]]:
        inputs = self._check_inputs([list(col) for col in chunk.inputs])
        shapes = self._out_shapes(inputs)
        n = len(chunk)
        outs = [[np.empty(shapes[i][s], self.out_types[i].numpy) for s in range(n)] for i in range(self.num_outputs)]
        try:
            if self.batch_processing:
                List = self._typed_list
                self._run(*(List(col) for col in outs), *(List(col) for col in inputs))
            else:
                for s in range(n):
                    self._run(*(col[s] for col in outs), *(col[s] for col in inputs))
        except Exception as err:
            raise SampleError(f"numba_function {self._label} raised {type(err).__name__}: {err}") from err
        return outs


@fn_function()
def numba_function(*inputs: DataNode, run_fn: Callable[..., Any] | None = None, out_types: Any = None,
                   in_types: Any = None, outs_ndim: Any = None, ins_ndim: Any = None,
                   setup_fn: Callable[..., Any] | None = None, batch_processing: bool = False,
                   device: str | Device | None = None, blocks: Sequence[int] | None = None,
                   threads_per_block: Sequence[int] | None = None, name: str | None = None) -> Any:
    """Run ``run_fn(*outputs, *inputs)``, compiled with Numba, on each sample (DALI's ``numba_function``).

    Args:
        inputs: up to 6 DataNodes.
        run_fn: fills the preallocated outputs from the inputs (nopython mode).
        out_types, in_types: ``types.DALIDataType`` of each output / input.
        outs_ndim, ins_ndim: number of dimensions of each output / input.
        setup_fn: ``setup_fn(outs, ins)`` writes the output shapes from the input shapes
            (whole batch at once); default: output ``i`` is shaped as input ``i``.
        batch_processing: call ``run_fn`` once per batch with lists of samples.
        device: ``"cpu"``; ``"gpu"`` (a CUDA kernel with ``blocks`` and ``threads_per_block``)
            is not supported.
    """
    if run_fn is None:
        raise PipelineDefinitionError("numba_function: give the function (run_fn=...)")
    if device is not None and str(getattr(device, "value", device)).lower() != "cpu":
        raise PipelineDefinitionError("numba_function: only device='cpu' is supported (CUDA kernels through "
                                      "numba.cuda are not)")
    outs = [parse_dtype(t) for t in _as_list(out_types, "out_types")]
    ins = [parse_dtype(t) for t in _as_list(in_types, "in_types")]
    out_nd, in_nd = _as_list(outs_ndim, "outs_ndim"), _as_list(ins_ndim, "ins_ndim")
    if len(outs) != len(out_nd) or len(ins) != len(in_nd):
        raise PipelineDefinitionError("numba_function: give one outs_ndim per out_types and one ins_ndim per in_types")
    if len(ins) != len(inputs):
        raise PipelineDefinitionError(f"numba_function: {len(inputs)} input(s) but {len(ins)} in_types")
    if not 1 <= len(outs) <= _MAX_IO or len(ins) > _MAX_IO:
        raise PipelineDefinitionError(f"numba_function: 1 to {_MAX_IO} outputs and at most {_MAX_IO} inputs")
    if setup_fn is None and (outs != ins or list(out_nd) != list(in_nd)):
        # DALI then gives output i the type and shape of input i whatever out_types say
        raise PipelineDefinitionError("numba_function: without setup_fn, output i has the shape and type of input "
                                      "i, so out_types/outs_ndim must equal in_types/ins_ndim; give a setup_fn")
    if DataType.FLOAT16 in outs + ins:
        raise PipelineDefinitionError("numba_function: Numba does not support float16")
    nodes = [require_node(x, "numba_function", i) for i, x in enumerate(inputs)]
    op = NumbaFunction(run_fn, outs, ins, out_nd, in_nd, setup_fn=setup_fn, batch_processing=batch_processing,
                       name=name)
    outputs = add_node(op, nodes, device="cpu")
    return outputs[0] if len(outs) == 1 else list(outputs)
