"""An agent that cannot be reached is said in one precise phrase for the operator (connection refused, no
answer in time, no agent card at the URL, not a card, TLS, DNS), against real loopback servers, while any
requester reads the same words whatever happened (tests/engine/test_egress.py: port states)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from green_agent.core.errors import AgentUnreachableError
from green_agent.white_agent.client import ClientLimits, WhiteAgentPool
from green_agent.white_agent.egress import IPAddress
from tests.engine.test_egress import closed_port

CARD_PATH = "/.well-known/agent-card.json"
LIMITS = ClientLimits(card_timeout_s=1.0, connect_retries=0)
"""A short card timeout, so that the silent server's case takes a second, not the default 30."""

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]


@contextlib.asynccontextmanager
async def tcp_server(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 5)


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accepts the connection, reads the request, never answers."""
    with contextlib.suppress(Exception):
        await reader.read(65_536)
        await asyncio.sleep(3_600)


def answering(status: str, body: bytes, content_type: str = "application/json") -> Handler:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
            await writer.drain()
            writer.close()

    return answer


def self_signed(tmp_path: Path) -> ssl.SSLContext:
    """A server TLS context with a certificate for 127.0.0.1 that no CA signed."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


async def no_such_name(host: str, port: int) -> Sequence[IPAddress]:
    """The resolver's answer for a name that does not exist (what getaddrinfo raises for NXDOMAIN)."""
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


async def unreached(url: str, resolver: Any = None) -> AgentUnreachableError:
    pool = WhiteAgentPool(LIMITS, resolver=resolver)
    try:
        with pytest.raises(AgentUnreachableError) as raised:
            await pool.card(url)
    finally:
        await pool.aclose()
    return raised.value


async def test_each_way_of_not_being_reached_has_its_own_phrase(tmp_path: Path) -> None:
    not_a_card = json.dumps({"hello": "world"}).encode()
    page = b"<html><body>It works!</body></html>"
    async with (
        tcp_server(silent) as silent_port,
        tcp_server(answering("404 Not Found", b"not found", "text/plain")) as missing_port,
        tcp_server(answering("200 OK", not_a_card)) as json_port,
        tcp_server(answering("200 OK", page, "text/html")) as html_port,
        tcp_server(answering("200 OK", not_a_card), tls=self_signed(tmp_path)) as tls_port,
    ):
        closed = closed_port()
        cases = {
            "closed": (f"http://127.0.0.1:{closed}", None),
            "silent": (f"http://127.0.0.1:{silent_port}", None),
            "404": (f"http://127.0.0.1:{missing_port}", None),
            "not a card": (f"http://127.0.0.1:{json_port}", None),
            "not JSON": (f"http://127.0.0.1:{html_port}", None),
            "TLS": (f"https://127.0.0.1:{tls_port}", None),
            "DNS": ("http://agent.example.invalid:9019", no_such_name),
        }
        errors = {case: await unreached(url, resolver) for case, (url, resolver) in cases.items()}

    def card(port: int) -> str:
        return f"http://127.0.0.1:{port}{CARD_PATH}"

    details = {case: error.detail for case, error in errors.items()}
    assert details == {
        "closed": f"connection refused: nothing listens on 127.0.0.1 port {closed}; is the agent running "
        "there?",
        "silent": f"127.0.0.1:{silent_port} accepted the connection but sent no answer within 1 s",
        "404": f"no agent card at {card(missing_port)} (HTTP 404); is the URL the agent's base URL?",
        "not a card": f"{card(json_port)} is not an A2A agent card: it names no JSON-RPC or HTTP+JSON "
        "endpoint (supportedInterfaces)",
        "not JSON": f"{card(html_port)} is not an A2A agent card: not JSON (Expecting value at character 0)",
        "TLS": details["TLS"],  # the wording is OpenSSL's; checked below
        "DNS": "the host name agent.example.invalid does not resolve (Name or service not known)",
    }
    tls = details["TLS"] or ""
    assert tls.startswith("TLS: the certificate of 127.0.0.1 was refused (") and "self-signed" in tls, tls
    # What a requester reads is the same for all of them (with the URL masked).
    public = {
        str(error).replace(url, "URL").replace(url.removeprefix("https://").removeprefix("http://"), "URL")
        for error, (url, _) in zip(errors.values(), cases.values(), strict=True)
    }
    assert public == {"could not reach the agent at URL: no A2A agent card was served there"}, public
