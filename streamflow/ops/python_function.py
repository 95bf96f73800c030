"""``python_function``, ``torch_python_function``, ``dl_tensor_python_function``: your own Python step.

The function runs on the pipeline's worker threads, chunk by chunk, like any
CPU operator: steps of different samples run in parallel (numpy, torch and
most native code release the GIL), the event loop is never blocked, and the
pipeline is not serialized behind it (DALI runs Python operators one at a time
on its main thread). An exception is that sample's failure, named after the
function and the file, so ``on_error="skip"`` replaces the sample.

An ``async def`` function (beyond DALI) is awaited: the coroutines of a
chunk's samples run concurrently on one shared event loop thread, at most
``max_concurrency`` at a time per operator, so a step can call an HTTP
service or a database without a thread per request.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, require_node
from ..operator import Chunk, Operator
from ..types import Device
from .arguments import fn_function

__all__ = ["PythonFunction", "dl_tensor_python_function", "python_function", "torch_python_function"]


class _SharedLoop:
    """One background event loop for every ``async def`` Python step of the process."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Any) -> Any:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="streamflow-python-async", daemon=True).start()
                self._loop = loop
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()


_ASYNC = _SharedLoop()


class _Capsule:
    """A bare DLPack capsule (``torch.utils.dlpack.to_dlpack``) as the object ``np.from_dlpack`` takes."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU: the CPU pipeline's data


class PythonFunction(Operator):
    """Calls a user function per sample (or per batch) on the worker threads."""

    name: ClassVar[str] = "python_function"

    def __init__(self, function: Callable[..., Any], *, num_outputs: int = 1, batch_processing: bool = False,
                 output_layouts: str | Sequence[str] | None = None, convert: str = "numpy",
                 max_concurrency: int = 16, op_name: str = "python_function", name: str | None = None) -> None:
        super().__init__(device=Device.CPU, name=name)
        if not callable(function):
            raise PipelineDefinitionError(f"{op_name}: function must be callable, got {type(function).__name__}")
        if num_outputs < 0:
            raise PipelineDefinitionError(f"{op_name}: num_outputs must be >= 0, got {num_outputs}")
        if max_concurrency < 1:
            raise PipelineDefinitionError(f"{op_name}: max_concurrency must be >= 1, got {max_concurrency}")
        self.function = function
        self.num_outputs = max(1, num_outputs)
        self.returns_nothing = num_outputs == 0
        self.batch_processing = bool(batch_processing)
        self.whole_batch = self.batch_processing  # DALI hands the function the whole batch
        self.is_async = inspect.iscoroutinefunction(function)
        self.convert = convert
        self.max_concurrency = max_concurrency
        self.op_label = op_name
        layouts = [output_layouts] * self.num_outputs if isinstance(output_layouts, str) or output_layouts is None \
            else list(output_layouts)
        if len(layouts) != self.num_outputs:
            raise PipelineDefinitionError(f"{op_name}: give one output layout per output ({self.num_outputs})")
        self._layouts = [layout or "" for layout in layouts]
        self._label = getattr(function, "__qualname__", repr(function))

    # --- conversions in and out ------------------------------------------------------
    def _to_user(self, value: Any) -> Any:
        if self.convert == "torch":
            import torch

            return torch.from_numpy(np.asarray(value, order="C"))  # keeps 0-d values 0-d
        return value  # numpy arrays also carry __dlpack__ for dl_tensor_python_function

    def _from_user(self, value: Any) -> Any:
        if self.convert == "torch" and hasattr(value, "detach"):
            return value.detach().cpu().numpy()
        if self.convert == "dlpack" and not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            return np.from_dlpack(value)
        if self.convert == "dlpack" and type(value).__name__ == "PyCapsule":
            return np.from_dlpack(_Capsule(value))  # DALI's functions return to_dlpack() capsules
        arr = np.asarray(value)
        if arr.dtype == object:
            raise SampleError(f"{self.op_label} {self._label} returned {type(value).__name__}, not an array")
        return arr

    def _split(self, result: Any) -> list[Any]:
        if self.returns_nothing:
            return [np.zeros(0, np.uint8)]
        if self.num_outputs == 1:
            return [self._from_user(result)]
        if not isinstance(result, (tuple, list)) or len(result) != self.num_outputs:
            raise SampleError(f"{self.op_label} {self._label} must return {self.num_outputs} values (num_outputs), "
                              f"got {type(result).__name__}")
        return [self._from_user(r) for r in result]

    # --- running ------------------------------------------------------------------------
    def run(self, chunk: Chunk) -> list[list[Any]]:
        if self.batch_processing:
            return self._run_batch(chunk)
        n = len(chunk)
        rows = [[self._to_user(col[r]) for col in chunk.inputs] for r in range(n)]
        if self.is_async:
            results = _ASYNC.run(self._gather(rows))
        else:
            results = []
            for args in rows:
                try:
                    results.append(self.function(*args))
                except Exception as err:  # the user's failure: this sample's
                    results.append(err)
        return chunk.each_sample(lambda row, _: self._outputs(results[row]), outputs=self.num_outputs)

    def _outputs(self, result: Any) -> list[Any]:
        """A row's outputs from the function's result (or the exception it raised)."""
        if isinstance(result, Exception):
            raise SampleError(f"{self.op_label} {self._label} raised {type(result).__name__}: {result}")
        return self._split(result)

    async def _gather(self, rows: list[list[Any]]) -> list[Any]:
        limit = asyncio.Semaphore(self.max_concurrency)

        async def one(args: list[Any]) -> Any:
            async with limit:
                try:
                    return await self.function(*args)
                except Exception as err:
                    return err

        return list(await asyncio.gather(*(one(a) for a in rows)))

    def _run_batch(self, chunk: Chunk) -> list[list[Any]]:
        # batch_processing: each input is the list of the batch's samples; outputs are lists.
        args = [[self._to_user(v) for v in col] for col in chunk.inputs]
        try:
            result = _ASYNC.run(self.function(*args)) if self.is_async else self.function(*args)
        except Exception as err:
            raise SampleError(f"{self.op_label} {self._label} raised {type(err).__name__}: {err}") from err
        columns = [result] if self.num_outputs == 1 else list(result)
        if self.returns_nothing:
            return [[np.zeros(0, np.uint8)] * len(chunk)]
        if len(columns) != self.num_outputs or any(len(c) != len(chunk) for c in columns):
            raise SampleError(f"{self.op_label} {self._label} must return {self.num_outputs} list(s) of "
                              f"{len(chunk)} samples")
        return [[self._from_user(v) for v in col] for col in columns]

    def layout(self, index: int) -> str:
        return self._layouts[index]


def _build(op_name: str, convert: str, inputs: Sequence[Any], function: Any, num_outputs: int, batch_processing: bool,
           output_layouts: Any, max_concurrency: int, device: str | Device | None, name: str | None) -> Any:
    if function is None:
        raise PipelineDefinitionError(f"{op_name}: give the function (function=...)")
    nodes = [require_node(x, op_name, i) for i, x in enumerate(inputs)]
    op = PythonFunction(function, num_outputs=num_outputs, batch_processing=batch_processing,
                        output_layouts=output_layouts, convert=convert, max_concurrency=max_concurrency,
                        op_name=op_name, name=name)
    outputs = add_node(op, nodes, device=device)
    return outputs[0] if num_outputs == 1 else (None if num_outputs == 0 else outputs)


@fn_function()
def python_function(*inputs: DataNode, function: Any = None, num_outputs: int = 1, batch_processing: bool = False,
                    output_layouts: str | Sequence[str] | None = None, max_concurrency: int = 16,
                    device: str | Device | None = None, name: str | None = None) -> Any:
    """Your own Python step on numpy arrays: ``function(*samples) -> array`` (or a tuple of ``num_outputs``).

    Args:
        inputs: the step's inputs (DataNodes).
        function: a function of one sample of each input (``batch_processing``:
            of the lists of the batch's samples, returning lists); may be ``async def``.
        num_outputs: how many arrays the function returns (0: none; the step
            then gives an empty output).
        batch_processing: call the function once per batch, on lists of the batch's
            samples, instead of once per sample.
        output_layouts: layout name(s) of the outputs.
        max_concurrency: ``async def`` functions: samples in flight at once per chunk.
        device: ``"cpu"`` (GPU Python steps: not yet).
    """
    return _build("python_function", "numpy", inputs, function, num_outputs, batch_processing, output_layouts,
                  max_concurrency, device, name)


@fn_function()
def torch_python_function(*inputs: DataNode, function: Any = None, num_outputs: int = 1,
                          batch_processing: bool = False, output_layouts: str | Sequence[str] | None = None,
                          max_concurrency: int = 16, device: str | Device | None = None,
                          name: str | None = None) -> Any:
    """``python_function`` with ``torch.Tensor``s in and out (shared with the numpy arrays, no copy)."""
    return _build("torch_python_function", "torch", inputs, function, num_outputs, batch_processing, output_layouts,
                  max_concurrency, device, name)


@fn_function()
def dl_tensor_python_function(*inputs: DataNode, function: Any = None, num_outputs: int = 1,
                              batch_processing: bool = False, output_layouts: str | Sequence[str] | None = None,
                              max_concurrency: int = 16, device: str | Device | None = None,
                              name: str | None = None) -> Any:
    """``python_function`` on DLPack objects: inputs support ``__dlpack__``, outputs may be any DLPack producer."""
    return _build("dl_tensor_python_function", "dlpack", inputs, function, num_outputs, batch_processing,
                  output_layouts, max_concurrency, device, name)
