"""Candidate B of issue 24, kept for `bench.http_client`: aiohttp behind the httpx interface (what the
httpx-aiohttp package does), set up as the white-agent transport would need it: egress judged at connect time
by a resolver (every address through `EgressConnector`, aiohttp connects to a judged one, TLS with the URL's
host name), no DNS cache, no decompression, cookies, redirects, proxies or environment, the body read within
`max_response_bytes`, Content-Encoding other than identity refused.

Not used by the service (docs/dependencies.md says why): against the hostile server of
tests/support/hostile_http.py it reused a connection that held a late response (the next request read the
previous one's answer), read `100 Continue` floods until the read timeout, and took a close-delimited body cut
by a reset as complete; its public API offers no hook for any of the three (`force_close=True` avoids the
first by never reusing a connection, measured here too).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.egress import EgressConnector
from green_agent.white_agent.http1 import BodyCheck, TransportLimits


class _PolicyResolver(AbstractResolver):
    """Every address of the host judged by the egress policy; aiohttp connects to one of them."""

    def __init__(self, connector: EgressConnector) -> None:
        self._connector = connector

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._connector.judged_addresses(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


class AiohttpAgentTransport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        connector: EgressConnector,
        limits: TransportLimits,
        *,
        ssl_context: Callable[[], ssl.SSLContext],
        check_body: BodyCheck | None = None,
        force_close: bool = False,
    ) -> None:
        self._force_close = force_close
        self._egress = connector
        self._limits = limits
        self._ssl_context = ssl_context
        self._check_body = check_body
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            tcp = aiohttp.TCPConnector(
                resolver=_PolicyResolver(self._egress),
                use_dns_cache=False,
                limit=0,
                keepalive_timeout=None if self._force_close else self._limits.keepalive_s,
                force_close=self._force_close,
                happy_eyeballs_delay=None,
            )
            self._session = aiohttp.ClientSession(
                connector=tcp,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                trust_env=False,
                skip_auto_headers=("User-Agent", "Content-Type"),
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        request.headers["Accept-Encoding"] = "identity"
        body = await request.aread()
        url = request.url
        https = url.scheme == "https"
        try:
            response = await self._client().request(
                request.method,
                str(url),
                data=body or None,
                headers=request.headers.multi_items(),
                allow_redirects=False,
                ssl=self._ssl_context() if https else True,
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=timeouts.get("connect"), sock_read=timeouts.get("read")
                ),
            )
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc)) from exc
        except aiohttp.SocketTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc)) from exc
        except aiohttp.ClientError as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc
        try:
            for value in response.headers.getall("Content-Encoding", ()):
                if value.strip().lower() not in ("", "identity"):
                    raise AgentProtocolError(
                        f"the agent sent a {value[:40]!r}-encoded body; only identity is read"
                    )
            chunks: list[bytes] = []
            received = 0
            try:
                while chunk := await response.content.read(1 << 16):
                    received += len(chunk)
                    if received > self._limits.max_response_bytes:
                        raise AgentProtocolError(
                            f"the agent's response is larger than {self._limits.max_response_bytes} bytes "
                            "(max_reply_bytes)"
                        )
                    chunks.append(chunk)
            except aiohttp.SocketTimeoutError as exc:
                raise httpx.ReadTimeout(str(exc)) from exc
            except aiohttp.ClientError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from exc
            content = b"".join(chunks)
            if self._check_body is not None:
                self._check_body(content)
        except BaseException:
            response.close()
            raise
        response.release()
        headers = [(k, v) for k, v in response.raw_headers if k.lower() != b"content-encoding"]
        return httpx.Response(response.status, headers=headers, content=content, request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
