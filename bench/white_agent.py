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
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import get_args

import uvloop

from bench.procstats import cpu_seconds, peak_rss_bytes, rss_bytes
from green_agent.reference_agents import ReferenceKind, serve_reference_agent
from retail_domain import load_retail_data

READY = "READY"
START_TIMEOUT_S = 120.0


async def _serve(kind: ReferenceKind, delay_s: float) -> None:
    data = await asyncio.to_thread(load_retail_data)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with serve_reference_agent(kind, data=data, delay_s=delay_s) as url:
        print(f"{READY} {url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve one reference white agent for the benchmarks")
    parser.add_argument("--kind", choices=get_args(ReferenceKind), default="oracle")
    parser.add_argument("--delay-s", type=float, default=0.0, help="sleep before every reply (LLM latency)")
    args = parser.parse_args(argv)
    uvloop.run(_serve(args.kind, args.delay_s))
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
async def white_agent_process(kind: ReferenceKind = "oracle", delay_s: float = 0.0) -> AsyncIterator[
    WhiteAgentProcess
]:
    """Start `python -m bench.white_agent` and yield it once it serves; terminate it afterwards."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.white_agent",
        "--kind",
        kind,
        "--delay-s",
        str(delay_s),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(START_TIMEOUT_S):
            while True:
                line = (await process.stdout.readline()).decode()
                if not line:
                    raise RuntimeError(f"the {kind} white agent exited before serving (code {process.returncode})")
                if line.startswith(READY):
                    url = line.split()[1]
                    break
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


if __name__ == "__main__":
    sys.exit(main())
