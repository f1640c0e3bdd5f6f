"""Failures and diagnosis on a domain other than retail, and the env assertion kind.

Airline trials are classified with airline's write tools (retail's would see no write at all), replayed on
airline's data (a booking the trial never made shows as a reservation missing from its DB), and a failed env
assertion (telecom, mock) is its own failure naming the function, what it expected and what it found. Real
telecom and mock trials that fail: each env assertion with what the end state held where it looked, the gold
actions nobody made (the customer's own marked), no DB analysis where the DB is not in the reward basis."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from domain_kit import AssertionCheck, DomainData
from domain_kit.diff import MISSING
from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.conversation.user_simulator import SCRIPTED_OPENING
from green_agent.core.limits import AgentLimits
from green_agent.core.models import SIGNAL_DB, Signal, ToolCallRecord, TranscriptMessage, TrialResult
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_reference_agent
from green_agent.reference_agents.oracle import HANDOVER_TEXT
from green_agent.scoring.diagnosis import diagnose, replay_trial
from green_agent.scoring.failures import classify_trial, failure_label, kinds
from tests.engine.conftest import run
from tests.support.fake_llm import FakeReply, serve_fake_llm

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def airline() -> DomainData:
    return load_domain("airline")


def failed_trial(data: DomainData, task_id: str, *, skip: int | None = None, **fields: Any) -> TrialResult:
    """A trial that made the task's gold calls (all but the one at `skip`), each answered without error,
    its DB marked as differing from gold."""
    actions = [a for i, a in enumerate(data.tasks[task_id].gold_actions) if i != skip]
    transcript = [TranscriptMessage(index=0, role="assistant", content="Hi! How can I help you today?")]
    for i, action in enumerate(actions):
        call = ToolCallRecord(id=f"c{i}", name=action.name, arguments=dict(action.arguments))
        transcript.append(TranscriptMessage(index=len(transcript), role="assistant", tool_calls=[call]))
        transcript.append(
            TranscriptMessage(index=len(transcript), role="tool", content="{}", tool_call_id=f"c{i}")
        )
    values: dict[str, Any] = {
        "task_id": task_id,
        "trial": 0,
        "seed": 1,
        "termination_reason": "user_stop",
        "reward": 0.0,
        "is_successful": False,
        "signals": [Signal(name=SIGNAL_DB, passed=False, counts=True, detail="")],
        "db_expected_hash": data.gold(task_id).db_hash,
        "transcript": transcript,
        "started_at": NOW,
        "finished_at": NOW,
    }
    return TrialResult.model_validate({**values, **fields})


def test_an_airline_trial_is_classified_with_airline_writes(airline: DomainData) -> None:
    # Task 7: change one reservation's flights, then cancel two; the trial forgets the last cancellation.
    result = failed_trial(airline, "7", skip=4)
    failures = classify_trial(result=result, task=airline.tasks["7"], write_tools=airline.write_tools)
    assert [(f.kind, f.action, f.expected) for f in failures] == [
        ("missing_action", "cancel_reservation", {"reservation_id": "59XX6W"})
    ]
    # With another domain's writes, no write of the agent's would be seen: the DB difference would go
    # unexplained.
    retail_writes = frozenset({"exchange_delivered_order_items"})
    blind = classify_trial(airline.tasks["7"], result, write_tools=retail_writes)
    assert kinds(blind) == ["db_difference"]


def test_an_airline_trial_is_replayed_on_airline_data(airline: DomainData) -> None:
    cancelled = replay_trial(airline, failed_trial(airline, "7", skip=4))
    assert not cancelled.matched and cancelled.gold_hash == airline.gold("7").db_hash
    status = [(d.path, d.actual, d.expected) for d in cancelled.differences if d.path.endswith(".status")]
    assert status == [("reservations/59XX6W.status", None, "cancelled")]  # upstream: null while active

    # Task 8 books a new reservation: a trial that never booked it lacks the whole entity.
    unbooked = diagnose(airline, failed_trial(airline, "8", skip=3))
    assert unbooked.replay is not None
    missing = [d for d in unbooked.replay.differences if d.actual == MISSING]
    assert len(missing) == 1 and missing[0].path.startswith("reservations/")
    assert missing[0].expected["user_id"] == "sophia_silva_7557"
    assert [(f.kind, f.action) for f in unbooked.failures or []] == [("missing_action", "book_reservation")]

    replayed = replay_trial(airline, failed_trial(airline, "8"))
    assert replayed.matched and replayed.differences == []


def test_a_failed_env_assertion_is_its_own_failure(airline: DomainData) -> None:
    checks = [
        AssertionCheck("assert_mobile_data_status", "user", {"expected_status": True}, True, True),
        AssertionCheck(
            "assert_service_status", "user", {"expected_status": "connected"}, True, False, "no bars"
        ),
        AssertionCheck(
            "assert_data_usage", "assistant", {"line_id": "L1"}, True, None, error="KeyError: 'L1'"
        ),
    ]
    stored = [
        {
            k: getattr(c, k)
            for k in ("func_name", "env_type", "arguments", "expected", "actual", "message", "error")
        }
        for c in checks
    ]
    db_equal = [Signal(name=SIGNAL_DB, passed=True, counts=True, detail="")]
    result = failed_trial(airline, "8", env_assertion_checks=stored, signals=db_equal)
    failures = classify_trial(airline.tasks["8"], result, write_tools=airline.write_tools)
    assert kinds(failures) == ["env_assertion"]
    unmet = [f for f in failures if f.kind == "env_assertion"]
    assert [(f.action, f.argument, f.expected, f.got) for f in unmet] == [
        ("assert_service_status", "user", True, False),
        ("assert_data_usage", "assistant", True, "KeyError: 'L1'"),
    ]
    assert unmet[0].detail == (
        'assert_service_status({"expected_status":"connected"}) on the customer\'s side: expected true, '
        "found false (no bars)"
    )
    assert unmet[1].detail.endswith("on the agent's side: expected true, it failed: KeyError: 'L1'")
    assert failure_label(unmet[0]) == "env assertion failed: assert_service_status"

    bounded = classify_trial(
        airline.tasks["8"],
        result,
        write_tools=airline.write_tools,
        limits=AgentLimits(max_failures_per_kind=1),
    )
    assert [f.detail for f in bounded if f.kind == "env_assertion"][1] == (
        "and 1 more env_assertion not listed (max_failures_per_kind)"
    )


TELECOM_PAYMENT = "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]"
TELECOM_TRANSFER = "[service_issue]contract_end_suspension|lock_sim_card_pin[PERSONA:Hard]"
TELECOM_TOGGLES = "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]"


def details(result: TrialResult) -> list[tuple[str, str]]:
    return [(f.kind, f.detail) for f in result.failures or []]


async def test_a_telecom_trial_where_the_agent_does_nothing_names_what_it_left_undone() -> None:
    """An agent that only talks, with the scripted customer doing its own part: each failed env assertion
    with what the phone or the provider's records held, and the gold actions nobody made (in telecom the DB
    is a diagnostic whose gold misses the sync: no DB analysis). The transfer task fails on ACTION alone."""
    telecom = load_domain("telecom")
    async with serve_reference_agent("no_tools", data=telecom) as url:
        config = AssessmentConfig(
            agent_url=url,
            domain="telecom",
            tasks=TaskSelection(task_ids=[TELECOM_PAYMENT, TELECOM_TRANSFER]),
        )
        _, events = await run(telecom, config)
    by_task = events.by_task()
    assert details(by_task[TELECOM_PAYMENT]) == [
        (
            "missing_action",
            'send_payment_request was never called: gold calls it with {"customer_id":"C1001",'
            '"bill_id":"B1234321"}',
        ),
        (
            "missing_action",
            'resume_line was never called: gold calls it with {"customer_id":"C1001","line_id":"L1002"}',
        ),
        (
            "env_assertion",
            'assert_service_status({"expected_status":"connected"}) on the customer\'s side: expected true, '
            "found false: service status is no_service (Service status is not as expected)",
        ),
        (
            "env_assertion",
            'assert_no_overdue_bill({"overdue_bill_id":"B1234321"}) on the agent\'s side: expected true, '
            "found false: bill B1234321 is Overdue (Overdue bill is not as expected)",
        ),
    ]
    # The customer's make_payment failed (nobody asked for a payment): the customer's error, not the agent's.
    assert "tool_errors" not in kinds(by_task[TELECOM_PAYMENT].failures or [])
    assert details(by_task[TELECOM_TRANSFER]) == [
        (
            "missing_action",
            "transfer_to_human_agents was never called: gold calls it with "
            '{"summary":"I cannot fix the issue."}',
        )
    ]
    # The page's diagnosis classifies the stored trial the same way.
    again = diagnose(telecom, by_task[TELECOM_PAYMENT])
    assert [(f.kind, f.detail) for f in again.failures or []] == details(by_task[TELECOM_PAYMENT])


def half_done_customer(body: dict[str, Any]) -> FakeReply:
    """A model playing the customer of TELECOM_TOGGLES who names its task (so the oracle serves it), turns
    airplane mode off when asked, forgets mobile data, and stops when the agent says it is done."""
    messages, last = body["messages"], body["messages"][-1]
    if len(messages) == 2:
        return FakeReply(SCRIPTED_OPENING.format(task_id=TELECOM_TOGGLES, domain="telecom"))
    if last["role"] == "user" and last["content"] == HANDOVER_TEXT:
        return FakeReply(tool_calls=[{"name": "toggle_airplane_mode", "arguments": {}}])
    if last["role"] == "tool":
        return FakeReply("Done.")
    return FakeReply("###STOP###")


async def test_a_telecom_trial_names_the_customers_part_left_undone() -> None:
    telecom = load_domain("telecom")
    async with (
        serve_fake_llm(half_done_customer) as fake,
        serve_reference_agent("oracle", data=telecom) as url,
    ):
        endpoint = LLMEndpoint(model="fake", base_url=fake.base_url, api_key="x")
        config = AssessmentConfig(
            agent_url=url,
            domain="telecom",
            user_model="fake",
            tasks=TaskSelection(task_ids=[TELECOM_TOGGLES]),
        )
        _, events = await run(telecom, config, user_models={"fake": endpoint})
    (result,) = events.results
    assert result.termination_reason == "user_stop" and result.reward == 0.0
    missing = [f for f in result.failures or [] if f.kind == "missing_action"]
    assert [(f.action, f.argument, f.detail) for f in missing] == [
        (
            "toggle_data",
            "customer",
            "the customer's toggle_data was never called: gold has the customer call it with {}",
        )
    ]
    assert failure_label(missing[0]) == "missing toggle_data (the customer's)"
    assert [f.detail for f in result.failures or [] if f.kind == "env_assertion"] == [
        'assert_mobile_data_status({"expected_status":true}) on the customer\'s side: expected true, '
        "found false: mobile data does not work",
        'assert_internet_speed({"expected_speed":200,"expected_desc":"excellent"}) on the customer\'s side: '
        "expected true, found false: speed test: no connection",
    ]


async def test_a_mock_task_scored_on_db_and_action_names_a_missing_transfer() -> None:
    """impossible_task_1 ([DB, ACTION]): an agent that never transfers leaves the DB as gold (the transfer
    writes nothing), so the write analysis finds nothing; ACTION names the missing transfer."""
    mock = load_domain("mock")
    async with serve_reference_agent("no_tools", data=mock) as url:
        config = AssessmentConfig(
            agent_url=url, domain="mock", tasks=TaskSelection(task_ids=["impossible_task_1"])
        )
        _, events = await run(mock, config)
    (result,) = events.results
    assert result.reward == 0.0
    assert [(f.kind, f.action) for f in result.failures or []] == [
        ("missing_action", "transfer_to_human_agents")
    ]
