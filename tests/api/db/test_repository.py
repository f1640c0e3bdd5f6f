"""The data layer on both backends: migrations, idempotency, trial storage round trip, no double counting."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from itertools import cycle
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import Engine, event, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from api.db import repository as repository_module
from api.db.direct import DirectStatement
from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import (
    COMPLETED,
    MESSAGES_PER_INSERT,
    RUNNING,
    AssessmentRepository,
    IdempotencyConflict,
    NewAssessment,
    TrialJobState,
)
from api.db.tables import AssessmentRow
from green_agent.config import AssessmentConfig
from green_agent.core.models import (
    AssessmentReport,
    Failure,
    NLVerdict,
    Signal,
    ToolCallRecord,
    TranscriptMessage,
    TrialResult,
)
from green_agent.scoring.metrics import compute_report


@pytest.fixture
async def repo(database_url: str) -> AsyncIterator[AssessmentRepository]:
    engine = create_engine(database_url)
    await upgrade(engine)
    await upgrade(engine)  # a second run is a no-op, as at every start-up
    yield AssessmentRepository(engine)
    await engine.dispose()


def new(key: str | None = None, agent: str = "http://agent.test", trials: int = 2) -> NewAssessment:
    config = {"agent_url": agent, "trials": trials}
    return NewAssessment(
        config=config, agent_url=agent, trials_total=trials, source="rest", warnings=[], idempotency_key=key
    )


def trial(task_id: str, n: int, reward: float | None = 1.0) -> TrialResult:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    return TrialResult(
        task_id=task_id,
        trial=n,
        seed=300 + n,
        termination_reason="user_stop",
        reward=reward,
        is_successful=reward == 1.0 if reward is not None else None,
        signals=[Signal(name="DB_STATE_MATCH", passed=True, counts=True, detail="hash matched")],
        nl_status="judged",
        nl_verdicts=[NLVerdict(index=0, assertion="agent apologised", passed=False, reason="it did not")],
        judge_input="the transcript as the judge saw it",
        db_expected_hash="abc",
        db_actual_hash="abc",
        transcript=[
            TranscriptMessage(index=0, role="user", content="hi", timestamp=now),
            TranscriptMessage(
                index=1,
                role="assistant",
                tool_calls=[ToolCallRecord(id="c1", name="find_user_id_by_email", arguments={"email": "x"})],
                timestamp=now,
            ),
            TranscriptMessage(index=2, role="tool", content="user_1", tool_call_id="c1", timestamp=now),
        ],
        protocol_warnings=["reply was not JSON"],
        steps=3,
        started_at=now,
        finished_at=now,
    )


async def test_idempotency_key_returns_same_assessment(repo: AssessmentRepository) -> None:
    first, created = await repo.create(new(key="k1"))
    again, created_again = await repo.create(new(key="k1"))
    other, _ = await repo.create(new(key="k2"))
    assert created and not created_again
    assert again.id == first.id
    assert other.id != first.id
    with pytest.raises(IdempotencyConflict, match="different request"):
        await repo.create(new(key="k1", trials=3))


async def test_trial_round_trip_and_no_double_count(repo: AssessmentRepository) -> None:
    record, _ = await repo.create(new())
    await repo.mark_running(record.id)
    stored = trial("7", 0)
    assert await repo.save_trial(record.id, stored) == 1
    assert await repo.save_trial(record.id, stored) is None  # the same trial again is refused
    assert await repo.save_trial(record.id, trial("7", 1, reward=None)) == 2

    current = await repo.get(record.id)
    assert current is not None and current.status == RUNNING and current.trials_done == 2
    loaded = await repo.get_trial(record.id, "7", 0)
    assert loaded == stored
    assert [t.trial for t in await repo.trial_results(record.id)] == [0, 1]
    summaries, total = await repo.list_trials(record.id)
    assert total == 2 and summaries[1].reward is None


async def test_trial_job_state_says_status_and_whether_that_trial_is_stored(
    repo: AssessmentRepository,
) -> None:
    """A trial job's one opening read: the assessment's status and whether this very trial (not another of
    the same task, nor of another assessment) is stored already."""
    record, _ = await repo.create(new())
    other, _ = await repo.create(new())
    assert await repo.trial_job_state(record.id, "7", 0) == TrialJobState("queued", stored=False)
    await repo.mark_running(record.id)
    assert await repo.save_trial(record.id, trial("7", 0)) == 1
    assert await repo.save_trial(other.id, trial("7", 1)) == 1
    assert await repo.trial_job_state(record.id, "7", 0) == TrialJobState(RUNNING, stored=True)
    assert await repo.trial_job_state(record.id, "7", 1) == TrialJobState(RUNNING, stored=False)
    assert await repo.trial_job_state(record.id, "8", 0) == TrialJobState(RUNNING, stored=False)
    await repo.finish(record.id, COMPLETED)
    finished = await repo.trial_job_state(record.id, "7", 1)
    assert finished is not None and finished.finished and not finished.stored
    assert await repo.trial_job_state("no-such-assessment", "7", 0) is None


async def test_trials_without_transcripts_hold_everything_a_report_reads(repo: AssessmentRepository) -> None:
    """The report of a finished assessment reads its trials without transcripts (all of them at once: with
    transcripts, 456 trials cost ~60 MiB of RSS at the end of a run); the rest of each trial is whole."""
    record, _ = await repo.create(new())
    stored = [trial("7", 0), trial("7", 1, reward=0.0)]
    for t in stored:
        await repo.save_trial(record.id, t)
    light = await repo.trial_results(record.id, transcripts=False)
    assert light == [t.model_copy(update={"transcript": []}) for t in stored]
    assert await repo.trial_results(record.id) == stored
    config = AssessmentConfig(agent_url="http://agent.test", trials=2)
    assert compute_report(config, light) == compute_report(config, stored)


async def test_transcript_longer_than_one_insert_is_stored_whole_and_in_order(
    repo: AssessmentRepository,
) -> None:
    """`save_trial` inserts a transcript in batches of MESSAGES_PER_INSERT rows (so that no batch holds the
    event loop long); a transcript of two batches and a bit comes back complete, in order, in one trial."""
    record, _ = await repo.create(new())
    base = trial("7", 0)
    now = base.transcript[0].timestamp
    messages = [
        TranscriptMessage(
            index=i,
            role="assistant" if i % 2 else "tool",
            content=f"message {i}" if i % 2 == 0 else None,
            tool_calls=[ToolCallRecord(id=f"c{i}", name="calculate", arguments={"n": i})] if i % 2 else None,
            timestamp=now,
        )
        for i in range(2 * MESSAGES_PER_INSERT + 3)
    ]
    stored = base.model_copy(update={"transcript": messages})
    assert await repo.save_trial(record.id, stored) == 1
    loaded = await repo.get_trial(record.id, "7", 0)
    assert loaded is not None and loaded.transcript == messages
    assert await repo.save_trial(record.id, stored) is None  # still one trial, not stored twice


async def test_postgresql_stores_a_trial_in_one_statement_up_to_one_insert_of_messages(
    repo: AssessmentRepository, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a trial whose transcript fits one INSERT (MESSAGES_PER_INSERT) is stored by one statement
    in autocommit (one round trip instead of five), run straight on asyncpg (api/db/direct.py: nothing goes
    through SQLAlchemy's cursor); one message more takes the transaction and its batches.
    SQLite always takes the transaction, all of it on the file's own thread (one hop from the event loop, not
    one per statement). Either way the trial comes back whole, is counted once, and the running time kept is
    the largest reported."""
    record, _ = await repo.create(new(trials=4))
    base = trial("7", 0)
    statements: list[str] = []
    threads: set[str] = set()

    def count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement.split()[0].upper())
        threads.add(threading.current_thread().name)

    postgresql = repo._engine.dialect.name == "postgresql"
    direct: list[str] = []
    run_direct = repository_module.fetch_row

    async def fetch_row(engine: Any, statement: DirectStatement, parameters: Any) -> Any:
        direct.append(statement.sql.split()[0].upper())
        return await run_direct(engine, statement, parameters)

    monkeypatch.setattr(repository_module, "fetch_row", fetch_row)
    # Every engine (the SQLite thread has a synchronous one of its own).
    event.listen(Engine, "before_cursor_execute", count)
    request.addfinalizer(lambda: event.remove(Engine, "before_cursor_execute", count))
    for n, length, run_seconds in ((0, MESSAGES_PER_INSERT, 5.0), (1, MESSAGES_PER_INSERT + 1, None)):
        messages = [m.model_copy(update={"index": i}) for i, m in zip(range(length), cycle(base.transcript))]
        stored = base.model_copy(update={"trial": n, "transcript": messages})
        statements.clear()
        threads.clear()
        direct.clear()
        assert await repo.save_trial(record.id, stored, run_seconds=run_seconds) == n + 1
        if postgresql and length <= MESSAGES_PER_INSERT:
            assert statements == [] and direct == ["WITH"]
        else:  # the trial, its batches of messages, the verdicts, then the count
            batches = -(-length // MESSAGES_PER_INSERT)
            assert statements == ["INSERT"] * (2 + batches) + ["UPDATE"]
        if not postgresql:
            assert len(threads) == 1 and threads.pop().startswith("sqlite-trials")
        assert await repo.get_trial(record.id, "7", n) == stored
        assert await repo.save_trial(record.id, stored) is None
    current = await repo.get(record.id)
    assert current is not None and current.trials_done == 2 and current.run_seconds == 5.0


async def test_finish_page_and_unfinished(repo: AssessmentRepository) -> None:
    a, _ = await repo.create(new(agent="http://a.test"))
    b, _ = await repo.create(new(agent="http://b.test"))
    report = AssessmentReport(
        num_tasks=1,
        num_trials=1,
        trials_total=1,
        trials_scored=1,
        complete=True,
        avg_reward=1.0,
        pass_hat_k={1: 1.0},
    )
    done = await repo.finish(a.id, COMPLETED, report=report)
    assert done is not None and done.status == COMPLETED and done.report == report
    # A finished assessment stays finished, and finishing it again says that this call did nothing.
    assert await repo.finish(a.id, "cancelled") is None
    still = await repo.get(a.id)
    assert still is not None and still.status == COMPLETED
    assert [r.id for r in await repo.list_unfinished()] == [b.id]
    page, total = await repo.page(status=COMPLETED)
    assert total == 1 and page[0].id == a.id
    page, total = await repo.page(agent_url="http://b.test/")
    assert total == 1 and page[0].id == b.id
    page, total = await repo.page(limit=1, offset=1)
    assert total == 2 and len(page) == 1


async def test_what_the_web_ui_reads(repo: AssessmentRepository) -> None:
    a, _ = await repo.create(new(agent="http://b.test"))
    b, _ = await repo.create(new(agent="http://a.test"))
    c, _ = await repo.create(new(agent="http://a.test"))
    full = AssessmentReport(
        num_tasks=1,
        num_trials=1,
        trials_total=1,
        trials_scored=1,
        complete=True,
        avg_reward=0.75,
        pass_hat_k={1: 0.75},
    )
    partial = full.model_copy(
        update={
            "avg_reward": None,
            "complete": False,
            "partial_reasons": {"not_judged": 1},
            "excluded": {"not_judged": 1},
        }
    )
    await repo.finish(a.id, COMPLETED, report=full)
    await repo.finish(b.id, COMPLETED, report=partial)
    await repo.finish(c.id, "failed", error="boom")
    assert await repo.agent_urls() == ["http://a.test", "http://b.test"]

    # Headline numbers come out of the report JSON on both backends; failed runs are not scored.
    scores = {s.id: s for s in await repo.completed_scores()}
    assert set(scores) == {a.id, b.id}
    assert scores[a.id].avg_reward == 0.75 and scores[a.id].agent_url == "http://b.test"
    assert scores[b.id].avg_reward is None and scores[b.id].excluded == {"not_judged": 1}
    assert scores[a.id].complete is True and scores[b.id].complete is False
    assert await repo.reports([a.id, c.id]) == {a.id: full}

    # A tenant's view (the UI's agent filter and leaderboard): only its own assessments count.
    other, _ = await repo.create(replace(new(agent="http://c.test"), tenant="other"))
    await repo.finish(other.id, COMPLETED, report=full)
    assert await repo.agent_urls(tenant="other") == ["http://c.test"]
    assert await repo.agent_urls() == ["http://a.test", "http://b.test", "http://c.test"]
    assert [s.id for s in await repo.completed_scores(tenant="other")] == [other.id]
    assert {s.id for s in await repo.completed_scores(tenant="default")} == {a.id, b.id}

    await repo.save_trial(a.id, trial("3", 0))
    await repo.save_trial(a.id, trial("3", 1, reward=None))
    summaries = await repo.trial_summaries(a.id)
    assert [(s.task_id, s.trial, s.reward) for s in summaries] == [("3", 0, 1.0), ("3", 1, None)]
    assert summaries[0].signals == (
        {"name": "DB_STATE_MATCH", "passed": True, "counts": True, "detail": "hash matched"},
    )


async def test_what_the_vendor_pages_read(repo: AssessmentRepository) -> None:
    """Failures stored with each trial, failed trials alone, the agent's card name, a task across runs."""
    first, _ = await repo.create(new(agent="http://a.test"))
    second, _ = await repo.create(new(agent="http://a.test"))
    elsewhere, _ = await repo.create(replace(new(agent="http://a.test"), tenant="other"))
    missing = Failure(kind="missing_action", action="cancel_pending_order", expected={"x": 1}, detail="...")
    failed = trial("3", 0, reward=0.0).model_copy(update={"failures": [missing]})
    await repo.save_trial(first.id, failed)
    await repo.save_trial(first.id, trial("3", 1))  # passed
    await repo.save_trial(first.id, trial("4", 0, reward=None))  # excluded
    legacy = trial("4", 1, reward=0.0)  # stored before failures were classified: None
    await repo.save_trial(first.id, legacy)
    await repo.save_trial(second.id, trial("3", 0))
    await repo.save_trial(elsewhere.id, trial("3", 0, reward=0.0))

    summaries = {(s.task_id, s.trial): s for s in await repo.trial_summaries(first.id)}
    assert summaries[("3", 0)].failures == (missing.model_dump(mode="json"),)
    assert summaries[("4", 1)].failures is None
    failed_only = await repo.trial_summaries(first.id, failed_only=True)
    assert [(s.task_id, s.trial) for s in failed_only] == [("3", 0), ("4", 1)]
    assert (await repo.get_trial(first.id, "3", 0)) == failed  # the round trip keeps them

    assert (await repo.get(first.id)).agent_name is None  # type: ignore[union-attr]
    await repo.set_agent_name(first.id, "Acme bot")
    await repo.set_agent_name(second.id, "Acme bot v2")
    assert (await repo.get(first.id)).agent_name == "Acme bot"  # type: ignore[union-attr]
    assert await repo.agents() == [("http://a.test", "Acme bot v2")]  # the newest named one
    assert await repo.agents(tenant="other") == [("http://a.test", None)]

    history = await repo.task_history("http://a.test", "3", tenant="default")
    assert [(run.assessment_id, run.agent_name) for run in history] == [
        (second.id, "Acme bot v2"),
        (first.id, "Acme bot"),
    ]
    assert [t.trial for t in history[1].trials] == [0, 1]
    assert [run.assessment_id for run in await repo.task_history("http://a.test", "4")] == [first.id]
    assert len(await repo.task_history("http://a.test", "3")) == 3  # an admin: every tenant
    assert len(await repo.task_history("http://a.test", "3", limit=1)) == 1


async def _in_transaction(connection: AsyncConnection) -> bool:
    driver: Any = (await connection.get_raw_connection()).driver_connection
    return (
        bool(driver.in_transaction)
        if isinstance(driver, aiosqlite.Connection)
        else driver.is_in_transaction()
    )


async def test_a_connection_returned_inside_a_transaction_is_rolled_back(database_url: str) -> None:
    """Connections go back to the pool rolled back when a transaction is open, and (SQLite) without a
    needless rollback otherwise (`IdleRollbackDialect`, which asks sqlite3 first)."""
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
        repo = AssessmentRepository(engine)
        record, _ = await repo.create(new())
        failed = update(AssessmentRow).where(AssessmentRow.id == record.id).values(status="failed")
        async with engine.connect() as connection:  # a write never committed
            await connection.execute(failed)
            assert await _in_transaction(connection)
        async with engine.connect() as connection:  # the same pooled connection: rolled back, nothing open
            assert not await _in_transaction(connection)
            status = select(AssessmentRow.status).where(AssessmentRow.id == record.id)
            assert (await connection.execute(status)).scalar_one() == "queued"
        await repo.mark_running(record.id)  # a commit, then back to the pool
        async with engine.connect() as connection:
            assert not await _in_transaction(connection)
            assert (await connection.execute(status)).scalar_one() == RUNNING
    finally:
        await engine.dispose()


async def test_sqlite_rolls_back_only_what_is_open(tmp_path: Path) -> None:
    """SQLite: a read or a committed write goes back to the pool without a rollback (each one a round trip
    to aiosqlite's thread), while a transaction left open by the driver itself is still rolled back by the
    pool's reset."""
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    try:
        await upgrade(engine)
        repo = AssessmentRepository(engine)
        record, _ = await repo.create(new())
        async with engine.connect() as connection:
            driver: Any = (await connection.get_raw_connection()).driver_connection
        assert type(driver) is aiosqlite.Connection
        rollbacks = 0
        rollback = driver.rollback

        async def counted() -> None:
            nonlocal rollbacks
            rollbacks += 1
            await rollback()

        driver.rollback = counted  # type: ignore[method-assign]
        assert await repo.get(record.id) is not None
        await repo.mark_running(record.id)
        assert rollbacks == 0
        async with engine.connect() as connection:
            assert id((await connection.get_raw_connection()).driver_connection) == id(driver)
            await driver.execute("UPDATE assessments SET status = 'failed' WHERE id = ?", (record.id,))
            assert driver.in_transaction
        assert rollbacks == 1 and not driver.in_transaction
        current = await repo.get(record.id)
        assert current is not None and current.status == RUNNING
    finally:
        await engine.dispose()
