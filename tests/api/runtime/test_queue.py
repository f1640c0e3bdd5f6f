"""The trial queue, on procrastinate's real queue (PostgreSQL) and its in-memory one (SQLite), and the service
over it: an assessment never has more than `concurrency` trials queued or running, the first ones queued are
the longest, no trial waits in the queue twice, and cancelling drops waiting jobs and stops running ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import procrastinate
import pytest
from procrastinate.exceptions import AlreadyEnqueued
from sqlalchemy.exc import DBAPIError, OperationalError

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.runtime.queue import QueueSettings, TrialQueue, is_transient
from api.runtime.runtime import open_runtime
from green_agent.config import AssessmentConfig, TaskSelection
from tests.api.servers import green_settings

A = "aaaaaaaa-0000-4000-8000-000000000000"


@pytest.fixture
async def queue(database_url: str) -> AsyncIterator[TrialQueue]:
    """The queue as the service opens it: on PostgreSQL its hot statements on the service's asyncpg pool."""
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
        trial_queue = TrialQueue(database_url, QueueSettings(), database=engine)
        trial_queue.register(lambda *args: None)  # type: ignore[arg-type]
        await trial_queue.open()
        try:
            yield trial_queue
        finally:
            await trial_queue.close()
    finally:
        await engine.dispose()


async def test_no_trial_waits_twice_and_cancel_reaches_running_jobs(queue: TrialQueue) -> None:
    manager = queue.app.job_manager
    worker = await manager.register_worker()
    assert await queue.enqueue(A, [("10", 0), ("11", 0), ("12", 0)]) == 3
    with pytest.raises(AlreadyEnqueued):
        await queue.enqueue(A, [("13", 0), ("11", 0)])
    assert await queue.queued_trials(A) == {("10", 0), ("11", 0), ("12", 0)}

    first = await manager.fetch_job(queues=None, worker_id=worker)
    assert first is not None and first.task_kwargs["task_id"] == "10"  # first in, first out
    await queue.cancel(A)
    assert await queue.queued_trials(A) == {("10", 0)}  # running, and now asked to stop
    assert list(await manager.list_jobs_to_abort_async()) == [first.id]


async def test_an_assessment_queues_at_most_its_concurrency_longest_first(
    database_url: str, idle_url: str
) -> None:
    async with open_runtime(green_settings(database_url)) as runtime:
        config = AssessmentConfig(
            agent_url=idle_url, tasks=TaskSelection(split="base"), trials=2, concurrency=3, turn_timeout_s=60
        )
        record, _ = await runtime.service.create(config, source="cli")
        assert not any("no queue worker" in w for w in record.warnings)  # this process runs one
        queued = await runtime.service.queue.queued_trials(record.id)
        longest = runtime.engine.longest_first(config, runtime.engine.trial_keys(config))[:3]
        assert queued == set(longest)
        assert await runtime.service.start(record) == 0  # idempotent: nothing more is queued
        await asyncio.sleep(0.5)  # the worker has taken them; still only three
        assert await runtime.service.queue.queued_trials(record.id) == set(longest)
        final = await runtime.service.cancel(record.id)
        assert final.status == "cancelled"


def test_transient_storage_errors_are_told_apart() -> None:
    class DriverError(Exception):
        def __init__(self, sqlstate: str) -> None:
            super().__init__(sqlstate)
            self.sqlstate = sqlstate

    def error(sqlstate: str) -> DBAPIError:
        return DBAPIError("INSERT ...", {}, DriverError(sqlstate))

    assert is_transient(error("53300"))  # too many connections
    assert is_transient(error("57P03"))  # the server is starting up
    assert is_transient(OperationalError("SELECT 1", {}, DriverError("08006")))
    assert not is_transient(error("23505"))  # a unique violation will not pass by waiting
    assert not is_transient(ValueError("a bug"))


async def test_queue_connections_autocommit_and_exclusive_still_excludes(pg_database: str) -> None:
    """PostgreSQL: pooled queue connections run in autocommit (each procrastinate query is one statement), so
    a defer is not wrapped in BEGIN/COMMIT; `exclusive` still holds a transaction, and with it the advisory
    lock, until its block ends: a second `exclusive` of the same assessment waits for the first."""
    engine = create_engine(pg_database)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
    queue = TrialQueue(pg_database, QueueSettings(pool_size=3))
    queue.register(lambda *args: None)  # type: ignore[arg-type]
    await queue.open()
    try:
        assert isinstance(queue.connector, procrastinate.PsycopgConnector)
        async with queue.connector.pool.connection() as connection:
            assert connection.autocommit
        order: list[str] = []

        async def hold(name: str, seconds: float) -> None:
            async with queue.exclusive(A) as connection:
                assert connection.info.transaction_status.name == "INTRANS"
                order.append(f"{name} in")
                await asyncio.sleep(seconds)
                await queue.enqueue(A, [(name, 0)], connection)
                order.append(f"{name} out")

        # Two processes' worth of callers: the process-local lock is bypassed by a second queue object.
        other = TrialQueue(pg_database, QueueSettings(pool_size=3))
        other.register(lambda *args: None)  # type: ignore[arg-type]
        await other.open()
        try:

            async def hold_other() -> None:
                await asyncio.sleep(0.05)
                async with other.exclusive(A):
                    order.append("other in")

            await asyncio.gather(hold("first", 0.3), hold_other())
        finally:
            await other.close()
        assert order == ["first in", "first out", "other in"]
        assert await queue.queued_trials(A) == {("first", 0)}
    finally:
        await queue.close()
