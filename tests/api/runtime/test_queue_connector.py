"""The job queue's hot statements on asyncpg (api/runtime/queue_connector.py), on a real PostgreSQL: jobs are
taken, finished and queued as through psycopg (a queueing lock still refuses a second job), none of those
statements reaches psycopg, the progress relay's notifications arrive, and a connection the server dropped
fails as a connector error and is replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import procrastinate
import pytest
from procrastinate import sql
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.runtime.queue import QueueSettings, TrialQueue
from api.runtime.queue_connector import NOTIFY_BATCH, QueueConnector
from tests.support.postgres import one_connection_engine, terminate_pooled_connection

A = "aaaaaaaa-0000-4000-8000-00000000000a"
HOT = {sql.queries["fetch_job"], sql.queries["finish_job"], sql.queries["defer_jobs"], NOTIFY_BATCH}


@pytest.fixture
async def database(pg_database: str) -> AsyncIterator[AsyncEngine]:
    engine = await one_connection_engine(pg_database)
    yield engine
    await engine.dispose()


async def test_jobs_run_through_asyncpg_and_never_reach_psycopg(
    pg_database: str, database: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_psycopg: list[str] = []
    for name in ("execute_query_async", "execute_query_one_async", "execute_query_all_async"):
        original = getattr(procrastinate.PsycopgConnector, name)

        def counted(original: Any) -> Any:
            async def run(self: Any, query: str, **arguments: Any) -> Any:
                through_psycopg.append(query)
                return await original(self, query, **arguments)

            return run

        monkeypatch.setattr(procrastinate.PsycopgConnector, name, counted(original))

    queue = TrialQueue(pg_database, QueueSettings(worker_concurrency=4), database=database)
    assert isinstance(queue.connector, QueueConnector)
    ran: list[tuple[str, int]] = []

    async def handler(context: object, assessment_id: str, task_id: str, trial: int) -> None:
        ran.append((task_id, trial))
        if len(ran) < 6:  # each job queues the next, as a trial job does
            await queue.enqueue(assessment_id, [(f"t{len(ran) + 1}", 0)])

    queue.register(handler)
    await queue.open()
    try:
        assert await queue.enqueue(A, [("t1", 0)]) == 1
        with pytest.raises(AlreadyEnqueued):
            await queue.enqueue(A, [("t1", 0)])  # the queueing lock, as through psycopg
        worker = asyncio.create_task(queue.run_worker("test"))
        for _ in range(200):
            if len(ran) == 6 and not await queue.queued_trials(A):
                break
            await asyncio.sleep(0.05)
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    finally:
        await queue.close()
    assert ran == [(f"t{n}", 0) for n in range(1, 7)]
    async with database.connect() as connection:
        statuses = (await connection.execute(text("SELECT status FROM procrastinate_jobs"))).scalars().all()
    assert statuses == []  # each finished as it succeeded (the worker deletes those)
    assert through_psycopg and not HOT & set(through_psycopg)  # the rest (worker, sweeps) still does


async def test_the_relay_notifications_arrive(pg_database: str, database: AsyncEngine) -> None:
    connector = QueueConnector(database=database, conninfo=pg_database.replace("+asyncpg", ""))
    received: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(pg_database.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await listener.add_listener("relay_test", lambda *args: received.put_nowait(args[3]))
        await connector.execute_query_async(NOTIFY_BATCH, channel="relay_test", payloads=["one", "two"])
        got = [await asyncio.wait_for(received.get(), 5), await asyncio.wait_for(received.get(), 5)]
        assert got == ["one", "two"]
    finally:
        await listener.close()


async def test_a_dropped_connection_is_a_connector_error_and_is_replaced(
    pg_database: str, database: AsyncEngine
) -> None:
    connector = QueueConnector(database=database, conninfo=pg_database.replace("+asyncpg", ""))
    await terminate_pooled_connection(database, pg_database)
    fetch = {"query": sql.queries["fetch_job"], "queues": None, "worker_id": None}
    with pytest.raises(ConnectorException):
        await connector.execute_query_one_async(**fetch)
    row = await connector.execute_query_one_async(**fetch)  # a new connection; no job waiting
    assert row["id"] is None
