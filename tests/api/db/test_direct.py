"""PostgreSQL's trial path on asyncpg (api/db/direct.py) fails as the general path does: a connection the
server dropped is a passing failure (the job is retried) and is replaced, a trial stored twice is a
duplicate, a trial of no assessment is a real failure; and what it stores reads back whole."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.exc import DBAPIError, IntegrityError

from api.db.direct import as_sqlalchemy_error
from api.db.repository import AssessmentRepository, NewAssessment
from api.runtime.queue import is_transient
from green_agent.core.models import ToolCallRecord, TranscriptMessage, TrialResult
from tests.support.postgres import one_connection_engine, terminate_pooled_connection


@pytest.fixture
async def repo(pg_database: str) -> AsyncIterator[AssessmentRepository]:
    engine = await one_connection_engine(pg_database)
    yield AssessmentRepository(engine)
    await engine.dispose()


def new_assessment() -> NewAssessment:
    config = {"agent_url": "http://agent.test", "trials": 2}
    return NewAssessment(
        config=config,
        agent_url="http://agent.test",
        trials_total=2,
        source="rest",
        warnings=[],
        idempotency_key=None,
    )


def trial(n: int) -> TrialResult:
    at = datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=UTC)
    return TrialResult(
        task_id="7",
        trial=n,
        seed=300,
        termination_reason="user_stop",
        reward=1.0,
        is_successful=True,
        started_at=at,
        finished_at=at,
        transcript=[
            TranscriptMessage(index=0, role="user", content='Héllo 🙂 "quoted" \\ and\nlines', timestamp=at),
            TranscriptMessage(
                index=1,
                role="assistant",
                tool_calls=[ToolCallRecord(id="c1", name="get", arguments={"z": 1, "a": [1.5, None, "x"]})],
                timestamp=at,
            ),
            TranscriptMessage(index=2, role="tool", content='{"ok": true}', tool_call_id="c1", timestamp=at),
        ],
    )


async def test_what_it_stores_reads_back_whole(repo: AssessmentRepository) -> None:
    record, _ = await repo.create(new_assessment())
    stored = trial(0)
    assert await repo.save_trial(record.id, stored, run_seconds=2.5) == 1
    assert await repo.get_trial(record.id, "7", 0) == stored  # text, JSON (key order too), timestamps
    state = await repo.trial_job_state(record.id, "7", 0)
    assert state is not None and state.stored and not state.judge_pending and state.attempt == 1
    assert await repo.trial_job_state("no-such-assessment", "7", 0) is None


async def test_a_dropped_connection_is_a_passing_failure_and_is_replaced(
    repo: AssessmentRepository, pg_database: str
) -> None:
    record, _ = await repo.create(new_assessment())
    await terminate_pooled_connection(repo.database, pg_database)
    with pytest.raises(DBAPIError) as raised:
        await repo.trial_job_state(record.id, "7", 0)
    assert is_transient(raised.value)
    # The pool dropped it: the next statement runs on a new connection.
    state = await repo.trial_job_state(record.id, "7", 0)
    assert state is not None and not state.stored
    assert await repo.save_trial(record.id, trial(0)) == 1


async def test_a_duplicate_is_none_and_an_unknown_assessment_raises(repo: AssessmentRepository) -> None:
    record, _ = await repo.create(new_assessment())
    assert await repo.save_trial(record.id, trial(1)) == 1
    assert await repo.save_trial(record.id, trial(1)) is None  # never counted twice
    with pytest.raises(IntegrityError) as raised:
        await repo.save_trial("no-such-assessment", trial(1))
    assert not is_transient(raised.value)
    current = await repo.get(record.id)
    assert current is not None and current.trials_done == 1


def test_asyncpg_errors_become_sqlalchemy_errors() -> None:
    cases: list[tuple[BaseException, type[DBAPIError], bool]] = [
        (asyncpg.UniqueViolationError("duplicate key"), IntegrityError, False),
        (asyncpg.SerializationError("could not serialize"), DBAPIError, True),
        (asyncpg.DeadlockDetectedError("deadlock"), DBAPIError, True),
        (asyncpg.TooManyConnectionsError("too many"), DBAPIError, True),
        (asyncpg.ConnectionDoesNotExistError("closed"), DBAPIError, True),
        (ConnectionResetError("reset"), DBAPIError, True),
        (asyncpg.UndefinedColumnError("no such column"), DBAPIError, False),
    ]
    for exc, kind, transient in cases:
        error = as_sqlalchemy_error(exc, "SELECT 1", [])
        assert isinstance(error, kind) and error.orig is exc, exc
        assert is_transient(error) is transient, exc
