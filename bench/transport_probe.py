"""Issue 24's transport decision, case by case: our transport (`http1.py`) and the aiohttp candidate
(`bench/aiohttp_candidate.py`) against the hostile HTTP server of the tests (`tests/support/hostile_http.py`).

For each case: one request answered by the hostile mode, then (after `--gap` seconds) one honest request on
the same client. Printed: what the first request got, how long it took and the Python memory allocated
meanwhile (tracemalloc's peak, the in-process server included), what the second request got (its own answer,
`id=r2`, or another one), and which connection each request came on (a number repeated = the connection was
reused).
With `--gap 0.01` the second request goes out before a late response arrives.

    .venv/bin/python -m bench.transport_probe
    .venv/bin/python -m bench.transport_probe --gap 0.01 --only "late second response"
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import tracemalloc
from collections.abc import Callable

import httpx

from bench.aiohttp_candidate import AiohttpAgentTransport
from bench.tables import print_table
from green_agent.white_agent.egress import EgressConnector, EgressPolicy
from green_agent.white_agent.http1 import AgentTransport, DirectClient, TransportLimits
from green_agent.white_agent.matching import Trial, expectation_for, expecting
from tests.support import hostile_http as h

LIMITS = TransportLimits(max_response_bytes=128 * 1024, max_idle=4, keepalive_s=5.0)
CASES: dict[str, h.Mode] = {
    "trailers with Content-Encoding gzip": h.trailers_gzip,
    "gzip body": h.encoded(b"gzip", h.gzip_bomb),
    "late second response": h.late_while_idle,
    "pipelined bare status line": h.pipelined(b"HTTP/1.1 200 OK\r\n"),
    "pipelined status line and a header": h.pipelined(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"),
    "100 Continue flood": h.continue_flood,
    "close-delimited body cut by a reset": h.close_delimited_reset,
    "close-delimited body ended cleanly": h.close_delimited_fin,
    "Content-Length and chunked": h.with_head(
        b"Transfer-Encoding: chunked", body=lambda r: h.chunked(r.body)
    ),
    "duplicate Content-Length": h.with_head(b"Content-Length: 3"),
    "chunk size not hex": h.raw(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
    ),
    "oversized header": h.oversized_header,
    "switching protocols": h.raw(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n"
    ),
}


def ours() -> DirectClient:
    transport = AgentTransport(EgressConnector(EgressPolicy()), LIMITS, ssl_context=httpx.create_ssl_context)
    return DirectClient(transport, timeout=httpx.Timeout(5.0, read=3.0), matcher=expectation_for)


def aiohttp_candidate() -> DirectClient:
    transport = AiohttpAgentTransport(
        EgressConnector(EgressPolicy()), LIMITS, ssl_context=httpx.create_ssl_context
    )
    return DirectClient(transport, timeout=httpx.Timeout(5.0, read=3.0))  # type: ignore[arg-type]


CLIENTS: dict[str, Callable[[], DirectClient]] = {"A: http1.py": ours, "B: aiohttp": aiohttp_candidate}


def _request(request_id: str) -> dict[str, object]:
    message = {"messageId": request_id, "contextId": "ctx", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {"message": message}}


async def _send(http: DirectClient, url: str, request_id: str) -> str:
    try:
        with expecting(Trial("ctx")):
            response = await http.post(url, json=_request(request_id))
        answered = response.json().get("id") if response.content.startswith(b"{") else None
        return f"{len(response.content)} bytes, id={answered}"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:70]}"


async def probe(make: Callable[[], DirectClient], mode: h.Mode, gap_s: float, timeout_s: float) -> list[str]:
    played: list[bool] = []

    def mode_for(request: h.Request) -> h.Mode | None:
        if played:
            return None
        played.append(True)
        return mode

    async with h.hostile_http(h.echo_rpc, mode_for) as server, make() as http:
        tracemalloc.start()
        started = time.monotonic()
        try:
            first = await asyncio.wait_for(_send(http, server.url, "r1"), timeout_s)
        except TimeoutError:
            first = f"still reading after {timeout_s:g} s"
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        await asyncio.sleep(gap_s)
        second = await _send(http, server.url, "r2")
        connections = ",".join(str(r.connection) for r in server.requests)
    return [first, f"{elapsed:.2f}", f"{peak / 2**20:.1f}", second, connections]


async def measure(gap_s: float, timeout_s: float, only: list[str]) -> list[list[str]]:
    rows = []
    for case, mode in CASES.items():
        if only and case not in only:
            continue
        for name, make in CLIENTS.items():
            rows.append([case, name, *await probe(make, mode, gap_s, timeout_s)])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gap", type=float, default=0.15, help="seconds between the two requests")
    parser.add_argument("--timeout", type=float, default=10.0, help="give up on the first request after this")
    parser.add_argument("--only", action="append", default=[], help="a case name (repeatable)")
    args = parser.parse_args(argv)
    rows = asyncio.run(measure(args.gap, args.timeout, args.only))
    print_table(
        f"Hostile HTTP responses against both transport candidates (second request {args.gap:g} s later)",
        ["case", "transport", "first request", "s", "peak MiB", "second request", "connections"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
