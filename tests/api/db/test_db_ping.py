"""PostgreSQL pools: a connection used a moment ago is not checked again before use (a check is three round
trips on asyncpg); one idle for `ping_after_idle_s` or more is, so a connection the server dropped while it
sat idle (a restart, an idle timeout) is replaced without anyone seeing an error."""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
import pytest
from procrastinate.exceptions import ConnectorException
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from api.db.engine import DB_POOL_SIZE, create_engine
from api.runtime.queue import QueueSettings, TrialQueue


async def test_connections_are_checked_only_after_sitting_idle(pg_database: str) -> None:
    engine = create_engine(pg_database, ping_after_idle_s=0.5, pool_size=1, max_overflow=0)
    admin = await asyncpg.connect(pg_database.replace("postgresql+asyncpg://", "postgresql://"))

    async def backend_pid() -> int:
        async with engine.connect() as connection:
            return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())

    async def drop(pid: int) -> None:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
        await asyncio.sleep(0.1)

    try:
        first = await backend_pid()
        await drop(first)
        # Used 0.1 s ago, under the bound: not checked, so the statement meets the dropped connection.
        with pytest.raises(DBAPIError):
            await backend_pid()
        second = await backend_pid()  # the pool replaced the dropped connection
        assert second != first
        await drop(second)
        await asyncio.sleep(0.5)  # idle just past the bound: checked, replaced, nothing fails
        third = await backend_pid()
        assert third not in (first, second)
    finally:
        await admin.close()
        await engine.dispose()


async def test_queue_connections_are_checked_only_after_sitting_idle(pg_database: str) -> None:
    """The same rule for the job queue's pool (procrastinate would check each connection it hands out)."""
    queue = TrialQueue(pg_database, QueueSettings(pool_size=1, ping_after_idle_s=0.5))
    admin = await asyncpg.connect(pg_database.replace("postgresql+asyncpg://", "postgresql://"))

    async def backend_pid() -> int:
        row = await queue.connector.execute_query_one_async("SELECT pg_backend_pid() AS pid")
        return int(row["pid"])

    async def drop(pid: int) -> None:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
        await asyncio.sleep(0.1)

    await queue.open()
    try:
        first = await backend_pid()
        await drop(first)
        with pytest.raises(ConnectorException):  # handed out 0.1 s ago: not checked
            await backend_pid()
        second = await backend_pid()
        assert second != first
        await drop(second)
        await asyncio.sleep(0.5)
        third = await backend_pid()  # checked, replaced, nothing fails
        assert third not in (first, second)
    finally:
        await admin.close()
        await queue.close()


async def test_a_burst_as_wide_as_the_pool_reuses_its_connections(pg_database: str) -> None:
    """Every live trial may store at once (a wave of trials starting or ending together). With the default
    pool, a second burst as wide as the first opens no connection: each one opened costs ~2.7 ms of CPU, ten
    pooled statements. One more than the pool keeps is opened for the burst and closed again."""
    engine = create_engine(pg_database)
    opened = 0

    def count(*_: object) -> None:
        nonlocal opened
        opened += 1

    event.listen(engine.sync_engine.pool, "connect", count)

    async def burst(width: int) -> None:
        barrier = asyncio.Barrier(width)

        async def store() -> None:
            async with engine.connect() as connection:
                await barrier.wait()  # all `width` connections are checked out at once
                await connection.execute(text("SELECT 1"))

        await asyncio.gather(*(store() for _ in range(width)))

    try:
        await burst(DB_POOL_SIZE)
        assert opened == DB_POOL_SIZE
        await burst(DB_POOL_SIZE)
        assert opened == DB_POOL_SIZE  # all kept, none opened again
        await burst(DB_POOL_SIZE + 1)
        await burst(DB_POOL_SIZE + 1)
        assert opened == DB_POOL_SIZE + 2  # past the bound: one extra per burst, closed once back
    finally:
        await engine.dispose()
