"""The serving benchmark's lean HTTP/1.1 load client (benchmarks/_http_load.py), on a raw asyncio server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _http_load import HttpError, LoadConnection


async def _serve(handler):  # type: ignore[no-untyped-def]
    """A raw server: ``handler(request_head, body, writer)`` answers each request."""
    connections = 0

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                if not await handler(head, body, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, port, lambda: connections


def _response(status: int, body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n%s\r\n" % (status, len(body), extra) + body


def test_posts_reuse_one_connection_and_read_framed_bodies() -> None:
    async def main():  # type: ignore[no-untyped-def]
        async def echo(head, body, writer):  # type: ignore[no-untyped-def]
            # the answer arrives in two writes, to exercise partial reads
            data = _response(200, b"len=%d" % len(body))
            writer.write(data[:7])
            await writer.drain()
            writer.write(data[7:])
            return True

        server, port, connections = await _serve(echo)
        conn = LoadConnection("127.0.0.1", port, timeout=5)
        try:
            answers = [await conn.post("/predict", b"x" * n) for n in (0, 10, 100_000)]
        finally:
            conn.close()
            server.close()
        return answers, connections()

    answers, connections = asyncio.run(main())
    assert answers == [(200, b"len=0"), (200, b"len=10"), (200, b"len=100000")]
    assert connections == 1  # keep-alive


def test_connection_close_reconnects_and_errors_are_reported() -> None:
    async def main():  # type: ignore[no-untyped-def]
        async def handler(head, body, writer):  # type: ignore[no-untyped-def]
            if body == b"close":
                writer.write(_response(503, b"busy", b"Connection: close\r\n"))
                return False
            if body == b"chunked":
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                return True
            if body == b"hang-up":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort")
                return False
            if body == b"silent":
                await asyncio.sleep(2)
                return True
            writer.write(_response(200, b"ok"))
            return True

        server, port, connections = await _serve(handler)
        conn = LoadConnection("127.0.0.1", port, timeout=0.5)
        results = []
        try:
            for body in (b"close", b"a", b"chunked", b"b", b"hang-up", b"c", b"silent", b"d"):
                try:
                    results.append(await conn.post("/p", body))
                except HttpError as e:
                    results.append(str(e))
        finally:
            conn.close()
            server.close()
        return results, connections()

    results, connections = asyncio.run(main())
    assert results[0] == (503, b"busy") and results[1] == (200, b"ok")
    assert "Transfer-Encoding" in results[2] and results[3] == (200, b"ok")
    assert "closed before the response" in results[4] and results[5] == (200, b"ok")
    assert "no response in" in results[6] and results[7] == (200, b"ok")
    assert connections == 5  # a new connection after each close or error


def test_refused_connection_raises() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await LoadConnection("127.0.0.1", port, timeout=2).get("/health")

    with pytest.raises(OSError):
        asyncio.run(main())


def test_median_run_keeps_every_runs_rate() -> None:
    import serve_bench

    runs = [{"req_per_s": r, "tag": r} for r in (700.0, 650.0, 760.0)]
    chosen = serve_bench.median_run(runs)
    assert chosen["tag"] == 700.0 and chosen["req_per_s_runs"] == [700.0, 650.0, 760.0]
    assert serve_bench.median_run(runs[:2])["tag"] == 650.0  # even count: the lower middle
