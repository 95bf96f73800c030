"""A lean HTTP/1.1 client for load generation: keep-alive connections on asyncio protocols.

The serving benchmark runs its load generator on the same two cores as the
server it measures, so every microsecond the client spends per request is
taken from the server. aiohttp's client costs ~0.14 ms of CPU per request
there; this one does only what a load generator needs (one POST or GET at a
time per connection, ``Content-Length`` framed responses) and costs a
fraction of that.

Not a general HTTP client: no redirects, no chunked responses (reported as an
error), no TLS. Every request has a time limit.
"""

from __future__ import annotations

import asyncio

__all__ = ["HttpError", "LoadConnection"]

_MAX_HEADER = 64 * 1024


class HttpError(Exception):
    """The server's answer could not be read (malformed, unsupported framing, closed, timed out)."""


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(HttpError(f"connection closed before the response ({exc})"))

    def _complete(self) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        buf = self.buffer
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEADER:
                waiter.set_exception(HttpError("response header too long"))
            return
        head = bytes(buf[:end]).split(b"\r\n")
        try:
            status = int(head[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            waiter.set_exception(HttpError(f"malformed status line {head[0][:80]!r}"))
            return
        length = None
        keep_alive = True
        for line in head[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                waiter.set_exception(HttpError(f"unsupported Transfer-Encoding {value.strip()!r}"))
                return
            elif name == b"connection" and value.strip().lower() == b"close":
                keep_alive = False
        if length is None:
            waiter.set_exception(HttpError("response without Content-Length"))
            return
        total = end + 4 + length
        if len(buf) < total:
            return
        body = bytes(buf[end + 4 : total])
        del buf[:total]
        waiter.set_result((status, body, keep_alive))


class LoadConnection:
    """One keep-alive connection to ``host:port``; one request at a time; reconnects when needed."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._proto: _Protocol | None = None
        self._host_header = f"Host: {host}:{port}\r\n".encode()

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body``; returns (status, response body)."""
        head = (
            f"POST {path} HTTP/1.1\r\n".encode()
            + self._host_header
            + b"Content-Type: application/octet-stream\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
        )
        return await self._send([head, body])

    async def get(self, path: str) -> tuple[int, bytes]:
        return await self._send([f"GET {path} HTTP/1.1\r\n".encode() + self._host_header + b"\r\n"])

    async def _send(self, parts: list[bytes]) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        proto = self._proto
        if proto is None or proto.lost or proto.transport is None:
            _, proto = await asyncio.wait_for(loop.create_connection(_Protocol, self.host, self.port), self.timeout)
            self._proto = proto
        assert proto.transport is not None
        waiter: asyncio.Future[tuple[int, bytes, bool]] = loop.create_future()
        proto.waiter = waiter
        timer = loop.call_later(
            self.timeout,
            lambda: waiter.done() or waiter.set_exception(HttpError(f"no response in {self.timeout:.0f} s")),
        )
        try:
            proto.transport.writelines(parts)
            status, body, keep_alive = await waiter
        except BaseException:
            self.close()  # the connection's state is unknown now
            raise
        finally:
            timer.cancel()
            proto.waiter = None
        if not keep_alive:
            self.close()
        return status, body

    def close(self) -> None:
        if self._proto is not None and self._proto.transport is not None:
            self._proto.transport.close()
        self._proto = None
