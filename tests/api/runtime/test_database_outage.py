"""Database outages through a TCP proxy the test cuts and stalls (PostgreSQL; the service's only link to its
database is the proxy). While the database is away /readyz answers 503 within 2 s; the running assessment
neither stays `running` with nobody working on it nor loses anything: when the link comes back, the queue's
stalled-job sweep puts the interrupted trials back, and the assessment completes with every trial stored once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.servers import poll, serve_green
from tests.conftest import PG_HOST, PG_PORT, PG_USER, create_pg_database, drop_pg_database
from tests.support.tcp_proxy import TcpProxy, tcp_proxy

OUTAGE_SETTINGS = {
    "worker_heartbeat_s": 0.5,
    "worker_stalled_after_s": 3.0,
    "worker_poll_interval_s": 0.5,
    "worker_shutdown_grace_s": 1.0,
    "db_connect_timeout_s": 1.0,
    "readyz_timeout_s": 1.5,
}
READYZ_BOUND_S = 2.0


@pytest.fixture
async def proxied_database() -> AsyncIterator[tuple[str, TcpProxy]]:
    name = await create_pg_database()
    try:
        async with tcp_proxy(PG_HOST, PG_PORT) as proxy:
            yield f"postgresql+asyncpg://{PG_USER}@127.0.0.1:{proxy.port}/{name}", proxy
    finally:
        await drop_pg_database(name)


async def readyz(client: httpx.AsyncClient) -> tuple[int, float]:
    began = time.monotonic()
    response = await client.get("/readyz")
    return response.status_code, time.monotonic() - began


async def test_assessment_survives_a_cut_and_a_stalled_database_link(
    proxied_database: tuple[str, TcpProxy], slow_oracle_url: str
) -> None:
    database_url, proxy = proxied_database
    config = {"agent_url": slow_oracle_url, "tasks": {"num_tasks": 30}, "trials": 1, "concurrency": 3}
    async with (
        serve_green(database_url, **OUTAGE_SETTINGS) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        assert (await readyz(client))[0] == 200
        assessment_id = (await client.post("/assessments", json=config)).json()["id"]
        path = f"/assessments/{assessment_id}"
        await poll(client, path, lambda b: b["progress"]["trials_done"] >= 3, timeout_s=60)

        proxy.cut()  # the database is gone: connections reset, new ones refused
        for _ in range(4):
            status, took = await readyz(client)
            assert status == 503 and took < READYZ_BOUND_S
            await asyncio.sleep(1.0)
        await asyncio.sleep(4.0)  # longer than the stalled-worker timeout
        proxy.restore()
        await poll(client, "/readyz", lambda b: b["status"] == "ready", timeout_s=30)
        during = await poll(client, path, lambda b: True)
        assert during["status"] == "running"

        proxy.stall()  # the link freezes: nothing answers, nothing fails
        for _ in range(3):
            status, took = await readyz(client)
            assert status == 503 and took < READYZ_BOUND_S
            await asyncio.sleep(1.0)
        proxy.restore()

        final = await poll(client, path, lambda b: b["status"] != "running", timeout_s=180)
        trials = (await client.get(f"{path}/trials", params={"limit": 100})).json()

    assert final["status"] == "completed", final
    assert final["progress"] == {"trials_done": 30, "trials_total": 30}
    keys = [(t["task_id"], t["trial"]) for t in trials["data"]]
    assert len(keys) == 30 and len(set(keys)) == 30
