"""Many trials committing at once, on both backends: every one is stored, none fails on SQLite's single write
lock, the SQLite connection runs with WAL, synchronous=NORMAL and a busy timeout, and a failing write is
never mistaken for an already-stored trial."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from api.db.engine import SQLITE_BUSY_TIMEOUT_S, create_engine
from api.db.migrate import upgrade
from api.db.repository import AssessmentRepository, NewAssessment
from green_agent.core.models import NLVerdict, Signal, ToolCallRecord, TranscriptMessage, TrialResult

TRIALS = 200
MESSAGES = 20


def long_trial(task_id: str, n: int) -> TrialResult:
    """A trial with a 20-message transcript (tool calls and results) and two verdicts."""
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    transcript = []
    for i in range(MESSAGES):
        at = start + timedelta(seconds=i)
        if i % 4 == 1:
            call = ToolCallRecord(id=f"c{i}", name="get_order_details", arguments={"order_id": f"#W{i}"})
            transcript.append(TranscriptMessage(index=i, role="assistant", tool_calls=[call], timestamp=at))
        elif i % 4 == 2:
            transcript.append(
                TranscriptMessage(
                    index=i, role="tool", content=f"order {i}", tool_call_id=f"c{i - 1}", timestamp=at
                )
            )
        else:
            role = "user" if i % 4 == 0 else "assistant"
            transcript.append(
                TranscriptMessage(index=i, role=role, content=f"message {i} of {task_id}", timestamp=at)
            )
    return TrialResult(
        task_id=task_id,
        trial=n,
        seed=n,
        termination_reason="user_stop",
        reward=1.0,
        is_successful=True,
        signals=[Signal(name="DB_STATE_MATCH", passed=True, counts=True, detail="hash matched")],
        nl_status="judged",
        nl_verdicts=[
            NLVerdict(index=0, assertion="refund issued", passed=True, reason="it was"),
            NLVerdict(index=1, assertion="agent confirmed first", passed=False, reason="it did not"),
        ],
        transcript=transcript,
        steps=MESSAGES,
        started_at=start,
        finished_at=start + timedelta(seconds=MESSAGES),
    )


async def store_all_at_once(repo: AssessmentRepository) -> tuple[str, list[int | None]]:
    record, _ = await repo.create(
        NewAssessment(
            config={"n": TRIALS}, agent_url="http://a.test", trials_total=TRIALS, source="rest", warnings=[]
        )
    )
    results = [long_trial(str(i % 50), i // 50) for i in range(TRIALS)]
    counts = await asyncio.gather(*(repo.save_trial(record.id, r, run_seconds=1.0) for r in results))
    return record.id, list(counts)


@pytest.fixture
def repo(repository: AssessmentRepository) -> AssessmentRepository:
    """The shared `repository` fixture (tests/api/conftest.py) under this module's short name."""
    return repository


async def test_concurrent_trials_all_persist(repo: AssessmentRepository) -> None:
    assessment_id, counts = await store_all_at_once(repo)

    # Each commit saw its own count: 1..200 exactly once, whatever the order.
    assert sorted(c for c in counts if c is not None) == list(range(1, TRIALS + 1))
    record = await repo.get(assessment_id)
    assert record is not None and record.trials_done == TRIALS
    stored = await repo.trial_results(assessment_id)
    assert len(stored) == TRIALS
    assert all(len(t.transcript) == MESSAGES and len(t.nl_verdicts) == 2 for t in stored)
    loaded = await repo.get_trial(assessment_id, "7", 3)
    assert loaded == long_trial("7", 3)  # the executemany rows read back as they were written


async def test_sqlite_writers_queue_instead_of_failing(tmp_path: object) -> None:
    """With no busy timeout at all, any two write transactions of this process meeting on the SQLite file
    would fail at once with "database is locked": they only succeed because the repository queues them."""
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/zero-timeout.db", sqlite_busy_timeout_s=0.0)
    try:
        await upgrade(engine)
        async with engine.connect() as connection:
            assert (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one() == 0
        _, counts = await store_all_at_once(AssessmentRepository(engine))
        assert sorted(c for c in counts if c is not None) == list(range(1, TRIALS + 1))
    finally:
        await engine.dispose()


async def test_sqlite_connection_settings(tmp_path: object) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/settings.db")
    try:
        async with engine.connect() as connection:

            async def pragma(name: str) -> object:
                return (await connection.execute(text(f"PRAGMA {name}"))).scalar_one()

            assert await pragma("journal_mode") == "wal"
            assert await pragma("synchronous") == 1  # NORMAL
            assert await pragma("busy_timeout") == int(SQLITE_BUSY_TIMEOUT_S * 1000)
            assert await pragma("foreign_keys") == 1
    finally:
        await engine.dispose()


async def test_a_failing_insert_is_not_taken_for_a_duplicate(repo: AssessmentRepository) -> None:
    # No such assessment: the foreign key refuses the trial. That must surface, not read as "already stored".
    with pytest.raises(IntegrityError):
        await repo.save_trial("00000000-0000-0000-0000-000000000000", long_trial("1", 0))
