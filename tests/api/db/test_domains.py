"""Each assessment keeps its domain in a column of its own, on both backends: rows stored before domains are
retail's once migrated, new ones get their config's domain, and lists, the leaderboard's scores and a task's
history across runs keep to one domain."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import inspect, text

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import COMPLETED, AssessmentRepository, NewAssessment
from api.db.tables import MAX_TASK_ID_CHARS
from green_agent.config import AssessmentConfig
from green_agent.core.models import TrialResult
from green_agent.domains import domain_names, load_domain
from green_agent.scoring.metrics import compute_report

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def new(domain: str, agent: str = "http://agent.test") -> NewAssessment:
    config = {"agent_url": agent, "domain": domain, "trials": 1}
    return NewAssessment(
        config=config, agent_url=agent, trials_total=1, source="rest", warnings=[], domain=domain
    )


def trial(task_id: str) -> TrialResult:
    return TrialResult(
        task_id=task_id,
        trial=0,
        seed=1,
        termination_reason="user_stop",
        reward=1.0,
        is_successful=True,
        started_at=NOW,
        finished_at=NOW,
    )


async def test_rows_stored_before_domains_are_retail_after_the_migration(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        await upgrade(engine, "i29_agent_name")  # the schema before domains
        old_id = str(uuid.uuid4())
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO assessments (id, status, agent_url, config, source, tenant, "
                    "allow_private_agents, warnings, trials_total, trials_done, run_seconds, created_at, "
                    "updated_at, attempt) VALUES (:id, 'completed', 'http://old.test', :config, 'rest', "
                    "'default', :private, '[]', 1, 1, 0, :now, :now, 1)"
                ),
                {"id": old_id, "config": '{"agent_url": "http://old.test"}', "private": True, "now": NOW},
            )
        upgraded = await upgrade(engine)
        assert upgraded.before == "i29_agent_name"

        def indexes(connection: object) -> set[str]:
            found = inspect(connection).get_indexes("assessments")
            return {str(index["name"]) for index in found}

        async with engine.connect() as connection:
            assert "ix_assessments_domain" in await connection.run_sync(indexes)
        repository = AssessmentRepository(engine)
        old = await repository.get(old_id)
        assert old is not None and old.domain == "retail"
        assert (await repository.page(domain="retail"))[1] == 1
        assert (await repository.page(domain="airline"))[1] == 0
    finally:
        await engine.dispose()


async def test_lists_scores_and_task_history_keep_to_one_domain(repository: AssessmentRepository) -> None:
    retail, _ = await repository.create(new("retail"))
    airline, _ = await repository.create(new("airline"))
    assert (retail.domain, airline.domain) == ("retail", "airline")
    assert (await repository.get(airline.id)).domain == "airline"  # type: ignore[union-attr]

    assert [r.id for r in (await repository.page(domain="airline"))[0]] == [airline.id]
    assert [r.id for r in (await repository.page(domain="retail"))[0]] == [retail.id]
    assert (await repository.page())[1] == 2
    assert await repository.domains() == ["airline", "retail"]
    assert await repository.domains(tenant="someone-else") == []

    # Task "0" exists in both domains: one agent's history of retail task 0 is not its airline task 0.
    for record in (retail, airline):
        await repository.save_trial(record.id, trial("0"))
        config = AssessmentConfig.model_validate(record.config)
        report = compute_report(config, await repository.trial_results(record.id, transcripts=False))
        await repository.finish(record.id, COMPLETED, report=report)
    history = await repository.task_history("http://agent.test", "0", domain="airline")
    assert [(run.assessment_id, run.domain) for run in history] == [(airline.id, "airline")]
    assert [run.assessment_id for run in await repository.task_history("http://agent.test", "0")] == [
        retail.id
    ]

    scored = await repository.completed_scores(domain="airline")
    assert [(s.id, s.domain) for s in scored] == [(airline.id, "airline")]
    assert {s.domain for s in await repository.completed_scores()} == {"retail", "airline"}


async def test_a_trial_of_the_longest_task_id_of_every_domain_is_stored(
    repository: AssessmentRepository,
) -> None:
    """Telecom's task ids name every issue of the task (215 characters at most); a trial row holds them (the
    column held 64, which PostgreSQL enforced: such a trial could not be stored)."""
    longest: dict[str, str] = {}
    for name in domain_names():
        data = load_domain(name)
        ids = data.split("full") if "full" in data.splits else tuple(data.tasks)
        longest[name] = max(ids, key=len)
        assert len(longest[name]) <= MAX_TASK_ID_CHARS, name
    assert len(longest["telecom"]) == 215
    record, _ = await repository.create(new("telecom"))
    await repository.save_trial(record.id, trial(longest["telecom"]))
    (stored,) = await repository.trial_results(record.id, transcripts=False)
    assert stored.task_id == longest["telecom"]
