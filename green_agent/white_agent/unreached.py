"""Why a white agent could not be reached, in one phrase: connection refused, timed out, no agent card at the
URL (HTTP 404, or a body that is not a card), TLS, DNS.

For the operator only: their own runs (`green-agent run`) and the service's log. A remote requester is told
the same thing whatever happened (egress.py: errors do not reveal port states), and the requester-facing
text is chosen where the requester is known (api/runtime/service.py). The phrase is built from the exception
chain the A2A SDK, httpx and the transport (http1.py, egress.py) raise.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
from a2a.client.errors import AgentCardResolutionError
from google.protobuf.json_format import ParseError  # type: ignore[import-untyped]

MAX_PHRASE_CHARS = 300
"""A library's own text inside the phrase is cut to this (a server's TLS alert or error can be long)."""


class NotACard(Exception):
    """The card URL served JSON that holds no endpoint this client can use (raised by the card fetch)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_PHRASE_CHARS else text[:MAX_PHRASE_CHARS] + "…"


def why_unreached(exc: BaseException, url: str, *, timeout_s: float) -> str:
    """What went wrong reaching `url` (an agent card's URL, or an endpoint), as the operator would want it
    said: the cause, and what it usually means."""
    parts = urlsplit(url)
    host = parts.hostname or url
    port = parts.port or (443 if parts.scheme == "https" else 80)
    for link in _chain(exc):
        if isinstance(link, AgentCardResolutionError) and link.status_code is not None:
            hint = "; is the URL the agent's base URL?" if link.status_code == 404 else ""
            return f"no agent card at {url} (HTTP {link.status_code}){hint}"
        if isinstance(link, NotACard):
            return f"{url} is not an A2A agent card: {link}"
        if isinstance(link, json.JSONDecodeError):
            return f"{url} is not an A2A agent card: not JSON ({link.msg} at character {link.pos})"
        if isinstance(link, ParseError):
            return f"{url} is not an A2A agent card: {_cut(str(link))}"
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"TLS: the certificate of {host} was refused ({_cut(link.verify_message or str(link))})"
        if isinstance(link, ssl.SSLError):
            return f"TLS failed with {host}:{port} ({_cut(link.reason or str(link))})"
        if isinstance(link, socket.gaierror):
            return f"the host name {host} does not resolve ({link.strerror})"
        if isinstance(link, ConnectionRefusedError):
            return f"connection refused: nothing listens on {host} port {port}; is the agent running there?"
        if isinstance(link, httpx.ConnectTimeout):
            return f"no connection to {host}:{port} within {timeout_s:g} s (a firewall, or a wrong address?)"
        if isinstance(link, TimeoutError | httpx.TimeoutException):
            return f"{host}:{port} accepted the connection but sent no answer within {timeout_s:g} s"
        if isinstance(link, httpx.RemoteProtocolError):
            return f"{host}:{port} closed the connection without an HTTP answer (is it an HTTP server?)"
        if isinstance(link, OSError) and link.strerror:
            return f"{link.strerror} ({host}:{port})"
    return _cut(f"{type(exc).__name__}: {exc}")
