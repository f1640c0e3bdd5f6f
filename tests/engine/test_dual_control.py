"""A customer who acts (issue 34, dual control), on the mock domain over real loopback A2A: the customer's
tool calls run on its side of the environment with requestor "user", their results go to the customer alone
(never to the white agent), they count toward max_steps and max_errors as upstream's routing says, and they
are held to the bounds of the agent's calls. The LLM customer calls its tools through the chat API's function
calling (a deterministic fake provider); the scripted customer performs the customer's side of the gold
actions, in step with the oracle."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from domain_kit import GoldAction
from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection, TrialResult
from green_agent.conversation.user_simulator import SCRIPTED_DONE, SCRIPTED_OPENING
from green_agent.core.limits import AgentLimits
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_reference_agent
from green_agent.reference_agents.oracle import DONE_TEXT, HANDOVER_TEXT, OracleExecutor
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts
from mock_domain import MockData, load_mock_data
from tests.engine.conftest import run
from tests.support.agents import FunctionExecutor, serve_executor
from tests.support.fake_llm import FakeLLM, FakeReply, serve_fake_llm

USER_TOOLS_TASK = "update_task_with_user_tools"
PRISTINE_USER_DB = "4cf3d22eed6962ba202c8738421d8a2286d2b5a0cad1372922c928be09ccbfac"
AGENT_DB_TASK_1_DONE = "b1f6b69753e521e81879e1da10df1e641e6d749b9eb2b69669f643d179e2e548"


@pytest.fixture(scope="module")
def mock() -> MockData:
    return load_mock_data()


def one(task_id: str) -> TaskSelection:
    return TaskSelection(task_ids=[task_id])


def customer_settings(fake: FakeLLM, **more: Any) -> dict[str, Any]:
    endpoint = LLMEndpoint(model="fake-customer", base_url=fake.base_url, api_key="x")
    return {"user_models": {"fake": endpoint}, "default_user_model": "fake", **more}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def recording_oracle(data: MockData) -> FunctionExecutor:
    """The oracle, served through a FunctionExecutor: `.received` keeps every message the white agent got."""
    oracle = OracleExecutor(data)

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        await oracle.execute(context, queue)

    return FunctionExecutor(reply)


def roles(result: TrialResult) -> list[str]:
    """Each message as role, with '+calls' when it carries tool calls and '(user)' for the customer's
    tool results."""
    shown = []
    for message in result.transcript:
        label = message.role + ("+calls" if message.tool_calls else "")
        shown.append(label + ("(user)" if message.requestor == "user" else ""))
    return shown


def inbox_customer(task_id: str) -> Callable[[dict[str, Any]], FakeReply]:
    """A fake customer-LLM playing update_task_with_user_tools as its scenario says: it checks its inbox,
    asks the agent (naming the task, so the oracle serves it), dismisses the notification once the agent is
    done, then stops."""

    def reply(body: dict[str, Any]) -> FakeReply:
        last = body["messages"][-1]
        if len(body["messages"]) == 2:  # system prompt and greeting
            return FakeReply(tool_calls=[call("check_notifications")])
        if last["role"] == "tool" and "assigned to you" in last["content"]:
            return FakeReply(SCRIPTED_OPENING.format(task_id=task_id, domain="mock"))
        if last["role"] == "user" and DONE_TEXT in last["content"]:
            return FakeReply(tool_calls=[call("dismiss_notification", notification_id="notif_1")])
        if last["role"] == "tool":
            return FakeReply("Thanks! ###STOP###")
        return FakeReply("Sorry?")

    return reply


async def test_an_llm_customer_acts_on_its_side_through_function_calling(mock: MockData) -> None:
    oracle = recording_oracle(mock)
    async with (
        serve_fake_llm(inbox_customer(USER_TOOLS_TASK)) as fake,
        serve_executor(oracle) as url,
    ):
        _, events = await run(
            mock,
            AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK)),
            **customer_settings(fake),
        )
    (result,) = events.results
    assert result.termination_reason == "user_stop", result.error
    assert roles(result) == [
        "assistant",  # greeting
        "user+calls",  # check_notifications
        "tool(user)",
        "user",  # the opening, naming the task
        "assistant+calls",  # update_task_status
        "tool",
        "assistant",  # done
        "user+calls",  # dismiss_notification
        "tool(user)",
        "user",  # ###STOP###
    ]
    inbox = result.transcript[2]
    assert not inbox.error and json.loads(inbox.content or "")[0]["notification_id"] == "notif_1"
    assert result.transcript[8].content == "Notification notif_1 dismissed"
    # Each customer batch is two steps (its calls, their results), as upstream routes them.
    assert result.steps == 9 and result.num_errors == 0
    assert result.db_actual_hash == AGENT_DB_TASK_1_DONE

    # The customer model was offered its two tools and saw its own calls and their results ...
    requests = fake.requests
    assert all(r["tool_choice"] == "auto" for r in requests)
    assert [[t["function"]["name"] for t in r["tools"]] for r in requests] == [
        ["check_notifications", "dismiss_notification"]
    ] * 4
    assert requests[0]["messages"][0]["content"].startswith("# How to play the customer (with tools")
    second = requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "check_notifications"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == second[-2]["tool_calls"][0]["id"]
    # ... but never the agent's calls or their results.
    assert "update_task_status" not in json.dumps(requests) and 'Test task", "description' not in json.dumps(
        requests
    )
    # The white agent saw the customer's words only: no call, no result of its device.
    seen = [incoming.text for incoming in oracle.received]
    assert not any("notif_1" in text or "check_notifications" in text for text in seen)
    assert any(SCRIPTED_OPENING.format(task_id=USER_TOOLS_TASK, domain="mock") in text for text in seen)
    assert any("update_task_status" in text for text in seen)  # its own tool results do reach it


def with_customer_actions(data: MockData, task_id: str, actions: list[GoldAction]) -> MockData:
    """`data` with the gold actions of `task_id` replaced (a dual-control task the mock set lacks: one whose
    gold list holds the customer's own actions)."""
    tasks = dict(data.tasks)
    tasks[task_id] = dataclasses.replace(tasks[task_id], gold_actions=tuple(actions))
    documents = {tid: data.task_document(tid) for tid in data.tasks}
    return MockData(data.source, data.db, data.user_db, data.policy, tasks, documents)


async def test_the_scripted_customer_performs_its_side_of_the_gold_actions_in_step_with_the_oracle(
    mock: MockData,
) -> None:
    gold = [
        GoldAction("check_0", "check_notifications", {}, requestor="user"),
        GoldAction("update_1", "update_task_status", {"task_id": "task_1", "status": "completed"}),
        GoldAction("dismiss_2", "dismiss_notification", {"notification_id": "notif_1"}, requestor="user"),
    ]
    data = with_customer_actions(mock, USER_TOOLS_TASK, gold)
    async with serve_reference_agent("oracle", data=data) as url:
        _, events = await run(
            data, AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK))
        )
    (result,) = events.results
    assert result.termination_reason == "user_stop", result.error
    texts = [(m.role, m.content) for m in result.transcript if not m.tool_calls and m.role != "tool"]
    assert texts == [
        ("assistant", "Hi! How can I help you today?"),
        ("user", SCRIPTED_OPENING.format(task_id=USER_TOOLS_TASK, domain="mock")),
        ("assistant", HANDOVER_TEXT),
        ("user", SCRIPTED_DONE),
        ("assistant", HANDOVER_TEXT),
        ("user", SCRIPTED_DONE),
        ("assistant", DONE_TEXT),
        ("user", "###STOP###"),
    ]
    calls = [(m.role, c.name) for m in result.transcript for c in m.tool_calls or ()]
    assert calls == [
        ("user", "check_notifications"),
        ("assistant", "update_task_status"),
        ("user", "dismiss_notification"),
    ]
    assert result.db_actual_hash == AGENT_DB_TASK_1_DONE and result.num_errors == 0


async def test_a_white_agent_naming_a_customer_tool_gets_the_unknown_tool_error(mock: MockData) -> None:
    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        parts = call_parts(False, "dismiss_notification", {"notification_id": "notif_1"})
        await queue.enqueue_event(agent_message(parts, context.context_id))

    async with serve_executor(FunctionExecutor(reply)) as url:
        _, events = await run(
            mock, AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK))
        )
    (result,) = events.results
    assert result.termination_reason == "too_many_errors"
    tool_results = [m for m in result.transcript if m.role == "tool"]
    assert {m.content for m in tool_results} == {"Error: Tool 'dismiss_notification' not found."}
    assert all(m.requestor is None for m in tool_results)


def looping_customer(
    calls_per_turn: int, name: str = "check_notifications"
) -> Callable[[dict[str, Any]], FakeReply]:
    """A customer model that answers every turn with `calls_per_turn` calls of `name`."""

    def reply(body: dict[str, Any]) -> FakeReply:
        return FakeReply(tool_calls=[call(name) for _ in range(calls_per_turn)])

    return reply


async def test_customer_calls_count_toward_max_steps(mock: MockData) -> None:
    async with (
        serve_fake_llm(looping_customer(1)) as fake,
        serve_reference_agent("no_tools", data=mock) as url,
    ):
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK), max_steps=7)
        _, events = await run(mock, config, **customer_settings(fake))
    (result,) = events.results
    # Each round is the customer's calls and their results: two steps; the limit is checked after results.
    assert result.termination_reason == "max_steps" and result.steps == 8
    assert roles(result) == ["assistant"] + ["user+calls", "tool(user)"] * 4
    assert len(fake.requests) == 4  # the white agent was never asked anything


async def test_customer_tool_errors_count_toward_max_errors(mock: MockData) -> None:
    async with (
        serve_fake_llm(looping_customer(1, "refuel_data")) as fake,
        serve_reference_agent("no_tools", data=mock) as url,
    ):
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK), max_errors=3)
        _, events = await run(mock, config, **customer_settings(fake))
    (result,) = events.results
    assert result.termination_reason == "too_many_errors" and result.num_errors == 3
    errors = [m.content for m in result.transcript if m.role == "tool"]
    assert errors == ["Error: Tool 'refuel_data' not found."] * 3


async def test_customer_calls_past_max_tool_calls_are_refused_and_charged_like_an_unusable_reply(
    mock: MockData,
) -> None:
    """At the bound the calls run; one past it, the reply is unusable: before the agent has spoken it is our
    failure (excluded); after, the conversation provoked it (the agent's, as for any unusable reply)."""
    limit = 3
    async with (
        serve_fake_llm(looping_customer(limit)) as fake,
        serve_reference_agent("no_tools", data=mock) as url,
    ):
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK), max_steps=2)
        _, events = await run(
            mock, config, limits=AgentLimits(max_tool_calls=limit), **customer_settings(fake)
        )
    (result,) = events.results
    assert result.termination_reason == "max_steps"
    assert roles(result) == ["assistant", "user+calls"] + ["tool(user)"] * limit

    async with (
        serve_fake_llm(looping_customer(limit + 1)) as fake,
        serve_reference_agent("no_tools", data=mock) as url,
    ):
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK))
        _, events = await run(
            mock, config, limits=AgentLimits(max_tool_calls=limit), trial_retries=0, **customer_settings(fake)
        )
    (result,) = events.results
    assert result.termination_reason == "infrastructure_error" and result.reward is None
    assert f"held {limit + 1} tool calls, over max_tool_calls={limit}" in (result.error or "")
    assert roles(result) == ["assistant"]  # nothing of the refused reply ran or was kept

    def after_the_agent(body: dict[str, Any]) -> FakeReply:
        if len(body["messages"]) == 2:
            return FakeReply("Hello, I need help with a task.")
        return FakeReply(tool_calls=[call("check_notifications") for _ in range(limit + 1)])

    async with serve_fake_llm(after_the_agent) as fake, serve_reference_agent("no_tools", data=mock) as url:
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK))
        _, events = await run(
            mock, config, limits=AgentLimits(max_tool_calls=limit), **customer_settings(fake)
        )
    (result,) = events.results
    assert result.termination_reason == "agent_error" and result.reward == 0.0
    assert (result.error or "").startswith("provoked_llm_failure:customer_tool_calls:")


async def test_customer_arguments_past_max_argument_bytes_are_refused(mock: MockData) -> None:
    bound = 256

    def big(size: int) -> Callable[[dict[str, Any]], FakeReply]:
        def reply(body: dict[str, Any]) -> FakeReply:
            if len(body["messages"]) > 2:
                return FakeReply("###STOP###")
            filler = "x" * (size - len('{"notification_id":""}'))
            return FakeReply(tool_calls=[call("dismiss_notification", notification_id=filler)])

        return reply

    for size, ends in ((bound, "user_stop"), (bound + 1, "infrastructure_error")):
        async with serve_fake_llm(big(size)) as fake, serve_reference_agent("no_tools", data=mock) as url:
            config = AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK))
            _, events = await run(
                mock,
                config,
                limits=AgentLimits(max_argument_bytes=bound),
                trial_retries=0,
                **customer_settings(fake),
            )
        (result,) = events.results
        assert result.termination_reason == ends, (size, result.error)
    assert f"held {bound + 1} bytes of tool arguments, over max_argument_bytes" in (result.error or "")


FACTS = json.loads((Path(__file__).parents[1] / "domain" / "mock" / "task_facts.json").read_text())
GOLD_RUN_REWARD = {task["id"]: task["gold_trajectory_eval"]["reward"] for task in FACTS["tasks"]}
"""Upstream's reward for a trajectory made of exactly the gold calls (evaluate_simulation, ALL)."""


async def test_the_oracle_and_the_scripted_customer_get_upstreams_gold_run_reward_on_every_mock_task(
    mock: MockData,
) -> None:
    """With a closing text that states nothing, the conversation holds exactly the gold calls: the reward
    is upstream's for the gold trajectory on each of the 10 tasks, 1 on 7. Of the other three,
    update_task_with_initialization_data needs two sentences said, the task with history and env
    assertions a completion no gold call makes, and update_task_with_user_tools cannot be won. The oracle
    as served states the task's communicate_info (airline scores it), which also wins the first."""
    async with serve_executor(OracleExecutor(mock, state_facts=False)) as url:
        report, events = await run(mock, AssessmentConfig(agent_url=url, domain="mock"))
    assert report.domain == "mock" and report.complete
    assert {r.task_id: r.reward for r in events.results} == GOLD_RUN_REWARD
    assert sum(GOLD_RUN_REWARD.values()) == 7
    by_task = events.by_task()
    unwinnable = by_task[USER_TOOLS_TASK]
    assert [
        (s.name, s.passed) for s in unwinnable.signals if s.name in ("DB_STATE_MATCH", "ENV_ASSERTION")
    ] == [
        ("DB_STATE_MATCH", True),
        ("ENV_ASSERTION", False),
    ]

    async with serve_reference_agent("oracle", data=mock) as url:
        report, events = await run(mock, AssessmentConfig(agent_url=url, domain="mock"))
    rewards = {r.task_id: r.reward for r in events.results}
    assert rewards == {**GOLD_RUN_REWARD, "update_task_with_initialization_data": 1.0}


async def test_the_operators_guidelines_for_a_customer_with_tools_are_used_and_fingerprinted(
    mock: MockData, tmp_path: Path
) -> None:
    """GREEN_AGENT_USER_GUIDELINES_TOOLS_FILE replaces the built-in guidelines of a customer who has tools
    (what an operator does with upstream's simulation_guidelines_tools.md); the report names its sha256."""
    guidelines = tmp_path / "simulation_guidelines_tools.md"
    guidelines.write_text("Play the customer; use your tools when asked.\n")
    async with (
        serve_fake_llm(inbox_customer(USER_TOOLS_TASK)) as fake,
        serve_executor(OracleExecutor(mock)) as url,
    ):
        settings = customer_settings(fake, user_guidelines_tools_file=guidelines)
        report, _ = await run(
            mock, AssessmentConfig(agent_url=url, domain="mock", tasks=one(USER_TOOLS_TASK)), **settings
        )
    system = fake.requests[0]["messages"][0]["content"]
    assert system.startswith("Play the customer; use your tools when asked.\n\n\n<scenario>\n")
    assert report.run_info is not None
    assert report.run_info.user_guidelines_sha256 == hashlib.sha256(guidelines.read_bytes()).hexdigest()


async def test_the_oracle_and_the_scripted_customer_solve_every_base_telecom_task() -> None:
    """Upstream's evaluator gives the gold trajectory reward 1 on all 114 base telecom tasks; the oracle and
    the scripted customer replay it, each party making its own gold calls in the gold order."""
    telecom = load_domain("telecom")
    async with serve_reference_agent("oracle", data=telecom) as url:
        report, events = await run(telecom, AssessmentConfig(agent_url=url, domain="telecom", concurrency=16))
    assert report.trials_total == 114 and report.complete
    assert {r.task_id: r.reward for r in events.results} == dict.fromkeys(telecom.split("base"), 1.0)
    for result in events.results:
        made = [(m.role, c.name) for m in result.transcript for c in m.tool_calls or ()]
        gold = [
            ("user" if a.requestor == "user" else "assistant", a.name)
            for a in telecom.task(result.task_id).gold_actions
        ]
        assert made == gold, result.task_id
        customer_results = [m for m in result.transcript if m.role == "tool" and m.requestor == "user"]
        assert len(customer_results) == sum(1 for role, _ in gold if role == "user")
