"""The service in-process (real engine, real oracle agent, real database): resuming an assessment that an
earlier process left behind keeps its stored trials and its accumulated running time."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from sqlalchemy import text

from api.db.engine import create_engine
from api.db.repository import COMPLETED, FAILED
from api.runtime.metrics import TurnClock
from api.runtime.runtime import open_runtime
from api.runtime.service import _Opened
from green_agent.config import AssessmentConfig, TaskSelection
from green_agent.core.models import TranscriptMessage, TrialResult
from green_agent.engine import AssessmentRun
from tests.api.servers import green_settings


async def test_resume_keeps_stored_trials_and_running_time(database_url: str, oracle_url: str) -> None:
    async with open_runtime(green_settings(database_url)) as runtime:
        service, repository = runtime.service, runtime.repository
        # A finished trial of task 0, produced by a real run.
        donor, _ = await service.create(
            AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0"])), source="cli"
        )
        assert (await service.wait(donor.id)).status == COMPLETED
        (stored,) = await repository.trial_results(donor.id)

        # An assessment as a crashed process leaves it: queued, one trial committed after 100 s of running.
        config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0", "1"]))
        record, _ = await service.create(config, source="rest", start=False)
        assert await repository.save_trial(record.id, stored, run_seconds=100.0) == 1

        assert await service.resume_unfinished() == [record.id]
        final = await service.wait(record.id)
        trials = await repository.trial_results(record.id)

    assert final.status == COMPLETED and final.trials_done == 2
    assert final.report is not None and final.report.trials_total == 2
    assert final.report.time_used_s >= 100.0
    assert [(t.task_id, t.trial) for t in trials] == [("0", 0), ("1", 0)]
    assert trials[0] == stored  # kept as stored, not re-run


async def test_a_trial_that_cannot_be_stored_fails_the_assessment_visibly(
    database_url: str, oracle_url: str
) -> None:
    """The database itself refuses every trial (a trigger, a real database error): the run stops and the
    assessment ends `failed` with the database's message, instead of the trial vanishing."""
    async with open_runtime(green_settings(database_url)) as runtime:
        async with runtime.database.begin() as connection:
            if connection.dialect.name == "sqlite":
                await connection.execute(
                    text(
                        "CREATE TRIGGER refuse_trials BEFORE INSERT ON trials "
                        "BEGIN SELECT RAISE(ABORT, 'disk quota exceeded'); END"
                    )
                )
            else:
                await connection.execute(
                    text(
                        "CREATE FUNCTION refuse_trials() RETURNS trigger LANGUAGE plpgsql AS "
                        "$$ BEGIN RAISE EXCEPTION 'disk quota exceeded'; END $$"
                    )
                )
                await connection.execute(
                    text(
                        "CREATE TRIGGER refuse_trials BEFORE INSERT ON trials "
                        "FOR EACH ROW EXECUTE FUNCTION refuse_trials()"
                    )
                )
        record, _ = await runtime.service.create(
            AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0", "1"])), source="rest"
        )
        final = await runtime.service.wait(record.id)

    assert final.status == FAILED
    assert final.error is not None and "disk quota exceeded" in final.error
    assert final.trials_done == 0


async def test_writes_blocked_for_a_while_are_retried(tmp_path: Path, oracle_url: str) -> None:
    """Another process holds SQLite's write lock for a second and this engine does not wait at all (busy
    timeout 0): the service's writes fail with "database is locked", are retried, and the assessment
    completes with its trial stored."""
    path = tmp_path / "locked.db"
    database = create_engine(f"sqlite+aiosqlite:///{path}", sqlite_busy_timeout_s=0.0)
    try:
        async with open_runtime(green_settings(f"sqlite+aiosqlite:///{path}"), database=database) as runtime:
            config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0"]))
            record, _ = await runtime.service.create(config, source="cli", start=False)

            other_process = sqlite3.connect(path, isolation_level=None)
            other_process.execute("BEGIN EXCLUSIVE")
            try:
                await runtime.service.start(record)
                await asyncio.sleep(1.0)
            finally:
                other_process.execute("ROLLBACK")
                other_process.close()
            final = await runtime.service.wait(record.id)
    finally:
        await database.dispose()

    assert final.status == COMPLETED, final.error
    assert final.trials_done == 1


async def test_a_trial_the_database_refuses_is_stored_as_an_internal_error_stand_in(
    database_url: str,
) -> None:
    """Agent content is made storable before it reaches SQL; if some still got through (a bug of ours), the
    database's refusal must neither fail the assessment nor help the agent: an internal_error stand-in with
    reward 0 is stored instead, and the report is rebuilt from what was stored."""
    now = datetime.now(UTC)
    unstorable = TrialResult(
        task_id="0",
        trial=0,
        seed=1,
        termination_reason="user_stop",
        reward=1.0,
        is_successful=True,
        transcript=[TranscriptMessage(index=0, role="assistant", content="lone \ud800 surrogate")],
        started_at=now,
        finished_at=now,
    )
    async with open_runtime(green_settings(database_url)) as runtime:
        config = AssessmentConfig(agent_url="http://127.0.0.1:9/", tasks=TaskSelection(task_ids=["0"]))
        record, _ = await runtime.service.create(config, source="cli", start=False)
        opened = _Opened(
            run=cast(AssessmentRun, None),
            turns=TurnClock("test"),
            trials_total=1,
            order=[("0", 0)],
            concurrency=1,
            base_seconds=0,
            opened_at=0,
        )
        assert await runtime.service._store(record.id, unstorable, opened) == (True, 1)
        (stored,) = await runtime.repository.trial_results(record.id)
        await runtime.service._finish_if_done(record.id)  # the last trial: the report, from storage
        final = await runtime.service.get(record.id)
    assert stored.termination_reason == "internal_error" and stored.reward == 0.0
    assert stored.error is not None and "could not be stored" in stored.error
    assert (stored.transcript[0].content or "").startswith("[transcript not stored")
    assert final.status == COMPLETED and final.report is not None
    assert final.report.termination_counts == {"internal_error": 1} and final.report.avg_reward == 0.0
