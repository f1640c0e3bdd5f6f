"""What the NL path asks of an endpoint so that a small model can serve it, against the deterministic
OpenAI-compatible server (tests/support/fake_llm.py): the judge's json_schema response format, the `llm`
reference agent's schema-constrained actions, and the oracle told its task by metadata (the local-model
demo, where the customer is a model that never names the task)."""

from __future__ import annotations

import json
from typing import Any

from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.llm.judge import (
    REASONING_MAX_CHARS,
    REPLY_FRAME_TOKENS,
    VERDICT_FRAME_TOKENS,
    reasoning_max_chars,
)
from green_agent.reference_agents import serve_reference_agent
from green_agent.reference_agents.llm_agent import actions_response_format, parse_action
from green_agent.reference_agents.oracle import UNKNOWN_TEXT
from retail_domain import RetailData
from retail_domain.schemas import tool_schemas
from tests.engine.conftest import run
from tests.support.fake_llm import FakeReply, serve_fake_llm


def _customer(body: dict[str, Any]) -> FakeReply:
    """A model-played customer that never names its task: one request, then it waits for the agent."""
    return FakeReply("Hello, I have a question about my order.")


async def test_judge_asks_for_exactly_one_verdict_per_assertion_by_json_schema(data: RetailData) -> None:
    def judge(body: dict[str, Any]) -> FakeReply:
        return FakeReply('{"results": [{"index": 0, "reasoning": "r", "metExpectation": true}]}')

    async with (
        serve_fake_llm(judge) as judge_llm,
        serve_reference_agent("oracle", data=data) as url,
    ):
        endpoint = LLMEndpoint(model="j", base_url=judge_llm.base_url)
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["36"]))
        await run(data, config, judge=endpoint)
        off = await run(data, config, judge=endpoint, judge_json_schema=False)
    with_schema, without = judge_llm.requests
    response_format = with_schema["response_format"]
    assert response_format["type"] == "json_schema"
    results = response_format["json_schema"]["schema"]["properties"]["results"]
    assert results["minItems"] == results["maxItems"] == 2  # task 36 has two assertions
    entry = results["items"]["properties"]
    assert entry["index"] == {"type": "integer", "minimum": 0, "maximum": 1}
    assert entry["metExpectation"] == {"type": "boolean"}
    assert entry["reasoning"]["maxLength"] == REASONING_MAX_CHARS
    assert "response_format" not in without  # the setting turns it off for endpoints that reject it
    # The schema shapes the reply but does not relax the parsing: one verdict for two assertions fails one.
    (result,) = off[1].results
    assert [v.passed for v in result.nl_verdicts] == [True, False]


def test_action_schema_offers_a_message_or_one_call_per_tool_with_its_own_arguments() -> None:
    tools = tool_schemas()
    schema = actions_response_format(tools)["json_schema"]["schema"]
    respond, *calls = schema["anyOf"]
    assert respond["properties"]["action"] == {"const": "respond"}
    assert [c["properties"]["name"]["const"] for c in calls] == [t["function"]["name"] for t in tools]
    arguments = [c["properties"]["arguments"] for c in calls]
    assert arguments == [t["function"]["parameters"] for t in tools]
    assert parse_action('{"action": "call", "name": "calculate", "arguments": {"expression": "1+1"}}') == (
        "calculate",
        {"expression": "1+1"},
    )
    assert parse_action('{"action": "respond", "message": "Hi"}') == "Hi"
    assert parse_action("not json") == "not json"  # an endpoint that ignored the schema: plain text


async def test_llm_agent_in_json_schema_mode_turns_actions_into_tool_calls(data: RetailData) -> None:
    gold = data.tasks["5"].gold_actions

    def model(body: dict[str, Any]) -> FakeReply:
        """A fake agent-LLM that can only answer with the constrained JSON (no native tool calls)."""
        assert "tools" not in body and body["response_format"]["type"] == "json_schema"
        done = sum(1 for m in body["messages"] if m["content"].startswith("Tool result:"))
        if done < len(gold):
            action = {"action": "call", "name": gold[done].name, "arguments": gold[done].arguments}
        else:
            action = {"action": "respond", "message": "Your return is done. ###STOP###"}
        return FakeReply(json.dumps(action))

    async with (
        serve_fake_llm(model) as agent_llm,
        serve_reference_agent(
            "llm",
            data=data,
            llm=LLMEndpoint(model="m", base_url=agent_llm.base_url),
            tool_calls="json_schema",
        ) as url,
    ):
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["5"])))
    (result,) = events.results
    assert result.db_actual_hash == data.gold("5").db_hash, result.error
    assert [c.name for m in result.transcript for c in m.tool_calls or ()] == [a.name for a in gold]
    system = agent_llm.requests[0]["messages"][0]["content"]
    assert "- return_delivered_order_items(" in system  # the tools are listed for the model to choose from
    assert result.transcript[-1].content == "Your return is done. ###STOP###"


async def test_oracle_told_its_task_by_metadata_serves_a_model_customer_and_stops(data: RetailData) -> None:
    async with (
        serve_fake_llm(_customer) as customer_llm,
        serve_reference_agent("oracle", data=data) as url,
    ):
        settings: dict[str, Any] = {
            "user_models": {"model": LLMEndpoint(model="c", base_url=customer_llm.base_url)},
        }
        config = AssessmentConfig(
            agent_url=url, tasks=TaskSelection(task_ids=["5"]), user_model="model", max_steps=6
        )
        long_enough = config.model_copy(update={"max_steps": 50})
        _, told = await run(data, long_enough, disclose_task_id=True, **settings)
        _, untold = await run(data, config, **settings)
    (result,) = told.results
    assert result.reward == 1.0 and result.termination_reason == "agent_stop"
    assert result.transcript[1].content == "Hello, I have a question about my order."
    # Without the demo's setting the task is never disclosed, and the oracle cannot act.
    (blind,) = untold.results
    assert blind.reward == 0.0 and UNKNOWN_TEXT in [m.content for m in blind.transcript]


async def test_customer_and_judge_on_one_endpoint_keep_their_own_request_arguments(data: RetailData) -> None:
    # The local model serves both with different reply caps; one shared client must not merge them.
    def replies(body: dict[str, Any]) -> FakeReply:
        if "response_format" in body:
            return FakeReply('{"results": [{"index": 0, "reasoning": "r", "metExpectation": true}]}')
        return FakeReply("Hello, I have a question about my order.")

    async with (
        serve_fake_llm(replies) as llm,
        serve_reference_agent("oracle", data=data) as url,
    ):
        same = {"model": "local", "base_url": llm.base_url}
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["24"]), user_model="c")
        await run(
            data,
            config,
            user_models={"c": LLMEndpoint(**same, extra_args={"max_tokens": 48})},
            judge=LLMEndpoint(**same, extra_args={"max_tokens": 384}),
            disclose_task_id=True,
        )
    customer, judge = llm.requests
    assert customer["max_tokens"] == 48 and "response_format" not in customer
    assert judge["max_tokens"] == 384 and judge["response_format"]["type"] == "json_schema"


async def test_a_capped_judge_asks_for_reasoning_short_enough_to_close_its_json(data: RetailData) -> None:
    # Without the fit, a 135M judge wrote 400 digits of "reasoning" (one token each) and its reply was cut at
    # the cap: unreadable, every assertion failed.
    def judge(body: dict[str, Any]) -> FakeReply:
        return FakeReply('{"results": [{"index": 0, "reasoning": "r", "metExpectation": true}]}')

    async with serve_fake_llm(judge) as llm, serve_reference_agent("oracle", data=data) as url:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["36"]))  # two assertions
        await run(
            data, config, judge=LLMEndpoint(model="j", base_url=llm.base_url, extra_args={"max_tokens": 192})
        )
    (request,) = llm.requests
    entry = request["response_format"]["json_schema"]["schema"]["properties"]["results"]["items"][
        "properties"
    ]
    assert request["max_tokens"] == 192 and entry["reasoning"]["maxLength"] == (192 - 8) // 2 - 20 == 72


def test_the_reasoning_fits_any_cap_at_one_token_per_character() -> None:
    assert reasoning_max_chars(None, 4) == REASONING_MAX_CHARS  # uncapped: the schema's own bound
    assert reasoning_max_chars(4096, 1) == REASONING_MAX_CHARS
    assert reasoning_max_chars(16, 4) == 0  # too small for any reasoning: empty ones, the verdicts still fit
    for cap in range(16, 1200, 7):
        for count in range(1, 6):
            chars = reasoning_max_chars(cap, count)
            assert 0 <= chars <= REASONING_MAX_CHARS
            if chars:
                assert REPLY_FRAME_TOKENS + count * (VERDICT_FRAME_TOKENS + chars) <= cap, (cap, count)
