"""End to end over real loopback HTTP: the engine assesses the reference white agents (uvicorn + a2a-sdk)."""

from __future__ import annotations

import asyncio
import time

import pytest

from green_agent import AssessmentConfig, TaskSelection
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.engine.conftest import GOLD_EQUALS_INITIAL, engine_for, run


@pytest.mark.slow
async def test_oracle_matches_the_gold_db_on_every_task(data: RetailData) -> None:
    async with serve_reference_agent("oracle", data=data) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, concurrency=32))

    results = events.by_task()
    assert set(results) == set(data.tasks) and len(events.results) == 114
    for task_id, result in results.items():
        db = next(s for s in result.signals if s.name == "DB_STATE_MATCH")
        assert db.passed is True, (task_id, result.error, result.protocol_warnings)
        assert result.db_actual_hash == result.db_expected_hash == data.gold(task_id).db_hash
        assert result.termination_reason == "user_stop"
        assert result.protocol_warnings == []
        # every gold action was replayed, so the diagnostic action check matches too
        assert all(check["matched"] for check in result.action_checks), task_id
    judged = {t for t, task in data.tasks.items() if task.judged}
    assert report.excluded == {"infrastructure_error": 0, "not_judged": len(judged)}
    assert {t for t, r in results.items() if r.nl_status == "not_judged"} == judged
    assert all(results[t].reward is None for t in judged)
    assert report.trials_scored == 114 - len(judged)
    assert report.avg_reward == 1.0 and report.pass_hat_k == {1: 1.0}
    assert report.signal_rates["DB_STATE_MATCH"] == 1.0
    assert report.termination_counts == {"user_stop": 114}


async def test_oracle_in_structured_dialect_and_over_a2a_0_3(data: RetailData) -> None:
    tasks = TaskSelection(task_ids=["0", "3", "16", "22", "23", "33", "57", "113"])
    for protocol in ("1.0", "0.3"):
        async with serve_reference_agent("oracle", data=data, protocol_version=protocol) as url:
            config = AssessmentConfig(agent_url=url, tasks=tasks, dialect="structured", trials=2)
            report, events = await run(data, config)
        assert len(events.results) == 16
        for result in events.results:
            db = next(s for s in result.signals if s.name == "DB_STATE_MATCH")
            assert db.passed is True, (protocol, result.task_id, result.error)
        # trial seeds as upstream, the same for every task of a trial
        assert {(r.trial, r.seed) for r in events.results} == {(0, 626729), (1, 373753)}
        assert report.termination_counts == {"user_stop": 16}


@pytest.mark.slow
async def test_agent_without_tools_matches_only_tasks_whose_gold_is_the_initial_db(data: RetailData) -> None:
    async with serve_reference_agent("no_tools", data=data) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, concurrency=32))
    matched = {
        r.task_id for r in events.results if next(s for s in r.signals if s.name == "DB_STATE_MATCH").passed
    }
    assert matched == GOLD_EQUALS_INITIAL
    assert report.termination_counts == {"user_stop": 114}
    assert all(r.db_actual_hash == data.initial_db_hash() for r in events.results)


async def test_garbage_and_timeout_agents_score_zero_while_other_trials_complete(data: RetailData) -> None:
    few = TaskSelection(task_ids=["1", "24", "57"])
    async with (
        serve_reference_agent("garbage", data=data) as garbage_url,
        serve_reference_agent("timeout", data=data) as timeout_url,
        serve_reference_agent("oracle", data=data) as oracle_url,
        engine_for(data) as engine,
    ):
        garbage, timeout, oracle = await asyncio.gather(
            engine.run(AssessmentConfig(agent_url=garbage_url, tasks=few)),
            engine.run(AssessmentConfig(agent_url=timeout_url, tasks=few, turn_timeout_s=0.5)),
            engine.run(AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(split="test"))),
        )
    for report in (garbage, timeout):
        assert report.termination_counts == {"agent_error": 3}
        assert report.avg_reward == 0.0 and report.pass_hat_k == {1: 0.0}
        # Task 24 needs the judge and this engine has none: excluded however the trial ended.
        assert report.trials_scored == 2 and report.excluded["not_judged"] == 1
    assert oracle.termination_counts == {"user_stop": 40}
    assert oracle.signal_rates["DB_STATE_MATCH"] == 1.0


async def test_agent_error_reasons_are_stored(data: RetailData) -> None:
    one = TaskSelection(task_ids=["5"])
    async with serve_reference_agent("garbage", data=data) as url:
        _, garbage = await run(data, AssessmentConfig(agent_url=url, tasks=one))
    async with serve_reference_agent("timeout", data=data) as url:
        _, timeout = await run(data, AssessmentConfig(agent_url=url, tasks=one, turn_timeout_s=0.3))
    _, unreachable = await run(data, AssessmentConfig(agent_url="http://127.0.0.1:9", tasks=one))
    # an agent that cannot be reached fails every trial at once, not one connection retry cycle per trial
    started = time.monotonic()
    report, _ = await run(data, AssessmentConfig(agent_url="http://127.0.0.1:9", trials=4, concurrency=2))
    assert report.termination_counts == {"agent_error": 456}
    # generous: with a card fetch (and its retries) per trial instead of per assessment this takes minutes
    assert time.monotonic() - started < 60

    for events, expected in (
        (garbage, "AgentProtocolError"),
        (timeout, "AgentTimeoutError"),
        (unreachable, "AgentUnreachableError"),
    ):
        (result,) = events.results
        assert result.termination_reason == "agent_error"
        assert result.reward == 0.0 and result.is_successful is False
        assert result.error is not None and result.error.startswith(expected), result.error
        clean = next(s for s in result.signals if s.name == "CLEAN_EXIT")
        assert clean.passed is False and clean.counts is True
    assert "0.3s" in timeout.results[0].error  # type: ignore[operator]
