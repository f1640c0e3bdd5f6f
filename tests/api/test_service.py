"""The service in-process (real engine, real oracle agent, real database): resuming an assessment that an
earlier process left behind keeps its stored trials and its accumulated running time."""

from __future__ import annotations

from api.db.repository import COMPLETED
from api.runtime import open_runtime
from green_agent.config import AssessmentConfig, TaskSelection
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
