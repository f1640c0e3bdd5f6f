"""Everything one process needs to run assessments, opened and closed in the right order.

Used by the web app's lifespan and by the CLI (`run`, `demo`, `worker`): database (migrated), the default
domain's verified data, the engine, the trial queue, the service, the SDK's A2A task store in the same
database, and (unless turned off) a queue worker that runs trials in this process. On PostgreSQL the progress
relay carries events between processes.

Domains are reached through the engine (`runtime.engine.domain(name)`, or from async code
`await runtime.engine.load_domain(name)`): the default one is loaded at start-up (a broken data install stops
the start, and the first request is not kept waiting), every other one on first use, once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from a2a.server.tasks import DatabaseTaskStore
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.engine import create_engine
from api.db.migrate import schema_lock, upgrade
from api.db.repository import AssessmentRepository, RunnerLease
from api.runtime.events import EventRelay, ProgressHub, RelaySettings
from api.runtime.memory import limit_malloc_arenas, tune_garbage_collector
from api.runtime.metrics import AGENT_HOSTS, measure_loop_lag
from api.runtime.queue import QueueSettings, TrialQueue
from api.runtime.service import AssessmentService
from api.security.quotas import QuotaPolicy
from api.security.tenancy import TenantTaskStore
from api.settings import Settings, default_of
from domain_kit import DomainData
from green_agent.domains import DEFAULT_DOMAIN
from green_agent.engine import Engine
from green_agent.white_agent.egress import EgressPolicy

logger = logging.getLogger(__name__)


@functools.cache
def freeze_startup_objects() -> None:
    """Once per process, after the default domain's data is loaded: collect, then move every object alive so
    far out of the garbage collector's reach. The data lives as long as the process, and each full collection
    walked all of it: a pause of ~150 ms of event loop at random moments (bench/hostile_load.py found it)."""
    gc.collect()
    gc.freeze()


@functools.cache
def _freeze_domain(name: str) -> None:
    gc.collect()
    gc.freeze()


def freeze_domain(data: DomainData) -> None:
    """The same for a domain loaded later, on first use (once per domain and process): airline's parsed DB
    alone is ~25 MiB of objects that no collection should walk again."""
    _freeze_domain(data.name)


@dataclass
class Runtime:
    settings: Settings
    database: AsyncEngine
    repository: AssessmentRepository
    engine: Engine
    service: AssessmentService
    task_store: DatabaseTaskStore
    worker_running: bool


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


WORKER_START_WAIT_S = 10.0


async def _registered(queue: TrialQueue) -> None:
    """Wait (boundedly) until this process's worker is registered, so that the first assessments do not
    report that no worker runs."""
    deadline = time.monotonic() + WORKER_START_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if await queue.live_workers():
                return
        await asyncio.sleep(0.02)
    logger.warning("the queue worker has not registered after %.0f s", WORKER_START_WAIT_S)


@asynccontextmanager
async def open_service(
    database_url: str,
    queue_settings: QueueSettings,
    repository: AssessmentRepository,
    engine: Engine,
    *,
    worker: bool,
    egress: EgressPolicy | None = None,
    quotas: QuotaPolicy | None = None,
    take_over: bool = True,
    stream_queue_events: int = default_of("stream_queue_events"),
    relay_settings: RelaySettings | None = None,
    open_assessments: int = default_of("open_assessments"),
) -> AsyncIterator[AssessmentService]:
    """The service over an open engine: its trial queue, the progress relay (PostgreSQL) and, when `worker`,
    a queue worker running trials in this process; all stopped on exit (workers first). On SQLite a process
    with a worker claims what it runs (`RunnerLease`, renewed every heartbeat, released on exit) and, when
    `take_over`, resumes assessments whose runner is gone; `run` and `demo` pass False: they run their own."""
    queue = TrialQueue(database_url, queue_settings, database=repository.database)
    await queue.open()
    background: list[asyncio.Task[None]] = []
    try:
        hub = ProgressHub(stream_queue_events)
        relay = EventRelay(hub, queue.connector, relay_settings) if queue.persistent else None
        lease = (
            RunnerLease(worker_name(), queue_settings.stalled_after_s)
            if worker and not queue.persistent
            else None
        )
        service = AssessmentService(
            repository,
            engine,
            queue,
            hub=hub,
            events=relay or hub,
            egress=egress,
            quotas=quotas,
            lease=lease,
            take_over=take_over,
            open_assessments=open_assessments,
        )
        background.append(asyncio.create_task(measure_loop_lag(), name="event-loop lag"))
        if relay is not None:
            background.append(asyncio.create_task(relay.run(), name="progress relay"))
        if lease is not None:
            keeping = service.keep_leases(queue_settings.heartbeat_interval_s)
            background.append(asyncio.create_task(keeping, name="runner lease"))
        if worker:
            # The worker also checks now and then that every unfinished assessment has work queued (a job
            # that failed for good queues no successor): nothing stays `running` with nobody on it.
            worker_task = queue.run_worker(worker_name(), repair=service.resume_unfinished)
            background.append(asyncio.create_task(worker_task, name="queue worker"))
            await _registered(queue)
        stop_watching_providers = service.watch_providers()
        try:
            yield service
        finally:
            # Workers first: their running jobs get the grace period, then go back to the queue; the relay
            # last, so the workers' final events still go out.
            for task in reversed(background):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            stop_watching_providers()
    finally:
        await queue.close()


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    database: AsyncEngine | None = None,
    task_store: DatabaseTaskStore | None = None,
    worker: bool | None = None,
    take_over: bool = True,
) -> AsyncIterator[Runtime]:
    """Migrate, load and verify the data, open the engine, the queue and the service, and start a worker
    when `worker` (default: the `worker_enabled` setting). Resuming is a separate step, `resume`, so
    listeners can be attached first. `take_over` False: on SQLite, leave other processes' unfinished
    assessments alone even when their runner is gone (`run` and `demo` run only their own)."""
    limit_malloc_arenas(settings.malloc_arenas)  # before the first database connection starts its thread
    tune_garbage_collector(settings.gc_gen0_threshold)
    owns_database = database is None
    database = database or create_engine(
        settings.database_url,
        connect_timeout_s=settings.db_connect_timeout_s,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        sqlite_cache_kib=settings.sqlite_cache_kib,
        ping_after_idle_s=settings.db_ping_after_idle_s,
    )
    try:
        await upgrade(database)
        task_store = task_store or TenantTaskStore(database)
        async with schema_lock(database):  # the SDK creates its table if missing: one replica at a time
            await task_store.initialize()
        repository = AssessmentRepository(database)
        AGENT_HOSTS.max_entries = settings.metrics_agent_hosts
        run_worker = settings.worker_enabled if worker is None else worker
        async with Engine(settings.engine_settings()) as engine:
            # Parsing and hashing the data files takes a moment of CPU: keep the event loop free.
            await engine.load_domain(DEFAULT_DOMAIN)
            freeze_startup_objects()
            engine.domain_loaded.append(freeze_domain)
            async with open_service(
                settings.database_url,
                QueueSettings.from_settings(settings),
                repository,
                engine,
                worker=run_worker,
                egress=settings.egress_policy(),
                quotas=QuotaPolicy.from_settings(settings),
                take_over=take_over,
                stream_queue_events=settings.stream_queue_events,
                relay_settings=RelaySettings.from_settings(settings),
                open_assessments=settings.open_assessments,
            ) as service:
                yield Runtime(settings, database, repository, engine, service, task_store, run_worker)
    finally:
        if owns_database:
            await database.dispose()


async def resume(runtime: Runtime) -> list[str]:
    resumed = await runtime.service.resume_unfinished()
    if resumed:
        logger.info("resumed %d unfinished assessment(s): %s", len(resumed), ", ".join(resumed))
    return resumed
