"""Real servers on 127.0.0.1 for the remote-storage tests: moto's S3 server and a small HTTP file server.

No client is mocked: streamflow talks to them through fsspec (s3fs/aiobotocore,
aiohttp) exactly as it talks to AWS or a web server.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1; the AWS environment points boto at it. Yields the endpoint."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL_S3": endpoint, "AWS_ENDPOINT_URL": endpoint}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    _forget_s3_clients()  # fsspec caches file systems, with the endpoint they were made for
    try:
        yield endpoint
    finally:
        _forget_s3_clients()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def _forget_s3_clients() -> None:
    try:
        import s3fs
    except ImportError:
        return
    s3fs.S3FileSystem.clear_instance_cache()


class FileServer(http.server.ThreadingHTTPServer):
    """Serves a folder with Range support; failures can be injected per path.

    ``fail[path] = (status, count)``: the next ``count`` requests of ``path``
    answer ``status`` (``count < 0``: always). ``requests`` counts requests
    per path; ``max_in_flight`` is the most requests served at once.
    """

    daemon_threads = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fail: dict[str, tuple[int, int]] = {}
        self.requests: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FileServer

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _serve(self, body: bool) -> None:
        srv = self.server
        path = self.path.split("?", 1)[0]
        with srv.lock:
            srv.requests[path] = srv.requests.get(path, 0) + 1
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
            status, count = srv.fail.get(path, (0, 0))
            if count:
                srv.fail[path] = (status, count - 1 if count > 0 else count)
        try:
            if count:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            file = srv.root / path.lstrip("/")
            if not file.is_file():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = file.read_bytes()
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                first, _, last = rng[6:].partition("-")
                start = int(first) if first else len(data) - int(last)
                end = min(int(last) + 1, len(data)) if first and last else len(data)
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                part = data[start:end]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            else:
                part = data
                self.send_response(200)
            self.send_header("Content-Length", str(len(part)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if body:
                self.wfile.write(part)
        finally:
            with srv.lock:
                srv.in_flight -= 1

    def do_GET(self) -> None:
        self._serve(True)

    def do_HEAD(self) -> None:
        self._serve(False)


@contextlib.contextmanager
def http_server(root: Path) -> Iterator[FileServer]:
    server = FileServer(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
