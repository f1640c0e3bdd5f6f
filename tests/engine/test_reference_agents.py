"""End to end over real loopback HTTP: the engine assesses the reference white agents (uvicorn + a2a-sdk)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from starlette.applications import Starlette

from green_agent import AssessmentConfig, TaskSelection
from green_agent.core.errors import AgentNotReachedError
from green_agent.reference_agents import agent_card, build_agent_app, serve_app, serve_reference_agent
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from retail_domain import RetailData
from tests.engine.conftest import GOLD_EQUALS_INITIAL, Collector, engine_for, expected_applicability, run
from tests.support.agents import FunctionExecutor, Reply, serve_executor


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
    # Rates over the trials where each signal applies: it never said a required fact nor made a gold call.
    # (Counted over every scored trial, COMMUNICATE was 0.96 and ACTION_MATCH 0.01 for this agent.)
    # Without a judge no trial of a task with NL assertions is scored, whatever its DB (40 tasks; before,
    # those whose DB failed were kept as 0 and only the DB matches left out).
    scored = {t for t, task in data.tasks.items() if not task.judged}
    assert len(scored) == 114 - 40
    assert report.signal_applicable == expected_applicability(data, sorted(scored))
    assert report.signal_rates == {
        "DB_STATE_MATCH": len(GOLD_EQUALS_INITIAL & scored) / len(scored),
        "NL_ASSERTION": None,
        "CLEAN_EXIT": 1.0,
        "ACTION_MATCH": 0.0,
        "COMMUNICATE": 0.0,
        "ENV_ASSERTION": None,
    }
    assert report.complete is False and report.partial_reasons == {"not_judged": 114 - len(scored)}


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
        # Task 24 needs the judge and this engine has none: it is left out, although it ended uncleanly.
        assert report.trials_scored == 2 and report.excluded["not_judged"] == 1
    assert oracle.termination_counts == {"user_stop": 40}
    assert oracle.signal_rates["DB_STATE_MATCH"] == 1.0


async def test_agent_error_reasons_are_stored(data: RetailData) -> None:
    one = TaskSelection(task_ids=["5"])
    async with serve_reference_agent("garbage", data=data) as url:
        _, garbage = await run(data, AssessmentConfig(agent_url=url, tasks=one))
    async with serve_reference_agent("timeout", data=data) as url:
        _, timeout = await run(data, AssessmentConfig(agent_url=url, tasks=one, turn_timeout_s=0.3))

    for events, expected in ((garbage, "AgentProtocolError"), (timeout, "AgentTimeoutError")):
        (result,) = events.results
        assert result.termination_reason == "agent_error"
        assert result.reward == 0.0 and result.is_successful is False
        assert result.error is not None and result.error.startswith(expected), result.error
        clean = next(s for s in result.signals if s.name == "CLEAN_EXIT")
        assert clean.passed is False and clean.counts is True
    assert "0.3s" in timeout.results[0].error  # type: ignore[operator]


async def test_an_agent_whose_card_cannot_be_read_fails_the_assessment_before_any_trial(
    data: RetailData,
) -> None:
    collector = Collector()
    started = time.monotonic()
    async with engine_for(data) as engine:
        with pytest.raises(AgentNotReachedError) as raised:
            await engine.run(AssessmentConfig(agent_url="http://127.0.0.1:9", trials=4), on_event=collector)
    message = str(raised.value)
    assert "http://127.0.0.1:9" in message and "agent card" in message, message
    assert "Check that the agent is running" in message
    assert collector.events == []  # no trial started, so none is charged to the agent
    assert time.monotonic() - started < 30  # one card fetch with its retries, not one per trial


async def test_an_agent_whose_card_advertises_an_unreachable_address_fails_the_assessment(
    data: RetailData,
) -> None:
    dead = "http://127.0.0.1:9/"
    executor = FunctionExecutor(_say("Hello."))

    def app_for(url: str) -> Starlette:
        card = agent_card(name="misconfigured", description="its card names a dead address", url=dead)
        return build_agent_app(executor, card=card)

    collector = Collector()
    async with serve_app(app_for) as url, engine_for(data) as engine:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0", "1", "2"]), concurrency=3)
        with pytest.raises(AgentNotReachedError) as raised:
            await engine.run(config, on_event=collector)
    message = str(raised.value)
    assert "card was read" in message and dead in message, message
    assert collector.results == []  # the trials were cancelled with the assessment, none was scored
    assert executor.received == []


async def test_an_agent_lost_mid_run_ends_its_trials_as_agent_errors_with_applicable_only_rates(
    data: RetailData,
) -> None:
    # It answers the first message it gets with a tool call and then goes away. It was reached, so the
    # assessment goes on and every trial is the agent's error (the ones that started later never reach it);
    # each rate is "0 of N" over the trials where its signal applies.
    task_ids = ["0", "2", "24", "30", "31", "57"]
    gone = asyncio.Event()
    executor = FunctionExecutor(_call_a_tool_then(gone.set))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def serve_until_gone() -> None:
        async with serve_executor(executor) as url:
            ready.set_result(url)
            await gone.wait()
        # leaving the block stops the server: later connections are refused

    server = asyncio.create_task(serve_until_gone())
    # A message that got in before the server stopped waits for an answer that never comes, on a connection
    # the stopping server keeps open (it cannot cancel that request): the turn deadline ends it.
    config = AssessmentConfig(
        agent_url=await ready, tasks=TaskSelection(task_ids=task_ids), concurrency=2, turn_timeout_s=2.0
    )
    report, events = await run(data, config)
    await server

    assert report.termination_counts == {"agent_error": 6}
    assert any(r.error and r.error.startswith("AgentUnreachableError") for r in events.results)
    # Without a judge the tasks with NL assertions are left out, agent errors too (here 2 and 24).
    judged = {t for t in task_ids if data.tasks[t].judged}
    assert judged == {"2", "24"}
    counted = [t for t in task_ids if t not in judged]
    expected = expected_applicability(data, counted)
    assert report.signal_applicable == expected
    assert expected["ACTION_MATCH"] < expected["CLEAN_EXIT"]  # task 57 has no gold actions
    assert 0 < expected["COMMUNICATE"] < expected["CLEAN_EXIT"]  # tasks 30, 31 have facts to say, 0 none
    assert report.signal_rates == {
        "DB_STATE_MATCH": len(GOLD_EQUALS_INITIAL & set(counted)) / len(counted),  # it changed nothing
        "NL_ASSERTION": None,
        "CLEAN_EXIT": 0.0,
        "ACTION_MATCH": 0.0,
        "COMMUNICATE": 0.0,
        "ENV_ASSERTION": None,
    }
    assert report.complete is False and report.partial_reasons == {"not_judged": 2}
    # per trial, a check with nothing to check says "not applicable" instead of a vacuous pass
    no_gold = events.by_task()["57"]
    action = next(s for s in no_gold.signals if s.name == "ACTION_MATCH")
    communicate = next(s for s in no_gold.signals if s.name == "COMMUNICATE")
    assert action.passed is None and communicate.passed is None and "not applicable" in action.detail


def _say(text: str) -> Reply:
    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        await queue.enqueue_event(agent_message(text_parts(incoming.structured, text), context.context_id))

    return reply


def _call_a_tool_then(then: Callable[[], object]) -> Reply:
    """Answers its first message with a tool call (so the trial needs another exchange), after calling
    `then`; never answers again (the server is stopping: a fast client may get more messages in before it
    stops, and those must not be answered either: they wait until their turn deadline)."""
    answered = False

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        nonlocal answered
        if answered:
            await asyncio.Event().wait()  # the SDK's handler outlives the server's attempt to cancel it
        answered = True
        then()
        parts = call_parts(incoming.structured, "no_such_tool", {})
        await queue.enqueue_event(agent_message(parts, context.context_id))

    return reply
