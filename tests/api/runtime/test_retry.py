"""Retry in place (issue 27): in the same assessment, the trials excluded as infrastructure errors or never
run are run again and the stored trials left without a verdict are judged again, without running their
conversations again; scored trials are kept, nothing runs twice, the report is computed again and the
assessment keeps the history of its attempts. On SQLite and PostgreSQL, through the real service.

The customer and the judge are the deterministic fake provider (tests/support/fake_llm.py) on one endpoint;
its answers for chosen tasks fail while a test says so (HTTP 503: ours, excluded)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from api.db.repository import CANCELLED, COMPLETED
from api.runtime.events import TrialDone
from api.runtime.runtime import open_runtime
from api.runtime.service import NothingToRetry
from api.security.auth import operator_principal
from green_agent.config import AssessmentConfig, TaskSelection
from retail_domain import RetailData
from tests.api.servers import green_settings
from tests.support.fake_llm import FakeReply, passing_judge, scenario_customer, serve_fake_llm

OPERATOR = operator_principal(allow_private_agents=True)
"""Who retries here: the operator, as `green-agent retry` does (the agents are on loopback)."""

TASKS = ["0", "1", "2", "24"]
"""0 and 1 are scored on the DB alone; 2 and 24 need the judge."""


@dataclass
class Provider:
    """The fake customer and judge, failing on purpose: the customer of the tasks in `customer_down`, the
    judge while `judge_down`. Counts the customer's requests per task."""

    data: RetailData
    customer_down: set[str] = field(default_factory=set)
    judge_down: bool = False
    customer_requests: Counter[str] = field(default_factory=Counter)
    judge_requests: int = 0

    def __post_init__(self) -> None:
        self._customer = scenario_customer(self.data)
        self._scenarios = {task.scenario_text(): task.id for task in self.data.tasks.values()}

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        if "response_format" in body:
            self.judge_requests += 1
            return FakeReply(status=503) if self.judge_down else passing_judge(body)
        system = body["messages"][0]["content"]
        task_id = next(t for text, t in self._scenarios.items() if text in system)
        self.customer_requests[task_id] += 1
        return FakeReply(status=503) if task_id in self.customer_down else self._customer(body)


def settings_for(database_url: str, llm_url: str, **overrides: Any) -> Any:
    model = {"model": "fake", "base_url": llm_url}
    return green_settings(
        database_url,
        user_models={"fake": model},
        default_user_model="fake",
        judge_model=model,
        llm_max_retries=0,
        llm_retry_backoff_s=0.01,
        trial_retries=0,
        llm_breaker_failures=1000,  # each 503 is a failure of its own here, not an outage to wait out
        **overrides,
    )


async def test_retry_runs_the_excluded_and_judges_the_unjudged_keeping_the_scored(
    database_url: str, oracle_url: str, retail_data: RetailData
) -> None:
    provider = Provider(retail_data, customer_down={"1"}, judge_down=True)
    async with (
        serve_fake_llm(provider) as llm,
        open_runtime(settings_for(database_url, llm.base_url)) as runtime,
    ):
        service, repository = runtime.service, runtime.repository
        config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=TASKS), concurrency=4)
        record, _ = await service.create(config, source="rest")
        first = await service.wait(record.id)
        assert first.status == COMPLETED and first.report is not None and not first.report.complete
        before = {(t.task_id, t.trial): t for t in await repository.trial_results(record.id)}
        assert {k[0]: t.termination_reason for k, t in before.items()} == {
            "0": "user_stop",
            "1": "infrastructure_error",
            "2": "infrastructure_error",
            "24": "infrastructure_error",
        }
        assert before[("2", 0)].nl_status == "judge_failed" and before[("2", 0)].conversation_end is not None

        provider.customer_down.clear()
        provider.judge_down = False
        asked_before = Counter(provider.customer_requests)
        retried = await service.retry(record.id, source="cli", caller=OPERATOR)
        assert retried.status == "queued" and retried.attempt == 2 and retried.trials_done == 1
        final = await service.wait(record.id)
        after = {(t.task_id, t.trial): t for t in await repository.trial_results(record.id)}
        attempts = await repository.attempts(record.id)

    assert final.status == COMPLETED and final.report is not None and final.report.complete
    assert final.report.avg_reward == 1.0 and final.report.trials_planned == 4
    assert {t.termination_reason for t in after.values()} == {"user_stop"}
    assert after[("0", 0)] == before[("0", 0)]  # scored: kept as stored
    for key in [("2", 0), ("24", 0)]:  # judged again from the stored conversation, not run again
        assert after[key].transcript == before[key].transcript and after[key].nl_status == "judged"
        assert after[key].started_at == before[key].started_at
    new_customer_requests = provider.customer_requests - asked_before
    assert set(new_customer_requests) == {"1"}  # only the excluded trial's conversation ran again
    assert [(a.number, a.status, a.trials_to_run, a.trials_to_judge) for a in attempts] == [
        (1, COMPLETED, 4, 0),
        (2, COMPLETED, 1, 2),
    ]
    assert attempts[0].reason == "created" and attempts[1].source == "cli"
    assert attempts[1].reason == (
        "run again: 1 excluded as infrastructure errors; judge again: 2 without a verdict"
    )


async def test_a_cancelled_assessment_is_continued_and_counts_what_was_planned(
    database_url: str, slow_oracle_url: str
) -> None:
    """Cancelled after a few of 12 trials: its report counts the 12 planned (not "5 x 1" and "5 / 5"); the
    retry runs the rest, and the trials stored before are never run again."""
    async with open_runtime(green_settings(database_url)) as runtime:
        service, repository = runtime.service, runtime.repository
        config = AssessmentConfig(agent_url=slow_oracle_url, tasks=TaskSelection(num_tasks=12), concurrency=2)
        record, _ = await service.create(config, source="cli")
        async with service.subscribe(record.id, accept=(TrialDone,)) as finished:
            async for event in finished:
                if isinstance(event, TrialDone) and event.trials_done >= 3:
                    break
        cancelled = await service.cancel(record.id)
        assert cancelled.status == CANCELLED and cancelled.report is not None
        done = cancelled.report.trials_total
        assert 3 <= done < 12
        assert cancelled.report.trials_planned == 12 and cancelled.report.tasks_planned == 12
        assert cancelled.report.partial_reasons["not_run"] == 12 - done
        kept = {(t.task_id, t.trial): t for t in await repository.trial_results(record.id)}

        retried = await service.retry(record.id, source="rest", caller=OPERATOR)
        final = await service.wait(retried.id)
        after = {(t.task_id, t.trial): t for t in await repository.trial_results(record.id)}
        attempts = await repository.attempts(record.id)
        with pytest.raises(NothingToRetry, match="nothing left to retry"):
            await service.retry(record.id, source="rest", caller=OPERATOR)

    assert final.status == COMPLETED and final.report is not None and final.trials_done == 12
    assert "not_run" not in final.report.partial_reasons and final.report.trials_total == 12 == len(after)
    assert all(after[key] == trial for key, trial in kept.items())  # none run twice
    assert [(a.number, a.status, a.trials_to_run) for a in attempts] == [
        (1, CANCELLED, 12),
        (2, COMPLETED, 12 - done),
    ]
    assert attempts[1].reason == f"run again: {12 - done} never run"


async def test_trials_stored_without_a_judge_are_judged_once_one_is_configured(
    database_url: str, oracle_url: str, retail_data: RetailData
) -> None:
    provider = Provider(retail_data)
    async with serve_fake_llm(provider) as llm:
        config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=TASKS))
        no_judge = settings_for(database_url, llm.base_url).model_copy(update={"judge_model": None})
        async with open_runtime(no_judge) as runtime:
            record, _ = await runtime.service.create(config, source="rest")
            first = await runtime.service.wait(record.id)
            assert first.report is not None and first.report.partial_reasons == {"not_judged": 2}
            with pytest.raises(NothingToRetry, match="nothing left to retry"):  # still no judge
                await runtime.service.retry(record.id, source="rest", caller=OPERATOR)
        asked = Counter(provider.customer_requests)
        async with open_runtime(settings_for(database_url, llm.base_url)) as runtime:
            await runtime.service.retry(record.id, source="rest", caller=OPERATOR)
            final = await runtime.service.wait(record.id)
    assert final.report is not None and final.report.complete and final.report.avg_reward == 1.0
    assert provider.customer_requests == asked and provider.judge_requests == 2  # judged, not run again


async def test_a_running_assessment_is_not_retried(database_url: str, idle_url: str) -> None:
    async with open_runtime(green_settings(database_url)) as runtime:
        config = AssessmentConfig(agent_url=idle_url, tasks=TaskSelection(task_ids=["0"]))
        record, _ = await runtime.service.create(config, source="rest")
        with pytest.raises(NothingToRetry, match=r"is (queued|running); retry it once it has finished"):
            await runtime.service.retry(record.id, source="rest", caller=OPERATOR)
        await runtime.service.cancel(record.id)


async def test_a_retry_reopens_what_another_worker_opened_for_the_first_attempt(
    pg_database: str, slow_oracle_url: str
) -> None:
    """Two processes' runtimes (each with its worker) on one PostgreSQL: both open the assessment for its
    first attempt; one cancels it and, 4 s later, retries it. Jobs of the retry on the other one open it
    again, for the second attempt: its running time does not count the 4 s between the attempts."""
    settings = green_settings(pg_database)
    async with open_runtime(settings) as first, open_runtime(settings) as second:
        config = AssessmentConfig(agent_url=slow_oracle_url, tasks=TaskSelection(num_tasks=12), concurrency=4)
        record, _ = await first.service.create(config, source="rest")
        began = asyncio.get_running_loop().time()
        async with first.service.subscribe(record.id, accept=(TrialDone,)) as finished:
            async for event in finished:
                if isinstance(event, TrialDone) and event.trials_done >= 4:
                    break
        cancelled = await second.service.cancel(record.id)
        first_attempt = asyncio.get_running_loop().time() - began
        assert record.id in first.service._opened or record.id in second.service._opened
        await asyncio.sleep(4.0)
        began = asyncio.get_running_loop().time()
        await second.service.retry(record.id, source="rest", caller=OPERATOR)
        final = await first.service.wait(record.id)
        second_attempt = asyncio.get_running_loop().time() - began
    assert cancelled.status == CANCELLED and final.status == COMPLETED and final.trials_done == 12
    assert final.report is not None
    assert final.report.time_used_s < first_attempt + second_attempt + 1.0, (
        final.report.time_used_s,
        first_attempt,
        second_attempt,
    )
