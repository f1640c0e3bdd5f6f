"""HTTP/1.1 to white agents: an httpx transport on asyncio protocols and httptools (llhttp, in C).

Why not httpx's own transport: httpcore on anyio with h11 (pure Python) cost 0.66-0.68 ms of CPU per request
(1.57-1.66 ms with 32 requests in flight) on this project's 2-core machine, against 0.12-0.16 ms for this one
(`python -m bench.http_client`): it was about a third of all the green agent spent on a turn, and more than
the white agent's server spent answering it. Why not aiohttp (issue 24, docs/dependencies.md): it costs
~0.1 ms more per request, and it reuses a connection holding a late response, reads 1xx floods without a
bound and takes a body cut by a reset as complete, none of which its public API lets a client change. llhttp
parses the framing; this module decides what is accepted, and tests/engine/test_http_hostile.py holds a
hostile server case for each rule below. This transport does what the white-agent clients need and nothing
more:

* one request at a time per connection; a connection the server keeps open is reused only for the same
  origin and the same *affinity* (one trial: `Expectation.affinity`), so a response that comes late can only
  ever land in the trial whose agent sent it; at most `max_idle` connections are kept idle, each closed by a
  timer `keepalive_s` after its last response;
* every new connection goes through `EgressConnector` (egress.py): the host is resolved there, every address
  is judged by the policy, and the connection is made to a judged address; TLS uses the URL's host name
  (SNI and certificate check); no proxies, no unix sockets;
* a response is read in full into memory, never past `max_response_bytes`: status line, headers, trailers
  and body, and every informational (1xx) response before it, all count; an event stream too (one turn's
  answer: the agent's server ends it when the turn's task is done or waits for input), handed on whole;
* identity bodies only: a Content-Encoding other than identity, in the headers or in the trailers, and a
  transfer coding other than chunked are refused (a compressed body could inflate without bound); trailers
  never reach the response's headers, so nothing can decode the body by them;
* a body delimited by the end of the connection is complete only when the connection ended cleanly: a reset
  is an error;
* a connection is closed, never reused, after any error, any response that is not 2xx, and any byte the
  server sends out of turn (after the end of a response, or while the connection is idle);
* each reply is matched to its request before the connection is kept (`Expectation.check`, see
  matching.py): a mismatch closes the connection and fails the request;
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
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import httptools
import httpx
import msgspec

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.egress import EgressConnector

Origin = tuple[str, str, int]
PoolKey = tuple[Origin, Hashable]
"""Connections are reused for one origin and one affinity (None: requests outside any trial, e.g. cards)."""
BodyCheck = Callable[[bytes], None]
"""Called with every complete response body of a request without an expectation (a card fetch) before it is
returned; raises to refuse it. A trial's replies are bounded by their expectation's check instead."""

_FORBIDDEN_IN_HEADERS = (b"\r", b"\n", b"\0")
_IDENTITY = (b"", b"identity")


class Expectation(Protocol):
    """What the reply to one request must match (built by `DirectClient`'s matcher, matching.py)."""

    @property
    def affinity(self) -> Hashable:
        """Requests with the same affinity may share a connection; others never do."""

    async def check(self, status: int, body: bytes, content_type: str, framing: int) -> Reading | None:
        """Raise `AgentProtocolError` when the reply is not the answer to the request, or past a bound; return
        how it was read (its JSON is handed to the SDK, so it is not parsed twice), or None to leave the body
        as it is. With an expectation, `check` applies the reply bounds, not the transport's `check_body`;
        `framing` is the response's bytes that were not its body (headers, 1xx responses, chunk sizes)."""


class Reading(Protocol):
    @property
    def parsed(self) -> Any:
        """The reply's JSON, for `response.json()`; None if `content` replaces the body."""

    @property
    def content(self) -> bytes | None:
        """A body to hand on instead of the one received (an event stream, re-encoded), or None."""


Matcher = Callable[[Any], "Expectation | None"]
"""From a request's JSON payload (None when it has none) to what its reply must match, or None."""


@dataclass(frozen=True)
class TransportLimits:
    max_response_bytes: int
    """The whole response (informational responses, status line, headers, trailers, body); past it the
    connection is dropped."""
    max_idle: int
    """Idle connections kept for reuse, all origins together."""
    keepalive_s: float = 5.0
    """An idle connection is closed this long after its last response."""
    bound: str = "max_reply_bytes"
    """The operator setting(s) `max_response_bytes` comes from, named in the error."""


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: sends a request, parses its response with llhttp."""

    def __init__(self, limits: TransportLimits) -> None:
        self._limits = limits
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self._out_of_turn = False
        self.idle_timer: asyncio.TimerHandle | None = None
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._writing_paused = False
        self._received = 0  # every byte of the current exchange, informational responses included
        self._start_response()

    def _start_response(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
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
                    f"({self._limits.bound})"
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
        self.closed = True  # if idle, its timer still takes it out of the pool
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(httpx.WriteError("the connection closed while sending"))
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._framed and exc is None:
            self._finish()  # a body delimited by the end of the connection (HTTP/1.0 style), ended cleanly
        elif self._headers_done and not self._framed:
            self._fail(
                httpx.RemoteProtocolError(f"the connection was reset before the end of the body ({exc})")
            )
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

    # Bytes after the end of the response, in the same read, parse as a next message: it is not read, and
    # the connection is not reused.

    def on_message_begin(self) -> None:
        if self.complete:
            self._out_of_turn = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.complete:
            return
        if not self._headers_done:
            self.headers.append((name, value))
        elif name.lower() == b"content-encoding" and value.strip().lower() not in _IDENTITY:
            self._refuse_encoding(value, "in a trailer")
        # Any other trailer is read and dropped: trailers never change how the body is read.

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.status = self._parser.get_status_code()
        self._keep_alive = bool(self._parser.should_keep_alive())  # llhttp's answer is reliable only here
        self._headers_done = True
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"content-encoding" and value.strip().lower() not in _IDENTITY:
                self._refuse_encoding(value, "")
                return
            if lowered == b"transfer-encoding" and value.strip().lower() != b"chunked":
                coding = value.decode("latin-1")[:40]
                self._fail(AgentProtocolError(f"the agent sent the transfer coding {coding!r}; only chunked"))
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
            self._start_response()  # its bytes stay counted: a flood of them is bounded too
            return
        self._finish()

    # -- used by the transport -----------------------------------------------------------------------------

    def _refuse_encoding(self, value: bytes, where: str) -> None:
        encoding = value.decode("latin-1")[:40]
        place = f" {where}" if where else ""
        self._fail(
            AgentProtocolError(f"the agent sent a {encoding!r}-encoded body{place}; only identity is read")
        )

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
    def received(self) -> int:
        """Bytes of the current exchange so far, informational responses included."""
        return self._received

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
        self._received = 0
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


class _ParsedResponse(httpx.Response):
    """A response whose JSON was parsed when it was matched to its request: `json()` returns that."""

    parsed: Any = None

    def json(self, **kwargs: Any) -> Any:
        return super().json(**kwargs) if kwargs else self.parsed


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
        self._idle: dict[PoolKey, deque[_Connection]] = {}
        self._idle_count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https")
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        expectation: Expectation | None = request.extensions.get("expect")
        key: PoolKey = (origin, None if expectation is None else expectation.affinity)
        head = _serialize_head(request)
        body = await request.aread()
        connection = self._take_idle(key) or await self._connect(origin, timeouts.get("connect"))
        await connection.exchange(head, body, timeouts)
        try:
            body = b"".join(connection.body)
            status = connection.status
            headers = [(n, v) for n, v in connection.headers if n.lower() != b"content-encoding"]
            if expectation is None and self._check_body is not None:
                self._check_body(body)
            if len(body) > self._large_body_bytes:
                # The reply is parsed next (~3 ms at the bounds): a loop callback of its own (the loop rule,
                # client.py). Small bodies parse in well under a millisecond and go on at once.
                await asyncio.sleep(0)
            reading = None
            if expectation is not None:
                content_type = next((v for n, v in headers if n.lower() == b"content-type"), b"")
                framing = connection.received - len(body)
                reading = await expectation.check(status, body, content_type.decode("latin-1"), framing)
        except BaseException:
            connection.close()
            raise
        if connection.reusable and 200 <= status < 300:
            self._keep(key, connection)
        else:
            connection.close()
        if reading is None:
            return httpx.Response(status, headers=headers, content=body, request=request)
        if reading.content is not None:  # the body handed on is not the one received: its framing goes
            kept = [(n, v) for n, v in headers if n.lower() not in (b"content-length", b"transfer-encoding")]
            return httpx.Response(status, headers=kept, content=reading.content, request=request)
        response = _ParsedResponse(status, headers=headers, content=body, request=request)
        response.parsed = reading.parsed
        return response

    def forget(self, affinity: Hashable) -> None:
        """Close the idle connections of `affinity` (its trial is over: nothing else may use them)."""
        for key in [k for k in self._idle if k[1] == affinity]:
            for connection in self._idle.pop(key):
                self._idle_count -= 1
                connection.close()

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
        self._idle_count = 0

    def _take_idle(self, key: PoolKey) -> _Connection | None:
        connections = self._idle.get(key)
        while connections:
            connection = connections.pop()  # the most recently used: the least likely to be closed by now
            self._idle_count -= 1
            if not connections:
                del self._idle[key]
            if connection.idle_timer is not None:
                connection.idle_timer.cancel()
                connection.idle_timer = None
            if not connection.closed:
                return connection
        return None

    def _keep(self, key: PoolKey, connection: _Connection) -> None:
        loop = asyncio.get_running_loop()
        connection.idle_since = loop.time()
        connection.idle_timer = loop.call_later(self._limits.keepalive_s, self._expire, key, connection)
        self._idle.setdefault(key, deque()).append(connection)
        self._idle_count += 1
        while self._idle_count > self._limits.max_idle:  # drop the oldest idle connection
            oldest_key = min(self._idle, key=lambda k: self._idle[k][0].idle_since)
            self._drop(oldest_key, self._idle[oldest_key][0])

    def _expire(self, key: PoolKey, connection: _Connection) -> None:
        """Its keep-alive time is over: closed now, whether or not another request comes."""
        connection.idle_timer = None
        self._drop(key, connection)

    def _drop(self, key: PoolKey, connection: _Connection) -> None:
        connections = self._idle.get(key)
        if connections is not None and connection in connections:
            connections.remove(connection)
            self._idle_count -= 1
            if not connections:
                del self._idle[key]
        connection.close()

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
    need, at a fraction of the CPU of `httpx.AsyncClient.send`. `matcher` says what each request's reply must
    match (matching.py); the transport checks it before the connection is reused."""

    def __init__(
        self,
        transport: AgentTransport,
        *,
        timeout: httpx.Timeout | float,
        parsed_urls: int = 128,
        matcher: Matcher | None = None,
    ) -> None:
        super().__init__(transport=transport, timeout=timeout, trust_env=False)
        self._direct = transport
        self._matcher = matcher
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
        URL every time; anything else takes httpx's general path. Either way the request carries what its
        reply must match (`extensions["expect"]`)."""
        expectation = self._matcher(json) if self._matcher is not None else None
        if any(v is not None for v in (data, files, params, cookies, extensions)):
            request = super().build_request(
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
            if expectation is not None:
                request.extensions["expect"] = expectation
            return request
        merged = self.headers.copy()
        if headers is not None:
            merged.update(headers)
        timeouts = self.timeout if timeout is httpx.USE_CLIENT_DEFAULT else httpx.Timeout(timeout)
        tags: dict[str, Any] = {"timeout": timeouts.as_dict()}
        if expectation is not None:
            tags["expect"] = expectation
        if json is not None and content is None:
            # The bytes httpx's `json=` makes (compact, UTF-8), encoded by msgspec: 5-10 times faster than
            # `json.dumps`, and a task's first message carries the whole policy (telecom's: 31 KB, 149 against
            # 14 us). Copied out of the encoder's buffer, whose slack (up to half the size again) would
            # otherwise stay with the request while its answer is awaited (+51 KiB per waiting telecom trial).
            buffer = bytearray()
            _JSON_BODY.encode_into(json, buffer)
            content = bytes(buffer)
            merged["Content-Type"] = "application/json"
        return httpx.Request(
            method,
            self._parsed(url) if isinstance(url, str) else url,
            content=content,
            headers=merged,
            extensions=tags,
        )


_JSON_BODY = msgspec.json.Encoder()


def _absolute_url(url: str) -> httpx.URL:
    parsed = httpx.URL(url)
    if parsed.is_relative_url:
        raise httpx.InvalidURL(f"{url!r} is not an absolute URL")
    return parsed
