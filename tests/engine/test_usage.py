"""Cost accounting: tokens from the OpenAI-compatible responses (user simulator, judge), priced with the
operator's prices (unknown model: None), and the white agent's self-reported usage in A2A metadata, bounded
and validated because it is agent input."""

from __future__ import annotations

import math
from typing import Any

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import Message

from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.core.usage import AGENT_USAGE_KEY, AgentUsageMeter, ModelPrice
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from retail_domain import RetailData
from tests.engine.conftest import run
from tests.support.agents import FunctionExecutor, serve_executor
from tests.support.fake_llm import FakeReply, serve_fake_llm

PRICES = {"user-model": ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)}


def customer_and_judge(body: dict[str, Any]) -> FakeReply:
    if body["model"] == "judge-model":
        return FakeReply(
            '{"results": [{"index": 0, "metExpectation": true, "reasoning": "ok"}]}',
            prompt_tokens=1000,
            completion_tokens=50,
        )
    return FakeReply("Please check my order. ###STOP###", prompt_tokens=100, completion_tokens=20)


def reporting_agent(reports: list[Any]) -> FunctionExecutor:
    """A white agent that makes one tool call per report still to send, then answers with text; each reply
    carries the next usage report in its metadata."""

    async def reply(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        parts = (
            call_parts(False, "list_all_product_types", {})
            if len(reports) > 1
            else text_parts(False, "Anything else?")
        )
        message: Message = agent_message(parts, context.context_id)
        report = reports.pop(0) if reports else None
        if report is not None:
            message.metadata.update({AGENT_USAGE_KEY: report})
        await queue.enqueue_event(message)

    return FunctionExecutor(reply)


async def test_user_and_judge_usage_is_priced_per_trial_and_summed_in_the_report(data: RetailData) -> None:
    async with (
        serve_fake_llm(customer_and_judge) as fake,
        serve_executor(reporting_agent([])) as url,
    ):
        settings = {
            "user_models": {"u": LLMEndpoint(model="user-model", base_url=fake.base_url)},
            "judge": LLMEndpoint(model="judge-model", base_url=fake.base_url),
            "llm_prices": PRICES,
        }
        config = AssessmentConfig(
            agent_url=url, tasks=TaskSelection(task_ids=["24"]), user_model="u", trials=2
        )
        report, events = await run(data, config, **settings)

    for result in events.results:
        assert result.usage is not None and result.usage.user is not None and result.usage.judge is not None
        # the customer stopped at once: one user call of 100 + 20 tokens
        assert (result.usage.user.calls, result.usage.user.prompt_tokens) == (1, 100)
        assert result.usage.user.cost_usd == pytest.approx((100 * 2.0 + 20 * 8.0) / 1e6)
        assert (result.usage.judge.calls, result.usage.judge.completion_tokens) == (1, 50)
        assert result.usage.judge.cost_usd is None  # no price configured for the judge's model: unknown
        assert result.usage.agent is None  # the agent reported nothing

    usage = report.usage
    assert usage is not None and usage.user is not None and usage.judge is not None
    assert (usage.user.calls, usage.user.prompt_tokens, usage.user.completion_tokens) == (2, 200, 40)
    assert usage.user.cost_usd == pytest.approx(2 * 360 / 1e6)
    assert usage.judge.total_tokens == 2 * 1050 and usage.judge.cost_usd is None
    assert usage.green_cost_usd is None  # one unknown part makes the sum unknown, never a guess
    assert usage.agent is None and usage.agent_cost_per_trial_usd is None
    assert report.run_info is not None and report.run_info.user_model == "user-model"
    assert report.run_info.judge_model == "judge-model"


async def test_agent_reported_usage_is_summed_and_bad_values_are_ignored_with_a_warning(
    data: RetailData,
) -> None:
    reports: list[Any] = [
        {"prompt_tokens": 500, "completion_tokens": 40, "cost_usd": 0.01},
        {"prompt_tokens": -3, "completion_tokens": "many", "cost_usd": 1e9, "extra": 1},
        "not an object",
    ]
    async with serve_executor(reporting_agent(reports)) as url:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["5"]))
        report, events = await run(data, config, agent_usage_max_cost_per_reply=5.0)
    (result,) = events.results
    assert result.usage is not None and result.usage.agent is not None
    agent = result.usage.agent
    assert (agent.calls, agent.prompt_tokens, agent.completion_tokens) == (1, 500, 40)
    assert agent.cost_usd == pytest.approx(0.01)
    warnings = " | ".join(result.protocol_warnings)
    assert "prompt_tokens=-3" in warnings and "completion_tokens='many'" in warnings
    assert "cost_usd=1000000000.0" in warnings and "unknown fields ['extra']" in warnings
    assert f"metadata {AGENT_USAGE_KEY!r} is not an object" in warnings
    assert report.usage is not None and report.usage.agent_cost_per_trial_usd == pytest.approx(0.01)


def test_agent_usage_bounds_are_inclusive_and_one_past_is_ignored() -> None:
    meter = AgentUsageMeter(max_tokens_per_reply=1000, max_cost_per_reply=2.0)
    assert meter.add({AGENT_USAGE_KEY: {"prompt_tokens": 1000, "cost_usd": 2.0}}) == []
    over = meter.add({AGENT_USAGE_KEY: {"prompt_tokens": 1001, "cost_usd": 2.0000001}})
    assert len(over) == 2 and "between 0 and 1000" in over[0] and "between 0 and 2 USD" in over[1]
    for bad in (math.nan, math.inf, True, 1.5):
        assert meter.add({AGENT_USAGE_KEY: {"completion_tokens": bad}})
    usage = meter.usage()
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (1000, 0)
    assert usage.cost_usd == pytest.approx(2.0)
    # a report with tokens but no cost makes the agent's cost unknown, not zero
    meter.add({AGENT_USAGE_KEY: {"prompt_tokens": 5}})
    assert meter.usage() is not None and meter.usage().cost_usd is None  # type: ignore[union-attr]
