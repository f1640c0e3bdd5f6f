"""Telecom trials end to end over real loopback A2A (issue 34): a customer played by a model (the
deterministic fake provider, speaking function calling) works through its own phone while a white agent
guides it, to reward 1; a white agent that names the customer's tools, or the phone's hidden setup and
assertion functions, gets the unknown-tool error, changes nothing on the phone and gains nothing."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from domain_kit import DomainData
from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection, TrialResult
from green_agent.core.trial import trajectory_calls
from green_agent.domains import load_domain
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from tests.engine.conftest import run
from tests.support.agents import FunctionExecutor, serve_executor
from tests.support.fake_llm import FakeReply, serve_fake_llm

PAYMENT_TASK = "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]"
"""The phone is in airplane mode and the line suspended for an overdue bill: the customer turns airplane mode
off, the agent sends a payment request, the customer pays it, the agent resumes the line, the customer
reboots. Assertions: the phone is connected, the bill is no longer overdue."""
TWO_TOGGLES_TASK = "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]"
"""Fixed by the customer alone: airplane mode off, mobile data on."""


@pytest.fixture(scope="module")
def telecom() -> DomainData:
    return load_domain("telecom")


def one(task_id: str) -> TaskSelection:
    return TaskSelection(task_ids=[task_id])


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


Step = tuple[str, str] | tuple[str, str, dict[str, Any]]
"""A white agent's reply: ("say", text) or ("call", tool, arguments)."""


def scripted_agent(steps: list[Step]) -> FunctionExecutor:
    """A white agent that answers each message with its next step (a technician who knows the fix)."""
    done: dict[str, int] = {}

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        index = done.get(context.context_id or "", 0)
        done[context.context_id or ""] = index + 1
        step = steps[min(index, len(steps) - 1)]
        if step[0] == "say":
            parts = text_parts(incoming.structured, step[1])
        else:
            parts = call_parts(incoming.structured, step[1], step[2] if len(step) > 2 else {})
        await queue.enqueue_event(agent_message(parts, context.context_id))

    return FunctionExecutor(reply)


TECHNICIAN: list[Step] = [
    ("say", "Could you look at your status bar and tell me what it shows?"),
    ("say", "I see. Please turn airplane mode off."),
    ("call", "get_customer_by_phone", {"phone_number": "555-123-2002"}),
    ("call", "send_payment_request", {"customer_id": "C1001", "bill_id": "B1234321"}),
    ("say", "Your line is suspended for an overdue bill: I sent you a payment request, please pay it."),
    ("call", "resume_line", {"customer_id": "C1001", "line_id": "L1002"}),
    ("say", "Your line is active again. Please reboot your phone."),
    ("say", "Glad it works now. Anything else?"),
]


def phone_owner(body: dict[str, Any]) -> FakeReply:
    """A model playing the customer of PAYMENT_TASK: it does on its phone what the agent asks, through its
    tools, and tells the agent what it sees."""
    messages = body["messages"]
    last = messages[-1]
    if len(messages) == 2:  # the system prompt and the greeting
        return FakeReply("My phone has shown No Service for hours. I'm John Smith, 555-123-2002.")
    if last["role"] == "tool":
        made = next(m for m in reversed(messages) if m.get("tool_calls"))["tool_calls"][0]["function"]["name"]
        follow_up = {
            "check_status_bar": FakeReply(f"My status bar shows: {last['content']}"),
            "toggle_airplane_mode": FakeReply("Done, airplane mode is off. Still no service."),
            "check_payment_request": FakeReply(tool_calls=[call("make_payment")]),
            "make_payment": FakeReply("I paid the bill."),
            "reboot_device": FakeReply(tool_calls=[call("check_status_bar")]),
        }
        return follow_up[made]
    said = last["content"].lower()
    for words, action in (
        ("reboot", "reboot_device"),
        ("payment request", "check_payment_request"),
        ("airplane mode off", "toggle_airplane_mode"),
        ("status bar", "check_status_bar"),
    ):
        if words in said:
            return FakeReply(tool_calls=[call(action)])
    return FakeReply("Thanks, that's all. ###STOP###")


def customer_settings(url: str) -> dict[str, Any]:
    endpoint = LLMEndpoint(model="fake-customer", base_url=url, api_key="x")
    return {"user_models": {"fake": endpoint}, "default_user_model": "fake"}


async def test_a_model_played_customer_fixes_its_phone_with_the_agent_to_reward_1(
    telecom: DomainData,
) -> None:
    agent = scripted_agent(TECHNICIAN)
    async with serve_fake_llm(phone_owner) as fake, serve_executor(agent) as url:
        _, events = await run(
            telecom,
            AssessmentConfig(agent_url=url, domain="telecom", tasks=one(PAYMENT_TASK)),
            **customer_settings(fake.base_url),
        )
    (result,) = events.results
    assert result.termination_reason == "user_stop", result.error
    assert result.reward == 1.0 and result.failures == []
    made = [(c.requestor, c.name) for c in trajectory_calls(result.transcript)]
    assert made == [
        ("user", "check_status_bar"),
        ("user", "toggle_airplane_mode"),
        ("assistant", "get_customer_by_phone"),
        ("assistant", "send_payment_request"),
        ("user", "check_payment_request"),
        ("user", "make_payment"),
        ("assistant", "resume_line"),
        ("user", "reboot_device"),
        ("user", "check_status_bar"),
    ]
    customer_results = [m.content or "" for m in result.transcript if m.requestor == "user"]
    assert customer_results[0] == "Status Bar: ✈️ Airplane Mode | 🔋 80%"
    no_signal = "Status Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"
    assert customer_results[1] == f"Airplane Mode is now OFF.\n{no_signal}"
    # The sync put the agent's payment request on the phone; the payment and the resumed line reached it too.
    assert customer_results[2] == "You have a payment request for bill B1234321 of 65.0 USD."
    assert customer_results[3] == "Payment of 65.0 USD has been made for bill B1234321."
    assert customer_results[-1] == "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
    assert [(c["func_name"], c["actual"]) for c in result.env_assertion_checks] == [
        ("assert_service_status", True),
        ("assert_no_overdue_bill", True),
    ]
    signals = {s.name: (s.passed, s.counts) for s in result.signals}
    assert signals["ENV_ASSERTION"] == (True, True) and signals["DB_STATE_MATCH"][1] is False

    # The customer model was offered its 30 tools, never the agent's 13, on every request ...
    tools = {tuple(t["function"]["name"] for t in r["tools"]) for r in fake.requests}
    assert tools == {tuple(s["function"]["name"] for s in telecom.user_tool_schemas)} and len(*tools) == 30
    assert {r["tool_choice"] for r in fake.requests} == {"auto"}
    # ... and saw neither the agent's calls nor their results.
    assert not any("send_payment_request" in json.dumps(r["messages"]) for r in fake.requests)
    # The white agent was offered its 13 tools (the manual in its policy names the customer's), and then saw
    # the customer's words, never its calls or their raw results.
    opening = agent.received[0].text
    offered = set(re.findall(r'"name": "(\w+)"', opening.split("Tools:", 1)[1]))
    assert offered == {s["function"]["name"] for s in telecom.tool_schemas} | {"respond"}
    assert len(offered) == 14
    seen = "\n".join(incoming.text for incoming in agent.received[1:])
    assert "My status bar shows" in seen and "I paid the bill." in seen
    for name in ("check_status_bar", "toggle_airplane_mode", "make_payment", "reboot_device"):
        assert name not in seen
    assert "Status Bar:" not in seen.replace("My status bar shows: Status Bar:", "")  # relayed once, in words
    assert "Payment of 65.0 USD" not in seen


def user_db_hash_at_end(telecom: DomainData, result: TrialResult) -> str | None:
    """The phone's state as upstream's evaluator rebuilds it from the trajectory."""
    check = telecom.check_environment(
        result.task_id, telecom.new_environment(result.task_id), trajectory_calls(result.transcript)
    )
    return check.user_db_hash


HOSTILE_CALLS = [
    "toggle_airplane_mode",  # the customer's tools
    "toggle_data",
    "turn_airplane_mode_off",  # the phone's hidden setup functions
    "turn_data_on",
    "assert_mobile_data_status",  # an assertion function
    "sync",  # the environment's own methods
    "run_function",
]


async def test_a_white_agent_naming_the_customers_tools_changes_nothing_and_gains_nothing(
    telecom: DomainData,
) -> None:
    """On a task the customer alone can fix (two toggles on its phone), a white agent that makes those calls
    itself, and tries the phone's hidden functions, gets upstream's unknown-tool error for each: the phone
    is as the task left it, and the trial scores 0."""
    steps: list[Step] = [("call", name, {}) for name in HOSTILE_CALLS]
    steps.append(("say", "I fixed your phone for you. ###STOP###"))
    async with serve_executor(scripted_agent(steps)) as url:
        _, events = await run(
            telecom, AssessmentConfig(agent_url=url, domain="telecom", tasks=one(TWO_TOGGLES_TASK))
        )
    (result,) = events.results
    assert result.termination_reason == "agent_stop" and result.reward == 0.0
    tool_results = [m for m in result.transcript if m.role == "tool"]
    assert [m.content for m in tool_results] == [f"Error: Tool '{name}' not found." for name in HOSTILE_CALLS]
    assert all(m.error and m.requestor is None for m in tool_results)
    assert result.num_errors == len(HOSTILE_CALLS)
    initial = telecom.new_environment(TWO_TOGGLES_TASK).user_db_hash()
    assert user_db_hash_at_end(telecom, result) == initial
    assert [(c["func_name"], c["actual"]) for c in result.env_assertion_checks] == [
        ("assert_mobile_data_status", False),
        ("assert_internet_speed", False),
    ]
    assert {s.name: s.passed for s in result.signals}["ENV_ASSERTION"] is False

    # The same two calls made by the customer fix the phone: what the agent was refused is what counts.
    fixed = telecom.new_environment(TWO_TOGGLES_TASK)
    for name in ("toggle_airplane_mode", "toggle_data"):
        assert not fixed.call(name, {}, requestor="user").error
    assert fixed.user_db_hash() != initial
    assert fixed.assertion("assert_mobile_data_status", {"expected_status": True}, "user")
