"""A hostile HTTP/1.1 server on loopback: a raw asyncio TCP server, so that it can write any bytes at any time
(framing attacks, encodings, trailers, 1xx floods, late and pipelined responses, resets, drips).

Each request is answered by `answer(request)` (an honest JSON reply: a canned one, or the real answer of an
upstream A2A agent the server fronts), then turned into what goes on the wire by the request's `Mode`, or
framed honestly (Content-Length, keep-alive) when it has none. The server logs every connection: the
requests that came on it, the bytes written to it, and when the client closed it, so that a test can assert
that a connection was never reused after an error and that idle connections are closed on time.

A mode is a function of the honest reply that returns the steps to play: bytes to write, a pause (a float,
seconds), `RESET` (abort with a TCP RST), `CLOSE` (a FIN), or an endless iterator of byte strings (a flood,
written until the client gives up). After the steps the server reads the connection's next request, unless
it closed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

RESET = "reset"
CLOSE = "close"


@dataclass(frozen=True)
class Later:
    """Bytes written on this connection just before the answer to its next request: from the client's side, a
    response that came late, after the next request went out."""

    data: bytes


Step = bytes | float | str | Later | Iterator[bytes]
Mode = Callable[["Reply"], list[Step]]


@dataclass
class Request:
    connection: int
    method: str
    path: str
    head: bytes
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    body: bytes
    status: int = 200
    content_type: bytes = b"application/json"

    def head(self, *headers: bytes, length: bool = True) -> bytes:
        lines = [b"HTTP/1.1 %d %s" % (self.status, b"OK" if self.status == 200 else b"X")]
        lines.append(b"Content-Type: " + self.content_type)
        if length:
            lines.append(b"Content-Length: %d" % len(self.body))
        lines.extend(headers)
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def framed(self, *headers: bytes) -> bytes:
        return self.head(*headers) + self.body


@dataclass
class Connection:
    index: int
    requests: list[Request] = field(default_factory=list)
    written: int = 0
    later: list[bytes] = field(default_factory=list)
    hostile: list[int] = field(default_factory=list)
    """Indexes (in `requests`) of the requests answered by a mode."""
    answered_at: float = 0.0
    closed_by_client_at: float | None = None
    open: bool = True


class HostileHttpServer:
    def __init__(
        self,
        answer: Callable[[Request], Awaitable[Reply]],
        mode_for: Callable[[Request], Mode | None] = lambda _: None,
    ) -> None:
        self.answer = answer
        self.mode_for = mode_for
        self.connections: list[Connection] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def requests(self) -> list[Request]:
        return sorted((r for c in self.connections for r in c.requests), key=lambda r: r.connection)

    def open_connections(self) -> list[Connection]:
        return [c for c in self.connections if c.open]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(BaseException):
                await task

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        connection = Connection(len(self.connections))
        self.connections.append(connection)
        try:
            await self._serve(connection, reader, writer)
        except asyncio.CancelledError:
            pass  # the server is closing
        finally:
            connection.open = False
            self._handlers.discard(task)
            writer.close()

    async def _serve(
        self, connection: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                request = await self._read_request(connection, reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                connection.closed_by_client_at = time.monotonic()
                return
            connection.requests.append(request)
            reply = await self.answer(request)
            mode = self.mode_for(request)
            steps: list[Step] = mode(reply) if mode is not None else [reply.framed()]
            if mode is not None:
                connection.hostile.append(len(connection.requests) - 1)
            steps = [*connection.later, *steps]
            connection.later.clear()
            if not await self._play(connection, writer, steps):
                return

    async def _read_request(self, connection: Connection, reader: asyncio.StreamReader) -> Request:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await reader.readexactly(length)
        method, path, _ = head.split(b" ", 2)
        return Request(connection.index, method.decode(), path.decode(), head, body)

    async def _play(self, connection: Connection, writer: asyncio.StreamWriter, steps: list[Step]) -> bool:
        """Write the steps; False when the connection ended (closed by us, or by the client meanwhile)."""
        try:
            for step in steps:
                if isinstance(step, Later):
                    connection.later.append(step.data)
                elif isinstance(step, bytes):
                    writer.write(step)
                    connection.written += len(step)
                    await writer.drain()
                elif isinstance(step, float | int):
                    await asyncio.sleep(step)
                elif step == RESET:
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return False
                elif step == CLOSE:
                    await asyncio.sleep(0.01)
                    writer.close()
                    return False
                else:
                    assert isinstance(step, Iterator)
                    for chunk in step:  # a flood: until the client closes the connection
                        writer.write(chunk)
                        connection.written += len(chunk)
                        await writer.drain()
                        await asyncio.sleep(0)  # the client's reads stay small; the loop goes on
                        if writer.is_closing():
                            return False
        except (ConnectionError, OSError):
            connection.closed_by_client_at = time.monotonic()
            return False
        connection.answered_at = time.monotonic()
        return True


@contextlib.asynccontextmanager
async def hostile_http(
    answer: Callable[[Request], Awaitable[Reply]], mode_for: Callable[[Request], Mode | None] = lambda _: None
) -> AsyncIterator[HostileHttpServer]:
    server = HostileHttpServer(answer, mode_for)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


# -- answers -----------------------------------------------------------------------------------------------


async def echo_rpc(request: Request) -> Reply:
    """A canned JSON-RPC answer to the request: its id, a Message in the request's context."""
    sent = request.json() or {}
    message = (sent.get("params") or {}).get("message") or {}
    result = {
        "message": {
            "messageId": "m-1",
            "contextId": message.get("contextId", "ctx"),
            "role": "ROLE_AGENT",
            "parts": [{"text": "hello from the agent"}],
        }
    }
    return Reply(json.dumps({"jsonrpc": "2.0", "id": sent.get("id"), "result": result}).encode())


def forward_to(upstream: str, client: httpx.AsyncClient) -> Callable[[Request], Awaitable[Reply]]:
    """Answers taken from a real agent at `upstream` (its status and body; the framing is ours)."""

    async def answer(request: Request) -> Reply:
        headers = {}
        for line in request.head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() in (b"content-type", b"a2a-version", b"x-a2a-extensions", b"accept"):
                headers[name.strip().decode()] = value.strip().decode()
        response = await client.request(
            request.method, upstream.rstrip("/") + request.path, content=request.body, headers=headers
        )
        return Reply(response.content, response.status_code)

    return answer


# -- modes ------------------------------------------------------------------------------------------------

BOMB_BYTES = 64 * 1024 * 1024
"""What the compressed bodies inflate to; compressed they are well within max_reply_bytes (64 KiB at most)."""


def compressed(data: bytes, wbits: int, padding: int = BOMB_BYTES) -> bytes:
    """`data` then `padding` spaces, compressed as a stream (the inflated bytes are never held here).
    wbits 31: gzip, 15: zlib (HTTP's "deflate")."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    out = [compressor.compress(data)]
    block = b" " * (1024 * 1024)
    for _ in range(padding // len(block)):
        out.append(compressor.compress(block))
    out.append(compressor.flush())
    return b"".join(out)


def gzip_bomb(reply: Reply) -> bytes:
    return compressed(reply.body, 31)


def deflate_bomb(reply: Reply) -> bytes:
    return compressed(reply.body, 15)


def chunked(body: bytes, size: int = 4096) -> bytes:
    return b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size]) for i in range(0, len(body), size)
    )


def trailers_gzip(reply: Reply) -> list[Step]:
    """The issue's high finding: a chunked body compressed, its encoding announced only in trailers."""
    bomb = compressed(gzip_bomb(reply), 31, padding=0)  # twice, as two trailers say: ~300 bytes
    trailer = b"Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n"
    return [
        reply.head(b"Transfer-Encoding: chunked", b"Trailer: Content-Encoding", length=False)
        + chunked(bomb)
        + b"0\r\n"
        + trailer
        + b"\r\n"
    ]


def trailer_other(reply: Reply) -> list[Step]:
    """A harmless trailer: read and ignored; the body is the body."""
    return [
        reply.head(b"Transfer-Encoding: chunked", length=False)
        + chunked(reply.body)
        + b"0\r\nX-Checksum: abc\r\n\r\n"
    ]


def encoded(name: bytes, body: Callable[[Reply], bytes]) -> Mode:
    def mode(reply: Reply) -> list[Step]:
        compressed = body(reply)
        return [Reply(compressed, reply.status).framed(b"Content-Encoding: " + name)]

    return mode


def late_second_response(reply: Reply) -> list[Step]:
    """The answer, then the same answer again once the next request is on its way (read as that request's
    answer by main 7a9739b)."""
    return [reply.framed(), Later(reply.framed())]


def late_while_idle(reply: Reply) -> list[Step]:
    """The answer, then 50 ms later the same answer again, arriving while the connection is idle."""
    return [reply.framed(), 0.05, reply.framed()]


def pipelined(extra: bytes) -> Mode:
    def mode(reply: Reply) -> list[Step]:
        return [reply.framed() + extra]

    return mode


def continue_flood(reply: Reply) -> list[Step]:
    """`100 Continue` without end, a hundred per write (each read holds a few of them, far below any bound:
    main 7a9739b restarted its byte count at each one)."""

    def flood() -> Iterator[bytes]:
        lines = b"HTTP/1.1 100 Continue\r\n\r\n" * 100
        while True:
            yield lines

    return [flood()]


def close_delimited_reset(reply: Reply) -> list[Step]:
    """A body delimited by the end of the connection, the whole JSON sent, then a reset instead of a close:
    the body may have been longer; it is not complete."""
    head = reply.head(b"Connection: close", length=False)
    return [head + reply.body + b"    ", 0.05, RESET]


def close_delimited_fin(reply: Reply) -> list[Step]:
    """The honest form of the same: the body ends with the connection (FIN)."""
    return [reply.head(b"Connection: close", length=False) + reply.body, CLOSE]


def raw(data: bytes, *then: Step) -> Mode:
    def mode(reply: Reply) -> list[Step]:
        return [data, *then]

    return mode


def with_head(
    *headers: bytes,
    body: Callable[[Reply], bytes] = lambda r: r.body,
    length: bool = True,
    then: tuple[Step, ...] = (),
) -> Mode:
    def mode(reply: Reply) -> list[Step]:
        return [reply.head(*headers, length=length) + body(reply), *then]

    return mode


def drip(reply: Reply) -> list[Step]:
    """One byte every 20 ms: only the turn deadline ends it."""
    wire = reply.framed()
    return [step for byte in wire for step in (bytes([byte]), 0.02)]


def endless_body(reply: Reply) -> list[Step]:
    def spaces() -> Iterator[bytes]:
        while True:
            yield b" " * 65536

    return [reply.head(b"Connection: close", length=False) + reply.body, spaces()]


_BIG_HEADER = b"X-Big: " + b"a" * (1024 * 1024)
_MANY_HEADERS = b"\r\n".join(b"X-%d: v" % i for i in range(100_000))
# Built once, at import: a test measuring the client's memory does not count the server building them.


def oversized_header(reply: Reply) -> list[Step]:
    return [reply.head(_BIG_HEADER) + reply.body]


def many_headers(reply: Reply) -> list[Step]:
    return [reply.head(_MANY_HEADERS) + reply.body]
