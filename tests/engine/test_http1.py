"""The white-agent HTTP transport (green_agent/white_agent/http1.py) against a real loopback TCP server that
answers each request with scripted bytes: framing, bounds, reuse, failures as httpx's exceptions."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.egress import EgressConnector, EgressPolicy
from green_agent.white_agent.http1 import AgentTransport, DirectClient, TransportLimits

Answer = bytes | Callable[[bytes], bytes] | None
"""What the server sends for a request: bytes, bytes built from the request, or None (close at once)."""


@dataclass
class ScriptedServer:
    answers: list[Answer]
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    close_after_answer: bool = False
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = self.answers.pop(0) if self.answers else None
                if answer is None:
                    break
                writer.write(answer(request) if callable(answer) else answer)
                await writer.drain()
                if self.close_after_answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def scripted(*answers: Answer, close_after_answer: bool = False) -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer(list(answers), close_after_answer=close_after_answer)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    async with listener:
        yield server


def ok(body: bytes = b'{"ok": true}', *, extra_headers: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra_headers, body)


def client(
    *, max_response_bytes: int = 10_000, max_idle: int = 4, keepalive_s: float = 5.0, read_s: float = 5.0
) -> DirectClient:
    transport = AgentTransport(
        EgressConnector(EgressPolicy()),
        TransportLimits(max_response_bytes=max_response_bytes, max_idle=max_idle, keepalive_s=keepalive_s),
        ssl_context=lambda: pytest.fail("no TLS here"),
    )
    return DirectClient(transport, timeout=httpx.Timeout(5.0, read=read_s))


async def test_keep_alive_connections_are_reused() -> None:
    async with scripted(ok(b"1"), ok(b"2"), ok(b"3")) as server, client() as http:
        url = f"http://127.0.0.1:{server.port}/a2a"
        bodies = [(await http.post(url, json={"n": n})).content for n in range(3)]
    assert bodies == [b"1", b"2", b"3"]
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /a2a HTTP/1.1\r\n")
    assert b"accept-encoding: identity" in first.lower() and first.endswith(b'{"n":0}')


async def test_response_bound_counts_the_whole_response_and_drops_the_connection_past_it() -> None:
    response = ok(b"x" * 100)
    async with scripted(response, response, response) as server:
        async with client(max_response_bytes=len(response)) as http:  # exactly at the bound: read
            assert (await http.get(f"http://127.0.0.1:{server.port}/")).content == b"x" * 100
        async with client(max_response_bytes=len(response) - 1) as http:  # one byte past it: refused
            with pytest.raises(AgentProtocolError, match=r"larger than \d+ bytes \(max_reply_bytes\)"):
                await http.get(f"http://127.0.0.1:{server.port}/")


async def test_compressed_bodies_are_refused() -> None:
    gzipped = ok(b"\x1f\x8b\x08\x00", extra_headers=b"Content-Encoding: gzip\r\n")
    async with scripted(gzipped) as server, client() as http:
        with pytest.raises(AgentProtocolError, match="'gzip'-encoded body"):
            await http.get(f"http://127.0.0.1:{server.port}/")


async def test_chunked_close_delimited_and_informational_responses() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    informational = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after 100")
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    async with scripted(chunked, informational) as server, client() as http:
        url = f"http://127.0.0.1:{server.port}/"
        assert (await http.get(url)).content == b"abcde"
        assert (await http.get(url)).content == b"after 100"
    assert server.connections == 1
    async with scripted(until_close, close_after_answer=True) as server, client() as http:
        assert (await http.get(f"http://127.0.0.1:{server.port}/")).content == b"until the end"


async def test_a_server_closing_without_an_answer_is_a_protocol_error_not_a_connect_error() -> None:
    # The message may have been delivered: it must not read as "never connected" (which is re-sent).
    async with scripted(None) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post(f"http://127.0.0.1:{server.port}/", json={})
        cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"
    async with scripted(cut, close_after_answer=True) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="mid-response"):
            await http.post(f"http://127.0.0.1:{server.port}/", json={})


async def test_a_refused_connection_is_a_connect_error() -> None:
    async with scripted() as server:
        port = server.port
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_line_breaks_in_header_values_are_refused_before_sending() -> None:
    async with scripted(ok()) as server, client() as http:
        with pytest.raises(httpx.LocalProtocolError, match="line break"):
            await http.get(f"http://127.0.0.1:{server.port}/", headers={"X-Agent-Key": "k\r\nX-Admin: yes"})
    assert server.requests == []


async def test_bytes_after_the_response_stop_the_connection_from_being_reused() -> None:
    async with scripted(ok(b"1") + ok(b"smuggled"), ok(b"2")) as server, client() as http:
        url = f"http://127.0.0.1:{server.port}/"
        assert (await http.get(url)).content == b"1"
        assert (await http.get(url)).content == b"2"
    assert server.connections == 2


async def test_read_timeout() -> None:
    async with scripted(lambda _: b"HTTP/1.1 200 OK\r\n") as server, client(read_s=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(f"http://127.0.0.1:{server.port}/")


async def test_connections_closed_or_expired_while_idle_are_not_reused() -> None:
    async with scripted(ok(b"1"), ok(b"2"), close_after_answer=True) as server, client() as http:
        url = f"http://127.0.0.1:{server.port}/"
        assert (await http.get(url)).content == b"1"
        await asyncio.sleep(0.05)  # the server's close arrives while the connection is idle
        assert (await http.get(url)).content == b"2"
    assert server.connections == 2
    async with scripted(ok(b"1"), ok(b"2")) as server, client(keepalive_s=0.05) as http:
        url = f"http://127.0.0.1:{server.port}/"
        await http.get(url)
        await asyncio.sleep(0.1)  # just past keepalive_s
        await http.get(url)
    assert server.connections == 2


async def test_idle_connections_are_bounded() -> None:
    async with scripted(*[ok()] * 6) as server, client(max_idle=2) as http:
        url = f"http://127.0.0.1:{server.port}/"
        await asyncio.gather(*(http.get(url) for _ in range(3)))  # three connections at once
        transport = http._direct
        assert server.connections == 3
        assert transport._idle_count == 2  # one past max_idle: the oldest was closed
        await asyncio.gather(*(http.get(url) for _ in range(3)))
        assert server.connections == 4  # two reused, one new


async def test_cookies_set_by_an_agent_are_not_sent_back() -> None:
    with_cookie = ok(extra_headers=b"Set-Cookie: session=agent-a; Path=/\r\n")
    async with scripted(with_cookie, ok()) as server, client() as http:
        url = f"http://127.0.0.1:{server.port}/"
        await http.get(url)
        await http.get(url)
    assert b"cookie" not in server.requests[1].lower()
    assert not http.cookies


async def test_parsed_urls_are_bounded_and_relative_urls_refused() -> None:
    async with scripted(*[ok()] * 5) as server, client() as http:
        http._parsed = functools.lru_cache(maxsize=2)(http._parsed.__wrapped__)  # the bound, small
        urls = [f"http://127.0.0.1:{server.port}/{n}" for n in range(3)]
        for url in [urls[0], urls[1], urls[0]]:
            await http.get(url)
        assert http._parsed.cache_info().hits == 1  # the repeated URL was not parsed again
        await http.get(urls[2])  # one past the bound: the least recently used (urls[1]) goes
        assert http._parsed.cache_info().currsize == 2
        misses = http._parsed.cache_info().misses
        await http.get(urls[1])
        assert http._parsed.cache_info().misses == misses + 1
        with pytest.raises(httpx.InvalidURL, match="not an absolute URL"):
            http.build_request("POST", "/relative", json={})
