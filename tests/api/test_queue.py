"""The trial queue's order, on procrastinate's real fetch (PostgreSQL) and its in-memory queue (SQLite):
assessments take turns trial by trial, and an assessment never has more than `concurrency` trials running
across all workers (its lock lanes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from procrastinate.jobs import Job, Status

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.queue import QueueSettings, TrialQueue

A = "aaaaaaaa-0000-4000-8000-000000000000"
B = "bbbbbbbb-0000-4000-8000-000000000000"


@pytest.fixture
async def queue(database_url: str) -> AsyncIterator[TrialQueue]:
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
    trial_queue = TrialQueue(database_url, QueueSettings())
    trial_queue.register(lambda *args: None)  # type: ignore[arg-type]
    await trial_queue.open()
    try:
        yield trial_queue
    finally:
        await trial_queue.close()


def key(job: Job) -> tuple[str, str, int]:
    args = job.task_kwargs
    return (str(args["assessment_id"])[0], str(args["task_id"]), int(str(args["trial"])))


async def test_assessments_take_turns_and_lanes_bound_concurrency(queue: TrialQueue) -> None:
    manager = queue.app.job_manager
    worker = await manager.register_worker()
    await queue.enqueue(A, [("10", 0), ("11", 0), ("12", 0), ("13", 0)], concurrency=2)
    await queue.enqueue(B, [("20", 0), ("21", 0)], concurrency=1)
    assert await queue.pending(A) == 4 and await queue.pending(B) == 2

    fetched = []
    while (job := await manager.fetch_job(queues=None, worker_id=worker)) is not None:
        fetched.append(job)
    # A's two lanes and B's one lane are busy: nothing else may start, and B came in right after A's first.
    assert [key(j) for j in fetched] == [("a", "10", 0), ("b", "20", 0), ("a", "11", 0)]

    # A trial of B ends: B's next one (same lane) may start, A's third still waits for a lane of A.
    await manager.finish_job(fetched[1], status=Status.SUCCEEDED, delete_job=True)
    job = await manager.fetch_job(queues=None, worker_id=worker)
    assert job is not None and key(job) == ("b", "21", 0)
    assert await manager.fetch_job(queues=None, worker_id=worker) is None

    # Cancelling A drops its waiting trials and asks for its running ones to stop.
    await queue.cancel(A)
    assert await queue.pending(A) == 2  # the two running ones, now asked to abort
    running_a = {j.id for j in fetched if key(j)[0] == "a"}
    assert set(await manager.list_jobs_to_abort_async()) == running_a
