"""A TCP proxy on loopback that a test can cut or stall: the database link of a service under test.

* `cut()`: every open connection is closed at once and new ones are closed as soon as they arrive (the
  database looks down: connection refused/reset) until `restore()`.
* `stall()`: connections stay open but no byte moves in either direction, and new connections are accepted
  but get no answer (a frozen link or server) until `restore()`, when buffered bytes flow again.
* `refuse()`: the listening socket is closed as well, so that new connections are refused (ECONNREFUSED, a
  server that is not running) until `listen_again()` listens on the same port again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

CHUNK = 65536


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()
        self._open = asyncio.Event()  # bytes flow while set
        self._open.set()
        self._cut = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._open.set()
        for link in list(self._links):
            link.cancel()
        for link in list(self._links):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await link
        if self._server is not None:
            await self._server.wait_closed()

    def cut(self) -> None:
        self._cut = True
        for link in list(self._links):
            link.cancel()

    def stall(self) -> None:
        self._open.clear()

    async def refuse(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def restore(self) -> None:
        self._cut = False
        self._open.set()

    async def listen_again(self) -> None:
        """After `refuse()`: listen on the same port again, and let bytes flow."""
        self.restore()
        if self._server is None:
            await self.start()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            writer.close()
            return
        link = asyncio.current_task()
        assert link is not None
        self._links.add(link)
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            await self._open.wait()
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
            async with asyncio.TaskGroup() as group:
                group.create_task(self._pipe(reader, upstream_writer))
                group.create_task(self._pipe(upstream_reader, writer))
        except (OSError, ExceptionGroup, asyncio.CancelledError):
            pass  # one side closed, or the test cut the link
        finally:
            self._links.discard(link)
            for w in (writer, upstream_writer):
                if w is not None:
                    w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(CHUNK):
            await self._open.wait()
            writer.write(data)
            await writer.drain()
        raise ConnectionResetError("peer closed")  # ends the other direction too


@contextlib.asynccontextmanager
async def tcp_proxy(target_host: str, target_port: int) -> AsyncIterator[TcpProxy]:
    proxy = TcpProxy(target_host, target_port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
