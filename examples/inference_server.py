"""An image-classification HTTP server: aiohttp + streamflow dynamic batching + torch.

POST an image (JPEG/PNG bytes as the request body) to ``/predict``; the server
decodes, resizes and normalizes it with a streamflow pipeline, runs a small
CNN on the CPU and answers JSON::

    {"class": 3, "score": 0.27, "latency_ms": 4.1, "batch_size": 12}

Concurrent requests are batched by ``streamflow.serve.DynamicBatcher``: the
decoder and the model see whole batches of up to ``--max-batch-size`` images
(``--max-batch-size 1`` serves every request on its own, the baseline).

Other endpoints: ``GET /health`` (200 when ready), ``GET /stats`` (the
batcher's statistics as JSON). Errors: 400 for an input that is not a
decodable image, 503 when overloaded or shutting down, 500 otherwise.

Run (needs aiohttp and torch; see docs/serving.md)::

    python examples/inference_server.py --port 8080 --max-batch-size 32
    curl --data-binary @tests/data/photos/rocket.jpg http://127.0.0.1:8080/predict

It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import numpy as np

import streamflow as sf
from streamflow import fn, types
from streamflow.errors import OverloadedError, PipelineClosedError, SampleError
from streamflow.serve import DynamicBatcher

HOST = "127.0.0.1"
IMAGE_SIZE = 224
NUM_CLASSES = 10
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@sf.pipeline_def(device_id=None, seed=0)
def preprocess(jpegs):
    """Request bytes -> normalized CHW float32, 224x224 (the batcher feeds ``jpegs``)."""
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    images = fn.resize(images, resize_x=IMAGE_SIZE, resize_y=IMAGE_SIZE)
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD)


def make_model(kind: str = "fc"):
    """A small CNN classifier with fixed random weights (eval mode).

    ``"fc"`` (default): a light convolutional stem (~7 M multiply-adds per
    224x224 image) and an AlexNet-style fully connected head (12544 -> 1024,
    12.8 M weights, 51 MB). ``"conv"``: four 3x3 convolutions (~42 M
    multiply-adds) and global pooling, almost no weights.

    Why both: on a CPU, convolutions are compute-bound, so a batch costs
    about the sum of its images and batching gains little there; a big
    layer's weight traffic (and the per-call overhead) is paid once per call,
    so batching divides it by the batch size. See docs/serving.md.
    """
    import torch
    from torch import nn

    torch.manual_seed(0)
    if kind == "conv":
        layers = [
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, NUM_CLASSES),
        ]
    elif kind == "fc":
        layers = [
            nn.Conv2d(3, 8, 4, stride=4), nn.ReLU(inplace=True),  # 56x56
            nn.Conv2d(8, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),  # 28x28
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),  # 14x14
            nn.Flatten(), nn.Linear(64 * 14 * 14, 1024), nn.ReLU(inplace=True),
            nn.Linear(1024, NUM_CLASSES),
        ]
    else:
        raise ValueError(f"unknown model {kind!r}; use 'fc' or 'conv'")
    return nn.Sequential(*layers).eval()


class Classifier:
    """The batcher's ``postprocess``: the model on a whole batch, one answer per row."""

    def __init__(self, kind: str = "fc", max_batch_size: int = 1) -> None:
        import torch

        self.torch = torch
        self.model = make_model(kind)
        # The first call at each batch shape is slower (kernel selection); pay it now.
        with torch.inference_mode():
            for n in range(1, max_batch_size + 1):
                self.model(torch.zeros(n, 3, IMAGE_SIZE, IMAGE_SIZE))

    def __call__(self, outputs: tuple) -> list[tuple[int, float, int]]:
        torch = self.torch
        batch = np.ascontiguousarray(outputs[0].as_tensor())  # (N, 3, 224, 224) float32
        with torch.inference_mode():
            probs = torch.softmax(self.model(torch.from_numpy(batch)), dim=1)
            score, cls = probs.max(dim=1)
        n = len(batch)
        return [(int(c), float(s), n) for c, s in zip(cls.tolist(), score.tolist())]


def make_app(args: argparse.Namespace):
    import torch
    from aiohttp import web

    torch.set_num_threads(args.torch_threads)

    batcher = DynamicBatcher(
        preprocess,
        max_batch_size=args.max_batch_size,
        max_delay=args.max_delay_ms / 1000.0,
        max_queue=args.max_queue,
        max_batches_in_flight=args.batches_in_flight,
        dispatch_when_idle={"on": True, "off": False}.get(args.dispatch_when_idle, "auto"),
        postprocess=Classifier(args.model, args.max_batch_size),
        pipeline_args={"num_threads": args.threads},
    )

    async def lifespan(app: web.Application):
        await batcher.start()
        yield
        await batcher.aclose(timeout=10)

    async def predict(request: web.Request) -> web.Response:
        began = time.perf_counter()
        data = await request.read()
        if not data:
            return web.json_response({"error": "empty body: POST the image bytes"}, status=400)
        try:
            cls, score, batch_size = await batcher.submit(data)
        except SampleError as e:
            return web.json_response({"error": str(e)}, status=400)
        except (OverloadedError, PipelineClosedError) as e:
            return web.json_response({"error": str(e)}, status=503, headers={"Retry-After": "1"})
        except Exception as e:
            return web.json_response({"error": f"{type(e).__name__}: {e}"}, status=500)
        return web.json_response(
            {
                "class": cls,
                "score": round(score, 6),
                "latency_ms": round((time.perf_counter() - began) * 1000.0, 3),
                "batch_size": batch_size,
            }
        )

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": not batcher.closed})

    async def stats(request: web.Request) -> web.Response:
        body = batcher.stats().as_dict()
        pipe = batcher.pipeline_stats()
        if pipe is not None:  # where the pipeline's time goes (counters of the current pipeline)
            body["pipeline"] = {
                "generation": body["pipeline_restarts"],
                "stage_busy_s": {s.name: s.busy_time for s in pipe.stages},
                "operator_busy_s": {o.name: o.busy_time for o in pipe.operators},
            }
        return web.json_response(body)

    app = web.Application(client_max_size=args.max_body_mb * 2**20)
    app.cleanup_ctx.append(lifespan)
    app.add_routes([web.post("/predict", predict), web.get("/health", health), web.get("/stats", stats)])
    return app


async def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    app = make_app(args)
    # handler_cancellation: a client that disconnects cancels its handler, so
    # its request leaves the batcher's queue (or its result is discarded).
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, HOST, args.port)
    await site.start()
    print(f"listening on http://{HOST}:{args.port} (max_batch_size={args.max_batch_size})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--max-batch-size", type=int, default=32, help="1 = no batching (baseline)")
    ap.add_argument("--max-delay-ms", type=float, default=5.0, help="longest wait for a batch to fill")
    ap.add_argument("--max-queue", type=int, default=1024, help="waiting requests before 503")
    ap.add_argument("--batches-in-flight", type=int, default=2)
    ap.add_argument("--dispatch-when-idle", choices=("auto", "on", "off"), default="auto",
                    help="a partial batch leaves at once when the pipeline is idle: auto (at low load), on, off")
    ap.add_argument("--threads", type=int, default=2, help="streamflow CPU threads")
    ap.add_argument("--torch-threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--max-body-mb", type=int, default=16)
    ap.add_argument("--model", choices=("fc", "conv"), default="fc", help="see make_model()")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    try:
        import aiohttp  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        sys.exit(f"this example needs aiohttp and torch ({e}); see docs/serving.md")
    asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
