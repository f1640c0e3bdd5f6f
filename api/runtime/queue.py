"""Trials as jobs of procrastinate, a PostgreSQL task queue: any number of worker processes share the work.

An assessment is one job per trial, but never more than its `concurrency` of them in the queue (waiting or
running) at a time: the service queues the first ones, and each job, as it ends, queues the next trials of its
assessment (longest first) to fill the room it leaves (`AssessmentService._top_up`). So an assessment never
runs more than `concurrency` trials across all workers, a trial starts on whichever worker slot frees first,
and the queue, first in first out, lets assessments take turns: none can fill it ahead of the others.
Jobs carry a queueing lock per trial, so no trial waits in the queue twice.

On PostgreSQL the queue lives in procrastinate's tables (created by our migrations). A worker records a
heartbeat; `sweep_stalled` (run by every worker process) puts the jobs of a worker whose heartbeat stopped (a
SIGKILLed process, a lost machine) back in the queue, so another worker runs them: that is how work resumes
after a crash. On SQLite (one process) the queue is procrastinate's in-memory connector, lost with the
process, so the service queues the missing trials of unfinished assessments again at start-up instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import procrastinate
import psycopg
import psycopg_pool
from procrastinate import JobContext, RetryDecision
from procrastinate.exceptions import ConnectorException, JobAborted
from procrastinate.jobs import Job, Status
from procrastinate.retry import BaseRetryStrategy
from procrastinate.testing import InMemoryConnector
from procrastinate.utils import utcnow
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from api.runtime.queue_connector import QueueConnector
from api.settings import Settings, default_of

logger = logging.getLogger(__name__)

TRIAL_TASK = "green_agent.run_trial"


class _ExpectedJobEnds(logging.Filter):
    """A trial job stopped by a cancel (`JobAborted`) or by its worker stopping (`CancelledError`: it goes
    back to the queue) ended as expected: procrastinate's line about it stays, its traceback goes (cancelling
    printed five per cancelled assessment into the serve and worker logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], JobAborted | asyncio.CancelledError):
            record.exc_info = None
            record.exc_text = None
        return True


_EXPECTED_JOB_ENDS = _ExpectedJobEnds()
logging.getLogger("procrastinate.worker").addFilter(_EXPECTED_JOB_ENDS)

# Storage errors that may pass (a dropped connection, a database restarting or out of connection slots, a
# lock timeout): a job failing with one is retried, with a growing pause, for as long as it takes.
_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    OSError,
    ConnectorException,
)
# SQLSTATE prefixes of the same: connection exceptions, insufficient resources (too many connections),
# operator intervention (shutdown, cannot connect now), serialization failure, deadlock.
_TRANSIENT_SQLSTATES = ("08", "53", "57P", "40001", "40P01")
MAX_RETRY_PAUSE_S = 30


def is_transient(exc: BaseException) -> bool:
    """Whether a storage error may pass by itself, so that trying again later is the right answer."""
    if isinstance(exc, _TRANSIENT_TYPES):
        return True
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None) if isinstance(exc, DBAPIError) else None
    return isinstance(sqlstate, str) and sqlstate.startswith(_TRANSIENT_SQLSTATES)


def queue_of(assessment_id: str) -> str:
    """Each assessment has its queue (workers take every queue), so its jobs can be listed and cancelled.
    Short: procrastinate notifies on a channel named after the queue, and PostgreSQL allows 63 bytes."""
    return f"a/{assessment_id}"


@dataclass(frozen=True)
class QueueSettings:
    """How workers run and how fast a dead one is noticed (operator settings, see api/settings.py)."""

    worker_concurrency: int = default_of("max_concurrent_trials")
    heartbeat_interval_s: float = default_of("worker_heartbeat_s")
    stalled_after_s: float = default_of("worker_stalled_after_s")
    poll_interval_s: float = default_of("worker_poll_interval_s")
    shutdown_grace_s: float = default_of("worker_shutdown_grace_s")
    restart_pause_s: float = 2.0
    pool_size: int = default_of("queue_pool_size")
    connect_timeout_s: float = default_of("db_connect_timeout_s")
    ping_after_idle_s: float = default_of("db_ping_after_idle_s")

    @classmethod
    def from_settings(cls, settings: Settings) -> QueueSettings:
        return cls(
            worker_concurrency=settings.worker_concurrency or settings.max_concurrent_trials,
            heartbeat_interval_s=settings.worker_heartbeat_s,
            stalled_after_s=settings.worker_stalled_after_s,
            poll_interval_s=settings.worker_poll_interval_s,
            shutdown_grace_s=settings.worker_shutdown_grace_s,
            connect_timeout_s=settings.db_connect_timeout_s,
            pool_size=settings.queue_pool_size,
            ping_after_idle_s=settings.db_ping_after_idle_s,
        )


class TrialRetry(BaseRetryStrategy):
    """A trial job is retried when the worker stopped under it (shutdown) or storage failed for a reason that
    may pass; anything else was already turned into an outcome by the job itself."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, asyncio.CancelledError):
            return RetryDecision(retry_in={"seconds": 0})
        if is_transient(exception):
            return RetryDecision(retry_in={"seconds": min(2**job.attempts, MAX_RETRY_PAUSE_S)})
        return None


class LocalConnector(InMemoryConnector):
    """procrastinate's in-memory queue (one process, SQLite), where taking a job costs one pass over the
    queue (the original recomputes the busy locks for every waiting job: quadratic in the queue's length),
    and which keeps only the jobs waiting or running: the original is a test double that remembers every
    query it ran and every job it held, with their events, for the life of the process (~2.6 queries a
    second while idle, ~60 MiB a day; ~1.3 KiB per trial run)."""

    async def generic_execute(
        self, query: str, suffix: Literal["run", "one", "all"], **arguments: Any
    ) -> Any:
        # As the original, without appending (name, arguments) to `self.queries`.
        return await getattr(self, f"{self.reverse_queries[query]}_{suffix}")(**arguments)

    def _forget_if_done(self, job_id: int) -> None:
        """Drop a job that reached a final status, and its events (PostgreSQL keeps them in its table; here
        nothing reads them: `depth`, `queued_trials` and `cancel` look at waiting and running jobs only)."""
        job = self.jobs.get(job_id)
        if job is None or job["status"] not in ("todo", "doing"):
            self.jobs.pop(job_id, None)
            self.events.pop(job_id, None)

    async def finish_job_run(self, job_id: int, status: str, delete_job: bool) -> None:
        await super().finish_job_run(job_id, status, delete_job)
        self._forget_if_done(job_id)

    async def cancel_job_one(self, job_id: int, abort: bool, delete_job: bool) -> dict[str, Any]:
        result = await super().cancel_job_one(job_id, abort, delete_job)
        self._forget_if_done(job_id)
        return result

    async def fetch_job_one(self, queues: Iterable[str] | None, worker_id: int) -> dict[str, Any]:
        assert worker_id in self.workers, f"worker {worker_id} is not registered"
        wanted = set(queues) if queues is not None else None
        busy = {job["lock"] for job in self.jobs.values() if job["status"] == "doing"} - {None}
        now = utcnow()
        candidates = (
            job
            for job in self.jobs.values()
            if job["status"] == "todo"
            and (wanted is None or job["queue_name"] in wanted)
            and (not job["scheduled_at"] or job["scheduled_at"] <= now)
            and job["lock"] not in busy
        )
        job = min(candidates, key=lambda job: (-job["priority"], job["id"]), default=None)
        if job is None:
            return {"id": None}
        job["status"] = "doing"
        job["worker_id"] = worker_id
        self.events[job["id"]].append({"type": "started", "at": now})
        return job


def psycopg_conninfo(database_url: str) -> str:
    """The service's SQLAlchemy URL (postgresql+asyncpg://...) as a libpq connection string for psycopg."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _pool_checked_after_idle(idle_s: float) -> Callable[..., psycopg_pool.AsyncConnectionPool]:
    """A pool factory for procrastinate whose connections are checked before use only when they were last
    handed out `idle_s` or more ago (procrastinate checks every one: one more round trip per defer, fetch and
    finish of a job, ~0.1 ms of CPU each). Time since the last hand-out is never less than time idle, so a
    connection idle that long is always checked; one used a moment ago that the server dropped since fails its
    statement with a connection error, which is transient (`is_transient`): the pool discards it, and the
    worker, the stalled-job sweep or the caller's retry takes it from there, as for the service's own pool
    (`api.db.engine._ping_when_idle`)."""
    handed_out: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], float] = weakref.WeakKeyDictionary()

    async def check(connection: psycopg.AsyncConnection[Any]) -> None:
        now = time.monotonic()
        last = handed_out.get(connection)
        if last is None or now - last >= idle_s:
            await psycopg_pool.AsyncConnectionPool.check_connection(connection)
        handed_out[connection] = now

    def factory(**pool_args: Any) -> psycopg_pool.AsyncConnectionPool:
        return psycopg_pool.AsyncConnectionPool(**{**pool_args, "check": check})

    return factory


async def _autocommit(connection: psycopg.AsyncConnection[Any]) -> None:
    """Pooled queue connections run in autocommit. Each procrastinate query is one statement (a function
    call), atomic on its own; in a transaction, psycopg wraps it in BEGIN and the pool adds a COMMIT, two more
    round trips per defer, fetch and finish (~0.3 ms of CPU per job; docs/benchmarks.md, "Turn cost").
    `exclusive` opens its transaction explicitly, which autocommit does not change."""
    await connection.set_autocommit(True)


TrialHandler = Callable[[JobContext, str, str, int], Awaitable[None]]


class TrialQueue:
    """The procrastinate app of the service: enqueue, cancel, run workers, sweep stalled jobs."""

    def __init__(
        self, database_url: str, settings: QueueSettings, database: AsyncEngine | None = None
    ) -> None:
        """`database`: the service's engine on the same PostgreSQL database, whose asyncpg pool then runs the
        three statements every job makes (`QueueConnector`); without it all go through psycopg."""
        self.settings = settings
        self.persistent = make_url(database_url).get_backend_name() == "postgresql"
        connector: procrastinate.BaseConnector
        if self.persistent:
            pool: dict[str, Any] = {
                "conninfo": psycopg_conninfo(database_url),
                "min_size": 1,
                "max_size": settings.pool_size,
                "timeout": max(settings.connect_timeout_s * 2, 10.0),
                "kwargs": {"connect_timeout": max(int(settings.connect_timeout_s), 1)},
                "configure": _autocommit,
                "pool_factory": _pool_checked_after_idle(settings.ping_after_idle_s),
            }
            if database is not None:
                connector = QueueConnector(database=database, **pool)
            else:
                connector = procrastinate.PsycopgConnector(**pool)
        else:
            connector = LocalConnector()
        self.connector = connector
        self.app = procrastinate.App(connector=connector)
        self._local_lock = asyncio.Lock()

    async def open(self) -> None:
        await self.app.open_async()

    async def close(self) -> None:
        await self.app.close_async()

    def register(self, handler: TrialHandler) -> None:
        """Make `handler(context, assessment_id, task_id, trial)` the code that runs a trial job."""

        async def run_trial_job(context: JobContext, assessment_id: str, task_id: str, trial: int) -> None:
            await handler(context, assessment_id, task_id, trial)

        self.app.task(name=TRIAL_TASK, pass_context=True, retry=TrialRetry())(run_trial_job)

    # -- enqueueing and cancelling -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def exclusive(self, assessment_id: str) -> AsyncIterator[Any]:
        """Held while deciding which trials of an assessment to queue and queueing them, so that two jobs
        ending at the same moment (in any processes) do not both queue the same trial: on PostgreSQL a
        transaction holding an advisory lock on the assessment (yielded: pass it to `queued_trials` and
        `enqueue`, which then run in it), after a lock of this process."""
        # One at a time within the process first: waiting for the advisory lock holds a pooled connection,
        # and a few waiters would leave none for taking jobs and heartbeats.
        async with self._local_lock:
            if not isinstance(self.connector, procrastinate.PsycopgConnector):
                yield None
                return
            async with self.connector.pool.connection() as connection, connection.transaction():
                await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", (queue_of(assessment_id),)
                )
                yield connection

    async def enqueue(
        self, assessment_id: str, keys: Sequence[tuple[str, int]], connection: Any = None
    ) -> int:
        """Queue one job per (task id, trial) of `keys`, in that order. Raises procrastinate's
        AlreadyEnqueued (and queues none) when one of them is waiting in the queue already."""
        if not keys:
            return 0
        jobs = [
            Job(
                id=None,
                queue=queue_of(assessment_id),
                lock=None,
                queueing_lock=f"{assessment_id}/{task_id}/{trial}",
                task_name=TRIAL_TASK,
                task_kwargs={"assessment_id": assessment_id, "task_id": task_id, "trial": trial},
            )
            for task_id, trial in keys
        ]
        await self.app.job_manager.batch_defer_jobs_async(jobs, connection=connection)
        return len(jobs)

    async def queued_trials(self, assessment_id: str, connection: Any = None) -> set[tuple[str, int]]:
        """(task id, trial) of the assessment's jobs waiting or running."""
        if isinstance(self.connector, InMemoryConnector):
            return {
                (str(job["args"]["task_id"]), int(job["args"]["trial"]))
                for job in self.connector.jobs.values()
                if job["queue_name"] == queue_of(assessment_id) and job["status"] in ("todo", "doing")
            }
        query = (
            "SELECT args->>'task_id' AS task_id, (args->>'trial')::int AS trial FROM procrastinate_jobs "
            "WHERE queue_name = %(queue)s AND status IN ('todo', 'doing')"
        )
        queue = queue_of(assessment_id)
        if connection is not None:
            rows = await self.connector.execute_query_all_async_with_connection(
                connection, query, queue=queue
            )
        else:
            rows = await self.connector.execute_query_all_async(query, queue=queue)
        return {(row["task_id"], row["trial"]) for row in rows}

    async def cancel(self, assessment_id: str, *, running: bool = True) -> None:
        """Drop the assessment's waiting jobs and (`running`) ask the workers running the others to stop them
        (every worker listens for that, and also polls for it)."""
        manager = self.app.job_manager
        queue = queue_of(assessment_id)
        wanted = ((Status.TODO, False), (Status.DOING, True)) if running else ((Status.TODO, False),)
        for status, abort in wanted:
            for job in await manager.list_jobs_async(queue=queue, status=status.value):
                assert job.id is not None
                await manager.cancel_job_by_id_async(job.id, abort=abort)

    # -- workers -----------------------------------------------------------------------------------------

    async def run_worker(self, name: str, repair: Callable[[], Awaitable[object]] | None = None) -> None:
        """Run a worker until cancelled. A worker that stops on its own (its database connection broke, its
        heartbeat failed) is started again after a pause: a database outage of any length ends with the
        worker back, and its unfinished jobs are picked up by the stalled-job sweep. `repair` (the service's
        check that every unfinished assessment has work queued) runs every `stalled_after_s`."""
        s = self.settings
        sweeping = asyncio.create_task(self._sweep_forever(repair), name="sweep stalled jobs")
        try:
            while True:
                try:
                    await self.app.run_worker_async(
                        name=name,
                        concurrency=s.worker_concurrency,
                        install_signal_handlers=False,
                        update_heartbeat_interval=s.heartbeat_interval_s,
                        stalled_worker_timeout=s.stalled_after_s,
                        fetch_job_polling_interval=s.poll_interval_s,
                        abort_job_polling_interval=s.poll_interval_s,
                        shutdown_graceful_timeout=s.shutdown_grace_s,
                        delete_jobs="successful",
                    )
                    logger.warning("worker %s stopped; starting it again in %.1f s", name, s.restart_pause_s)
                except Exception as exc:
                    logger.warning(
                        "worker %s failed (%s: %s); starting it again in %.1f s",
                        name,
                        type(exc).__name__,
                        exc,
                        s.restart_pause_s,
                    )
                await asyncio.sleep(s.restart_pause_s)
        finally:
            sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeping

    async def _sweep_forever(self, repair: Callable[[], Awaitable[object]] | None) -> None:
        repaired = time.monotonic()
        while True:
            try:
                await self.sweep_stalled()
                if repair is not None and time.monotonic() - repaired >= self.settings.stalled_after_s:
                    repaired = time.monotonic()
                    await repair()
            except Exception as exc:  # the database may be down; the next round tries again
                logger.debug("stalled-job sweep failed: %s: %s", type(exc).__name__, exc)
            await asyncio.sleep(self.settings.heartbeat_interval_s)

    async def sweep_stalled(self) -> list[int]:
        """Put back in the queue the running jobs of workers whose heartbeat is older than `stalled_after_s`
        (and forget those workers). Several processes may sweep at once: a job already put back is skipped."""
        manager = self.app.job_manager
        after = self.settings.stalled_after_s
        retried = []
        for job in await manager.get_stalled_jobs(seconds_since_heartbeat=after):
            assert job.id is not None
            try:
                await manager.retry_job(job)
            except ConnectorException as exc:  # another sweeper was first, or the job just finished
                logger.debug("stalled job %s not retried: %s", job.id, exc)
                continue
            logger.warning("job %s (%s) of a stalled worker is queued again", job.id, job.call_string)
            retried.append(job.id)
        await manager.prune_stalled_workers(after)
        return retried

    async def depth(self) -> dict[str, int]:
        """Trial jobs by status (todo, doing), all assessments together."""
        if isinstance(self.connector, InMemoryConnector):
            counts: dict[str, int] = {}
            for job in self.connector.jobs.values():
                counts[job["status"]] = counts.get(job["status"], 0) + 1
            return counts
        rows = await self.connector.execute_query_all_async(
            "SELECT status::text AS status, count(*) AS n FROM procrastinate_jobs "
            "WHERE status IN ('todo', 'doing') GROUP BY status"
        )
        return {row["status"]: int(row["n"]) for row in rows}

    async def live_workers(self) -> int:
        """Workers whose last heartbeat is more recent than `stalled_after_s`."""
        if isinstance(self.connector, InMemoryConnector):
            return len(self.connector.workers)
        row = await self.connector.execute_query_one_async(
            "SELECT count(*) AS n FROM procrastinate_workers "
            "WHERE last_heartbeat > now() - %(after)s * interval '1 second'",
            after=self.settings.stalled_after_s,
        )
        return int(row["n"])
