"""The green agent as the benchmarks drive it: in this process, through the service and its SQL persistence.

`green_agent_service` opens what `api.runtime.runtime.open_runtime` opens for the CLI (migrated database,
engine, `AssessmentService`) except the A2A task store, which only the A2A door uses. It takes
`EngineSettings` directly because the benchmarks need settings the operator's `Settings` does not expose (the
scripted user's delay, concurrency bounds above the defaults). An assessment then runs exactly as `green-agent
run` runs one: `service.create(...)`, every finished trial committed to SQL inside the engine's awaited
callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import AssessmentRepository
from api.db.tables import TranscriptMessageRow, TrialRow
from api.runtime.memory import limit_malloc_arenas, tune_garbage_collector
from api.runtime.queue import QueueSettings
from api.runtime.runtime import freeze_startup_objects, open_service
from api.runtime.service import AssessmentService
from api.settings import default_of
from bench.procstats import (
    machine_busy_seconds,
    peak_rss_bytes,
    reset_peak_rss,
    rss_bytes,
    self_cpu_seconds,
)
from bench.white_agent import WhiteAgentProcess
from domain_kit import DomainData
from green_agent import AssessmentConfig, Engine, EngineSettings, TrialFinished, TrialResult

DatabaseKind = Literal["sqlite", "postgres"]
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
"""Where a fresh benchmark database is created (and dropped): the server, user and maintenance database."""


@contextlib.asynccontextmanager
async def fresh_database(kind: DatabaseKind, pg_url: str = DEFAULT_PG_URL) -> AsyncIterator[str]:
    """A new, empty database for one run (SQLite file in a temp dir, or a PostgreSQL database), dropped after;
    yields its SQLAlchemy async URL."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="green-bench-") as tmp:
            yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        return
    if kind != "postgres":
        raise ValueError(f"unknown database kind {kind!r}; use sqlite or postgres")
    name = f"green_bench_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        base = pg_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        yield f"{base}/{name}"
    finally:
        admin = await asyncpg.connect(pg_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@dataclass
class GreenAgent:
    database: AsyncEngine
    repository: AssessmentRepository
    engine: Engine
    service: AssessmentService


@contextlib.asynccontextmanager
async def green_agent_service(
    database_url: str, settings: EngineSettings, data: DomainData
) -> AsyncIterator[GreenAgent]:
    limit_malloc_arenas(default_of("malloc_arenas"))  # as open_runtime does, with the default settings
    tune_garbage_collector(default_of("gc_gen0_threshold"))
    database = create_engine(database_url)
    freeze_startup_objects()  # as the service does once the data is loaded
    try:
        await upgrade(database)
        repository = AssessmentRepository(database)
        queue_settings = QueueSettings(worker_concurrency=settings.max_concurrent_trials)
        async with (
            Engine(settings, data) as engine,
            open_service(database_url, queue_settings, repository, engine, worker=True) as service,
        ):
            yield GreenAgent(database, repository, engine, service)
    finally:
        await database.dispose()


def engine_settings(
    concurrency: int, *, user_delay_s: float = 0.0, conversations_per_client: int | None = None
) -> EngineSettings:
    """Bounds wide enough that `concurrency` (the assessment's own) is the one that binds (one assessment of
    one tenant: the fair-share caps, which keep slots for other requesters, are lifted)."""
    settings = EngineSettings(
        max_concurrent_trials=max(64, concurrency),
        max_concurrent_per_agent=max(32, concurrency),
        scripted_user_delay_s=user_delay_s,
        tenant_slot_share=1.0,
        assessment_slot_share=1.0,
    )
    if conversations_per_client is None:
        return settings
    return settings.model_copy(update={"conversations_per_client": conversations_per_client})


def a2a_sends(trial: TrialResult) -> int:
    """Messages the green agent sent to the white agent: every assistant message but the fixed greeting."""
    return sum(1 for m in trial.transcript if m.role == "assistant") - 1


def user_turns(trial: TrialResult) -> int:
    return sum(1 for m in trial.transcript if m.role == "user")


@dataclass
class RunResult:
    wall_s: float
    green_cpu_s: float
    white_cpu_s: float
    green_rss_before: int
    green_peak_rss: int
    other_cpu_s: float
    """CPU other processes on the machine used meanwhile (other workloads skew wall times; CPU less so)."""
    trials: list[TrialResult] = field(default_factory=list)
    turns: int | None = None
    """A2A turns counted in SQL, when `trials` were read without their transcripts."""
    customer_calls: int | None = None
    """The customer's own tool calls (dual control), counted in SQL likewise: green work without an A2A
    turn."""

    @property
    def a2a_turns(self) -> int:
        return self.turns if self.turns is not None else sum(a2a_sends(t) for t in self.trials)

    @property
    def customer_tool_calls(self) -> int:
        if self.customer_calls is not None:
            return self.customer_calls
        return sum(1 for t in self.trials for m in t.transcript if m.role == "tool" and m.requestor == "user")

    @property
    def other_cores(self) -> float:
        return self.other_cpu_s / self.wall_s

    @property
    def avg_reward(self) -> float | None:
        rewards = [t.reward for t in self.trials if t.reward is not None]
        return sum(rewards) / len(rewards) if rewards else None


async def _measure(white: WhiteAgentProcess, run: Callable[[], Awaitable[list[TrialResult]]]) -> RunResult:
    await asyncio.to_thread(gc.collect)
    reset_peak_rss()
    rss_before = rss_bytes()
    cpu_before, white_before, machine_before = self_cpu_seconds(), white.cpu_seconds(), machine_busy_seconds()
    started = time.perf_counter()
    trials = await run()
    wall = time.perf_counter() - started
    cpu, white_cpu = self_cpu_seconds() - cpu_before, white.cpu_seconds() - white_before
    other = max(0.0, machine_busy_seconds() - machine_before - cpu - white_cpu)
    return RunResult(wall, cpu, white_cpu, rss_before, peak_rss_bytes(), other, trials)


async def run_measured(
    green: GreenAgent, config: AssessmentConfig, white: WhiteAgentProcess, *, transcripts: bool = True
) -> RunResult:
    """Run one assessment through the service (SQL included); measure wall time, both processes' CPU and the
    green agent's peak RSS. The stored trials are read back after the clock stops; without `transcripts`,
    the turns are counted in SQL instead (456 transcripts read back would raise the RSS a later run in the
    same process starts from by ~25 MiB)."""
    assessment_id = ""

    async def run() -> list[TrialResult]:
        nonlocal assessment_id
        record, _ = await green.service.create(config, source="bench")
        assessment_id = record.id
        final = await green.service.wait(record.id)
        if final.status != "completed":
            raise RuntimeError(f"assessment {record.id} ended {final.status}: {final.error}")
        return []

    result = await _measure(white, run)
    result.trials = await green.repository.trial_results(assessment_id, transcripts=transcripts)
    if not transcripts:
        result.turns = await _a2a_turns(green.database, assessment_id)
        result.customer_calls = await _customer_calls(green.database, assessment_id)
    return result


async def _a2a_turns(database: AsyncEngine, assessment_id: str) -> int:
    """`a2a_sends` summed over the assessment's stored trials, in SQL."""
    async with database.connect() as connection:
        assistant = await connection.scalar(
            select(func.count())
            .select_from(TranscriptMessageRow)
            .join(TrialRow, TrialRow.id == TranscriptMessageRow.trial_id)
            .where(TrialRow.assessment_id == assessment_id, TranscriptMessageRow.role == "assistant")
        )
        trials = await connection.scalar(
            select(func.count()).select_from(TrialRow).where(TrialRow.assessment_id == assessment_id)
        )
    return int(assistant or 0) - int(trials or 0)


async def _customer_calls(database: AsyncEngine, assessment_id: str) -> int:
    """The customer's own tool calls of the assessment's stored trials (their results, requestor "user")."""
    async with database.connect() as connection:
        found = await connection.scalar(
            select(func.count())
            .select_from(TranscriptMessageRow)
            .join(TrialRow, TrialRow.id == TranscriptMessageRow.trial_id)
            .where(
                TrialRow.assessment_id == assessment_id,
                TranscriptMessageRow.role == "tool",
                TranscriptMessageRow.requestor == "user",
            )
        )
    return int(found or 0)


async def run_engine_only(engine: Engine, config: AssessmentConfig, white: WhiteAgentProcess) -> RunResult:
    """The same assessment on the bare engine, nothing stored: the difference to `run_measured` is SQL."""
    trials: list[TrialResult] = []

    async def collect(event: object) -> None:
        if isinstance(event, TrialFinished):
            trials.append(event.result)

    async def run() -> list[TrialResult]:
        await engine.run(config, on_event=collect)
        return trials

    return await _measure(white, run)
