"""The white-agent HTTP transport (http1.py) against a hostile HTTP server (tests/support/hostile_http.py):
every framing attack of issue 24 and the cases around it, one request each, then an honest request on the
same client.

For each mode: the Python memory allocated while the hostile request ran (tracemalloc's peak) stays within a
small multiple of the reply bound, the request fails fast with the expected error (or, for the harmless
forms, is read as it should be), the connection it came on is never used again after an error or any
out-of-turn byte, and the next request is answered correctly. Requests are made as a trial's
(`matching.expecting`), as the conversations make them.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.egress import EgressConnector, EgressPolicy
from green_agent.white_agent.http1 import AgentTransport, DirectClient, TransportLimits
from green_agent.white_agent.matching import Trial, expectation_for, expecting
from tests.support import hostile_http as h

MAX_RESPONSE_BYTES = 128 * 1024
MEMORY_BOUND = 8 * 1024 * 1024
"""Peak Python allocations while one hostile request runs (server included): the compressed bodies inflate to
64 MiB, the floods are endless."""
FAST_S = 3.0
"""A hostile request must fail within this (the read timeout is 10 s; main took it for the floods)."""


@dataclass(frozen=True)
class Case:
    mode: h.Mode
    error: type[Exception] | None
    """None: the reply is read, but the connection must not be reused unless `reusable`."""
    match: str = ""
    reusable: bool = False


def framing(headers: tuple[bytes, ...], body: bytes) -> h.Mode:
    return h.raw(b"HTTP/1.1 200 OK\r\n" + b"".join(x + b"\r\n" for x in headers) + b"\r\n" + body)


CHUNKED = (b"Transfer-Encoding: chunked",)
CASES: dict[str, Case] = {
    # -- issue 24's findings ---------------------------------------------------------------------------------
    "trailers with Content-Encoding gzip": Case(
        h.trailers_gzip, AgentProtocolError, "'gzip'-encoded body in a trailer"
    ),
    "gzip body": Case(h.encoded(b"gzip", h.gzip_bomb), AgentProtocolError, "'gzip'-encoded body"),
    "deflate body": Case(h.encoded(b"deflate", h.deflate_bomb), AgentProtocolError, "'deflate'-encoded"),
    "identity then gzip": Case(h.encoded(b"identity, gzip", h.gzip_bomb), AgentProtocolError, "encoded body"),
    "gzip transfer coding": Case(
        h.with_head(
            b"Transfer-Encoding: gzip, chunked", length=False, body=lambda r: h.chunked(h.gzip_bomb(r))
        ),
        AgentProtocolError,
        "transfer coding 'gzip, chunked'",
    ),
    "pipelined bare status line": Case(h.pipelined(b"HTTP/1.1 200 OK\r\n"), None),
    "pipelined status line and a header": Case(
        h.pipelined(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), None
    ),
    "pipelined second response": Case(h.pipelined(h.Reply(b'{"stale": true}').framed()), None),
    "late response while idle": Case(h.late_while_idle, None),
    "100 Continue flood": Case(h.continue_flood, AgentProtocolError, r"larger than \d+ bytes"),
    "close-delimited body cut by a reset": Case(h.close_delimited_reset, httpx.RemoteProtocolError, "reset"),
    # -- the framing around them -----------------------------------------------------------------------------
    "harmless trailer": Case(h.trailer_other, None, reusable=True),
    "close-delimited body ended cleanly": Case(h.close_delimited_fin, None),
    "one 100 Continue, then the answer": Case(
        lambda r: [b"HTTP/1.1 100 Continue\r\n\r\n" + r.framed()], None, reusable=True
    ),
    "chunk size not hex": Case(
        framing(CHUNKED, b"zz\r\nabc\r\n0\r\n\r\n"), httpx.RemoteProtocolError, "chunk size"
    ),
    "chunk size overflowing": Case(
        framing(CHUNKED, b"fffffffffffffffffffff\r\nabc\r\n0\r\n\r\n"), httpx.RemoteProtocolError, "malformed"
    ),
    "chunk longer than its size": Case(
        framing(CHUNKED, b"2\r\nabcdef\r\n0\r\n\r\n"), httpx.RemoteProtocolError, "malformed"
    ),
    "chunk size past the bound": Case(
        h.with_head(*CHUNKED, length=False, body=lambda r: b"fffffff\r\n" + b"a" * (MAX_RESPONSE_BYTES + 1)),
        AgentProtocolError,
        r"larger than \d+ bytes",
    ),
    "chunked body cut by a close": Case(
        h.raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", h.CLOSE),
        httpx.RemoteProtocolError,
        "mid-response",
    ),
    "Content-Length and chunked": Case(
        h.with_head(*CHUNKED, body=lambda r: h.chunked(r.body)),
        httpx.RemoteProtocolError,
        "Transfer-Encoding",
    ),
    "duplicate Content-Length": Case(
        h.with_head(b"Content-Length: 3"), httpx.RemoteProtocolError, "Duplicate"
    ),
    "same Content-Length twice": Case(
        lambda r: [r.head(b"Content-Length: %d" % len(r.body)) + r.body],
        httpx.RemoteProtocolError,
        "Duplicate",
    ),
    "negative Content-Length": Case(
        framing((b"Content-Length: -1",), b"{}"), httpx.RemoteProtocolError, "malformed"
    ),
    "Content-Length past the bound": Case(
        framing((b"Content-Length: 99999999999",), b"a" * (MAX_RESPONSE_BYTES + 1)),
        AgentProtocolError,
        "larger than",
    ),
    "body cut by a close": Case(
        h.raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", h.CLOSE),
        httpx.RemoteProtocolError,
        "mid-response",
    ),
    "oversized header": Case(h.oversized_header, AgentProtocolError, r"larger than \d+ bytes"),
    "100,000 headers": Case(h.many_headers, AgentProtocolError, r"larger than \d+ bytes"),
    "header with a NUL": Case(
        framing((b"X-A: a\0b", b"Content-Length: 2"), b"{}"), httpx.RemoteProtocolError, "malformed"
    ),
    "obsolete line folding": Case(
        framing((b"X-A: a", b" folded", b"Content-Length: 2"), b"{}"), httpx.RemoteProtocolError, "malformed"
    ),
    "not HTTP": Case(h.raw(b"SSH-2.0-OpenSSH_9.6\r\n"), httpx.RemoteProtocolError, "malformed"),
    "HTTP/2 preface": Case(
        h.raw(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), httpx.RemoteProtocolError, "malformed"
    ),
    "switching protocols": Case(
        h.raw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
        httpx.RemoteProtocolError,
        "switched protocols",
    ),
    "endless close-delimited body": Case(h.endless_body, AgentProtocolError, r"larger than \d+ bytes"),
    "reset before any byte": Case(
        h.raw(b"", h.RESET), httpx.RemoteProtocolError, "without sending a response"
    ),
    "reset mid-headers": Case(
        h.raw(b"HTTP/1.1 200 OK\r\nContent-Le", 0.05, h.RESET), httpx.RemoteProtocolError, "mid-response"
    ),
}


def make_client(*, keepalive_s: float = 5.0, read_s: float = 10.0) -> DirectClient:
    transport = AgentTransport(
        EgressConnector(EgressPolicy()),
        TransportLimits(max_response_bytes=MAX_RESPONSE_BYTES, max_idle=4, keepalive_s=keepalive_s),
        ssl_context=lambda: pytest.fail("no TLS here"),
    )
    return DirectClient(transport, timeout=httpx.Timeout(5.0, read=read_s), matcher=expectation_for)


def rpc(request_id: str, context_id: str = "ctx-A") -> dict[str, object]:
    message = {
        "messageId": request_id,
        "contextId": context_id,
        "role": "ROLE_USER",
        "parts": [{"text": "hi"}],
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {"message": message}}


async def send(http: DirectClient, url: str, request_id: str, context_id: str = "ctx-A") -> httpx.Response:
    with expecting(Trial(context_id)):
        return await http.post(url, json=rpc(request_id, context_id))


@asynccontextmanager
async def first_request_hostile(mode: h.Mode) -> AsyncIterator[h.HostileHttpServer]:
    played: list[bool] = []

    def mode_for(request: h.Request) -> h.Mode | None:
        if played:
            return None
        played.append(True)
        return mode

    async with h.hostile_http(h.echo_rpc, mode_for) as server:
        yield server


@pytest.mark.parametrize("name", list(CASES))
async def test_a_hostile_response_is_bounded_charged_and_its_connection_never_reused(name: str) -> None:
    case = CASES[name]
    async with first_request_hostile(case.mode) as server, make_client() as http:
        tracemalloc.start()
        started = time.monotonic()
        try:
            if case.error is None:
                reply = await send(http, server.url, "r1")
                assert reply.json()["id"] == "r1"
                assert reply.json()["result"]["message"]["parts"] == [{"text": "hello from the agent"}]
            else:
                with pytest.raises(case.error, match=case.match or None):
                    await send(http, server.url, "r1")
            elapsed = time.monotonic() - started
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert elapsed < FAST_S, elapsed
        assert peak < MEMORY_BOUND, peak
        await asyncio.sleep(0.1)  # a late response arrives meanwhile
        honest = await send(http, server.url, "r2")
        assert honest.json()["id"] == "r2"
    hostile_connection = server.connections[0]
    assert len(hostile_connection.requests) == (2 if case.reusable else 1)
    if not case.reusable:
        assert server.requests[-1].connection != 0


async def test_a_late_response_lands_in_its_own_trial_and_is_refused_there() -> None:
    """The response comes after the next request went out (main read it as that request's answer): the next
    request of the same trial refuses it (another JSON-RPC id) and closes the connection; another trial
    never shares that connection, so it gets its own answer."""
    async with first_request_hostile(h.late_second_response) as server, make_client() as http:
        assert (await send(http, server.url, "r1")).json()["id"] == "r1"
        assert (await send(http, server.url, "b1", context_id="ctx-B")).json()["id"] == "b1"
        with pytest.raises(AgentProtocolError, match="answers JSON-RPC request 'r1', not 'r2'"):
            await send(http, server.url, "r2")
        assert (await send(http, server.url, "r3")).json()["id"] == "r3"
    connections = [(r.connection, r.json()["id"]) for r in server.requests]
    assert connections == [(0, "r1"), (0, "r2"), (1, "b1"), (2, "r3")]


async def test_idle_connections_are_closed_by_a_timer() -> None:
    """Closed `keepalive_s` after their last response with no further request: nothing waits for the next
    request to notice (main held them until then)."""
    async with h.hostile_http(h.echo_rpc) as server, make_client(keepalive_s=0.2) as http:
        await asyncio.gather(send(http, server.url, "a", "ctx-A"), send(http, server.url, "b", "ctx-B"))
        assert len(server.open_connections()) == 2
        await asyncio.sleep(0.6)
        assert server.open_connections() == []
        assert http._direct._idle_count == 0 and http._direct._idle == {}
        for connection in server.connections:
            assert connection.closed_by_client_at is not None
            assert connection.closed_by_client_at - connection.answered_at < 0.5


async def test_a_trial_that_ends_closes_its_connection_at_once() -> None:
    async with h.hostile_http(h.echo_rpc) as server, make_client() as http:
        await send(http, server.url, "a", "ctx-A")
        await send(http, server.url, "b", "ctx-B")
        assert len(server.open_connections()) == 2
        http._direct.forget("ctx-A")
        await asyncio.sleep(0.05)
        assert [c.index for c in server.open_connections()] == [1]


async def test_a_drip_is_ended_by_the_read_timeout() -> None:
    async with first_request_hostile(h.drip) as server, make_client(read_s=0.5) as http:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await send(http, server.url, "r1")
        assert time.monotonic() - started < 1.5
        assert (await send(http, server.url, "r2")).json()["id"] == "r2"
    assert server.requests[-1].connection == 1


async def test_informational_responses_count_against_the_bound_just_past_it() -> None:
    """`max_response_bytes` bounds the informational responses and the answer together: a thousand
    `100 Continue` and an answer of exactly the bound are read; one byte more fails the request."""
    continues = b"HTTP/1.1 100 Continue\r\n\r\n" * 1000
    written: list[int] = []

    def sized(total: int) -> h.Mode:
        def mode(reply: h.Reply) -> list[h.Step]:
            padding = 0
            while len(wire := continues + h.Reply(reply.body + b" " * padding).framed()) != total:
                padding += total - len(wire)
            written.append(len(wire))
            return [wire]

        return mode

    async with h.hostile_http(h.echo_rpc) as server, make_client() as http:
        server.mode_for = lambda _: sized(MAX_RESPONSE_BYTES)
        assert (await send(http, server.url, "r1")).json()["id"] == "r1"
        server.mode_for = lambda _: sized(MAX_RESPONSE_BYTES + 1)
        with pytest.raises(AgentProtocolError, match=r"larger than 131072 bytes \(max_reply_bytes\)"):
            await send(http, server.url, "r2")
    assert written == [MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES + 1]


async def test_an_idle_connection_is_reused_before_keepalive_and_closed_just_after() -> None:
    async with h.hostile_http(h.echo_rpc) as server, make_client(keepalive_s=0.3) as http:
        await send(http, server.url, "a")
        await asyncio.sleep(0.15)  # within keepalive_s: reused
        await send(http, server.url, "b")
        assert [r.connection for r in server.requests] == [0, 0]
        await asyncio.sleep(0.45)  # just past it (the timer is exact; the slack is for a busy machine)
        assert server.open_connections() == []
        await send(http, server.url, "c")
    assert [r.connection for r in server.requests] == [0, 0, 1]
