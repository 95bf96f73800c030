"""Property-based fuzzing of the decoder wrapper and the file-list parser (issue 8).

Decoder: real images (``tests/data/jpeg-quirks``, crops of ``tests/data/photos``
re-encoded in every format) mutated by bit flips, byte writes, truncations,
cuts, duplications, extreme integers and spliced headers
(``tests/fuzz/mutators.py``). Every result must be an HWC uint8 array of the
shape the header announces, or a ``DecodeError`` naming the source: never
another exception. The long campaign with the same generators is
``python -m tests.fuzz.campaign --minutes 3``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamflow.codecs.nvimgcodec import ImageDecoder
from streamflow.errors import DecodeError, PipelineDefinitionError
from streamflow.ops.readers.file import FileReader, parse_file_list
from tests.fuzz import mutators

pytestmark = pytest.mark.timeout(120)

SEEDS = mutators.seeds()
FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def decoder() -> ImageDecoder:
    # A limit of 4 Mpx keeps a mutated size field from allocating gigabytes.
    return ImageDecoder(max_pixels=4_000_000)


def test_seeds_cover_formats_and_decode(decoder: ImageDecoder) -> None:
    suffixes = {name.rsplit(".", 1)[-1] for name, _ in SEEDS}
    assert {"jpg", "png", "bmp", "tif", "webp", "ppm"} <= suffixes
    names = [n for n, _ in SEEDS]
    results = decoder.decode_batch([d for _, d in SEEDS], names)
    broken = {n for n, r in zip(names, results) if isinstance(r, DecodeError)}
    assert broken == {"truncated_jpeg.jpg"}, broken  # every other seed is a valid image
    assert mutators.check_decode(decoder, [d for _, d in SEEDS], names) == []


@FUZZ
@given(seed=st.integers(0, len(SEEDS) - 1), mutations=mutators.mutation_strategy())
@example(seed=0, mutations=[("truncate", (0, 0, 0))])
@example(seed=0, mutations=[("splice", (10, 20, 0))])
# found by the campaign: a TIFF only tifffile reads (nvImageCodec and Pillow fail on its header)
@example(seed=[n for n, _ in SEEDS].index("chelsea.tif"), mutations=[
    ("byte", (2198128566, 492133816, 2465445772)), ("dup", (1443653293, 1853452249, 3612911159)),
    ("flip", (1893022642, 474584271, 3051529146))])
def test_mutated_image_decodes_or_names_the_source(decoder: ImageDecoder, seed: int, mutations) -> None:
    name, data = SEEDS[seed]
    mutated = mutators.apply(data, mutations, SEEDS)
    assert mutators.check_decode(decoder, [mutated], [f"fuzz/{name}"]) == []


@FUZZ
@given(picks=st.lists(st.tuples(st.integers(0, len(SEEDS) - 1), mutators.mutation_strategy(3)),
                      min_size=2, max_size=6))
def test_batches_of_mutated_images_keep_order(decoder: ImageDecoder, picks) -> None:
    inputs = [mutators.apply(SEEDS[i][1], m, SEEDS) for i, m in picks]
    names = [f"fuzz/{k}/{SEEDS[i][0]}" for k, (i, _) in enumerate(picks)]
    assert mutators.check_decode(decoder, inputs, names) == []


@FUZZ
@given(header=st.sampled_from([d[:64] for _, d in SEEDS]), tail=st.binary(max_size=300))
def test_real_header_random_body(decoder: ImageDecoder, header: bytes, tail: bytes) -> None:
    assert mutators.check_decode(decoder, [header + tail], ["fuzz/spliced"]) == []


def test_lying_size_headers_are_refused_or_decoded_exactly(decoder: ImageDecoder) -> None:
    jpeg = (Path(mutators.QUIRKS) / "hopper.jpg").read_bytes()
    for h, w in [(1, 1), (1, 65535), (65535, 1), (2001, 2001), (4000, 4000), (65535, 65535)]:
        data = mutators.jpeg_with_size(jpeg, h, w)
        assert mutators.check_decode(decoder, [data], [f"size{h}x{w}.jpg"]) == []
    out = decoder.decode_batch([mutators.png_bomb(70000, 70000)], ["bomb.png"])[0]
    assert isinstance(out, DecodeError) and "max_pixels=4000000" in out.reason


# ---------------------------------------------------------------- file lists


LINE = st.one_of(
    st.text(max_size=30),
    st.builds(lambda p, sep, label: f"{p}{sep}{label}", st.text(min_size=1, max_size=20),
              st.sampled_from([" ", "\t", "   ", "\u3000", "\x0b", "\x1c"]),
              st.one_of(st.integers(-3, 2**40), st.sampled_from(["+1", "1_0", "0x1", "٣", "1e3", "nan"]))),
    st.sampled_from(["#comment", "", "   ", "a.jpg", "a b c 7", "x\x00y.jpg 1", "\ufeffa.jpg 0"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(content=st.one_of(st.lists(LINE, max_size=8).map("\n".join).map(lambda t: t.encode("utf-8", "surrogatepass")),
                         st.binary(max_size=200)))
def test_file_list_parser_never_fails_unexpectedly(tmp_path_factory, content: bytes) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz_list.txt"
    path.write_bytes(content)
    try:
        entries = parse_file_list(str(path), "/data")
    except PipelineDefinitionError as exc:
        assert "fuzz_list.txt" in str(exc)
        return
    assert entries
    for file, label in entries:
        assert isinstance(file, str) and file.startswith("/data/") and "\x00" not in file
        assert isinstance(label, int) and 0 <= label < 2**31
        os.fsencode(file)  # a real file-system name (non-UTF-8 bytes round-trip)
    reader = FileReader(file_list=str(path), file_root="/data")
    assert reader.labels.dtype == np.int32 and len(reader.labels) == len(entries)


def test_file_list_non_utf8_names_round_trip(tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"caf\xe9.jpg 3\n# \xff comment\n")
    ((path, label),) = parse_file_list(str(listing), None)
    assert os.fsencode(path) == os.fsencode(str(tmp_path)) + b"/caf\xe9.jpg" and label == 3


@pytest.mark.parametrize("line", ["a.jpg 2147483648", "a.jpg 99999999999999999999", "a\x00b.jpg 1"])
def test_file_list_rejects_labels_outside_int32_and_nul(tmp_path: Path, line: str) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text(line + "\n")
    with pytest.raises(PipelineDefinitionError, match="list.txt:1"):
        parse_file_list(str(listing), None)
    with pytest.raises(PipelineDefinitionError, match="int32"):
        FileReader(files=["a.jpg"], labels=[2**31])
