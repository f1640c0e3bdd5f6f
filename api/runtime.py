"""Everything one process needs to run assessments, opened and closed in the right order.

Used by the web app's lifespan and by the CLI (`run`, `demo`): database (migrated), verified retail data, the
engine, the service, and the SDK's A2A task store in the same database.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from a2a.server.tasks import DatabaseTaskStore
from sqlalchemy.ext.asyncio import AsyncEngine

from api.a2a.tenancy import TenantTaskStore
from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import AssessmentRepository
from api.service import AssessmentService
from api.settings import Settings
from green_agent.engine import Engine
from retail_domain import RetailData, load_retail_data

logger = logging.getLogger(__name__)


@functools.cache
def freeze_startup_objects() -> None:
    """Once per process, after the retail data is loaded: collect, then move every object alive so far out of
    the garbage collector's reach. The data lives as long as the process, and each full collection walked
    all of it: a pause of ~150 ms of event loop at random moments (bench/hostile_load.py found it)."""
    gc.collect()
    gc.freeze()


@dataclass
class Runtime:
    settings: Settings
    database: AsyncEngine
    repository: AssessmentRepository
    data: RetailData
    engine: Engine
    service: AssessmentService
    task_store: DatabaseTaskStore


@asynccontextmanager
async def open_runtime(
    settings: Settings, *, database: AsyncEngine | None = None, task_store: DatabaseTaskStore | None = None
) -> AsyncIterator[Runtime]:
    """Migrate, load and verify the data, open the engine and the service (resuming is a separate step,
    `resume`, so listeners can be attached first)."""
    owns_database = database is None
    database = database or create_engine(settings.database_url)
    try:
        await upgrade(database)
        task_store = task_store or TenantTaskStore(database)
        await task_store.initialize()
        # Parsing and hashing the data files takes a moment of CPU: keep the event loop free.
        data = await asyncio.to_thread(load_retail_data, settings.data_dir)
        freeze_startup_objects()
        repository = AssessmentRepository(database)
        async with Engine(settings.engine_settings(), data) as engine:
            service = AssessmentService(
                repository, engine, quotas=settings.quota_policy(), egress=settings.egress_policy()
            )
            runtime = Runtime(settings, database, repository, data, engine, service, task_store)
            try:
                yield runtime
            finally:
                await service.aclose()
    finally:
        if owns_database:
            await database.dispose()


async def resume(runtime: Runtime) -> list[str]:
    resumed = await runtime.service.resume_unfinished()
    if resumed:
        logger.info("resumed %d unfinished assessment(s): %s", len(resumed), ", ".join(resumed))
    return resumed
