"""Record formats: the protobuf wire decoder against Google's protobuf, framing edge cases, CRC-32C."""

from __future__ import annotations

import numpy as np
import pytest
import shard_writers as W
from hypothesis import given, settings
from hypothesis import strategies as st

from streamflow.io.formats import caffe, protowire, recordio, tfrecord, webdataset
from streamflow.tfrecord import FixedLenFeature, VarLenFeature, float32, int64, string


def _classes():
    """tf.train.Example, caffe.Datum and caffe2.TensorProtos as protobuf classes, from their .proto fields."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="shards_test.proto", package="t", syntax="proto2")

    def msg(name, fields, nested=()):
        m = fd.message_type.add(name=name)
        for fname, number, ftype, label, type_name, packed in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
            if packed:
                f.options.packed = True
        for n in nested:
            m.nested_type.add().CopyFrom(n)
        return m

    REP, OPT = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("BytesList", [("value", 1, F.TYPE_BYTES, REP, None, False)])
    msg("FloatList", [("value", 1, F.TYPE_FLOAT, REP, None, True)])
    msg("Int64List", [("value", 1, F.TYPE_INT64, REP, None, True)])
    msg("Feature", [("bytes_list", 1, F.TYPE_MESSAGE, OPT, ".t.BytesList", False),
                    ("float_list", 2, F.TYPE_MESSAGE, OPT, ".t.FloatList", False),
                    ("int64_list", 3, F.TYPE_MESSAGE, OPT, ".t.Int64List", False)])
    entry = descriptor_pb2.DescriptorProto(name="FeatureEntry")
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=OPT)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=OPT, type_name=".t.Feature")
    entry.options.map_entry = True
    msg("Features", [("feature", 1, F.TYPE_MESSAGE, REP, ".t.Features.FeatureEntry", False)], [entry])
    msg("Example", [("features", 1, F.TYPE_MESSAGE, OPT, ".t.Features", False)])
    msg("Datum", [("channels", 1, F.TYPE_INT32, OPT, None, False), ("height", 2, F.TYPE_INT32, OPT, None, False),
                  ("width", 3, F.TYPE_INT32, OPT, None, False), ("data", 4, F.TYPE_BYTES, OPT, None, False),
                  ("label", 5, F.TYPE_INT32, OPT, None, False), ("float_data", 6, F.TYPE_FLOAT, REP, None, False),
                  ("encoded", 7, F.TYPE_BOOL, OPT, None, False)])
    msg("TensorProto", [("dims", 1, F.TYPE_INT64, REP, None, False), ("data_type", 2, F.TYPE_INT32, OPT, None, False),
                        ("float_data", 3, F.TYPE_FLOAT, REP, None, True), ("int32_data", 4, F.TYPE_INT32, REP, None, True),
                        ("byte_data", 5, F.TYPE_BYTES, OPT, None, False), ("string_data", 6, F.TYPE_BYTES, REP, None, False),
                        ("int64_data", 10, F.TYPE_INT64, REP, None, True)])
    msg("TensorProtos", [("protos", 1, F.TYPE_MESSAGE, REP, ".t.TensorProto", False)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"t.{n}"))
            for n in ("Example", "Datum", "TensorProtos")}


@pytest.fixture(scope="module")
def pb():
    return _classes()


def test_example_written_by_protobuf_is_decoded(pb) -> None:
    ex = pb["Example"]()
    ex.features.feature["img"].bytes_list.value.append(b"\x00jpeg\xff")
    ex.features.feature["label"].int64_list.value.extend([-7, 2**62])
    ex.features.feature["box"].float_list.value.extend([0.5, -1.25, 3.0, 4.0])
    ex.features.feature["empty"].SetInParent()
    specs = {"img": FixedLenFeature([], string, ""), "label": VarLenFeature(int64, 0),
             "box": VarLenFeature([2], float32, 0.0), "other": FixedLenFeature([1], int64, 9)}
    img, label, box, other = tfrecord.decode_features(memoryview(ex.SerializeToString()), specs)
    assert bytes(img) == b"\x00jpeg\xff" and label.tolist() == [-7, 2**62]
    np.testing.assert_array_equal(box, [[0.5, -1.25], [3.0, 4.0]])
    assert other.shape == () and int(other) == 9


def test_the_test_writers_encode_what_protobuf_decodes(pb) -> None:
    ex = pb["Example"].FromString(W.example({"a": b"xy", "n": np.array([-1, 5]), "f": np.array([0.5], np.float32)}))
    assert ex.features.feature["a"].bytes_list.value == [b"xy"]
    assert list(ex.features.feature["n"].int64_list.value) == [-1, 5]
    assert list(ex.features.feature["f"].float_list.value) == [0.5]
    d = pb["Datum"].FromString(W.caffe_datum(b"abc", -3, encoded=False, shape=(1, 3, 1)))
    assert (d.data, d.label, d.encoded, d.height, d.width, d.channels) == (b"abc", -3, False, 1, 3, 1)
    t = pb["TensorProtos"].FromString(W.caffe2_protos(W.caffe2_tensor(W.C2_INT32, dims=[2], ints=[-4, 9])))
    assert list(t.protos[0].int32_data) == [-4, 9] and list(t.protos[0].dims) == [2]


def test_datum_and_tensor_protos_written_by_protobuf_are_decoded(pb) -> None:
    d = pb["Datum"](channels=3, height=2, width=1, data=b"\x01" * 6, label=-2, encoded=False)
    got = caffe.parse_datum(memoryview(d.SerializeToString()))
    assert (got.channels, got.height, got.width, got.data, got.label, got.encoded) == (3, 2, 1, b"\x01" * 6, -2, False)
    protos = pb["TensorProtos"]()
    t = protos.protos.add(data_type=1)
    t.float_data.extend([1.5, -2.0])
    t2 = protos.protos.add(data_type=10, dims=[3])
    t2.int64_data.extend([-(2**40), 0, 7])
    t3 = protos.protos.add(data_type=4)
    t3.string_data.append(b"jpegbytes")
    a, b, c = caffe.parse_tensor_protos(memoryview(protos.SerializeToString()))
    assert a.floats().tolist() == [1.5, -2.0] and b.int64s().tolist() == [-(2**40), 0, 7] and b.dims == [3]
    assert c.data_type == 4 and c.string_data == [b"jpegbytes"]


def test_unpacked_repeated_scalars_are_decoded() -> None:
    # proto2 writers may emit repeated numbers unpacked: one field per value
    floats = b"".join(W.tag(1, 5) + np.float32(v).tobytes() for v in (1.0, 2.0))
    ints = b"".join(W.varint_field(1, v) for v in (3, -4))
    feats = W.len_field(1, W.len_field(1, b"f") + W.len_field(2, W.len_field(2, floats)))
    feats += W.len_field(1, W.len_field(1, b"i") + W.len_field(2, W.len_field(3, ints)))
    ex = W.len_field(1, feats)
    f, i = tfrecord.decode_features(memoryview(ex), {"f": VarLenFeature(float32, 0), "i": VarLenFeature(int64, 0)})
    assert f.tolist() == [1.0, 2.0] and i.tolist() == [3, -4]


@pytest.mark.parametrize("data, message", [
    (b"\x08", "truncated varint"),
    (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
    (b"\x0a\x05ab", "runs past the end"),
    (b"\x0b", "unsupported wire type 3"),
    (b"\x00\x01", "field number 0"),
    (b"\x0d\x01\x02", "truncated 32-bit"),
])
def test_malformed_messages_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(protowire.ProtoError, match=message):
        list(protowire.fields(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_crash_the_decoders(data: bytes) -> None:
    for parse in (lambda b: tfrecord.parse_example(memoryview(b), {"a"}), caffe.parse_datum,
                  caffe.parse_tensor_protos):
        try:
            parse(memoryview(data))
        except protowire.ProtoError:
            pass


def test_crc32c_and_tfrecord_framing() -> None:
    assert W.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    framed = W.tfrecord_frame(b"payload")
    assert bytes(tfrecord.record_payload(memoryview(framed))) == b"payload"
    with pytest.raises(tfrecord.RecordError, match="length field says"):
        tfrecord.record_payload(memoryview(framed[:12] + framed[14:]))  # two bytes short


def test_recordio_record_extents_follow_dali() -> None:
    # global offsets over two files of 100 and 50 bytes; a zero-size entry is dropped
    assert recordio.record_extents([0, 40, 40, 100, 120], [100, 50]) == [(0, 0, 40), (0, 40, 60), (1, 0, 20), (1, 20, 30)]


def test_tar_names_split_like_wds2idx() -> None:
    assert webdataset.split_name("a/b.c/x.seg.png") == ("a/b.c/x", "seg.png")
    assert webdataset.split_name("dir/.hidden") == ("dir/", "hidden")
    assert webdataset.group_samples([("x.jpg", 512, 3), ("x.cls", 1024, 1), ("dir/.hidden", 2048, 1),
                                     ("y.jpg", 2560, 2)]) == [
        [webdataset.Component("jpg", 512, 3, "x.jpg"), webdataset.Component("cls", 1024, 1, "x.cls")],
        [webdataset.Component("jpg", 2560, 2, "y.jpg")],
    ]


def test_long_names_and_pax_headers_in_tar(tmp_path) -> None:
    import tarfile

    long = "d" * 120 + "/sample.jpg"
    path = tmp_path / "a.tar"
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        with tarfile.open(path, "w", format=fmt) as tf:
            for name, data in ((long, b"abc"), ("é/ü.cls", b"1")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                import io

                tf.addfile(info, io.BytesIO(data))
        raw = path.read_bytes()
        members = webdataset.scan_tar(lambda o, n: raw[o : o + n], len(raw), "a.tar")
        assert [(m[0], raw[m[1] : m[1] + m[2]]) for m in members] == [(long, b"abc"), ("é/ü.cls", b"1")]


def test_missing_optional_packages_name_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import sys

    import streamflow as sf
    from streamflow import fn
    from streamflow.errors import MissingDependencyError
    from streamflow.io import remote

    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'streamflow\[remote\]'"):
        remote.filesystem("s3://bucket/key")
    monkeypatch.setitem(sys.modules, "lmdb", None)

    @sf.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.readers.caffe(path=str(tmp_path))

    with pytest.raises(MissingDependencyError, match=r"pip install 'streamflow\[lmdb\]'"):
        pipe()
