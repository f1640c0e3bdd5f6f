"""HTTP/1.1 to white agents: an httpx transport on asyncio protocols and httptools (llhttp, in C).

Why not httpx's own transport: httpcore on anyio with h11 (pure Python) cost 0.66-0.68 ms of CPU per request
(1.57-1.66 ms with 32 requests in flight) on this project's 2-core machine, against 0.12-0.16 ms for this one
(`python -m bench.http_client`): it was about a third of all the green agent spent on a turn, and more than
the white agent's server spent answering it. This transport does what the white-agent
clients need and nothing more:

* one request at a time per connection; connections the server keeps open are reused for the same origin,
  at most `max_idle` of them kept idle, each for at most `keepalive_s`;
* every new connection goes through `EgressConnector` (egress.py): the host is resolved there, every address
  is judged by the policy, and the connection is made to a judged address; TLS uses the URL's host name
  (SNI and certificate check); no proxies, no unix sockets;
* a response is read in full into memory, never past `max_response_bytes` (status line, headers and body
  together), with identity encoding only (we ask for it; a compressed body could inflate without bound);
* timeouts come from the request (httpx's `Timeout`): connect, write (the request handed to the socket) and
  read (the whole response, counted from the request sent: a backstop, the per-turn deadline is enforced by
  the conversation);
* failures are httpx's exceptions, so the A2A SDK and the client read them as from httpx's own transport: a
  connection never made is `ConnectError` / `ConnectTimeout` (the only case in which a message may be sent
  again), a server that closed without answering is `RemoteProtocolError`.

Cookies, redirects and authentication do not exist at this level: `DirectClient` hands each request straight
to the transport.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httptools
import httpx

from green_agent.errors import AgentProtocolError
from green_agent.white_agent.egress import EgressConnector

Origin = tuple[str, str, int]
BodyCheck = Callable[[bytes], None]
"""Called with every complete response body before it is returned; raises to refuse it."""

_FORBIDDEN_IN_HEADERS = (b"\r", b"\n", b"\0")


@dataclass(frozen=True)
class TransportLimits:
    max_response_bytes: int
    """The whole response (status line, headers, body); past it the connection is dropped."""
    max_idle: int
    """Idle connections kept for reuse, all origins together."""
    keepalive_s: float = 5.0
    """An idle connection older than this is closed instead of reused."""


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: sends a request, parses its response with llhttp."""

    def __init__(self, limits: TransportLimits) -> None:
        self._limits = limits
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self._out_of_turn = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._writing_paused = False
        self._start_response()

    def _start_response(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self._received = 0
        self._headers_done = False
        self._framed = False  # Content-Length or chunked: the end is known without the connection closing
        self._keep_alive = False
        self.complete = False

    # -- asyncio.Protocol ----------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self.complete:  # a server talking out of turn: not reused
            self._out_of_turn = True
            self.close()
            return
        self._received += len(data)
        if self._received > self._limits.max_response_bytes:
            self._fail(
                AgentProtocolError(
                    f"the agent's response is larger than {self._limits.max_response_bytes} bytes "
                    "(max_reply_bytes)"
                )
            )
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("the server switched protocols, which was not asked for"))
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed HTTP response: {exc}"))

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(httpx.WriteError("the connection closed while sending"))
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._framed:
            self._finish()  # a body delimited by the end of the connection (HTTP/1.0 style)
        elif not self._received:
            self._fail(httpx.RemoteProtocolError("Server disconnected without sending a response."))
        else:
            self._fail(httpx.RemoteProtocolError("the server closed the connection mid-response"))

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- llhttp callbacks ----------------------------------------------------------------------------------

    # Bytes after the end of the response, in the same read, parse as a next message: they are ignored and
    # the connection is not reused.

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.complete:
            self._out_of_turn = True
            return
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.status = self._parser.get_status_code()
        self._keep_alive = bool(self._parser.should_keep_alive())  # llhttp's answer is reliable only here
        self._headers_done = True
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
                encoding = value.decode("latin-1")[:40]
                self._fail(
                    AgentProtocolError(f"the agent sent a {encoding!r}-encoded body; only identity is read")
                )
                return
            if lowered in (b"content-length", b"transfer-encoding"):
                self._framed = True

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.complete:
            return
        if 100 <= self.status < 200:  # informational (100 Continue): the real response follows
            self._start_response()
            return
        self._finish()

    # -- used by the transport -----------------------------------------------------------------------------

    def _finish(self) -> None:
        self.complete = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    @property
    def reusable(self) -> bool:
        if not self.complete or self.closed or self._out_of_turn:
            return False
        return self._keep_alive

    async def exchange(self, head: bytes, body: bytes, timeouts: dict[str, float | None]) -> None:
        """Send a request (`head`, then `body`) and wait until its response is complete (or failed). The body
        is the request's own bytes, written as they are: no copy of it waits here with the request."""
        assert self._transport is not None
        loop = asyncio.get_running_loop()
        self._start_response()
        self._waiter = waiter = loop.create_future()
        try:
            self._transport.write(head)
            self._transport.write(body)
            if self._writing_paused:
                self._drained = loop.create_future()
                try:
                    async with asyncio.timeout(timeouts.get("write")):
                        await self._drained
                except TimeoutError as exc:
                    raise httpx.WriteTimeout("the request could not be sent in time") from exc
            read_timeout = timeouts.get("read")
            timer = None
            if read_timeout is not None:
                timer = loop.call_later(read_timeout, self._read_timed_out, waiter)
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
        except BaseException:
            self.close()  # cancelled or failed mid-exchange: the connection's state is unknown
            raise
        finally:
            self._waiter = None
            self._drained = None

    def _read_timed_out(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            self._fail(httpx.ReadTimeout("no complete response within the read timeout"))


class AgentTransport(httpx.AsyncBaseTransport):
    """httpx transport for the white-agent clients (module docstring)."""

    def __init__(
        self,
        connector: EgressConnector,
        limits: TransportLimits,
        *,
        ssl_context: Callable[[], ssl.SSLContext],
        check_body: BodyCheck | None = None,
        large_body_bytes: int = 8 * 1024,
    ) -> None:
        self._connector = connector
        self._limits = limits
        self._ssl_context = ssl_context
        self._check_body = check_body
        self._large_body_bytes = large_body_bytes
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._idle_count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https")
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        head = _serialize_head(request)
        body = await request.aread()
        connection = self._take_idle(origin) or await self._connect(origin, timeouts.get("connect"))
        await connection.exchange(head, body, timeouts)
        body = b"".join(connection.body)
        status, headers = connection.status, connection.headers
        if connection.reusable:
            self._keep(origin, connection)
        else:
            connection.close()
        if self._check_body is not None:
            self._check_body(body)
        if len(body) > self._large_body_bytes:
            # The SDK parses the body as this returns (~3 ms at the bounds): a loop callback of its own (the
            # loop rule, client.py). Small bodies parse in well under a millisecond and go on at once.
            await asyncio.sleep(0)
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
        self._idle_count = 0

    def _take_idle(self, origin: Origin) -> _Connection | None:
        connections = self._idle.get(origin)
        now = time.monotonic()
        while connections:
            connection = connections.pop()  # the most recently used: the least likely to be closed by now
            self._idle_count -= 1
            if not connections:
                del self._idle[origin]
            if not connection.closed and now - connection.idle_since <= self._limits.keepalive_s:
                return connection
            connection.close()
        return None

    def _keep(self, origin: Origin, connection: _Connection) -> None:
        connection.idle_since = time.monotonic()
        self._idle.setdefault(origin, deque()).append(connection)
        self._idle_count += 1
        while self._idle_count > self._limits.max_idle:  # drop the oldest idle connection
            oldest_origin = min(self._idle, key=lambda o: self._idle[o][0].idle_since)
            oldest = self._idle[oldest_origin].popleft()
            if not self._idle[oldest_origin]:
                del self._idle[oldest_origin]
            self._idle_count -= 1
            oldest.close()

    async def _connect(self, origin: Origin, timeout: float | None) -> _Connection:  # noqa: ASYNC109
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        tls = self._ssl_context() if scheme == "https" else None

        async def open_one(address: str) -> _Connection:
            _, connection = await loop.create_connection(
                lambda: _Connection(self._limits),
                address,
                port,
                ssl=tls,
                server_hostname=host if tls is not None else None,
            )
            return connection

        try:
            async with asyncio.timeout(timeout):
                return await self._connector.connect(host, port, open_one)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout("the connection was not made in time") from exc


def _serialize_head(request: httpx.Request) -> bytes:
    """The request line and headers as HTTP/1.1 bytes (the body follows as it is). Header values come from
    requesters (agent headers): a CR, LF or NUL would let one header become several, so such a request is
    refused rather than sent."""
    request.headers["Accept-Encoding"] = "identity"
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if any(c in name or c in value for c in _FORBIDDEN_IN_HEADERS):
            raise httpx.LocalProtocolError("a header name or value holds a line break or NUL")
        lines.append(b"%s: %s\r\n" % (name, value))
    if any(c in request.url.raw_path for c in (*_FORBIDDEN_IN_HEADERS, b" ")):
        raise httpx.LocalProtocolError("the request target holds a space, line break or NUL")
    lines.append(b"\r\n")
    return b"".join(lines)


class DirectClient(httpx.AsyncClient):
    """An httpx client that hands each request straight to its transport (the A2A SDK wants an httpx
    client). It keeps no cookies (an agent's cookie must not follow into another assessment sharing this
    client), follows no redirects and runs no authentication flow or event hooks: what the SDK's requests
    need, at a fraction of the CPU of `httpx.AsyncClient.send`."""

    def __init__(
        self, transport: AgentTransport, *, timeout: httpx.Timeout | float, parsed_urls: int = 128
    ) -> None:
        super().__init__(transport=transport, timeout=timeout, trust_env=False)
        self._direct = transport
        # The agent's endpoint URL repeats on every message: kept parsed, at most `parsed_urls` of them
        # (least recently used out first).
        self._parsed = functools.lru_cache(maxsize=parsed_urls)(_absolute_url)

    async def send(
        self,
        request: httpx.Request,
        *,
        stream: bool = False,
        auth: Any = httpx.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx.USE_CLIENT_DEFAULT,
    ) -> httpx.Response:
        if self.is_closed:
            raise RuntimeError("the client is closed")
        return await self._direct.handle_async_request(request)

    def build_request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: Any = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        params: Any = None,
        headers: Any = None,
        cookies: Any = None,
        timeout: Any = httpx.USE_CLIENT_DEFAULT,
        extensions: Any = None,
    ) -> httpx.Request:
        """The SDK's requests (an absolute URL, headers, a JSON body or none) without re-parsing the agent's
        URL every time; anything else takes httpx's general path."""
        if any(v is not None for v in (data, files, params, cookies, extensions)):
            return super().build_request(
                method,
                url,
                content=content,
                data=data,
                files=files,
                json=json,
                params=params,
                headers=headers,
                cookies=cookies,
                timeout=timeout,
                extensions=extensions,
            )
        merged = self.headers.copy()
        if headers is not None:
            merged.update(headers)
        timeouts = self.timeout if timeout is httpx.USE_CLIENT_DEFAULT else httpx.Timeout(timeout)
        return httpx.Request(
            method,
            self._parsed(url) if isinstance(url, str) else url,
            content=content,
            json=json,
            headers=merged,
            extensions={"timeout": timeouts.as_dict()},
        )


def _absolute_url(url: str) -> httpx.URL:
    parsed = httpx.URL(url)
    if parsed.is_relative_url:
        raise httpx.InvalidURL(f"{url!r} is not an absolute URL")
    return parsed
