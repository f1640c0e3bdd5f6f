"""The data layer: every query and every transaction of the service goes through `AssessmentRepository`.

It speaks in the engine's pydantic models (`TrialResult`, `AssessmentReport`) and in `AssessmentRecord`, a
frozen snapshot of one assessments row; SQLAlchemy rows never leave this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ARRAY,
    Column,
    ColumnElement,
    Float,
    Table,
    bindparam,
    case,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    true,
    update,
)
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import IntegrityError, NoResultFound
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import raiseload, selectinload

from api.db.direct import DirectStatement, fetch_row
from api.db.engine import sqlite_thread
from api.db.tables import (
    DEFAULT_DOMAIN,
    DEFAULT_TENANT,
    AssessmentRow,
    AttemptRow,
    NLVerdictRow,
    TranscriptMessageRow,
    TrialRow,
    UTCDateTime,
)
from green_agent.core.models import AssessmentReport, TranscriptMessage, TrialResult

# Assessment statuses. `queued` and `running` are unfinished: a restarted service resumes them.
QUEUED = "queued"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
UNFINISHED = (QUEUED, RUNNING)
TERMINAL = (COMPLETED, FAILED, CANCELLED)
STATUSES = (*UNFINISHED, *TERMINAL)

# Fields of TrialResult kept in their own tables or columns rather than in `trials.detail`.
_SPLIT_FIELDS = {"transcript", "nl_verdicts"}


@dataclass(frozen=True)
class Load:
    """What is unfinished right now: the tenant's assessments and trials, and all trials (what
    the admission quotas of api/security/quotas.py are checked against)."""

    tenant_active_assessments: int
    tenant_queued_trials: int
    total_queued_trials: int


class IdempotencyConflict(Exception):
    """The idempotency key was used before with a different request body."""

    def __init__(self, key: str, existing_id: str) -> None:
        super().__init__(
            f"Idempotency-Key {key!r} was already used for assessment {existing_id} "
            "with a different request; "
            "use a new key for a different request"
        )
        self.key = key
        self.existing_id = existing_id


@dataclass(frozen=True)
class AssessmentRecord:
    """One stored assessment, detached from the session."""

    id: str
    status: str
    agent_url: str
    config: dict[str, Any]
    source: str
    idempotency_key: str | None
    a2a_task_id: str | None
    a2a_context_id: str | None
    warnings: list[str]
    trials_total: int
    trials_done: int
    run_seconds: float
    report: AssessmentReport | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    tenant: str = DEFAULT_TENANT
    allow_private_agents: bool = True
    agent_headers: dict[str, str] = field(default_factory=dict, repr=False)
    """For the engine only: never returned, logged or shown."""
    attempt: int = 1
    """The current attempt: 1 when created, one more with each retry."""
    agent_name: str | None = None
    """The name on the agent's card (cleaned and bounded), once the card was read."""
    domain: str = DEFAULT_DOMAIN
    """The tau2 domain assessed (its config's `domain`)."""
    rerun_of: str | None = None
    """The assessment whose failed tasks this one reruns, if it is such a rerun."""

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class AssessmentLabel:
    """What names an assessment in a list to pick from: id, agent, status, when it was created, its domain."""

    id: str
    agent_url: str
    agent_name: str | None
    status: str
    created_at: datetime
    domain: str = DEFAULT_DOMAIN


@dataclass(frozen=True)
class Attempt:
    """One attempt of an assessment: its first run, or a retry (what it set out to do, and how it ended)."""

    number: int
    source: str
    reason: str
    trials_to_run: int
    trials_to_judge: int
    started_at: datetime
    finished_at: datetime | None
    status: str | None


@dataclass(frozen=True)
class RetryPlan:
    """What a retry does in the same assessment: the trials it runs (excluded as infrastructure errors, or
    never run) and the stored trials it judges again (their judge failed or was missing)."""

    run: tuple[tuple[str, int], ...]
    judge: tuple[tuple[str, int], ...]
    reason: str
    source: str


@dataclass(frozen=True)
class NewAssessment:
    """What `create` needs; `config` is the AssessmentConfig as JSON."""

    config: dict[str, Any]
    agent_url: str
    trials_total: int
    source: str
    warnings: list[str]
    domain: str = DEFAULT_DOMAIN
    tenant: str = DEFAULT_TENANT
    allow_private_agents: bool = True
    idempotency_key: str | None = None
    a2a_task_id: str | None = None
    a2a_context_id: str | None = None
    agent_headers: dict[str, str] = field(default_factory=dict, repr=False)
    lease: RunnerLease | None = None
    """SQLite: the process that will run it, claimed from the start (see `claim_unfinished`)."""
    rerun_of: str | None = None
    """The assessment whose failed tasks it reruns."""


@dataclass(frozen=True)
class RunnerLease:
    """A process's claim on the assessments it runs (SQLite, where each process has its own queue): its
    name, and how long a claim holds without being renewed."""

    runner: str
    seconds: float

    def expires_at(self) -> datetime:
        return _now() + timedelta(seconds=self.seconds)

    @staticmethod
    def gone(runner: str) -> bool:
        """Whether `runner` (host-pid) names a process of this machine that no longer exists: its claim can
        be taken over now rather than when its lease expires (a SQLite file is mostly used on one host)."""
        host, _, pid = runner.rpartition("-")
        if host != socket.gethostname() or not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, someone else's
            return False
        return False


@dataclass(frozen=True)
class TrialJobState:
    """What a trial job reads before it runs its trial: the assessment's status, whether that trial is
    stored already, and whether (stored) it waits to be judged again by a retry."""

    status: str
    stored: bool
    judge_pending: bool = False
    attempt: int = 1

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class TrialSummary:
    """A trial as listed: its verdict without transcript."""

    task_id: str
    trial: int
    termination_reason: str
    reward: float | None
    is_successful: bool | None
    nl_status: str
    steps: int
    error: str | None
    finished_at: datetime
    signals: tuple[dict[str, Any], ...] = ()
    failures: tuple[dict[str, Any], ...] | None = None
    """What went wrong, as classified when the trial was scored (`TrialResult.failures`); None for a trial
    stored before failures were classified."""


@dataclass(frozen=True)
class TaskRun:
    """One assessment's trials of one task (a task's history across runs of an agent)."""

    assessment_id: str
    created_at: datetime
    status: str
    agent_name: str | None
    trials: list[TrialSummary]
    domain: str = DEFAULT_DOMAIN


@dataclass(frozen=True)
class ScoredAssessment:
    """A completed assessment's headline numbers (what the leaderboard chooses its rows by)."""

    id: str
    agent_url: str
    created_at: datetime
    avg_reward: float | None
    excluded: dict[str, int]
    complete: bool | None  # the report's own flag, in reports that carry one
    agent_name: str | None = None
    domain: str = DEFAULT_DOMAIN


# The columns a trial summary needs: never the transcript, the judge input or the other `detail` fields.
_SUMMARY_COLUMNS = (
    TrialRow.task_id,
    TrialRow.trial,
    TrialRow.termination_reason,
    TrialRow.reward,
    TrialRow.is_successful,
    TrialRow.nl_status,
    TrialRow.steps,
    TrialRow.error,
    TrialRow.finished_at,
    TrialRow.signals,
    TrialRow.detail["failures"].label("failures"),
)


def trial_summary(source: Any) -> TrialSummary:
    """The summary of a selected trials row or of a TrialResult (they share these names), so a trial shown
    on its own and in a list is summarized the same way."""
    return TrialSummary(
        task_id=source.task_id,
        trial=source.trial,
        termination_reason=source.termination_reason,
        reward=source.reward,
        is_successful=source.is_successful,
        nl_status=source.nl_status,
        steps=source.steps,
        error=source.error,
        finished_at=source.finished_at,
        signals=tuple(s if isinstance(s, dict) else s.model_dump() for s in source.signals),
        failures=None
        if source.failures is None
        else tuple(f if isinstance(f, dict) else f.model_dump(mode="json") for f in source.failures),
    )


def request_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _record(row: AssessmentRow) -> AssessmentRecord:
    return AssessmentRecord(
        id=row.id,
        status=row.status,
        agent_url=row.agent_url,
        config=row.config,
        source=row.source,
        tenant=row.tenant,
        allow_private_agents=row.allow_private_agents,
        idempotency_key=row.idempotency_key,
        a2a_task_id=row.a2a_task_id,
        a2a_context_id=row.a2a_context_id,
        warnings=list(row.warnings),
        trials_total=row.trials_total,
        trials_done=row.trials_done,
        run_seconds=row.run_seconds,
        report=AssessmentReport.model_validate(row.report) if row.report is not None else None,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        agent_headers=dict(row.agent_headers or {}),
        attempt=row.attempt,
        agent_name=row.agent_name,
        domain=row.domain,
        rerun_of=row.rerun_of,
    )


def _transcript(row: TrialRow) -> list[dict[str, Any]]:
    return [
        {
            "index": m.index,
            "role": m.role,
            "content": m.content,
            "tool_calls": m.tool_calls,
            "tool_call_id": m.tool_call_id,
            "error": m.error,
            "timestamp": m.timestamp,
            "requestor": m.requestor,
        }
        for m in row.messages
    ]


def _trial_result(row: TrialRow, *, transcript: bool = True) -> TrialResult:
    data = dict(row.detail)
    data["transcript"] = _transcript(row) if transcript else []
    data["nl_verdicts"] = [
        {"index": v.index, "assertion": v.assertion, "passed": v.passed, "reason": v.reason}
        for v in row.verdicts
    ]
    return TrialResult.model_validate(data)


def _trial_values(assessment_id: str, result: TrialResult) -> dict[str, Any]:
    detail = result.model_dump(mode="json", exclude=_SPLIT_FIELDS)
    return {
        "assessment_id": assessment_id,
        "task_id": result.task_id,
        "trial": result.trial,
        "seed": result.seed,
        "termination_reason": str(result.termination_reason),
        "reward": result.reward,
        "is_successful": result.is_successful,
        "nl_status": result.nl_status,
        "signals": detail["signals"],
        "detail": detail,
        "error": result.error,
        "steps": result.steps,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "judge_pending": False,
    }


def _store_trial(
    connection: Connection, assessment_id: str, result: TrialResult, run_seconds: float | None
) -> int:
    """`save_trial`'s transaction on a synchronous connection (SQLite's thread, or `run_sync`)."""
    trial_id = connection.execute(_INSERT_TRIAL, _trial_values(assessment_id, result)).scalar_one()
    for start in range(0, len(result.transcript), MESSAGES_PER_INSERT):
        batch = result.transcript[start : start + MESSAGES_PER_INSERT]
        connection.execute(_INSERT_MESSAGES, _message_values(trial_id, batch))
    if result.nl_verdicts:
        connection.execute(_INSERT_VERDICTS, _verdict_values(trial_id, result))
    progress: dict[str, Any] = {"assessment": assessment_id, "now": _now()}
    if run_seconds is None:
        return int(connection.execute(_COUNT_TRIAL, progress).scalar_one())
    progress["run_seconds"] = run_seconds
    return int(connection.execute(_COUNT_TRIAL_AND_TIME, progress).scalar_one())


def _message_values(trial_id: int, messages: Sequence[TranscriptMessage]) -> list[dict[str, Any]]:
    # Plain dicts for one executemany: a trial has tens of messages, and one ORM object each cost more CPU
    # than the rest of the trial's storage together.
    return [
        {
            "trial_id": trial_id,
            "index": m.index,
            "role": m.role,
            "content": m.content,
            "tool_calls": [c.model_dump(mode="json") for c in m.tool_calls]
            if m.tool_calls is not None
            else None,
            "tool_call_id": m.tool_call_id,
            "error": m.error,
            "timestamp": m.timestamp,
            "requestor": m.requestor,
        }
        for m in messages
    ]


def _verdict_values(trial_id: int, result: TrialResult) -> list[dict[str, Any]]:
    return [
        {
            "trial_id": trial_id,
            "index": v.index,
            "assertion": v.assertion,
            "passed": v.passed,
            "reason": v.reason,
        }
        for v in result.nl_verdicts
    ]


_TRIALS = cast(Table, TrialRow.__table__)
_MESSAGES = cast(Table, TranscriptMessageRow.__table__)
_VERDICTS = cast(Table, NLVerdictRow.__table__)

# The statements of `save_trial`, built once: values go in as parameters, so each execution reuses the
# compiled form instead of building and cache-keying a new statement per trial.
_INSERT_TRIAL = insert(_TRIALS).returning(_TRIALS.c.id)
_INSERT_MESSAGES = insert(_MESSAGES)
MESSAGES_PER_INSERT = 128
"""Transcript rows per INSERT of `save_trial`. Where the rows are built on the event loop (PostgreSQL past one
INSERT, an in-memory SQLite), each batch is one await, so that storing a transcript of thousands of messages
(up to `max_steps` replies of `max_tool_calls` calls each) never holds the loop for long: ~10 us per row
(docs/benchmarks.md, hostile white agents); in one INSERT, a trial at `max_transcript_bytes` took up to 63 ms.
A SQLite file builds them on its own thread (api/db/sqlite_thread.py)."""
_INSERT_VERDICTS = insert(_VERDICTS)
# An increment, not a COUNT: under PostgreSQL's READ COMMITTED a concurrently committed trial is invisible
# to this statement's COUNT, but the increment applies to the row's latest version. The unique trial key
# guarantees one increment per stored trial.
_COUNT_TRIAL = (
    update(AssessmentRow)
    .where(AssessmentRow.id == bindparam("assessment"))
    .values(trials_done=AssessmentRow.trials_done + 1, updated_at=bindparam("now", type_=UTCDateTime()))
    .returning(AssessmentRow.trials_done)
)
# Several processes store trials of one assessment, each with its own clock: the running time kept is the
# largest any of them reported.
_RUN_SECONDS = bindparam("run_seconds", type_=Float())
_COUNT_TRIAL_AND_TIME = _COUNT_TRIAL.values(
    run_seconds=case(
        (AssessmentRow.run_seconds > _RUN_SECONDS, AssessmentRow.run_seconds), else_=_RUN_SECONDS
    )
)


def _row_columns(table: Table) -> list[Column[Any]]:
    """The columns of a trial's child rows (messages, verdicts) that its values fill in."""
    return [c for c in table.c if c.name not in ("id", "trial_id")]


def _insert_rows_of_stored_trial(table: Table, stored_trial: Any, name: str) -> Any:
    """A CTE inserting the rows of `table` (transcript messages or verdicts) of the trial `stored_trial` just
    inserted: one array parameter per column (`<name>_<column>`), unnested into rows."""
    columns = _row_columns(table)
    rows = (
        func.unnest(*[bindparam(f"{name}_{c.name}", type_=ARRAY(c.type)) for c in columns])
        .table_valued(*[c.name for c in columns])
        .render_derived(name=name)
    )
    return (
        insert(table)
        .from_select(
            ["trial_id", *[c.name for c in columns]],
            select(stored_trial.c.id, *[rows.c[c.name] for c in columns])
            .select_from(stored_trial)
            .join(rows, true()),
        )
        .cte(f"stored_{name}")
    )


# `save_trial` on PostgreSQL in one statement (data-modifying CTEs: the trial, its messages and verdicts, then
# the count), run in autocommit: atomic like the transaction it replaces, but one round trip instead of five
# (BEGIN, three statements, COMMIT), and the assessment's row is locked only for the statement's end rather
# than until a COMMIT the event loop has yet to send (docs/benchmarks.md, "Turn cost"). Transcripts longer
# than MESSAGES_PER_INSERT take the transaction, whose batches bound how long the loop encodes at once.
_STORED_TRIAL = (
    insert(_TRIALS)
    .values({c.name: bindparam(f"t_{c.name}", type_=c.type) for c in _TRIALS.c if c.name != "id"})
    .returning(_TRIALS.c.id)
    .cte("stored_trial")
)
_SAVE_TRIAL_AT_ONCE = _COUNT_TRIAL_AND_TIME.add_cte(
    _STORED_TRIAL,
    _insert_rows_of_stored_trial(_MESSAGES, _STORED_TRIAL, "m"),
    _insert_rows_of_stored_trial(_VERDICTS, _STORED_TRIAL, "v"),
)


def _columns(prefix: str, rows: list[dict[str, Any]], table: Table) -> dict[str, list[Any]]:
    return {f"{prefix}_{c.name}": [r[c.name] for r in rows] for c in _row_columns(table)}


# A trial job's opening read, one Core statement (the ORM `get` and a separate existence query cost twice the
# CPU; docs/benchmarks.md, "Turn cost").
_THIS_TRIAL = (
    _TRIALS.c.assessment_id == bindparam("assessment"),
    _TRIALS.c.task_id == bindparam("task_id"),
    _TRIALS.c.trial == bindparam("trial"),
)
_TRIAL_JOB_STATE = select(
    AssessmentRow.status,
    AssessmentRow.attempt,
    exists().where(*_THIS_TRIAL).label("stored"),
    exists().where(*_THIS_TRIAL, _TRIALS.c.judge_pending).label("judge_pending"),
).where(AssessmentRow.id == bindparam("assessment"))


def _one_trial(assessment_id: str, key: tuple[str, int]) -> tuple[ColumnElement[bool], ...]:
    """The WHERE clause of one trial of an assessment, by (task id, trial)."""
    task_id, trial = key
    return (
        _TRIALS.c.assessment_id == assessment_id,
        _TRIALS.c.task_id == task_id,
        _TRIALS.c.trial == trial,
    )


class _DirectStatements:
    """The trial path's statements compiled for PostgreSQL (api/db/direct.py)."""

    def __init__(self, dialect: Dialect) -> None:
        self.trial_job_state = DirectStatement(_TRIAL_JOB_STATE, dialect)
        self.save_trial = DirectStatement(_SAVE_TRIAL_AT_ONCE, dialect)


class AssessmentRepository:
    """Owns the queries and transactions over assessments, trials, transcripts and verdicts."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        # SQLite has one write lock for the whole file. Concurrent write transactions from this process
        # would each take a pooled connection and sleep in SQLite's busy handler, which is unfair and, on a
        # loaded machine, outlasted the busy timeout ("database is locked"); queueing them here instead
        # makes writers wait their turn, in order. Readers are not queued (WAL). PostgreSQL needs none.
        self._write_lock = asyncio.Lock() if engine.dialect.name == "sqlite" else None
        # The trial path (each job's opening read, each trial's save) skips the async layers: on SQLite it
        # runs on a thread of its own, on PostgreSQL straight on asyncpg.
        self._sqlite_thread = sqlite_thread(engine)
        self._direct = _DirectStatements(engine.dialect) if engine.dialect.name == "postgresql" else None

    @property
    def database(self) -> AsyncEngine:
        """The engine the repository runs on (its pool also serves the job queue's hot statements)."""
        return self._engine

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """Held around every write transaction."""
        if self._write_lock is None:
            yield
            return
        async with self._write_lock:
            yield

    def _session(self) -> AsyncSession:
        return self._sessions()

    async def ping(self) -> None:
        """Raise when the database cannot answer a trivial query."""
        async with self._engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def create(self, new: NewAssessment) -> tuple[AssessmentRecord, bool]:
        """Insert a queued assessment; with an idempotency key the tenant already used for the same request,
        return that one instead (`created` False). A key reused for a different request raises
        IdempotencyConflict."""
        digest = request_hash(new.config)
        if new.idempotency_key is not None:
            existing = await self.find_idempotent(new.tenant, new.idempotency_key, new.config)
            if existing is not None:
                return existing, False
        now = _now()
        row = AssessmentRow(
            id=str(uuid.uuid4()),
            status=QUEUED,
            agent_url=new.agent_url,
            config=new.config,
            domain=new.domain,
            source=new.source,
            tenant=new.tenant,
            allow_private_agents=new.allow_private_agents,
            idempotency_key=new.idempotency_key,
            request_hash=digest,
            a2a_task_id=new.a2a_task_id,
            a2a_context_id=new.a2a_context_id,
            warnings=list(new.warnings),
            trials_total=new.trials_total,
            trials_done=0,
            run_seconds=0.0,
            report=None,
            agent_headers=dict(new.agent_headers) or None,
            error=None,
            created_at=now,
            started_at=None,
            finished_at=None,
            updated_at=now,
            runner=new.lease.runner if new.lease is not None else None,
            lease_expires_at=new.lease.expires_at() if new.lease is not None else None,
            rerun_of=new.rerun_of,
        )
        first = AttemptRow(
            assessment_id=row.id,
            number=1,
            source=new.source,
            reason="created",
            trials_to_run=new.trials_total,
            trials_to_judge=0,
            started_at=now,
        )
        try:
            async with self._writing(), self._session() as session, session.begin():
                session.add(row)
                await session.flush()  # the assessment first: its attempt refers to it
                session.add(first)
        except IntegrityError:
            # Two requests with the same key raced; the other one won the unique constraint.
            if new.idempotency_key is None:
                raise
            existing = await self.find_idempotent(new.tenant, new.idempotency_key, new.config)
            if existing is None:
                raise
            return existing, False
        return _record(row), True

    async def find_idempotent(self, tenant: str, key: str, config: dict[str, Any]) -> AssessmentRecord | None:
        """The tenant's assessment made with this idempotency key, if any; IdempotencyConflict when it was
        made from a different request."""
        async with self._session() as session:
            row = (
                await session.execute(
                    select(AssessmentRow).where(
                        AssessmentRow.tenant == tenant, AssessmentRow.idempotency_key == key
                    )
                )
            ).scalar_one_or_none()
            if row is None:
                return None
            if row.request_hash != request_hash(config):
                raise IdempotencyConflict(key, row.id)
            return _record(row)

    async def get(self, assessment_id: str, *, tenant: str | None = None) -> AssessmentRecord | None:
        """The assessment, or None; with `tenant`, None unless it belongs to that tenant."""
        async with self._session() as session:
            row = await session.get(AssessmentRow, assessment_id)
            if row is None or (tenant is not None and row.tenant != tenant):
                return None
            return _record(row)

    async def get_by_a2a_task(self, a2a_task_id: str) -> AssessmentRecord | None:
        async with self._session() as session:
            row = (
                await session.execute(select(AssessmentRow).where(AssessmentRow.a2a_task_id == a2a_task_id))
            ).scalar_one_or_none()
            return _record(row) if row is not None else None

    async def load(self, tenant: str) -> Load:
        """Unfinished work right now: the tenant's assessments and trials not yet finished, and all trials."""
        remaining = AssessmentRow.trials_total - AssessmentRow.trials_done
        async with self._session() as session:
            rows = (
                await session.execute(
                    select(AssessmentRow.tenant, func.count(), func.sum(remaining))
                    .where(AssessmentRow.status.in_(UNFINISHED))
                    .group_by(AssessmentRow.tenant)
                )
            ).all()
        mine = next(((n, t) for owner, n, t in rows if owner == tenant), (0, 0))
        return Load(
            tenant_active_assessments=int(mine[0]),
            tenant_queued_trials=int(mine[1] or 0),
            total_queued_trials=sum(int(t or 0) for _, _, t in rows),
        )

    async def page(
        self,
        *,
        tenant: str | None = None,
        status: str | None = None,
        agent_url: str | None = None,
        domain: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[AssessmentRecord], int]:
        """A page of assessments, newest first, and the total matching the filters (`tenant` None: all)."""
        conditions = []
        if tenant is not None:
            conditions.append(AssessmentRow.tenant == tenant)
        if status is not None:
            conditions.append(AssessmentRow.status == status)
        if domain is not None:
            conditions.append(AssessmentRow.domain == domain)
        if agent_url is not None:
            conditions.append(AssessmentRow.agent_url == agent_url.rstrip("/"))
        async with self._session() as session:
            total = (
                await session.execute(select(func.count()).select_from(AssessmentRow).where(*conditions))
            ).scalar_one()
            rows = (
                await session.execute(
                    select(AssessmentRow)
                    .where(*conditions)
                    .order_by(AssessmentRow.created_at.desc(), AssessmentRow.id)
                    .limit(limit)
                    .offset(offset)
                )
            ).scalars()
            return [_record(r) for r in rows], total

    async def labels(
        self,
        *,
        tenant: str | None = None,
        rerun_of: str | None = None,
        before: AssessmentRecord | None = None,
        domain: str | None = None,
        limit: int = 50,
    ) -> list[AssessmentLabel]:
        """What names assessments in a list to pick from (no report or config is read), newest first:
        `tenant`'s (None: anyone's); with `rerun_of`, the reruns of that assessment's failed tasks; with
        `before`, those of its agent URL and domain created before it (the newest first is "the previous
        one"); with `domain`, that domain's."""
        conditions: list[ColumnElement[bool]] = []
        if tenant is not None:
            conditions.append(AssessmentRow.tenant == tenant)
        if domain is not None:
            conditions.append(AssessmentRow.domain == domain)
        if rerun_of is not None:
            conditions.append(AssessmentRow.rerun_of == rerun_of)
        if before is not None:
            conditions += [
                AssessmentRow.agent_url == before.agent_url,
                AssessmentRow.domain == before.domain,
                AssessmentRow.created_at <= before.created_at,
                AssessmentRow.id != before.id,
            ]
        columns = (
            AssessmentRow.id,
            AssessmentRow.agent_url,
            AssessmentRow.agent_name,
            AssessmentRow.status,
            AssessmentRow.created_at,
            AssessmentRow.domain,
        )
        async with self._session() as session:
            rows = await session.execute(
                select(*columns)
                .where(*conditions)
                .order_by(AssessmentRow.created_at.desc(), AssessmentRow.id)
                .limit(limit)
            )
            return [AssessmentLabel(*row) for row in rows]

    async def count_by_status(self) -> dict[str, int]:
        """How many assessments have each status (every status present, 0 when none)."""
        async with self._session() as session:
            rows = await session.execute(
                select(AssessmentRow.status, func.count()).group_by(AssessmentRow.status)
            )
            counts = {status: 0 for status in STATUSES}
            counts.update({status: int(count) for status, count in rows})
            return counts

    async def list_unfinished(self) -> list[AssessmentRecord]:
        return await self._oldest_first(AssessmentRow.status.in_(UNFINISHED))

    async def _oldest_first(self, condition: ColumnElement[bool]) -> list[AssessmentRecord]:
        async with self._session() as session:
            rows = (
                await session.execute(
                    select(AssessmentRow)
                    .where(condition)
                    .order_by(AssessmentRow.created_at, AssessmentRow.id)
                )
            ).scalars()
            return [_record(r) for r in rows]

    async def claim_unfinished(self, lease: RunnerLease, *, take_over: bool) -> list[AssessmentRecord]:
        """Claim for `lease.runner` the unfinished assessments it runs already and (`take_over`) those nobody
        runs: no runner, or a runner whose lease expired (it died, or stopped without releasing them); renew
        the lease of each, and return them oldest first. One conditional update, so two processes claiming
        at once never both get an assessment."""
        now = _now()
        mine = AssessmentRow.runner == lease.runner
        free = or_(AssessmentRow.runner.is_(None), AssessmentRow.lease_expires_at < now)
        async with self._writing(), self._session() as session, session.begin():
            claimed = await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.status.in_(UNFINISHED), or_(mine, free) if take_over else mine)
                .values(runner=lease.runner, lease_expires_at=lease.expires_at())
                .returning(AssessmentRow.id)
            )
            ids = [row[0] for row in claimed]
        return await self._oldest_first(AssessmentRow.id.in_(ids)) if ids else []

    async def unfinished_runners(self) -> set[str]:
        """The runners named by unfinished assessments."""
        async with self._session() as session:
            rows = await session.execute(
                select(AssessmentRow.runner)
                .where(AssessmentRow.status.in_(UNFINISHED), AssessmentRow.runner.is_not(None))
                .distinct()
            )
            return {runner for (runner,) in rows if runner is not None}

    async def renew_leases(self, lease: RunnerLease) -> int:
        """Push back the expiry of every unfinished assessment `lease.runner` runs; how many there are."""
        async with self._writing(), self._session() as session, session.begin():
            renewed = await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.status.in_(UNFINISHED), AssessmentRow.runner == lease.runner)
                .values(lease_expires_at=lease.expires_at())
                .returning(AssessmentRow.id)
            )
            return len(renewed.all())

    async def release_leases(self, runner: str) -> int:
        """Give up `runner`'s unfinished assessments (it is stopping), so that another process takes them
        over at once rather than after the lease expires; how many there were."""
        async with self._writing(), self._session() as session, session.begin():
            released = await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.status.in_(UNFINISHED), AssessmentRow.runner == runner)
                .values(runner=None, lease_expires_at=None)
                .returning(AssessmentRow.id)
            )
            return len(released.all())

    async def mark_running(self, assessment_id: str) -> None:
        now = _now()
        async with self._writing(), self._session() as session, session.begin():
            await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.id == assessment_id, AssessmentRow.status.in_(UNFINISHED))
                .values(
                    status=RUNNING,
                    started_at=func.coalesce(AssessmentRow.started_at, now),
                    updated_at=now,
                )
            )

    async def save_trial(
        self, assessment_id: str, result: TrialResult, *, run_seconds: float | None = None
    ) -> int | None:
        """Commit one finished trial with its transcript and verdicts, and refresh the progress count (and the
        accumulated running time, when given).

        Returns the assessment's new count of stored trials, or None (storing nothing) when that trial is
        already stored: a trial is never counted twice."""
        try:
            if self._engine.dialect.name == "postgresql" and len(result.transcript) <= MESSAGES_PER_INSERT:
                trial_values = _trial_values(assessment_id, result)
                return await self._save_trial_at_once(assessment_id, trial_values, result, run_seconds)
            async with self._writing():
                if self._sqlite_thread is not None:  # one hop to its thread for the whole transaction
                    return await self._sqlite_thread.run(
                        lambda connection: _store_trial(connection, assessment_id, result, run_seconds)
                    )
                async with self._engine.begin() as connection:
                    return await connection.run_sync(_store_trial, assessment_id, result, run_seconds)
        except IntegrityError:
            # Only the unique (assessment, task, trial) constraint means "already stored"; any other
            # violation (e.g. an unknown assessment) is a real failure and must not pass as a duplicate.
            if await self.trial_stored(assessment_id, result.task_id, result.trial):
                return None
            raise

    async def _save_trial_at_once(
        self, assessment_id: str, trial_values: dict[str, Any], result: TrialResult, run_seconds: float | None
    ) -> int:
        parameters = {
            **{f"t_{name}": value for name, value in trial_values.items()},
            **_columns("m", _message_values(0, result.transcript), _MESSAGES),
            **_columns("v", _verdict_values(0, result), _VERDICTS),
            "assessment": assessment_id,
            "now": _now(),
            # The statement keeps the larger of the two: no running time given keeps the stored one.
            "run_seconds": run_seconds if run_seconds is not None else 0.0,
        }
        assert self._direct is not None
        row = await fetch_row(self._engine, self._direct.save_trial, parameters)
        if row is None:  # pragma: no cover - the UPDATE always finds the assessment the INSERT referenced
            raise NoResultFound(f"assessment {assessment_id} was not found when counting its trial")
        return int(row[0])

    async def trial_keys(self, assessment_id: str) -> list[tuple[str, int]]:
        """(task id, trial) of every stored trial of the assessment."""
        async with self._engine.connect() as connection:
            rows = await connection.execute(
                select(_TRIALS.c.task_id, _TRIALS.c.trial).where(_TRIALS.c.assessment_id == assessment_id)
            )
            return [(task_id, trial) for task_id, trial in rows]

    async def trial_job_state(self, assessment_id: str, task_id: str, trial: int) -> TrialJobState | None:
        """The assessment's status and whether this trial of it is stored; None when there is no such
        assessment."""
        parameters = {"assessment": assessment_id, "task_id": task_id, "trial": trial}
        row: Any
        if self._direct is not None:
            row = await fetch_row(self._engine, self._direct.trial_job_state, parameters)
        elif self._sqlite_thread is not None:
            row = await self._sqlite_thread.run(lambda c: c.execute(_TRIAL_JOB_STATE, parameters).first())
        else:
            async with self._engine.connect() as connection:
                row = (await connection.execute(_TRIAL_JOB_STATE, parameters)).first()
        if row is None:
            return None
        status, attempt, stored, judge_pending = row
        return TrialJobState(status, bool(stored), bool(judge_pending), int(attempt))

    async def trial_stored(self, assessment_id: str, task_id: str, trial: int) -> bool:
        async with self._engine.connect() as connection:
            found = await connection.execute(
                select(_TRIALS.c.id).where(
                    _TRIALS.c.assessment_id == assessment_id,
                    _TRIALS.c.task_id == task_id,
                    _TRIALS.c.trial == trial,
                )
            )
            return found.first() is not None

    @staticmethod
    def _trials_done(assessment_id: str) -> Any:
        return (
            select(func.count())
            .select_from(TrialRow)
            .where(TrialRow.assessment_id == assessment_id)
            .scalar_subquery()
        )

    async def finish(
        self,
        assessment_id: str,
        status: str,
        *,
        report: AssessmentReport | None = None,
        error: str | None = None,
    ) -> AssessmentRecord | None:
        """Move an unfinished assessment to a terminal status and return it; None when it was not unfinished
        (another process finished it first, or there is no such assessment)."""
        if status not in TERMINAL:
            raise ValueError(f"{status!r} is not a terminal status")
        now = _now()
        async with self._writing(), self._session() as session, session.begin():
            moved = await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.id == assessment_id, AssessmentRow.status.in_(UNFINISHED))
                .values(
                    status=status,
                    report=report.model_dump(mode="json") if report is not None else None,
                    error=error,
                    trials_done=self._trials_done(assessment_id),
                    finished_at=now,
                    updated_at=now,
                )
                .returning(AssessmentRow.attempt)
            )
            attempt = moved.scalar_one_or_none()
            if attempt is None:
                return None
            await session.execute(
                update(AttemptRow)
                .where(AttemptRow.assessment_id == assessment_id, AttemptRow.number == attempt)
                .values(finished_at=now, status=status)
            )
        return await self.get(assessment_id)

    # -- retries --------------------------------------------------------------------------------------------

    async def begin_retry(
        self,
        assessment_id: str,
        plan: RetryPlan,
        *,
        allow_private_agents: bool,
        lease: RunnerLease | None = None,
    ) -> AssessmentRecord | None:
        """Start the next attempt of a finished assessment, in one transaction: back to `queued` (report and
        error cleared; `allow_private_agents`, the egress rule of whoever retries it, stored: its trials run
        under that rule), the trials `plan.run` names deleted (the queue then runs them as never run), those
        `plan.judge` names marked to be judged again, the progress count set to what stays done, and the
        attempt recorded. None when the assessment is not finished (it runs, or
        another retry just started it: only one wins). `lease`: SQLite, the process that will run it."""
        now = _now()
        async with self._writing(), self._session() as session, session.begin():
            moved = await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.id == assessment_id, AssessmentRow.status.in_(TERMINAL))
                .values(
                    status=QUEUED,
                    report=None,
                    error=None,
                    finished_at=None,
                    updated_at=now,
                    attempt=AssessmentRow.attempt + 1,
                    allow_private_agents=allow_private_agents,
                    runner=lease.runner if lease is not None else None,
                    lease_expires_at=lease.expires_at() if lease is not None else None,
                )
                .returning(AssessmentRow.attempt)
            )
            attempt = moved.scalar_one_or_none()
            if attempt is None:
                return None
            for key in plan.run:
                await session.execute(_TRIALS.delete().where(*_one_trial(assessment_id, key)))
            await session.execute(
                update(_TRIALS).where(_TRIALS.c.assessment_id == assessment_id).values(judge_pending=False)
            )
            for key in plan.judge:
                await session.execute(
                    update(_TRIALS).where(*_one_trial(assessment_id, key)).values(judge_pending=True)
                )
            done = (
                select(func.count())
                .select_from(_TRIALS)
                .where(_TRIALS.c.assessment_id == assessment_id, _TRIALS.c.judge_pending.is_(False))
                .scalar_subquery()
            )
            await session.execute(
                update(AssessmentRow).where(AssessmentRow.id == assessment_id).values(trials_done=done)
            )
            session.add(
                AttemptRow(
                    assessment_id=assessment_id,
                    number=attempt,
                    source=plan.source,
                    reason=plan.reason,
                    trials_to_run=len(plan.run),
                    trials_to_judge=len(plan.judge),
                    started_at=now,
                )
            )
        return await self.get(assessment_id)

    async def judge_pending_keys(self, assessment_id: str) -> list[tuple[str, int]]:
        """(task id, trial) of the stored trials the current attempt judges again."""
        async with self._engine.connect() as connection:
            rows = await connection.execute(
                select(_TRIALS.c.task_id, _TRIALS.c.trial).where(
                    _TRIALS.c.assessment_id == assessment_id, _TRIALS.c.judge_pending
                )
            )
            return [(task_id, trial) for task_id, trial in rows]

    async def replace_judged_trial(
        self, assessment_id: str, result: TrialResult, *, run_seconds: float | None = None
    ) -> int | None:
        """Store `result` in place of the trial that waited to be judged again, and count it done; returns
        the new count, or None when that trial no longer waits (another run of the job replaced it first:
        it is never counted twice)."""
        async with self._writing(), self._engine.begin() as connection:
            gone = await connection.execute(
                _TRIALS.delete()
                .where(*_one_trial(assessment_id, (result.task_id, result.trial)), _TRIALS.c.judge_pending)
                .returning(_TRIALS.c.id)
            )
            if gone.first() is None:
                return None
            trial_id = (
                await connection.execute(_INSERT_TRIAL, _trial_values(assessment_id, result))
            ).scalar_one()
            for start in range(0, len(result.transcript), MESSAGES_PER_INSERT):
                batch = result.transcript[start : start + MESSAGES_PER_INSERT]
                await connection.execute(_INSERT_MESSAGES, _message_values(trial_id, batch))
            if result.nl_verdicts:
                await connection.execute(_INSERT_VERDICTS, _verdict_values(trial_id, result))
            progress: dict[str, Any] = {"assessment": assessment_id, "now": _now()}
            if run_seconds is None:
                return int((await connection.execute(_COUNT_TRIAL, progress)).scalar_one())
            progress["run_seconds"] = run_seconds
            return int((await connection.execute(_COUNT_TRIAL_AND_TIME, progress)).scalar_one())

    async def attempts(self, assessment_id: str) -> list[Attempt]:
        """The assessment's attempts, first to last."""
        async with self._session() as session:
            rows = (
                await session.execute(
                    select(AttemptRow)
                    .where(AttemptRow.assessment_id == assessment_id)
                    .order_by(AttemptRow.number)
                )
            ).scalars()
            return [
                Attempt(
                    number=r.number,
                    source=r.source,
                    reason=r.reason,
                    trials_to_run=r.trials_to_run,
                    trials_to_judge=r.trials_to_judge,
                    started_at=r.started_at,
                    finished_at=r.finished_at,
                    status=r.status,
                )
                for r in rows
            ]

    async def trial_results(self, assessment_id: str, *, transcripts: bool = True) -> list[TrialResult]:
        """Every stored trial of an assessment, in full, or without their transcripts (`transcripts` False:
        empty lists; all a report needs, and 456 trials' transcripts at once cost ~60 MiB of RSS)."""
        messages = selectinload(TrialRow.messages) if transcripts else raiseload(TrialRow.messages)
        async with self._session() as session:
            rows = (
                await session.execute(
                    select(TrialRow)
                    .where(TrialRow.assessment_id == assessment_id)
                    .options(messages, selectinload(TrialRow.verdicts))
                    .order_by(TrialRow.id)
                )
            ).scalars()
            return [_trial_result(r, transcript=transcripts) for r in rows]

    async def list_trials(
        self, assessment_id: str, *, limit: int = 100, offset: int = 0
    ) -> tuple[list[TrialSummary], int]:
        async with self._session() as session:
            total = (
                await session.execute(
                    select(func.count()).select_from(TrialRow).where(TrialRow.assessment_id == assessment_id)
                )
            ).scalar_one()
            rows = await session.execute(
                select(*_SUMMARY_COLUMNS)
                .where(TrialRow.assessment_id == assessment_id)
                .order_by(TrialRow.id)
                .limit(limit)
                .offset(offset)
            )
            return [trial_summary(r) for r in rows], total

    async def trial_summaries(self, assessment_id: str, *, failed_only: bool = False) -> list[TrialSummary]:
        """Every stored trial of an assessment as a summary (no transcripts), in the order they finished; with
        `failed_only`, the failed ones alone (scored, not successful)."""
        conditions = [TrialRow.assessment_id == assessment_id]
        if failed_only:
            conditions += [TrialRow.reward.is_not(None), TrialRow.is_successful.is_not(True)]
        async with self._session() as session:
            rows = await session.execute(select(*_SUMMARY_COLUMNS).where(*conditions).order_by(TrialRow.id))
            return [trial_summary(r) for r in rows]

    async def get_trial_summary(self, assessment_id: str, task_id: str, trial: int) -> TrialSummary | None:
        async with self._session() as session:
            row = (
                await session.execute(
                    select(*_SUMMARY_COLUMNS).where(
                        TrialRow.assessment_id == assessment_id,
                        TrialRow.task_id == task_id,
                        TrialRow.trial == trial,
                    )
                )
            ).first()
            return trial_summary(row) if row is not None else None

    async def set_agent_name(self, assessment_id: str, name: str | None) -> None:
        """Keep the name on the agent's card (read when the assessment is opened)."""
        async with self._writing(), self._session() as session, session.begin():
            await session.execute(
                update(AssessmentRow)
                .where(AssessmentRow.id == assessment_id)
                .values(agent_name=name, updated_at=_now())
            )

    async def agents(self, *, tenant: str | None = None) -> list[tuple[str, str | None]]:
        """Every white agent that has an assessment (of `tenant`; None: of anyone), alphabetically by URL,
        each with the card name of its newest assessment that has one."""
        conditions = [AssessmentRow.tenant == tenant] if tenant is not None else []
        newest_name = (
            select(AssessmentRow.agent_url, func.max(AssessmentRow.created_at).label("created_at"))
            .where(*conditions, AssessmentRow.agent_name.is_not(None))
            .group_by(AssessmentRow.agent_url)
            .subquery()
        )
        async with self._session() as session:
            names = {
                url: name
                for url, name in await session.execute(
                    select(AssessmentRow.agent_url, AssessmentRow.agent_name)
                    .join(
                        newest_name,
                        (AssessmentRow.agent_url == newest_name.c.agent_url)
                        & (AssessmentRow.created_at == newest_name.c.created_at),
                    )
                    .where(*conditions)
                )
            }
        return [(url, names.get(url)) for url in await self.agent_urls(tenant=tenant)]

    async def task_history(
        self,
        agent_url: str,
        task_id: str,
        *,
        domain: str = DEFAULT_DOMAIN,
        tenant: str | None = None,
        limit: int = 50,
    ) -> list[TaskRun]:
        """The `limit` newest assessments of this agent on `domain` (of `tenant`; None: of anyone) that
        stored a trial of this task, newest first, each with its trials of the task. Task ids repeat across
        domains (retail's task 5 is not airline's), so the history keeps to one."""
        has_task = exists().where(TrialRow.assessment_id == AssessmentRow.id, TrialRow.task_id == task_id)
        conditions = [AssessmentRow.agent_url == agent_url, AssessmentRow.domain == domain, has_task]
        if tenant is not None:
            conditions.append(AssessmentRow.tenant == tenant)
        async with self._session() as session:
            runs = (
                await session.execute(
                    select(
                        AssessmentRow.id,
                        AssessmentRow.created_at,
                        AssessmentRow.status,
                        AssessmentRow.agent_name,
                    )
                    .where(*conditions)
                    .order_by(AssessmentRow.created_at.desc(), AssessmentRow.id)
                    .limit(limit)
                )
            ).all()
            trials: dict[str, list[TrialSummary]] = {run.id: [] for run in runs}
            if trials:
                rows = await session.execute(
                    select(TrialRow.assessment_id, *_SUMMARY_COLUMNS)
                    .where(TrialRow.assessment_id.in_(list(trials)), TrialRow.task_id == task_id)
                    .order_by(TrialRow.trial)
                )
                for row in rows:
                    trials[row.assessment_id].append(trial_summary(row))
        return [TaskRun(r.id, r.created_at, r.status, r.agent_name, trials[r.id], domain) for r in runs]

    async def domains(self, *, tenant: str | None = None) -> list[str]:
        """Every domain that has an assessment (of `tenant`; None: of anyone), alphabetically."""
        query = select(AssessmentRow.domain).distinct().order_by(AssessmentRow.domain)
        if tenant is not None:
            query = query.where(AssessmentRow.tenant == tenant)
        async with self._session() as session:
            return [r[0] for r in await session.execute(query)]

    async def agent_urls(self, *, tenant: str | None = None) -> list[str]:
        """Every white agent that has an assessment (of `tenant`; None: of anyone), alphabetically."""
        query = select(AssessmentRow.agent_url).distinct().order_by(AssessmentRow.agent_url)
        if tenant is not None:
            query = query.where(AssessmentRow.tenant == tenant)
        async with self._session() as session:
            rows = await session.execute(query)
            return [r[0] for r in rows]

    async def completed_scores(
        self, *, tenant: str | None = None, domain: str | None = None
    ) -> list[ScoredAssessment]:
        """Every completed assessment's headline numbers (of `tenant`, on `domain`; None: any), newest first:
        read from inside the report JSON, never loading a thousand whole reports for the leaderboard."""
        report = AssessmentRow.report
        conditions = [AssessmentRow.status == COMPLETED]
        if tenant is not None:
            conditions.append(AssessmentRow.tenant == tenant)
        if domain is not None:
            conditions.append(AssessmentRow.domain == domain)
        async with self._session() as session:
            rows = await session.execute(
                select(
                    AssessmentRow.id,
                    AssessmentRow.agent_url,
                    AssessmentRow.agent_name,
                    AssessmentRow.domain,
                    AssessmentRow.created_at,
                    report["avg_reward"].as_float().label("avg_reward"),
                    report["excluded"].label("excluded"),
                    report["complete"].as_boolean().label("complete"),
                )
                .where(*conditions)
                .order_by(AssessmentRow.created_at.desc(), AssessmentRow.id)
            )
            return [
                ScoredAssessment(
                    id=r.id,
                    agent_url=r.agent_url,
                    created_at=r.created_at,
                    avg_reward=r.avg_reward,
                    excluded=r.excluded if isinstance(r.excluded, dict) else {},
                    complete=r.complete if isinstance(r.complete, bool) else None,
                    agent_name=r.agent_name,
                    domain=r.domain,
                )
                for r in rows
            ]

    async def reports(self, assessment_ids: list[str]) -> dict[str, AssessmentReport]:
        """The stored reports of these assessments (those that have one)."""
        if not assessment_ids:
            return {}
        async with self._session() as session:
            rows = await session.execute(
                select(AssessmentRow.id, AssessmentRow.report).where(AssessmentRow.id.in_(assessment_ids))
            )
            return {r.id: AssessmentReport.model_validate(r.report) for r in rows if r.report is not None}

    async def get_trial(self, assessment_id: str, task_id: str, trial: int) -> TrialResult | None:
        async with self._session() as session:
            row = (
                await session.execute(
                    select(TrialRow)
                    .where(
                        TrialRow.assessment_id == assessment_id,
                        TrialRow.task_id == task_id,
                        TrialRow.trial == trial,
                    )
                    .options(selectinload(TrialRow.messages), selectinload(TrialRow.verdicts))
                )
            ).scalar_one_or_none()
            return _trial_result(row) if row is not None else None
