"""Turn a traced graph into an execution plan: operators grouped into stages.

Stages run in a fixed order, each as one asyncio task::

    read  ->  cpu  ->  mixed  ->  gpu

``read`` holds the sources (readers, external sources), ``cpu`` the host
operators, ``mixed`` the decoders that take host bytes and give GPU images
(and ``.gpu()`` copies), ``gpu`` the device operators. Data only flows
forward, so an operator's stage is never earlier than its inputs' stages.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PipelineDefinitionError
from ..graph import DataNode, OpNode, topological_order
from ..operator import RandomKey, Source
from ..types import Device
from .fusion import fuse_graph

__all__ = ["ExecutionPlan", "StageKind", "StagePlan", "make_plan"]


class StageKind(enum.IntEnum):
    """The stages, in pipeline order."""

    READ = 0
    CPU = 1
    MIXED = 2
    GPU = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class StagePlan:
    """The operator nodes of one stage, in execution order."""

    kind: StageKind
    nodes: tuple[OpNode, ...]


@dataclass(frozen=True)
class ExecutionPlan:
    """Everything the engine needs to run a graph."""

    stages: tuple[StagePlan, ...]
    outputs: tuple[DataNode, ...]
    sources: tuple[OpNode, ...]
    random_keys: dict[int, RandomKey]  # id(OpNode) -> key


def _stage_of(node: OpNode) -> StageKind:
    if isinstance(node.op, Source):
        return StageKind.READ
    return {Device.CPU: StageKind.CPU, Device.MIXED: StageKind.MIXED, Device.GPU: StageKind.GPU}[node.op.device]


def make_plan(outputs: Sequence[DataNode], seed: int, implicit_source: DataNode | None = None) -> ExecutionPlan:
    """Group the operators the outputs depend on into ordered stages.

    ``implicit_source``: a source that nothing reads, run when the outputs
    depend on no source (DALI's source-less pipelines of constants and random
    numbers): it only sets the number of samples per batch.
    """
    if not outputs:
        raise PipelineDefinitionError("the pipeline definition returned no outputs")
    for i, out in enumerate(outputs):
        if not isinstance(out, DataNode):
            raise PipelineDefinitionError(
                f"pipeline output {i} must be a DataNode returned by an fn.* function, "
                f"got {type(out).__name__}"
            )
    order = topological_order(outputs)
    if implicit_source is not None and not any(isinstance(node.op, Source) for node in order):
        order.append(implicit_source.producer)  # last: the other operators keep their random keys
    # Random streams are keyed on the unfused order, so fusion never changes results.
    keys = {id(node): RandomKey(seed, i) for i, node in enumerate(order)}
    order = fuse_graph(order, protected={id(out.producer) for out in outputs})
    by_stage: dict[StageKind, list[OpNode]] = {kind: [] for kind in StageKind}
    stage_of_node: dict[int, StageKind] = {}
    for node in order:
        kind = _stage_of(node)
        for data in node.upstream:
            upstream_kind = stage_of_node[id(data.producer)]
            if upstream_kind > kind:
                raise PipelineDefinitionError(
                    f"{node.name} ({kind.label} stage) reads {data.name}, produced in the later "
                    f"{upstream_kind.label} stage; data can only flow read -> cpu -> mixed -> gpu"
                )
        stage_of_node[id(node)] = kind
        by_stage[kind].append(node)
    sources = tuple(by_stage[StageKind.READ])
    if not sources:
        raise PipelineDefinitionError(
            "the pipeline has no source: use fn.readers.* or fn.external_source to feed it"
        )
    stages = tuple(StagePlan(kind, tuple(nodes)) for kind, nodes in by_stage.items() if nodes)
    return ExecutionPlan(stages=stages, outputs=tuple(outputs), sources=sources, random_keys=keys)
