"""``experimental.readers.fits``: DALI 2.4's CPU FITS reader needs a CUDA driver even for CPU pipelines
(it fails with "CUDA driver version is insufficient" here), so there is no recorded DALI output; the
files are written with astropy from a real MRI volume and photo and read back exactly (plain images,
BZERO-scaled uint16, RICE tile compression), plus the argument rules of DALI's documentation."""

from __future__ import annotations

import numpy as np
import pytest
from dali_reference.geometry_cases import photo, volume

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import PipelineDefinitionError

astro_fits = pytest.importorskip("astropy.io.fits")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("fits")
    vol = volume()[:, :, :, 0]
    gray = photo("camera.png", 8)
    for i in range(3):
        hdus = [astro_fits.PrimaryHDU(),
                astro_fits.ImageHDU(vol[i * 4: i * 4 + 3]),                       # int16, 3-D
                astro_fits.ImageHDU(gray.astype(np.float32) / (i + 1)),           # float32
                astro_fits.ImageHDU(gray.astype(np.uint16) * 200),                # uint16 (BZERO 32768)
                astro_fits.CompImageHDU(vol[i + 5], compression_type="RICE_1"),   # tile-compressed int16
                astro_fits.BinTableHDU.from_columns([astro_fits.Column(name="a", format="J", array=[1, 2])])]
        sub = root / ("a" if i < 2 else "b")
        sub.mkdir(exist_ok=True)
        astro_fits.HDUList(hdus).writeto(sub / f"img{i}.fits")
    (root / "a" / "notes.txt").write_text("not fits")
    return root


def _read(batch_size: int = 3, **kw):  # type: ignore[no-untyped-def]
    @sf.pipeline_def(batch_size=batch_size, num_threads=1, seed=1)
    def pipe():  # type: ignore[no-untyped-def]
        out = fn.experimental.readers.fits(name="r", **kw)
        return out if isinstance(out, tuple) else (out,)

    with pipe() as p:
        return [[np.asarray(t.at(i)) for i in range(len(t))] for t in p.run()]


def test_default_hdu_and_several(folder) -> None:
    vol, gray = volume()[:, :, :, 0], photo("camera.png", 8)
    (first,) = _read(file_root=str(folder))
    assert [a.dtype for a in first] == [np.int16] * 3
    assert all(np.array_equal(a, vol[i * 4: i * 4 + 3]) for i, a in enumerate(first))
    flt, u16, rice = _read(file_root=str(folder), hdu_indices=[3, 4, 5],
                           dtypes=[types.FLOAT, types.UINT16, types.INT16])
    for i in range(3):
        assert np.array_equal(flt[i], gray.astype(np.float32) / (i + 1))
        assert u16[i].dtype == np.uint16 and np.array_equal(u16[i], gray.astype(np.uint16) * 200)
        assert np.array_equal(rice[i], vol[i + 5])


def test_files_file_list_and_errors(folder, tmp_path) -> None:
    (got,) = _read(2, file_root=str(folder), files=["b/img2.fits", "a/img0.fits"], hdu_indices=4)
    assert got[0].dtype == np.uint16
    listing = tmp_path / "list.txt"
    listing.write_text(f"{folder}/a/img1.fits\n\n{folder}/b/img2.fits\n")
    (got,) = _read(2, file_list=str(listing))
    assert np.array_equal(got[0], volume()[4:7, :, :, 0])
    with pytest.raises(Exception, match="dtypes\\[0\\] says float32"):
        _read(file_root=str(folder), dtypes=[types.FLOAT])
    with pytest.raises(Exception, match="not an image"):
        _read(file_root=str(folder), hdu_indices=[6])
    with pytest.raises(Exception, match="no HDU 9"):
        _read(file_root=str(folder), hdu_indices=[9])
    with pytest.raises(PipelineDefinitionError, match="one per output"):
        _read(file_root=str(folder), hdu_indices=[2, 3], dtypes=[types.INT16])
    with pytest.raises(PipelineDefinitionError, match="hdu_indices"):
        _read(file_root=str(folder), hdu_indices=[0])


def test_corrupt_file_names_it(folder, tmp_path) -> None:
    bad = tmp_path / "bad.fits"
    bad.write_bytes(b"SIMPLE  = garbage" + b" " * 100)
    with pytest.raises(Exception, match="bad.fits"):
        _read(1, files=[str(bad)])


def test_shuffle_after_epoch_permutes_the_whole_set_alike_on_every_rank(tmp_path) -> None:
    """As readers.file/coco: one permutation of all files per epoch, shared by the ranks; shards cut it."""
    gray = photo("camera.png", 8)[:8, :8]
    for i in range(6):
        astro_fits.HDUList([astro_fits.PrimaryHDU(gray.astype(np.int16) + i)]).writeto(tmp_path / f"f{i}.fits")

    def ids(epochs, **kw):  # type: ignore[no-untyped-def]
        @sf.pipeline_def(batch_size=1, num_threads=1, seed=3)
        def pipe():  # type: ignore[no-untyped-def]
            return fn.experimental.readers.fits(file_root=str(tmp_path), hdu_indices=[1], name="r", **kw)

        with pipe() as p:
            return [[int(np.asarray(b[0].at(0))[0, 0]) - int(gray[0, 0]) for b in p.iter()] for _ in range(epochs)]

    e0, e1, e2 = ids(3, shuffle_after_epoch=True)
    assert sorted(e0) == sorted(e1) == sorted(e2) == list(range(6)) and len({tuple(e0), tuple(e1), tuple(e2)}) > 1
    (rank1,) = ids(1, shuffle_after_epoch=True, num_shards=2, shard_id=1)
    assert rank1 == e0[3:]
    with pytest.raises(PipelineDefinitionError, match="shuffle_after_epoch cannot be combined"):
        ids(1, shuffle_after_epoch=True, random_shuffle=True)


def test_file_list_with_undecodable_bytes_names_the_missing_file(folder, tmp_path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"caf\xe9.fits\n")  # Latin-1 bytes: a file name the file system may well hold
    with pytest.raises(Exception, match="caf"):
        _read(1, file_list=str(listing))
