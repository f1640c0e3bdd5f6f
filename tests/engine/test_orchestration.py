"""Orchestration rules, failure isolation and engine behaviour, with white agents written inline and served
over real loopback A2A (tests/support/agents.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import Part
from a2a.utils.constants import TransportProtocol
from starlette.applications import Starlette

from green_agent import AssessmentConfig, ConfigError, LLMEndpoint, TaskSelection
from green_agent.conversation.user_simulator import SCRIPTED_OPENING
from green_agent.reference_agents import agent_card, serve_app, serve_reference_agent
from green_agent.reference_agents.oracle import OracleExecutor
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from retail_domain import TOOL_SCHEMAS, RetailData
from tests.engine.conftest import Collector, engine_for, run
from tests.support.agents import ConcurrencyProbe, FunctionExecutor, serve_executor

ONE = TaskSelection(task_ids=["5"])


def always(parts_for: list[Part] | Callable[[Incoming], list[Part]]) -> FunctionExecutor:
    """An agent giving the same answer to every message (or the answer a function computes from it)."""

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        parts = parts_for(incoming) if callable(parts_for) else parts_for
        await queue.enqueue_event(agent_message(parts, context.context_id))

    return FunctionExecutor(reply)


async def test_unparseable_reply_reaches_the_user_with_a_protocol_warning(data: RetailData) -> None:
    prose = "Hello! Could you tell me your order number?"
    async with serve_executor(always([new_text_part(prose)])) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
    (result,) = events.results
    assert result.termination_reason == "user_stop"
    assert [(m.role, m.content) for m in result.transcript][2] == ("assistant", prose)
    assert len(result.protocol_warnings) == 1 and "not JSON" in result.protocol_warnings[0]
    assert result.protocol_warnings[0].startswith("message 2:")


async def test_tool_errors_are_cumulative_and_end_the_trial(data: RetailData) -> None:
    bad_call = call_parts(False, "get_order_details", {"order_id": "#W0000000"})
    async with serve_executor(always(bad_call)) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
    (result,) = events.results
    assert result.termination_reason == "too_many_errors" and result.reward == 0.0
    assert result.num_errors == 10
    assert result.steps == 1 + 10 * 2  # the user's opening, then (agent call + environment) per error
    tool_messages = [m for m in result.transcript if m.role == "tool"]
    assert len(tool_messages) == 10 and all(m.error for m in tool_messages)
    assert tool_messages[0].content == "Error: Order not found"


async def test_max_steps_counts_each_message_and_overrides_a_stop(data: RetailData) -> None:
    read = call_parts(False, "list_all_product_types", {})
    async with serve_executor(always(read)) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE, max_steps=7))
    (result,) = events.results
    assert result.termination_reason == "max_steps" and result.steps == 7 and result.num_errors == 0
    assert [m.role for m in result.transcript] == ["assistant", "user"] + ["assistant", "tool"] * 3

    # user opening = step 1, agent text = step 2, the user's ###STOP### = step 3 = max_steps: max_steps wins
    async with serve_reference_agent("no_tools", data=data) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE, max_steps=3))
    (result,) = events.results
    assert result.transcript[-1].content == "###STOP###"
    assert result.termination_reason == "max_steps" and result.reward == 0.0


async def test_agent_stop_and_several_calls_in_one_reply(data: RetailData) -> None:
    turns: list[int] = []

    def answer(incoming: Incoming) -> list[Part]:
        turns.append(1)
        if len(turns) == 1:
            calls = [
                {"name": "find_user_id_by_email", "arguments": {"email": "nobody@example.com"}},
                {"name": "list_all_product_types", "arguments": {}},
            ]
            return [new_text_part(f"<json>{json.dumps(calls)}</json>")]
        assert incoming.text.splitlines()[0].startswith("Tool 'find_user_id_by_email' result: Error:")
        assert incoming.text.splitlines()[1].startswith("Tool 'list_all_product_types' result: {")
        return text_parts(False, "Nothing more I can do. ###STOP###")

    async with serve_executor(always(answer)) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
    (result,) = events.results
    assert result.termination_reason == "agent_stop"
    roles = [m.role for m in result.transcript]
    assert roles == ["assistant", "user", "assistant", "tool", "tool", "assistant"]
    call_message = result.transcript[2]
    assert call_message.content is None and [c.name for c in call_message.tool_calls or ()] == [
        "find_user_id_by_email",
        "list_all_product_types",
    ]
    assert [m.tool_call_id for m in result.transcript[3:5]] == [c.id for c in call_message.tool_calls or ()]
    assert result.steps == 4 and result.num_errors == 1


async def test_task_replies_continue_input_required_tasks(data: RetailData) -> None:
    seen_task_ids: list[str] = []

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await queue.enqueue_event(task)
        seen_task_ids.append(task.id)
        updater = TaskUpdater(queue, task.id, task.context_id)
        if len(seen_task_ids) == 1:  # a tool call as an artifact, and the task waits for input
            call = {"name": "find_user_id_by_email", "arguments": {"email": "nobody@example.com"}}
            await updater.add_artifact([new_text_part(json.dumps(call))], name="call")
            await updater.requires_input()
        else:  # the answer in the status message, and the task completes
            text = json.dumps({"name": "respond", "arguments": {"content": "I could not find you."}})
            await updater.complete(new_text_message(text, context_id=task.context_id, task_id=task.id))

    async with serve_executor(FunctionExecutor(reply)) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
    (result,) = events.results
    assert result.termination_reason == "user_stop", result.error
    assert seen_task_ids[0] == seen_task_ids[1]  # the input-required task was continued, not restarted
    assert [m.role for m in result.transcript] == [
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert result.transcript[4].content == "I could not find you."
    assert result.protocol_warnings == []


async def test_events_stream_each_trial_in_order(data: RetailData) -> None:
    async with serve_reference_agent("oracle", data=data) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["5", "9"])))
    for task_id in ("5", "9"):
        mine = [
            e
            for e in events.events
            if (e.result.task_id if e.kind == "trial_finished" else e.task_id) == task_id
        ]
        assert mine[0].kind == "trial_started" and mine[-1].kind == "trial_finished"
        turns = [e.message for e in mine if e.kind == "turn_taken"]
        assert turns == mine[-1].result.transcript
        assert turns[1].content == SCRIPTED_OPENING.format(domain="retail", task_id=task_id)


async def test_resume_runs_only_missing_trials(data: RetailData) -> None:
    tasks = TaskSelection(task_ids=["5", "9", "24"])
    async with serve_reference_agent("oracle", data=data) as url:
        first, done = await run(data, AssessmentConfig(agent_url=url, tasks=tasks, trials=2))
        kept = [r for r in done.results if not (r.task_id == "9" and r.trial == 1)]
        collector = Collector()
        async with engine_for(data) as engine:
            again = await engine.run(
                AssessmentConfig(agent_url=url, tasks=tasks, trials=2), on_event=collector, completed=kept
            )
    assert [(r.task_id, r.trial) for r in collector.results] == [("9", 1)]
    assert again.trials_total == 6
    assert again.model_dump(exclude={"time_used_s"}) == first.model_dump(exclude={"time_used_s"})


async def test_concurrency_bounds_per_assessment_and_per_agent(data: RetailData) -> None:
    probe = ConcurrencyProbe()
    tasks = TaskSelection(split="test", num_tasks=12)
    async with serve_executor(FunctionExecutor(probe)) as url:
        await run(data, AssessmentConfig(agent_url=url, tasks=tasks, concurrency=3))
        assert probe.peak == 3
        probe.peak = 0
        async with engine_for(data, max_concurrent_per_agent=4) as engine:
            await asyncio.gather(
                *(engine.run(AssessmentConfig(agent_url=url, tasks=tasks, concurrency=8)) for _ in range(2))
            )
        assert probe.peak == 4
        probe.peak = 0
        # The fair-share caps keep slots back for other tenants (tests/engine/test_fair_slots.py); with
        # shares of 1 the global bound alone binds.
        async with engine_for(
            data, max_concurrent_trials=2, tenant_slot_share=1.0, assessment_slot_share=1.0
        ) as engine:
            await engine.run(AssessmentConfig(agent_url=url, tasks=tasks, concurrency=8))
        assert probe.peak == 2


async def test_cancelling_run_cancels_in_flight_trials(data: RetailData) -> None:
    started = asyncio.Event()

    async def on_event(event: object) -> None:
        started.set()

    async with serve_reference_agent("idle", data=data) as url, engine_for(data) as engine:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(num_tasks=10), concurrency=10)
        running = asyncio.create_task(engine.run(config, on_event=on_event))
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.2)  # let the trials reach the agent
        begin = time.monotonic()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert time.monotonic() - begin < 2
        # the engine is still usable afterwards: its conversation slots were all released
        assert all(slot.active == 0 for pool in engine._pools.values() for slot in pool._slots)
        assert engine.slots.in_use == 0


async def test_failing_event_handler_stops_the_run_with_its_own_error(data: RetailData) -> None:
    async def broken(event: object) -> None:
        raise RuntimeError("database is down")

    async with serve_reference_agent("oracle", data=data) as url, engine_for(data) as engine:
        with pytest.raises(RuntimeError, match="database is down"):
            await engine.run(AssessmentConfig(agent_url=url, tasks=ONE), on_event=broken)


async def test_validate_resolves_tasks_and_says_what_to_change(data: RetailData) -> None:
    settings = {"user_models": {"gpt": LLMEndpoint(model="gpt-4.1")}}
    async with engine_for(data, **settings) as engine:
        url = "http://agent.example"
        assert engine.validate(AssessmentConfig(agent_url=url)) == list(data.tasks)
        assert engine.validate(AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["9", "2"]))) == [
            "2",
            "9",
        ]
        test_split = engine.validate(
            AssessmentConfig(agent_url=url, tasks=TaskSelection(split="test", num_tasks=3))
        )
        assert test_split == [t for t in data.tasks if t in data.splits["test"]][:3]
        with pytest.raises(ConfigError, match=r"unknown task ids \['999'\]"):
            engine.validate(AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["999"])))
        with pytest.raises(
            ConfigError, match=r"user model 'claude' is not offered here; use one of: scripted, gpt"
        ):
            engine.validate(AssessmentConfig(agent_url=url, user_model="claude"))
        with pytest.raises(ConfigError, match="lower num_tasks to at most 40"):
            engine.validate(AssessmentConfig(agent_url=url, tasks=TaskSelection(split="test", num_tasks=41)))


async def test_event_handler_failing_mid_trial_stops_the_run(data: RetailData) -> None:
    async def fails_on_turns(event: Any) -> None:
        if event.kind == "turn_taken" and event.message.index == 2:
            raise RuntimeError("stream consumer gone")

    async with serve_reference_agent("oracle", data=data) as url, engine_for(data) as engine:
        with pytest.raises(RuntimeError, match="stream consumer gone"):
            await engine.run(AssessmentConfig(agent_url=url, tasks=ONE), on_event=fails_on_turns)


async def test_agent_offering_only_the_rest_binding(data: RetailData) -> None:
    def app_for(url: str) -> Starlette:
        card = agent_card(name="rest-oracle", description="oracle over HTTP+JSON", url=url)
        card.supported_interfaces[0].protocol_binding = TransportProtocol.HTTP_JSON
        handler = DefaultRequestHandler(OracleExecutor(data), InMemoryTaskStore(), card)
        return Starlette(routes=[*create_agent_card_routes(card), *create_rest_routes(handler)])

    async with serve_app(app_for) as url:
        _, events = await run(
            data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["5", "24"]))
        )
    for result in events.results:
        assert result.termination_reason == "user_stop", result.error
        assert result.db_actual_hash == data.gold(result.task_id).db_hash


async def test_what_the_white_agent_receives_in_each_dialect(data: RetailData) -> None:
    lookup = {"email": "nobody@example.com"}

    def answer(incoming: Incoming) -> list[Part]:
        structured = incoming.structured
        first = len(executor.received) == 1
        return (
            call_parts(structured, "find_user_id_by_email", lookup)
            if first
            else text_parts(structured, "Bye")
        )

    opening = SCRIPTED_OPENING.format(domain="retail", task_id="5")
    for dialect in ("text", "structured"):
        executor = always(answer)
        async with serve_executor(executor) as url:
            _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE, dialect=dialect))
        assert events.results[0].termination_reason == "user_stop"
        first, second = executor.received
        if dialect == "text":
            assert first.data == ()
            assert first.text.startswith(data.policy.rstrip("\n") + "\n")
            assert json.dumps(list(TOOL_SCHEMAS), indent=2) in first.text
            assert first.text.endswith("\n" + opening)
            assert second.text == "Tool 'find_user_id_by_email' result: Error: User not found"
        else:
            (frame,) = first.data
            assert frame["type"] == "session_start" and frame["policy"] == data.policy
            assert frame["tools"] == list(TOOL_SCHEMAS)
            assert first.text == opening
            (results,) = second.data
            (item,) = results["results"]
            assert item["name"] == "find_user_id_by_email" and item["error"] is True
            assert item["content"] == "Error: User not found" and item["tool_call_id"].startswith("call_")


async def test_empty_answers_and_failed_tasks_are_agent_errors(data: RetailData) -> None:
    async def fail(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        assert context.message is not None
        task = new_task_from_user_message(context.message)
        await queue.enqueue_event(task)
        message = new_text_message("out of credits", context_id=task.context_id, task_id=task.id)
        await TaskUpdater(queue, task.id, task.context_id).failed(message)

    cases = [
        (always([new_text_part("   ")]), "AgentProtocolError: the agent's answer was empty"),
        (always(text_parts(False, "")), "AgentProtocolError: the agent's reply held neither"),
        (
            FunctionExecutor(fail),
            "AgentProtocolError: the agent's task ended in state failed: out of credits",
        ),
    ]
    for executor, expected in cases:
        async with serve_executor(executor) as url:
            report, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
        (result,) = events.results
        assert result.termination_reason == "agent_error" and result.reward == 0.0
        assert result.error is not None and result.error.startswith(expected), result.error
        assert report.avg_reward == 0.0
