"""``readers.sequence`` (and DALI's deprecated ``sequence_reader``): sequences of decoded frames from
folders of extracted video frames, as DALI 2.4.

``file_root`` holds one folder per stream; a stream's frames are its image
files (the extensions of ``readers.file``'s image filters), sorted by name.
A sample is ``sequence_length`` frames ``stride`` apart; consecutive samples
of a stream start ``step`` frames apart; sequences never cross streams and
only whole ones are taken (a stream of ``n`` frames gives
``(n - 1 - (sequence_length - 1) * stride) // step + 1`` of them). Streams
are taken in sorted order. Output: ``FHWC`` uint8 frames (``image_type``
RGB, BGR, GRAY or YCbCr), decoded with nvImageCodec on the I/O threads;
every frame of a sequence must have the same size. Sharding and shuffling
are those of every list reader (``readers.file``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...errors import PipelineDefinitionError, SampleError
from ...graph import DataNode, add_node
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ...types import ImageType, parse_image_type
from ..arguments import READER, fn_function
from .file import sub_folders, walk_files
from .list_source import ListSource

__all__ = ["SequenceReader", "sequence", "sequence_starts"]

#: The image files of a stream (``readers.file``'s image extensions).
IMAGE_FILTERS = ("*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm", "*.pbm",
                 "*.jp2", "*.webp")


def sequence_starts(frames: int, length: int, stride: int, step: int) -> range:
    """The first frames of the whole sequences of a stream of ``frames`` frames."""
    span = (length - 1) * stride + 1
    return range(0, max(0, frames - span + 1), step)


class SequenceReader(ListSource):
    """Reads the frame files of one sequence per sample and decodes them (FHWC uint8)."""

    name = "readers.sequence"

    def __init__(self, *, file_root: str | os.PathLike[str], sequence_length: int, step: int = 1, stride: int = 1,
                 image_type: ImageType = ImageType.RGB, shard: ShardSpec = ShardSpec(), seed: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        for what, value in (("sequence_length", sequence_length), ("step", step), ("stride", stride)):
            if int(value) != value or value < 1:
                raise PipelineDefinitionError(f"readers.sequence: {what} must be a positive integer, got {value!r}")
        root = os.fsdecode(file_root)
        streams = sub_folders(root, "readers.sequence")
        self.root = root
        self.image_type = image_type
        self.streams = [walk_files(os.path.join(root, s), IMAGE_FILTERS, False) for s in streams]
        self.items = [(k, start) for k, frames in enumerate(self.streams)
                      for start in sequence_starts(len(frames), sequence_length, stride, step)]
        if not self.items:
            raise PipelineDefinitionError(
                f"readers.sequence: no stream under {root!r} has {sequence_length} frames {stride} apart "
                f"({len(streams)} stream folders)")
        self.length, self.stride = int(sequence_length), int(stride)
        self._decoder: Any = None

    @property
    def num_items(self) -> int:
        return len(self.items)

    def frame_paths(self, item: int) -> list[str]:
        """The files of sequence ``item``."""
        k, start = self.items[item]
        return [self.streams[k][start + i * self.stride] for i in range(self.length)]

    def _decode(self, contents: list[Any], paths: list[str]) -> np.ndarray:
        from ...codecs.nvimgcodec import ImageDecoder

        if self._decoder is None:
            self._decoder = ImageDecoder(output_type=self.image_type)  # thread-safe: one decoder per thread
        frames = []
        for content, path in zip(contents, paths):
            if isinstance(content, BaseException):
                raise content
            frames.append(np.asarray(self._decoder.decode(np.frombuffer(content, np.uint8), path)))
        shapes = {f.shape for f in frames}
        if len(shapes) > 1:
            raise SampleError(f"readers.sequence: the frames of a sequence differ in size: {sorted(shapes)}",
                              paths[0])
        return np.stack(frames)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        paths = [self.frame_paths(int(i)) for i in items]
        flat = await self._io.read_files([p for ps in paths for p in ps])
        data: list[Any] = []
        failures: dict[int, SampleError] = {}
        for row, ps in enumerate(paths):
            contents = flat[row * self.length:(row + 1) * self.length]
            try:
                data.append(await self._io.call(self._decode, contents, ps))
            except SampleError as err:
                failures[row] = err if err.source else SampleError(str(err), ps[0])
                data.append(None)
        sources: list[str | None] = [os.path.dirname(ps[0]) for ps in paths]
        return SourceBatch(outputs=[data], sample_ids=ids, sources=sources, failures=failures)

    def layout(self, index: int) -> str:
        return "FHWC"


@fn_function(READER)
def sequence(
    *,
    file_root: str | os.PathLike[str],
    sequence_length: int,
    step: int = 1,
    stride: int = 1,
    image_type: str | ImageType = ImageType.RGB,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode:
    """Sequences of ``sequence_length`` decoded frames (FHWC uint8) from folders of frame images.

    Args:
        file_root: a folder with one folder of frame images per stream.
        sequence_length: frames per sequence.
        step: frames between the first frames of consecutive sequences.
        stride: frames between consecutive frames of a sequence.
        image_type: RGB (default), BGR, GRAY or YCbCr.
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard, pad_last_batch, seed:
            as ``readers.file``.
    """
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill)
    reader = SequenceReader(file_root=file_root, sequence_length=sequence_length, step=step, stride=stride,
                            image_type=parse_image_type(image_type), shard=spec, seed=seed, name=name)
    return add_node(reader, [])[0]
