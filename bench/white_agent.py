"""The white agent of the benchmarks, in its own process, so the green agent's CPU and memory are its own.

Run directly (`python -m bench.white_agent --kind oracle --delay-s 0.3`) it serves one reference agent from
`green_agent.reference_agents` on loopback and prints `READY <url>` once it accepts connections; SIGTERM stops
it. `WhiteAgentProcess` starts and stops such a process from a benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Literal, get_args

import uvloop
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from starlette.applications import Starlette

from bench.agent_urls import serve_many_url_agents
from bench.procstats import cpu_seconds, peak_rss_bytes, rss_bytes
from green_agent.domains import DEFAULT_DOMAIN, domain_names, load_domain
from green_agent.reference_agents import (
    ReferenceKind,
    agent_card,
    build_agent_app,
    serve_app,
    serve_reference_agent,
)
from green_agent.reference_agents.hostile import HostileAgent, worst_case_plan
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts
from retail_domain import load_retail_data
from tests.support.frameworks import serve_chunking_relay

READY = "READY"
START_TIMEOUT_S = 120.0
IDLE_S = 86_400.0

WhiteKind = Literal[
    ReferenceKind, "idle_after_call", "hostile", "many_urls", "oracle_chunked", "oracle_streamed"
]
CHUNKED = (
    "The oracle as streaming SDKs answer (issue 35): a task left in input-required, each answer written in 3 "
    "chunks appended to one artifact; `oracle_streamed` says in its card that it streams (read over SSE)."
)
IDLE_AFTER_CALL = (
    "Answers a conversation's first message with one read-only tool call, then never again: the trials it "
    "holds are past their large opening message, as most live trials of a real assessment are."
)
FIRST_READ: dict[str, tuple[str, dict[str, str]]] = {
    "retail": ("list_all_product_types", {}),
    "airline": ("list_all_airports", {}),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
    "mock": ("get_users", {}),
}
"""The read-only tool (and its arguments) `idle_after_call` calls first, per domain."""


class IdleAfterCallExecutor(AgentExecutor):
    def __init__(self, domain: str = DEFAULT_DOMAIN) -> None:
        self._seen: set[str] = set()
        self._tool, self._arguments = FIRST_READ[domain]

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        context_id = context.context_id or ""
        if context_id in self._seen:
            await asyncio.sleep(IDLE_S)
        self._seen.add(context_id)
        incoming = Incoming.of(context.message)
        parts = call_parts(incoming.structured, self._tool, dict(self._arguments))
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@contextlib.asynccontextmanager
async def _serving(
    kind: WhiteKind, delay_s: float, card_bytes: int, domain: str = DEFAULT_DOMAIN
) -> AsyncIterator[str]:
    if kind == "idle_after_call":

        def app_for(url: str) -> Starlette:
            card = agent_card(name="bench-idle-after-call", description=IDLE_AFTER_CALL, url=url)
            return build_agent_app(IdleAfterCallExecutor(domain), card=card)

        async with serve_app(app_for) as url:
            yield url
        return
    # These serve retail only.
    if kind == "oracle_chunked" or kind == "oracle_streamed":  # no delay_s: turn cost is measured with them
        streams = kind == "oracle_streamed"
        retail = await asyncio.to_thread(load_retail_data)
        async with serve_chunking_relay(retail, protocol_version="1.0", streaming=streams) as url:
            yield url
        return
    if kind == "many_urls":  # bench/agent_urls.py: the oracle under any /agents/<n>/ prefix
        retail = await asyncio.to_thread(load_retail_data)
        async with serve_many_url_agents(retail, card_bytes) as url:
            yield url + "/"
        return
    # The domain the agent starts with (the oracle loads any other one a customer names, on first use).
    data = await asyncio.to_thread(load_domain, domain)
    if kind == "hostile":  # green_agent/reference_agents/hostile.py: every task gets one worst case
        agent = HostileAgent(data, worst_case_plan(list(data.tasks)))
        async with serve_app(agent.app) as url:
            yield url
        return
    async with serve_reference_agent(kind, data=data, delay_s=delay_s) as url:
        yield url


async def _serve(kind: WhiteKind, delay_s: float, card_bytes: int, domain: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with _serving(kind, delay_s, card_bytes, domain) as url:
        print(f"{READY} {url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve one reference white agent for the benchmarks")
    kinds = [
        *get_args(ReferenceKind),
        "idle_after_call",
        "hostile",
        "many_urls",
        "oracle_chunked",
        "oracle_streamed",
    ]
    parser.add_argument("--kind", choices=kinds, default="oracle")
    parser.add_argument("--delay-s", type=float, default=0.0, help="sleep before every reply (LLM latency)")
    parser.add_argument("--card-bytes", type=int, default=120_000, help="many_urls: size of each agent card")
    parser.add_argument("--domain", choices=domain_names(), default=DEFAULT_DOMAIN, help="the domain served")
    args = parser.parse_args(argv)
    uvloop.run(_serve(args.kind, args.delay_s, args.card_bytes, args.domain))
    return 0


@dataclass
class WhiteAgentProcess:
    """A running white-agent child process: its URL and pid, for CPU and memory reads."""

    url: str
    pid: int

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def peak_rss_bytes(self) -> int:
        return peak_rss_bytes(self.pid)


@contextlib.asynccontextmanager
async def white_agent_process(
    kind: WhiteKind = "oracle",
    delay_s: float = 0.0,
    *,
    card_bytes: int = 120_000,
    domain: str = DEFAULT_DOMAIN,
) -> AsyncIterator[WhiteAgentProcess]:
    """Start `python -m bench.white_agent` and yield it once it serves; terminate it afterwards.

    Its stderr goes to a temporary file, shown only if it fails to start: an idle agent logs every request
    it drops at shutdown, which is noise here."""
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.white_agent",
            "--kind",
            kind,
            "--delay-s",
            str(delay_s),
            "--card-bytes",
            str(card_bytes),
            "--domain",
            domain,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
        try:
            url = await _wait_ready(process, kind, log)
            yield WhiteAgentProcess(url=url.rstrip("/"), pid=process.pid)
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    async with asyncio.timeout(10):
                        await process.wait()
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def _wait_ready(process: asyncio.subprocess.Process, kind: str, log: IO[bytes]) -> str:
    assert process.stdout is not None
    async with asyncio.timeout(START_TIMEOUT_S):
        while True:
            line = (await process.stdout.readline()).decode()
            if line.startswith(READY):
                return line.split()[1]
            if not line:
                await process.wait()
                log.seek(0)
                sys.stderr.write(log.read().decode(errors="replace")[-4000:])
                raise RuntimeError(f"the {kind} white agent exited early (code {process.returncode})")


if __name__ == "__main__":
    sys.exit(main())
