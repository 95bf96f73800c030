"""GPU pipelines end to end: mixed decoding, stage overlap, hand-off to torch, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import BROKEN_JPEGS, GOOD_JPEGS

import streamflow as sf
from streamflow import fn, types

pytestmark = pytest.mark.gpu

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory) -> Path:
    """96 real JPEGs (copies of the test photos) in two classes."""
    root = tmp_path_factory.mktemp("gpu-jpegs")
    for i in range(96):
        cls = root / f"c{i % 2}"
        cls.mkdir(exist_ok=True)
        shutil.copy(GOOD_JPEGS[i % len(GOOD_JPEGS)], cls / f"img_{i:03d}.jpg")
    return root


def imagenet_pipe(root, device="gpu", batch_size=16, seed=3, **kw):
    decode_device = "mixed" if device == "gpu" else "cpu"

    @sf.pipeline_def(batch_size=batch_size, num_threads=4, device_id=0 if device == "gpu" else None, seed=seed, **kw)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device=decode_device, output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224, device=device)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(), device=device)
        return images, labels

    return pipe()


def test_mixed_decode_matches_cpu_decode(tmp_path):
    import cupy as cp

    from streamflow.codecs.nvimgcodec import GpuImageDecoder, ImageDecoder
    from streamflow.types import Device

    data = [p.read_bytes() for p in GOOD_JPEGS]
    names = [p.name for p in GOOD_JPEGS]
    stream = cp.cuda.Stream(non_blocking=True)
    gpu_dec = GpuImageDecoder(device_id=0, cuda_stream=stream.ptr, cpu_threads=2)
    with stream:
        gpu = gpu_dec.decode_batch(data, names)
        region = gpu_dec.decode_batch(data, names, regions=[(3, 5, 40, 61)] * len(data))
    stream.synchronize()
    cpu = ImageDecoder(Device.CPU).decode_batch(data, names)
    report = []
    for name, g, r, c in zip(names, gpu, region, cpu):
        g, r = cp.asnumpy(g), cp.asnumpy(r)
        assert g.shape == c.shape and g.dtype == np.uint8, name
        np.testing.assert_array_equal(r, g[3:40, 5:61], err_msg=f"{name}: GPU region decode != crop of GPU decode")
        d = np.abs(g.astype(int) - c.astype(int))
        report.append((name, int(d.max()), float(d.mean())))
    print("GPU vs CPU decode (name, max, mean |diff|):", report)
    # nvJPEG and libjpeg-turbo (nvImageCodec's CPU backend) may differ in IDCT and chroma
    # upsampling; the issue asks for "exact": this records how far apart they are.
    assert all(mean < 1.0 for _, _, mean in report), report


@pytest.mark.parametrize("output_type, dtype", [("rgb", "uint8"), ("any_data", "uint16"), ("ycbcr", "float32")])
def test_mixed_decode_of_every_corpus_format_matches_cpu(output_type, dtype):
    """Every corpus file through GpuImageDecoder: JPEG decoded on the device within the
    nvJPEG/libjpeg gap of the test above; every other format (decoded by the CPU routes
    and copied) equal to the CPU decoder, dtype included; broken files DecodeErrors."""
    import cupy as cp

    from streamflow.codecs.nvimgcodec import GpuImageDecoder, ImageDecoder
    from streamflow.errors import DecodeError

    corpus = Path(__file__).parents[1] / "data" / "pillow-corpus"
    files = sorted(p for p in corpus.iterdir() if p.suffix != ".txt")
    data, names = [p.read_bytes() for p in files], [p.name for p in files]
    stream = cp.cuda.Stream(non_blocking=True)
    gpu_dec = GpuImageDecoder(device_id=0, cuda_stream=stream.ptr, cpu_threads=2,
                              output_type=output_type, dtype=dtype)
    by: list[str] = []
    with stream:
        gpu = gpu_dec.decode_batch(data, names, decoded_by=by)
    stream.synchronize()
    cpu = ImageDecoder(output_type=output_type, dtype=dtype).decode_batch(data, names)
    for name, g, c, who in zip(names, gpu, cpu, by):
        if isinstance(c, DecodeError):
            assert isinstance(g, DecodeError) and g.source == name, name
            continue
        g = cp.asnumpy(g)
        assert g.shape == c.shape and g.dtype == c.dtype, name
        if who == "nvimgcodec-gpu":
            scale = 1.0 if c.dtype.kind == "f" else 255.0
            assert float(np.abs(g.astype(float) - c.astype(float)).mean()) < scale / 255.0, name
        else:
            np.testing.assert_array_equal(g, c, err_msg=name)


def test_imagenet_pipeline_on_gpu(jpeg_root):
    import cupy as cp

    gpu_pipe = imagenet_pipe(jpeg_root)
    cpu_pipe = imagenet_pipe(jpeg_root, device="cpu")
    with gpu_pipe, cpu_pipe:
        for (g, gl), (c, cl) in zip(gpu_pipe.iter(), cpu_pipe.iter()):
            t = g.as_tensor()
            assert isinstance(t, cp.ndarray) and t.shape == (16, 3, 224, 224) and t.dtype == np.float32
            assert g.device is types.Device.GPU
            np.testing.assert_array_equal(gl.as_array(), cl.as_array())
            d = np.abs(cp.asnumpy(t) - c.as_tensor())
            # same windows and mirrors (pure functions of the seed); decode may differ slightly
            assert float(d.mean()) < 0.05, float(d.mean())


def test_stage_overlap_from_event_timings(tmp_path):
    """Decode of batch i+1 (mixed stream) overlaps the transforms of batch i (gpu stream)."""
    import cupy as cp

    from streamflow.gpu.stage import GpuStage

    root = tmp_path / "big"
    (root / "a").mkdir(parents=True)
    for i in range(256):
        shutil.copy(GOOD_JPEGS[i % len(GOOD_JPEGS)], root / "a" / f"{i:03d}.jpg")
    GpuStage.RECORD_TIMELINE = True
    try:
        pipe = imagenet_pipe(root, batch_size=32)
        with pipe:
            for _ in pipe.iter():
                pass
            stages = pipe._resources.engine.compute_stages
            mixed = next(s for s in stages if s.label == "mixed")
            gpu = next(s for s in stages if s.label == "gpu")
            t0 = mixed.timeline[0][1]
            t0.synchronize()

            def spans(stage):
                out = {}
                for b, start, end in stage.timeline:
                    end.synchronize()
                    out[b] = (cp.cuda.get_elapsed_time(t0, start), cp.cuda.get_elapsed_time(t0, end))
                return out

            m, g = spans(mixed), spans(gpu)
    finally:
        GpuStage.RECORD_TIMELINE = False
    overlaps = [i for i in g if i + 1 in m and m[i + 1][0] < g[i][1] and g[i][0] < m[i + 1][1]]
    print("mixed spans [ms]:", m, "\ngpu spans [ms]:", g, "\noverlapping batches:", overlaps)
    assert overlaps, "decode of batch i+1 never overlapped the transforms of batch i"


def test_outputs_stay_valid_after_torch_handoff(jpeg_root):
    torch = pytest.importorskip("torch")
    pipe = imagenet_pipe(jpeg_root, batch_size=8)
    with pipe:
        it = pipe.iter()
        first = next(it)
        tensor = torch.from_dlpack(first[0].as_tensor())
        expected = tensor.cpu().clone()
        del first
        # queue a long kernel on torch's stream that reads the tensor, then drop it
        torch.cuda._sleep(50_000_000)
        total = tensor.double().sum()
        del tensor
        later = [b[0].as_tensor().copy() for b in it]  # later batches reuse the pool meanwhile
        torch.cuda.synchronize()
        assert later
        assert torch.isclose(total.cpu(), expected.double().sum()), "a later batch overwrote a batch still in use"

    # and while held, a batch never changes
    pipe = imagenet_pipe(jpeg_root, batch_size=8)
    with pipe:
        batches = [torch.from_dlpack(b[0].as_tensor()) for b in pipe.iter()]
        copies = [t.cpu().clone() for t in batches]
        for b in pipe.iter():  # a second epoch produced while the first is held
            pass
        for t, c in zip(batches, copies):
            assert torch.equal(t.cpu(), c)


def test_skip_bad_file_in_mixed_stage(tmp_path):
    root = tmp_path / "mixed-bad"
    (root / "a").mkdir(parents=True)
    for f in GOOD_JPEGS[:5] + BROKEN_JPEGS:
        shutil.copy(f, root / "a" / f.name)
    pipe = imagenet_pipe(root, batch_size=7, on_error="skip")
    with pipe:
        batches = list(pipe.iter())
        assert sum(len(b[0]) for b in batches) == 7
        assert pipe.stats().skipped_total >= 1


def test_gpu_copy_and_gpu_ops(jpeg_root):
    import cupy as cp

    @sf.pipeline_def(batch_size=5, num_threads=2, device_id=0, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=jpeg_root, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu")
        images = fn.crop(images.gpu(), crop=(31, 29), device="gpu")
        flipped = fn.flip(images, horizontal=1, device="gpu")
        return images, flipped, labels.gpu()

    p = pipe()
    with p:
        images, flipped, labels = p.run()
        for i in range(len(images)):
            np.testing.assert_array_equal(cp.asnumpy(flipped.at(i)), cp.asnumpy(images.at(i))[:, ::-1])
        assert isinstance(labels.as_tensor(), cp.ndarray)


def test_unsupported_gpu_operator_is_a_clear_error(jpeg_root):
    @sf.pipeline_def(batch_size=2, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root)
        images = fn.decoders.image(jpegs, device="mixed")
        return fn.rotate(images, angle=10.0, device="gpu")

    with pytest.raises(sf.errors.PipelineDefinitionError, match="rotate: device='gpu' is not supported; it runs on 'cpu'"):
        pipe()


def test_a_missing_gpu_index_is_refused_cleanly(jpeg_root):
    import cupy as cp

    missing = cp.cuda.runtime.getDeviceCount()  # one past the last GPU

    @sf.pipeline_def(batch_size=2, device_id=missing)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root)
        return fn.decoders.image(jpegs, device="mixed")

    with pytest.raises(sf.errors.DeviceUnavailableError, match=f"needs GPU {missing}"):
        pipe().build()
