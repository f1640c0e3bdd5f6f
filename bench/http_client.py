"""HTTP client cost per request to a white agent: httpx's own stack, aiohttp (issue 24's candidate B: as
httpx-aiohttp ships it, and as the service would need it, `bench/aiohttp_candidate.py`) and the service's
own transport (`http1.py`).

The oracle white agent runs in a child process (`bench.white_agent`); each client POSTs the same small
JSON-RPC request to it (the agent answers with a short JSON-RPC error, so its own work is tiny) `--requests`
times, one after another and then `--concurrency` at a time. Printed: this process's CPU per request
(getrusage, so the client's whole cost: event loop included), which is what an A2A turn pays for HTTP.

    .venv/bin/python -m bench.http_client
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable

import httpx
import uvloop
from httpx_aiohttp import AiohttpTransport

from bench.aiohttp_candidate import AiohttpAgentTransport
from bench.procstats import self_cpu_seconds
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent.white_agent.egress import EgressConnector, EgressPolicy
from green_agent.white_agent.http1 import AgentTransport, DirectClient, TransportLimits
from green_agent.white_agent.matching import Trial, expectation_for, expecting

REQUEST = {
    "jsonrpc": "2.0",
    "id": "1",
    "method": "SendMessage",
    "params": {"message": {"parts": [{"text": "hi"}]}},
}


def httpx_default() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=60.0)


LIMITS = TransportLimits(max_response_bytes=1 << 20, max_idle=64)


def service_client(*, matched: bool = False) -> httpx.AsyncClient:
    transport = AgentTransport(EgressConnector(EgressPolicy()), LIMITS, ssl_context=httpx.create_ssl_context)
    return DirectClient(transport, timeout=60.0, matcher=expectation_for if matched else None)


def httpx_aiohttp_as_shipped() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=AiohttpTransport(), timeout=60.0)


def aiohttp_candidate(*, force_close: bool = False) -> httpx.AsyncClient:
    transport = AiohttpAgentTransport(
        EgressConnector(EgressPolicy()), LIMITS, ssl_context=httpx.create_ssl_context, force_close=force_close
    )
    return DirectClient(transport, timeout=60.0)  # type: ignore[arg-type]


CLIENTS: dict[str, Callable[[], httpx.AsyncClient]] = {
    "httpx.AsyncClient (httpcore, anyio, h11)": httpx_default,
    "DirectClient + AgentTransport (asyncio, llhttp)": service_client,
    "the same, each reply matched to its request (as a trial's)": lambda: service_client(matched=True),
    "httpx.AsyncClient + httpx-aiohttp AiohttpTransport, as shipped": httpx_aiohttp_as_shipped,
    "DirectClient + aiohttp candidate (bench/aiohttp_candidate.py)": aiohttp_candidate,
    "DirectClient + aiohttp candidate, force_close (a connection per request)": lambda: aiohttp_candidate(
        force_close=True
    ),
}


async def _cpu_per_request(client: httpx.AsyncClient, url: str, requests: int, concurrency: int) -> float:
    async def one() -> None:
        with expecting(Trial("bench-context")):  # only a client with a matcher reads it
            response = await client.post(url, json=REQUEST)
        response.raise_for_status()

    async def worker(count: int) -> None:
        for _ in range(count):
            await one()

    await asyncio.gather(*(worker(20) for _ in range(concurrency)))  # warm up: connections open
    started = self_cpu_seconds()
    await asyncio.gather(*(worker(requests // concurrency) for _ in range(concurrency)))
    return (self_cpu_seconds() - started) / (requests // concurrency * concurrency)


async def measure(requests: int, concurrency: int, rounds: int) -> list[list[str]]:
    rows = []
    async with white_agent_process("oracle") as white:
        results: dict[tuple[str, int], list[float]] = {}
        for _ in range(rounds):  # alternated, so that a busy moment of the machine hits both
            for name, make in CLIENTS.items():
                for parallel in (1, concurrency):
                    async with make() as client:
                        cost = await _cpu_per_request(client, white.url, requests, parallel)
                    results.setdefault((name, parallel), []).append(cost)
        for (name, parallel), costs in results.items():
            costs.sort()
            rows.append([name, str(parallel), f"{1e6 * costs[len(costs) // 2]:.0f}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.monotonic()
    rows = uvloop.run(measure(args.requests, args.concurrency, args.rounds))
    print_table(
        f"HTTP client CPU per request to the oracle white agent ({args.requests} requests per row, median of "
        f"{args.rounds} alternated rounds, {time.monotonic() - started:.0f} s)",
        ["client", "requests in flight", "client CPU us / request"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
