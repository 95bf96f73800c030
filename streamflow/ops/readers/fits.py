"""``experimental.readers.fits``: image HDUs of FITS files, as DALI 2.4's reader, read with astropy.

Files: ``files`` (joined to ``file_root`` when given), the names listed one
per line in ``file_list`` (relative to ``file_root``, else to the list's
folder), or every file under ``file_root`` matching ``file_filter``
(``"*.fits"``, recursive, sorted). One output per entry of ``hdu_indices``:
FITS numbers HDUs from 1 (the primary), and the default ``[2]`` is the first
extension. An HDU must hold an image; tile-compressed images (RICE, GZIP,
HCOMPRESS, PLIO) are decompressed. The array has numpy's (C) order, i.e. the
FITS axes reversed (``NAXIS2 x NAXIS1`` for an image), and its stored type
after ``BZERO``/``BSCALE`` (astropy's: e.g. uint16 for 16-bit data with
``BZERO = 32768``, float32 for scaled integers). ``dtypes`` (one per output)
states the types expected; a file whose HDU has another type fails, naming it
(DALI declares its outputs' types this way; without ``dtypes`` each HDU keeps
its own). Needs astropy: ``pip install 'streamflow[fits]'``. The files are
read on the I/O threads and parsed there. CPU only (DALI also decodes RICE
on the GPU).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import MissingDependencyError, PipelineDefinitionError, ReadError, SampleError
from ...graph import DataNode, add_node
from ...operator import SourceBatch
from ...sharding import ShardSpec
from ...types import DataType, parse_dtype
from ..arguments import READER, fn_function
from .file import check_folder, read_list_lines, walk_files
from .list_source import ListSource

__all__ = ["FitsReader", "fits", "list_fits_files", "read_hdus"]


def list_fits_files(file_root: str | None, files: Sequence[str] | None, file_list: str | None,
                    file_filter: str) -> list[str]:
    """The reader's paths (see the module docstring)."""
    what = "experimental.readers.fits"
    if files is not None and file_list is not None:
        raise PipelineDefinitionError(f"{what}: give files or file_list, not both")
    if files is not None:
        names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        paths = [os.path.join(file_root, os.fspath(p)) if file_root else os.fspath(p) for p in names]
    elif file_list is not None:
        lines = [line.strip() for line in read_list_lines(file_list, what) if line.strip()]
        base = file_root if file_root is not None else os.path.dirname(os.path.abspath(file_list))
        paths = [os.path.join(base, line) for line in lines]
    else:
        if file_root is None:
            raise PipelineDefinitionError(f"{what} needs file_root, file_list or files")
        check_folder(file_root, what)
        paths = walk_files(file_root, [file_filter], case_sensitive=True)
    if not paths:
        raise PipelineDefinitionError(f"{what}: no files to read (file_filter {file_filter!r})")
    return paths


def read_hdus(content: bytes, hdu_indices: Sequence[int], dtypes: Sequence[np.dtype] | None,
              source: str) -> list[np.ndarray]:
    """The image arrays of the HDUs ``hdu_indices`` (1-based) of one FITS file's bytes."""
    try:
        from astropy.io import fits as astro_fits
    except ImportError as exc:
        raise MissingDependencyError("astropy", "fits", "experimental.readers.fits") from exc
    out = []
    try:
        with astro_fits.open(io.BytesIO(content), memmap=False, lazy_load_hdus=True) as hdul:
            for k, index in enumerate(hdu_indices):
                try:
                    hdu = hdul[index - 1]
                except IndexError:
                    raise SampleError(f"experimental.readers.fits: the file has no HDU {index}", source) from None
                if not hdu.is_image or hdu.data is None:
                    raise SampleError(f"experimental.readers.fits: HDU {index} is not an image with data", source)
                data = np.asarray(hdu.data)
                arr = np.array(data, dtype=data.dtype.newbyteorder("="), order="C")
                if dtypes is not None and arr.dtype != dtypes[k]:
                    raise SampleError(f"experimental.readers.fits: HDU {index} holds {arr.dtype}, dtypes[{k}] "
                                      f"says {dtypes[k]}", source)
                out.append(arr)
    except SampleError:
        raise
    except Exception as err:  # astropy raises OSError/ValueError/TypeError on bad files
        raise ReadError(f"not a readable FITS file: {type(err).__name__}: {err}", source) from None
    return out


class FitsReader(ListSource):
    """Reads FITS files; one output per HDU index."""

    name = "experimental.readers.fits"

    def __init__(self, *, paths: list[str], hdu_indices: Sequence[int], dtypes: Sequence[np.dtype] | None,
                 file_root: str | None = None, shard: ShardSpec = ShardSpec(), seed: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(shard=shard, seed=seed, name=name)
        self.paths = paths
        self.hdu_indices = list(hdu_indices)
        self.dtypes = None if dtypes is None else list(dtypes)
        self.file_root = file_root
        self.num_outputs = len(self.hdu_indices)

    @property
    def num_items(self) -> int:
        return len(self.paths)

    async def _read(self, items: np.ndarray, ids: np.ndarray) -> SourceBatch:
        assert self._io is not None
        paths = [self.paths[i] for i in items]
        contents = await self._io.read_files(paths)
        outputs: list[list[Any]] = [[] for _ in self.hdu_indices]
        failures: dict[int, SampleError] = {}
        for row, (content, path) in enumerate(zip(contents, paths)):
            try:
                if isinstance(content, ReadError):
                    raise content
                arrays = await self._io.call(read_hdus, content, self.hdu_indices, self.dtypes, path)
            except SampleError as err:
                failures[row] = err
                arrays = [None] * len(self.hdu_indices)  # type: ignore[list-item]
            for k, arr in enumerate(arrays):
                outputs[k].append(arr)
        return SourceBatch(outputs=outputs, sample_ids=ids, sources=list(paths), failures=failures)


@fn_function(READER)
def fits(
    *,
    file_root: str | os.PathLike[str] | None = None,
    file_list: str | os.PathLike[str] | None = None,
    files: str | Sequence[str] | None = None,
    file_filter: str = "*.fits",
    hdu_indices: int | Sequence[int] = (2,),
    dtypes: DataType | str | Sequence[DataType | str] | None = None,
    random_shuffle: bool = False,
    initial_fill: int = 1024,
    shuffle_after_epoch: bool = False,
    shuffle_after_epoch_seed: int | None = None,
    shard_id: int | None = None,
    num_shards: int | None = None,
    stick_to_shard: bool = False,
    pad_last_batch: bool = False,
    seed: int | None = None,
    name: str | None = None,
) -> DataNode | tuple[DataNode, ...]:
    """Image HDUs of FITS files: one output per entry of ``hdu_indices`` (1-based; default ``[2]``).

    Args:
        file_root: folder searched for ``file_filter`` (or the base of ``files``/``file_list``).
        file_list: text file with one file name per line.
        files: file paths.
        file_filter: glob pattern of the files under ``file_root`` (default ``*.fits``).
        hdu_indices: the HDUs to read, numbered from 1 (the primary HDU).
        dtypes: the expected type of each output (a file that differs fails).
        random_shuffle, initial_fill, shard_id, num_shards, stick_to_shard, pad_last_batch, seed:
            as ``readers.file``; ``shuffle_after_epoch``: shuffle the whole data set every epoch.
    """
    indices = [hdu_indices] if isinstance(hdu_indices, int) else [int(i) for i in hdu_indices]
    if not indices or any(i < 1 for i in indices):
        raise PipelineDefinitionError(f"experimental.readers.fits: hdu_indices must be >= 1, got {hdu_indices!r}")
    types: list[np.dtype] | None = None
    if dtypes is not None:
        given = [dtypes] if isinstance(dtypes, (str, DataType)) else list(dtypes)
        try:
            types = [parse_dtype(d).numpy for d in given]
        except ValueError as err:
            raise PipelineDefinitionError(f"experimental.readers.fits: dtypes: {err}") from None
        if len(types) != len(indices):
            raise PipelineDefinitionError(
                f"experimental.readers.fits: {len(types)} dtypes for {len(indices)} hdu_indices; give one per output")
    if shuffle_after_epoch and (random_shuffle or stick_to_shard):
        raise PipelineDefinitionError(
            "experimental.readers.fits: shuffle_after_epoch cannot be combined with random_shuffle or stick_to_shard")
    root = None if file_root is None else os.fspath(file_root)
    paths = list_fits_files(root, None if files is None else ([files] if isinstance(files, str) else list(files)),
                            None if file_list is None else os.fspath(file_list), file_filter)
    spec = ShardSpec.for_reader(shard_id, num_shards, stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
                                random_shuffle=random_shuffle, initial_fill=initial_fill,
                                shuffle_after_epoch=shuffle_after_epoch,
                                shuffle_after_epoch_seed=shuffle_after_epoch_seed)
    reader = FitsReader(paths=paths, hdu_indices=indices, dtypes=types, file_root=root, shard=spec, seed=seed,
                        name=name)
    outs = add_node(reader, [])
    return outs[0] if len(outs) == 1 else outs
