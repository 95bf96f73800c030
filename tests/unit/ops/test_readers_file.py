"""fn.readers.file: listing, labels, shuffling, sharding, padding, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamflow as sf
from streamflow import fn


def read_all(pipe: sf.Pipeline) -> tuple[list[str], list[int], list[int]]:
    """(sources, labels, batch sizes) of one epoch."""
    sources, labels, sizes = [], [], []
    for batch in pipe.iter():
        data, label = batch
        sources += batch.sources
        labels += [int(x) for x in label.as_array().reshape(-1)]
        sizes.append(len(data))
    return sources, labels, sizes


def make_pipe(batch_size: int = 2, **reader_args):
    @sf.pipeline_def(batch_size=batch_size, num_threads=1, seed=7)
    def pipe():
        return fn.readers.file(**reader_args)

    return pipe()


def test_file_root_sorted_classes_and_files(image_root: Path) -> None:
    with make_pipe(file_root=image_root) as pipe:
        sources, labels, sizes = read_all(pipe)
    assert [Path(s).parent.name for s in sources] == ["a"] * 3 + ["b"] * 3
    assert labels == [0, 0, 0, 1, 1, 1]
    assert sources == sorted(sources)
    assert sizes == [2, 2, 2]


def test_outputs_are_bytes_and_int32_labels(image_root: Path) -> None:
    with make_pipe(file_root=image_root, batch_size=3) as pipe:
        data, labels = pipe.run()
        first = Path(pipe.run().sources[0])  # the second batch comes from class b
    assert data.at(0).dtype == np.uint8 and data.at(0).ndim == 1
    assert labels.as_array().dtype == np.int32 and labels.as_array().shape == (3, 1)
    assert first.parent.name == "b"
    expected = (image_root / "a" / sorted(p.name for p in (image_root / "a").iterdir())[0]).read_bytes()
    assert data.at(0).tobytes() == expected


def test_file_list_relative_to_list_folder(image_root: Path, tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    b_files = sorted((image_root / "b").iterdir())
    listing.write_text(f"# comment\n\n{b_files[0]} 5\n{b_files[1]}\t7\n")
    with make_pipe(file_list=listing) as pipe:
        sources, labels, _ = read_all(pipe)
    assert labels == [5, 7]
    assert sources == [str(b_files[0]), str(b_files[1])]


def test_file_list_with_file_root(image_root: Path, tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text("a/hopper.jpg 3\n")
    with make_pipe(file_list=listing, file_root=image_root) as pipe:
        sources, labels, _ = read_all(pipe)
    assert sources == [str(image_root / "a" / "hopper.jpg")] and labels == [3]


@pytest.mark.parametrize("line", ["only_a_path.jpg", "x.jpg -1", "x.jpg label"])
def test_file_list_bad_line_names_file_and_line(tmp_path: Path, line: str) -> None:
    listing = tmp_path / "bad.txt"
    listing.write_text(f"ok.jpg 1\n{line}\n")
    with pytest.raises(sf.PipelineDefinitionError, match=r"bad.txt:2: expected 'path label'"):
        make_pipe(file_list=listing)


def test_files_and_default_labels(many_files: list[str]) -> None:
    with make_pipe(files=many_files[:5], batch_size=5) as pipe:
        sources, labels, _ = read_all(pipe)
    assert labels == [0, 1, 2, 3, 4] and sources == many_files[:5]
    with pytest.raises(sf.PipelineDefinitionError, match="3 files but 2 labels"):
        make_pipe(files=many_files[:3], labels=[1, 2])


def test_file_filters(image_root: Path, tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.JPG").write_bytes((image_root / "a" / "hopper.jpg").read_bytes())
    (tmp_path / "c" / "notes.txt").write_text("not an image")
    (tmp_path / "c" / "y.png").write_bytes(b"fake")
    with make_pipe(file_root=tmp_path) as pipe:
        sources, _, _ = read_all(pipe)
    assert [Path(s).name for s in sources] == ["x.JPG", "y.png"]
    with make_pipe(file_root=tmp_path, file_filters=["*.png"]) as pipe:
        sources, _, _ = read_all(pipe)
    assert [Path(s).name for s in sources] == ["y.png"]


def test_missing_or_empty_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(sf.PipelineDefinitionError, match="is not a directory"):
        make_pipe(file_root=tmp_path / "nope")
    with pytest.raises(sf.PipelineDefinitionError, match="one sub-folder per class"):
        make_pipe(file_root=tmp_path)
    with pytest.raises(sf.PipelineDefinitionError, match="needs file_root, file_list or files"):
        make_pipe()


def test_shuffle_is_a_permutation_deterministic_and_changes_per_epoch(many_files: list[str]) -> None:
    def epochs(seed_pipe):
        with seed_pipe as pipe:
            return [read_all(pipe)[0] for _ in range(2)]

    first = epochs(make_pipe(files=many_files, batch_size=8, random_shuffle=True, initial_fill=16))
    again = epochs(make_pipe(files=many_files, batch_size=8, random_shuffle=True, initial_fill=16))
    assert first == again
    assert sorted(first[0]) == sorted(many_files) and sorted(first[1]) == sorted(many_files)
    assert first[0] != many_files and first[0] != first[1]


def test_pad_last_batch_repeats_last_sample(many_files: list[str]) -> None:
    with make_pipe(files=many_files[:10], batch_size=4, pad_last_batch=True) as pipe:
        sources, _, sizes = read_all(pipe)
        assert pipe.reader_meta()
    assert sizes == [4, 4, 4] and sources[-3:] == [many_files[9]] * 3
    with make_pipe(files=many_files[:10], batch_size=4) as pipe:
        sources, _, sizes = read_all(pipe)
    assert sizes == [4, 4, 2]


def test_epoch_size_and_reader_meta(many_files: list[str]) -> None:
    pipe = make_pipe(files=many_files[:10], batch_size=4, num_shards=3, shard_id=1, pad_last_batch=True, name="Reader")
    assert pipe.epoch_size("Reader") == 12  # DALI: the padded size (10 rounded up to 3 shards)
    meta = pipe.reader_meta("Reader")
    assert meta["epoch_size"] == 10
    assert meta["epoch_size_padded"] == 12 and meta["number_of_shards"] == 3 and meta["shard_size"] == 4
    with pytest.raises(KeyError, match="no reader named 'Other'"):
        pipe.epoch_size("Other")
    pipe.close()




def test_dir_filters_keep_matching_class_folders(image_root: Path, tmp_path: Path) -> None:
    # DALI 2.4: labels count the kept folders only (recorded: a_x -> 0, c_x -> 1)
    for cls in ("a_x", "b_y", "c_x"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / "f.jpg").write_bytes((image_root / "a" / "hopper.jpg").read_bytes())
    with make_pipe(file_root=tmp_path, dir_filters=["*_x"]) as pipe:
        sources, labels, _ = read_all(pipe)
    assert [Path(s).parent.name for s in sources] == ["a_x", "c_x"] and labels == [0, 1]
