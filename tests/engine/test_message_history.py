"""A task's message history (two mock tasks have one), run as upstream runs it: the transcript opens with the
history instead of the greeting (not steps), the white agent sees the whole conversation so far in its first
message (the text dialect as lines in its own reply format, the structured dialect as a `history` list in
`session_start`), the customer model sees its side of it with the roles flipped (never the agent's calls),
the history's writes count once (the initial state holds them; replays start after the history), and the
export opens with the history as upstream's trajectories do, so re-scoring the file agrees."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from domain_kit import DomainData
from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection, TrialResult
from green_agent.conversation.user_simulator import SCRIPTED_OPENING
from green_agent.core.history import history_length
from green_agent.domains import load_domain
from green_agent.reference_agents.oracle import DONE_TEXT, OracleExecutor
from green_agent.reference_agents.replies import Incoming
from green_agent.scoring.diagnosis import diagnose
from green_agent.tau2_format import ExportSource, tau2_results
from green_agent.tau2_format.rescore import rescore_document
from green_agent.white_agent.dialect import STRUCTURED_DIALECT_URI
from tests.engine.conftest import run
from tests.support import tau2_schema
from tests.support.agents import FunctionExecutor, serve_executor
from tests.support.fake_llm import FakeReply, serve_fake_llm

HISTORY_TASK = "update_task_with_message_history"
ASKED = "I need to create a task for the project review meeting."
CREATED = {"user_id": "user_1", "title": "Project Review", "description": "Review Q4 project status"}
RESULT = (
    '{"task_id":"task_2","title":"Project Review","description":"Review Q4 project status",'
    '"status":"pending"}'
)
SAID = (
    "I've created a task titled 'Project Review' for you. The task has been created with ID task_2 and is "
    "currently in pending status."
)
OPENING = SCRIPTED_OPENING.format(task_id=HISTORY_TASK, domain="mock")


@pytest.fixture(scope="module")
def mock() -> DomainData:
    return load_domain("mock")


def recording_oracle(data: DomainData) -> FunctionExecutor:
    oracle = OracleExecutor(data)

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        await oracle.execute(context, queue)

    return FunctionExecutor(reply)


def one(task_id: str) -> TaskSelection:
    return TaskSelection(task_ids=[task_id])


def opens_with_the_history(result: TrialResult) -> None:
    shown = [(m.role, m.content, [c.name for c in m.tool_calls or ()]) for m in result.transcript[:5]]
    assert shown == [
        ("user", ASKED, []),
        ("assistant", None, ["create_task"]),
        ("tool", RESULT, []),
        ("assistant", SAID, []),
        ("user", OPENING, []),  # the customer answers the history's last message: no greeting
    ]
    assert result.transcript[2].tool_call_id == "call_1"


async def test_the_text_dialect_shows_the_conversation_so_far_and_its_writes_count_once(
    mock: DomainData,
) -> None:
    oracle = recording_oracle(mock)
    async with serve_executor(oracle) as url:
        _, events = await run(mock, AssessmentConfig(agent_url=url, domain="mock", tasks=one(HISTORY_TASK)))
    (result,) = events.results
    assert result.termination_reason == "user_stop" and result.reward == 1.0, result.error
    opens_with_the_history(result)
    # The history is no step: the customer's opening, the agent's call, its result, its closing text, stop.
    assert result.steps == 5 and result.num_errors == 0
    first = oracle.received[0].text
    so_far = first[first.index("This conversation began before you joined it.") :]
    assert so_far.splitlines()[1:] == [
        f"Customer: {ASKED}",
        "You: " + json.dumps({"name": "create_task", "arguments": CREATED}),
        f"Tool 'create_task' result: {RESULT}",
        "You: " + json.dumps({"name": "respond", "arguments": {"content": SAID}}),
        "",
        "The customer's next message follows.",
        OPENING,
    ]
    assert "The customer's first message follows." not in first
    # task_2 exists once (the history made it; nothing replays it again), now completed, as gold.
    assert result.db_actual_hash == result.db_expected_hash
    assert history_length(mock.task(HISTORY_TASK), result.transcript) == 4
    assert diagnose(mock, result).failures == []


async def test_the_structured_dialect_sends_the_history_in_session_start(mock: DomainData) -> None:
    oracle = recording_oracle(mock)
    async with serve_executor(oracle, structured=True) as url:
        _, events = await run(mock, AssessmentConfig(agent_url=url, domain="mock", tasks=one(HISTORY_TASK)))
    (result,) = events.results
    assert result.reward == 1.0
    start = oracle.received[0].frame("session_start")
    assert start is not None and start["dialect"] == STRUCTURED_DIALECT_URI
    assert start["history"] == [
        {"role": "user", "content": ASKED},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "name": "create_task", "arguments": CREATED}],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "create_task", "content": RESULT, "error": False},
        {"role": "assistant", "content": SAID},
    ]
    assert oracle.received[0].text == OPENING
    # A task without a history: no "history" key, the session as before.
    plain = recording_oracle(mock)
    async with serve_executor(plain, structured=True) as url:
        await run(mock, AssessmentConfig(agent_url=url, domain="mock", tasks=one("update_task_1")))
    plain_start = plain.received[0].frame("session_start")
    assert plain_start is not None and "history" not in plain_start


def customer_who_continues(body: dict[str, Any]) -> FakeReply:
    """A model playing the customer: it names its task (for the oracle), then stops once the agent is done."""
    if DONE_TEXT in body["messages"][-1]["content"]:
        return FakeReply("Great, thanks! ###STOP###")
    return FakeReply(OPENING)


async def test_the_customer_model_sees_its_side_of_the_history(mock: DomainData) -> None:
    oracle = recording_oracle(mock)
    async with serve_fake_llm(customer_who_continues) as fake, serve_executor(oracle) as url:
        endpoint = LLMEndpoint(model="fake", base_url=fake.base_url, api_key="x")
        config = AssessmentConfig(agent_url=url, domain="mock", user_model="fake", tasks=one(HISTORY_TASK))
        _, events = await run(mock, config, user_models={"fake": endpoint})
    (result,) = events.results
    assert result.reward == 1.0
    opens_with_the_history(result)
    first = fake.requests[0]["messages"]
    assert first[0]["role"] == "system"
    # Roles flipped: its own words are "assistant", the agent's text "user"; the agent's call never shown.
    assert first[1:] == [{"role": "assistant", "content": ASKED}, {"role": "user", "content": SAID}]
    assert "create_task" not in json.dumps(fake.requests)


async def test_the_export_opens_with_the_history_and_re_scores_alike(mock: DomainData) -> None:
    """Upstream's trajectories open with the task's history, and its evaluator replays the whole trajectory
    on the initial state without it; the re-scorer starts after the history on the initial state with it."""
    tasks = TaskSelection(task_ids=[HISTORY_TASK, "update_task_with_history_and_env_assertions"])
    async with serve_executor(recording_oracle(mock)) as url:
        config = AssessmentConfig(agent_url=url, domain="mock", tasks=tasks)
        report, events = await run(mock, config)
    at = datetime(2026, 1, 2, tzinfo=UTC)
    document = tau2_results(ExportSource("a1", at, url, config, report, events.results), mock)
    tau2_schema.Results.model_validate(document)
    simulation = next(s for s in document["simulations"] if s["task_id"] == HISTORY_TASK)
    messages = simulation["messages"]
    assert [m["role"] for m in messages[:4]] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["tool_calls"][0]["name"] == "create_task" and messages[2]["id"] == "call_1"
    rescored = await rescore_document(document, mock)
    totals = rescored.totals
    assert totals.replay_mismatches == 0
    assert totals.rewards_agree == totals.rewards_compared == 2
    assert totals.db_agree == totals.db_compared == 2
    # Upstream's gold trajectory gives the second task 0 (no gold call completes task_2): so does ours.
    assert {s["task_id"]: s["reward_info"]["reward"] for s in document["simulations"]} == {
        HISTORY_TASK: 1.0,
        "update_task_with_history_and_env_assertions": 0.0,
    }
