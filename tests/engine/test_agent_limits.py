"""Every bound on what the white agent sends, just below and just past it, over real loopback A2A; and the
scoring rule: whatever goes wrong with the agent's input is charged to the agent, never excluded."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Callable
from typing import Any

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import Part

from domain_kit.checks import action_matches
from domain_kit.tasks import GoldAction
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from green_agent.core.limits import (
    TRUNCATION_MARKER,
    AgentLimits,
    ValueTooLarge,
    clean_json,
    cut_text,
    display_name,
    json_depth_within,
    message_bytes,
    storable,
)
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from green_agent.white_agent.client import AgentReply
from green_agent.white_agent.intake import admit_reply
from green_agent.white_agent.reply_parsing import parse_text_reply
from green_agent.white_agent.structured_dialect import StructuredDialect
from retail_domain import RetailData
from tests.engine.conftest import run
from tests.support.agents import FunctionExecutor, serve_executor

ONE = TaskSelection(task_ids=["5"])
GIVE_UP = "I'm sorry, I cannot help with that."


def scripted(replies: list[list[Part]], *, structured: bool = False) -> FunctionExecutor:
    """An agent that sends `replies` in order, one per message, then gives up politely."""

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        turn = len(executor.received) - 1
        parts = replies[turn] if turn < len(replies) else text_parts(structured, GIVE_UP)
        await queue.enqueue_event(agent_message(parts, context.context_id))

    executor = FunctionExecutor(reply)
    return executor


async def one_trial(
    data: RetailData, replies: list[list[Part]], *, structured: bool = False, **limits: Any
) -> TrialResult:
    settings: dict[str, Any] = {"limits": AgentLimits(**limits)} if limits else {}
    async with serve_executor(scripted(replies, structured=structured), structured=structured) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE), **settings)
    (result,) = events.results
    assert result.reward is not None, "a trial the agent caused must never be excluded"
    return result


def text_call(name: str, arguments: Any, **extra: Any) -> list[Part]:
    return [new_text_part(json.dumps({"name": name, "arguments": arguments, **extra}))]


def data_calls(*calls: dict[str, Any]) -> list[Part]:
    return [new_data_part({"tool_calls": list(calls)})]


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


# -- pure helpers -----------------------------------------------------------------------------------------


def test_storable_replaces_nul_and_lone_surrogates() -> None:
    assert storable("a\x00b\ud800c\udfffd") == "a\ufffdb\ufffdc\ufffdd"
    assert storable("plain ü 😀") == "plain ü 😀"


def test_cut_text_marks_the_cut_and_counts_utf8_bytes() -> None:
    assert cut_text("ü" * 10, 20, "x") == ("ü" * 10, False)
    marker = TRUNCATION_MARKER.format(what="x", limit=150)
    cut, was_cut = cut_text("ü" * 100, 150, "x")
    assert was_cut and cut == "ü" * ((150 - len(marker.encode())) // 2) + marker
    assert len(cut.encode()) <= 150


def test_json_depth_at_and_just_past_the_bound() -> None:
    assert json_depth_within(json.dumps(nested(31)), 32)  # 31 objects around a number
    assert json_depth_within("[" * 32 + "]" * 32, 32)
    assert not json_depth_within("[" * 33 + "]" * 33, 32)
    assert json_depth_within('["[[[[[[", {"k": "}}}}"}]', 2)  # brackets in strings do not count
    assert not json_depth_within("[" * 100_000, 32)  # unbalanced: not JSON, and never parsed


def test_clean_json_makes_values_storable_and_checks_depth_and_keys() -> None:
    cleaned = clean_json(
        {"k\x00": [math.nan, math.inf, -math.inf, "v\ud800"], "n": 1e300}, max_depth=3, max_keys=2
    )
    assert cleaned == {"k\ufffd": ["NaN", "Infinity", "-Infinity", "v\ufffd"], "n": 1e300}
    assert clean_json(nested(3), max_depth=3) == nested(3)
    with pytest.raises(ValueTooLarge, match="max_json_depth"):
        clean_json(nested(4), max_depth=3)
    with pytest.raises(ValueTooLarge, match="max_argument_keys"):
        clean_json({"a": 1, "b": {"c": 1}}, max_depth=3, max_keys=2)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueTooLarge):  # iterative: no RecursionError however deep
        clean_json(deep, max_depth=32)


def test_text_replies_that_once_raised_are_plain_unreadable_text() -> None:
    for text in (
        "[" * 100_000 + "]" * 100_000,  # RecursionError in json.loads before
        '{"name": "x", "arguments": {"n": ' + "9" * 5_000 + "}}",  # int longer than Python reads
        '{"name": "x", "arguments": "' + "[" * 5_000 + "]" * 5_000 + '"}',
        "{" * 65_536,
    ):
        parsed = parse_text_reply(text)
        assert parsed.calls == () and parsed.text == text and parsed.warnings


def test_action_comparison_is_linear_in_the_agents_keys() -> None:
    action = GoldAction(action_id="a", name="t", arguments={"k1": 1}, compare_args=None)
    many = {f"k{i}": i for i in range(200_000)}  # quadratic before: minutes
    assert not action_matches(action, "t", many)
    assert action_matches(action, "t", {"k1": 1})


def test_message_bytes_counts_text_and_calls() -> None:
    call = {"id": "c1", "name": "t", "arguments": {"a": "ü"}}
    assert message_bytes("ü", [call]) == 2 + 2 + 1 + len('{"a":"ü"}'.encode())


# -- each bound just past it, over A2A --------------------------------------------------------------------


async def test_reply_bytes(data: RetailData) -> None:
    under = await one_trial(data, [text_parts(False, "x" * 1_000)], max_reply_bytes=4_096)
    assert under.termination_reason == "user_stop"
    past = await one_trial(data, [text_parts(False, "x" * 4_096)], max_reply_bytes=4_096)
    assert past.termination_reason == "agent_error" and past.reward == 0.0
    assert past.error is not None and "max_reply_bytes" in past.error


async def test_reply_values(data: RetailData) -> None:
    past = await one_trial(data, [text_parts(False, "," * 200)], max_reply_values=100)
    assert past.termination_reason == "agent_error" and "max_reply_values" in (past.error or "")


async def test_json_depth_in_text_and_in_structured_arguments(data: RetailData) -> None:
    # text: a tool call whose JSON nests exactly max_json_depth runs; one level deeper is read as text
    at = await one_trial(data, [text_call("calculate", nested(31))], max_json_depth=32)
    assert at.transcript[3].role == "tool"
    past = await one_trial(data, [text_call("calculate", nested(32))], max_json_depth=32)
    assert past.termination_reason == "user_stop" and past.transcript[2].tool_calls is None
    assert "sent to the user as text" in past.protocol_warnings[0]
    # structured: arguments one level deeper than the bound end the trial
    call = {"id": "c", "name": "calculate", "arguments": nested(9)}
    deep = await one_trial(data, [data_calls(call)], structured=True, max_json_depth=8)
    assert deep.termination_reason == "agent_error" and "max_json_depth" in (deep.error or "")


async def test_tool_calls_per_reply(data: RetailData) -> None:
    call = {"name": "list_all_product_types", "arguments": {}}
    at = await one_trial(data, [[new_text_part(json.dumps([call] * 4))]], max_tool_calls=4)
    assert [m.role for m in at.transcript].count("tool") == 4
    past = await one_trial(data, [[new_text_part(json.dumps([call] * 5))]], max_tool_calls=4)
    assert past.termination_reason == "agent_error" and "max_tool_calls" in (past.error or "")
    assert all(m.role != "tool" for m in past.transcript)  # nothing of that reply ran


async def test_argument_bytes_and_keys(data: RetailData) -> None:
    big = await one_trial(data, [text_call("calculate", {"expression": "1" * 200})], max_argument_bytes=200)
    assert big.termination_reason == "agent_error" and "max_argument_bytes" in (big.error or "")
    keys = {f"k{i}": i for i in range(20_000)}  # 6.5 s of event loop per call before
    roomy: dict[str, Any] = {
        "max_reply_values": 30_000,
        "max_reply_bytes": 1 << 20,
        "max_text_bytes": 1 << 20,
    }
    many = await one_trial(data, [text_call("calculate", keys)], **roomy)
    assert many.termination_reason == "agent_error" and "max_argument_keys" in (many.error or "")


async def test_id_and_name_lengths(data: RetailData) -> None:
    long_id = {"id": "i" * 129, "name": "list_all_product_types", "arguments": {}}
    past_id = await one_trial(data, [data_calls(long_id)], structured=True)
    assert past_id.termination_reason == "agent_error" and "max_id_chars" in (past_id.error or "")
    at_id = await one_trial(data, [data_calls({**long_id, "id": "i" * 128})], structured=True)
    assert at_id.transcript[3].tool_call_id == "i" * 128
    past_name = await one_trial(data, [text_call("t" * 129, {})])
    assert past_name.termination_reason == "agent_error" and "max_name_chars" in (past_name.error or "")


async def test_text_per_message_is_cut_with_a_marker(data: RetailData) -> None:
    result = await one_trial(data, [text_parts(False, "y" * 2_000)], max_text_bytes=1_000)
    assert result.termination_reason == "user_stop"  # the conversation goes on
    said = result.transcript[2].content or ""
    assert said.startswith("y" * 900) and said.endswith("over 1000 bytes]") and len(said.encode()) <= 1000
    assert any("max_text_bytes=1000" in w for w in result.protocol_warnings)


async def test_transcript_bytes_per_trial(data: RetailData) -> None:
    read = call_parts(False, "list_all_product_types", {})
    result = await one_trial(data, [read] * 100, max_transcript_bytes=16 * 1024)
    assert result.termination_reason == "agent_error" and "max_transcript_bytes" in (result.error or "")
    sizes = [message_bytes(m.content, m.tool_calls) for m in result.transcript]
    assert sum(sizes) <= 16 * 1024
    assert (result.transcript[-1].content or "").endswith("over 16384 bytes]")


async def test_agent_text_per_trial(data: RetailData) -> None:
    """The agent's text up to the bound (less the room its marker needs) reaches the customer; one byte more
    is cut and ends the trial before the customer sees it. Tool results count too; the customer's lines and
    the fixed greeting do not."""
    bound = 16 * 1024
    room = bound - len(TRUNCATION_MARKER.format(what="agent text per trial", limit=bound).encode())
    within = await one_trial(data, [text_parts(False, "z" * room)], max_agent_text_bytes_per_trial=bound)
    assert within.termination_reason == "user_stop" and within.transcript[2].content == "z" * room

    past = await one_trial(data, [text_parts(False, "z" * (room + 1))], max_agent_text_bytes_per_trial=bound)
    assert past.termination_reason == "agent_error" and past.reward == 0.0
    assert "max_agent_text_bytes_per_trial=16384" in (past.error or "")
    assert [m.role for m in past.transcript] == ["assistant", "user", "assistant"]  # no customer answer
    assert (past.transcript[-1].content or "").endswith("over 16384 bytes]")

    read = call_parts(False, "list_all_product_types", {})  # ~1.5 KB of tool result each
    reads = await one_trial(data, [read] * 20, max_agent_text_bytes_per_trial=bound)
    assert reads.termination_reason == "agent_error" and reads.transcript[-1].role == "tool"
    agent_sizes = [message_bytes(m.content, m.tool_calls) for m in reads.transcript[2:]]
    assert sum(agent_sizes) <= bound


async def test_nul_surrogates_and_non_finite_numbers_are_made_storable(data: RetailData) -> None:
    call = {"name": "calculate\x00", "arguments": {"expression\ud800": "1\x00", "n": math.nan}}
    raw = json.dumps(call).replace("NaN", "1e999")  # 1e999 reads as infinity
    result = await one_trial(data, [[new_text_part(raw)], text_parts(False, "bye \x00 \udfff")])
    (recorded,) = result.transcript[2].tool_calls or []
    assert recorded.name == "calculate\ufffd"
    assert recorded.arguments == {"expression\ufffd": "1\ufffd", "n": "Infinity"}
    assert result.transcript[4].content == "bye \ufffd \ufffd"


async def test_tool_call_in_text_under_the_structured_dialect_is_warned(data: RetailData) -> None:
    as_text = text_call("get_user_details", {"user_id": "u1"})
    async with serve_executor(scripted([as_text])) as url:
        config = AssessmentConfig(agent_url=url, tasks=ONE, dialect="structured")
        _, events = await run(data, config)
    (result,) = events.results
    assert result.termination_reason == "user_stop" and result.transcript[2].tool_calls is None
    (warning,) = result.protocol_warnings
    assert "looks like a call of tool 'get_user_details'" in warning and "DataPart" in warning


# -- the scoring rule ---------------------------------------------------------------------------------------


def _raising(error: Exception) -> Callable[..., Any]:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error

    return broken


async def test_a_bug_of_ours_is_internal_error_scored_zero_and_logged(
    data: RetailData, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug met while handling the agent's input (here: reading its reply) scores 0 and is counted apart."""
    monkeypatch.setattr(
        "green_agent.conversation.orchestrator.admit_reply", _raising(RuntimeError("bug of ours"))
    )
    caplog.set_level(logging.ERROR, logger="green_agent.conversation.orchestrator")
    result = await one_trial(data, [text_parts(False, "hello")])
    assert result.termination_reason == "internal_error" and result.reward == 0.0
    assert result.error is not None and "bug of ours" in result.error
    assert any(r.exc_info and "internal error" in r.getMessage() for r in caplog.records)


async def test_a_scoring_bug_is_internal_error_scored_zero(
    data: RetailData, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("green_agent.scoring.score.check_actions", _raising(RecursionError("deep")))
    async with serve_executor(scripted([text_parts(False, "hello")])) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=ONE))
    (result,) = events.results
    assert result.termination_reason == "internal_error" and result.reward == 0.0
    assert report.termination_counts == {"internal_error": 1} and report.trials_scored == 1
    assert report.excluded["infrastructure_error"] == 0


async def test_admitting_one_reply_lets_other_tasks_run_between_its_steps() -> None:
    """Reading one reply never holds the event loop in one piece (issue 8: ~10 ms per message at most): the
    steps of `admit_reply` (DataParts, the dialect's reading, the calls' bounds) yield to the loop between
    them, so other trials and /healthz get their turn. How long each step takes is for the benchmark."""
    turns = 0

    async def other_trial() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    reply = AgentReply(
        text="", data=({"tool_calls": [{"name": "calculate", "arguments": {"expression": "1"}}]},)
    )
    other = asyncio.create_task(other_trial())
    await asyncio.sleep(0)
    before = turns
    admitted = await admit_reply(reply, StructuredDialect(), AgentLimits())
    during = turns - before
    other.cancel()
    assert [c.name for c in admitted.calls] == ["calculate"]
    assert during >= 3


def test_a_card_name_is_cleaned_and_bounded_at_max_card_name_chars() -> None:
    limit = AgentLimits().max_card_name_chars
    assert display_name("x" * limit, limit) == "x" * limit  # at the bound: kept whole
    past = display_name("x" * (limit + 1), limit)
    assert past == "x" * (limit - 1) + "…" and len(past) == limit  # just past it: cut, with an ellipsis
    # Bidi overrides and isolates, zero-width and private-use characters dropped; controls and line breaks
    # made single spaces.
    assert display_name("\u202eAcme\u2066\u200b \ue000bot\x00\x1b\n\t v2 ", limit) == "Acme bot v2"
    assert display_name("\u202e\x00 \n", limit) is None and display_name("", limit) is None
    assert display_name("A" * 10_000_000, 8) == "AAAAAAA…"  # reads 4 x limit characters at most
