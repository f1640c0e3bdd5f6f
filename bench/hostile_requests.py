"""What hostile REST requests cost the service: time to the answer, size of the answer, and the worst stall of
the service's event loop while it handles them (a 5 ms ticker runs in the same loop).

    .venv/bin/python -m bench.hostile_requests [--database-url URL]

The cases are the issue's: 40,000 task ids (a quadratic duplicate check once held the loop 25-34 s), 20 MB
bodies (once echoed back whole), and the largest pathological body under the default 1 MiB limit (100,000
wrongly typed ids: the most JSON values per byte).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import uvicorn

from api.settings import Settings
from api.web.app import create_app


@contextlib.asynccontextmanager
async def serve(database_url: str) -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    settings = Settings(_env_file=None, database_url=database_url, card_url=url)
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                serving.result()
                raise RuntimeError("the service stopped during start-up")
            await asyncio.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        await serving
        sock.close()


CASES: list[tuple[str, bytes]] = [
    (
        "40,000 task ids",
        json.dumps(
            {"agent_url": "http://a.test", "tasks": {"task_ids": [str(i) for i in range(40_000)]}}
        ).encode(),
    ),
    (
        "1,000 task ids, all unknown but 114",
        json.dumps(
            {"agent_url": "http://a.test", "tasks": {"task_ids": [str(i) for i in range(1_000)]}}
        ).encode(),
    ),
    (
        "100,000 wrongly typed ids",
        json.dumps(
            {"agent_url": "http://a.test", "tasks": {"task_ids": [[i] for i in range(100_000)]}}
        ).encode(),
    ),
    ("20 MB body", b'{"agent_url": "' + b"a" * 20_000_000 + b'"}'),
    ("NaN", b'{"agent_url": "http://a.test", "turn_timeout_s": NaN}'),
]


async def main(database_url: str) -> None:
    async with serve(database_url) as url, httpx.AsyncClient(base_url=url, timeout=120) as client:
        stall = 0.0
        running = True

        async def ticker() -> None:
            nonlocal stall
            while running:
                started = time.perf_counter()
                await asyncio.sleep(0.005)
                stall = max(stall, time.perf_counter() - started - 0.005)

        ticking = asyncio.create_task(ticker())
        print(f"{'case':<38} {'body':>12} {'status':>6} {'answer':>8} {'time':>9} {'worst loop stall':>17}")
        for name, body in CASES:
            stall = 0.0
            started = time.perf_counter()
            response = await client.post(
                "/assessments", content=body, headers={"Content-Type": "application/json"}
            )
            elapsed = time.perf_counter() - started
            print(
                f"{name:<38} {len(body):>10} B {response.status_code:>6} {len(response.content):>6} B "
                f"{1000 * elapsed:>6.0f} ms {1000 * stall:>14.0f} ms"
            )
        running = False
        await ticking
    print("(the client runs in the same process and loop: its own sending counts in time and stall)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        asyncio.run(main(url))
