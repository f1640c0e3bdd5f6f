"""Who pays when our LLM fails: an agent flooding the user simulator's or the judge's context is charged
(reward 0, never excluded); every failure it cannot cause (5xx, timeouts, 401, other 400s, a model whose
context is too small for an honest conversation) stays ours and is excluded.

The customer and the judge are the deterministic fake OpenAI-compatible server (tests/support/fake_llm.py)
with a fake context window in bytes; the white agent is the hostile reference agent over real loopback A2A.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from green_agent import AssessmentConfig, AssessmentReport, LLMEndpoint, TaskSelection
from green_agent.conversation.user_simulator import GREETING, SCRIPTED_OPENING, user_system_prompt
from green_agent.core.limits import KIB, AgentLimits
from green_agent.llm.prompts import load_prompt
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.hostile import (
    DONE_TEXT,
    GIVE_UP_TEXT,
    HostileAgent,
    HostileReply,
    text_reply,
)
from retail_domain import RetailData
from tests.engine.conftest import Collector, run
from tests.support.fake_llm import FakeReply, Responder, serve_fake_llm

AGENT_BOUND = 64 * KIB
"""`max_agent_text_bytes_per_trial` here; a context overflow is the agent's from half of it (32 KiB) on."""
FLOOD_TEXT = "flood " * (12 * KIB // 6)
FLOOD = text_reply(FLOOD_TEXT, "12 KiB of text")
CONTEXT = 36 * KIB
"""The fake customer's context: two floods and our prompts fit, the third flood (36 KiB of agent text) not."""
SOLVED = ["0", "5"]
UNSOLVED = ["1", "6"]
"""Tasks without NL assertions whose gold DB differs from the initial one: giving up scores 0."""
RETRIES = {
    "llm_max_retries": 1,
    "llm_retry_backoff_s": 0.01,
    "trial_retries": 1,
    "trial_retry_backoff_s": 0.01,
    # The breaker never opens here: these failures use up the retries; an endpoint found down is waited
    # for (tests/engine/test_provider_limits.py).
    "llm_breaker_failures": 1000,
}


def customer(data: RetailData) -> Responder:
    """A fake customer-LLM playing the scripted customer (it names its task, which is how the hostile agent
    knows what to do), asking again after anything but the agent's closing or giving-up line."""
    scenarios = {f"<scenario>\n{task.scenario_text()}\n</scenario>": task.id for task in data.tasks.values()}

    def reply(body: dict[str, Any]) -> FakeReply:
        messages = body["messages"]
        if len(messages) == 2:  # the system prompt and the greeting
            task_id = next(tid for text, tid in scenarios.items() if text in messages[0]["content"])
            return FakeReply(SCRIPTED_OPENING.format(domain="retail", task_id=task_id))
        if messages[-1]["content"] in (DONE_TEXT, GIVE_UP_TEXT):
            return FakeReply("Thanks, that's all. ###STOP###")
        return FakeReply("Sorry, could you say that again?")

    return reply


async def assess(
    data: RetailData,
    plan: Mapping[str, Sequence[HostileReply]],
    tasks: list[str],
    *,
    user: Responder | None = None,
    user_context: int | None = CONTEXT,
    judge: Responder | None = None,
    judge_context: int | None = None,
    **settings: Any,
) -> tuple[AssessmentReport, Collector]:
    agent = HostileAgent(data, plan)
    async with (
        serve_fake_llm(user or customer(data), context_bytes=user_context) as user_llm,
        serve_fake_llm(judge or passing_judge, context_bytes=judge_context) as judge_llm,
        serve_app(agent.app) as url,
    ):
        engine_settings: dict[str, Any] = {
            "user_models": {"fake-user": LLMEndpoint(model="fake-user", base_url=user_llm.base_url)},
            "default_user_model": "fake-user",
            "judge": LLMEndpoint(model="fake-judge", base_url=judge_llm.base_url),
            "limits": AgentLimits(max_agent_text_bytes_per_trial=AGENT_BOUND),
            **RETRIES,
            **settings,
        }
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=tasks))
        return await run(data, config, **engine_settings)


def passing_judge(body: dict[str, Any]) -> FakeReply:
    return FakeReply('{"results": [{"index": 0, "reasoning": "fine", "metExpectation": true}]}')


async def test_flooding_the_customer_is_charged_to_the_agent(data: RetailData) -> None:
    report, events = await assess(data, {"1": [FLOOD] * 8}, ["1"])
    (result,) = events.results
    assert result.termination_reason == "agent_error" and result.reward == 0.0
    assert result.error is not None
    assert "max_agent_text_bytes_per_trial=65536" in result.error
    assert "maximum context length" in result.error  # the LLM's own words are kept
    assert report.excluded["infrastructure_error"] == 0 and report.trials_scored == 1


async def test_a_gaming_agent_never_scores_above_its_honest_twin(data: RetailData) -> None:
    tasks = SOLVED + UNSOLVED
    twin, _ = await assess(data, {task: [] for task in UNSOLVED}, tasks)
    gaming, events = await assess(data, {task: [FLOOD] * 8 for task in UNSOLVED}, tasks)
    assert twin.task_rewards == {"0": 1.0, "5": 1.0, "1": 0.0, "6": 0.0}
    assert gaming.task_rewards == twin.task_rewards and gaming.avg_reward == twin.avg_reward == 0.5
    assert gaming.excluded["infrastructure_error"] == 0 and gaming.trials_scored == len(tasks)
    flooded = {r.task_id: r.termination_reason for r in events.results if r.task_id in UNSOLVED}
    assert flooded == {"1": "agent_error", "6": "agent_error"}


async def test_flooding_the_judge_is_charged_to_the_agent(data: RetailData) -> None:
    """A clean exit after 36 KiB of text: the judge refuses the conversation, the agent pays. (Task 24: its
    gold DB is the initial one, so the DB check passes and the judge is asked; a DB failure would score 0
    without it.)"""
    closing = text_reply("Goodbye. ###STOP###", "agent stop")
    report, events = await assess(
        data, {"24": [FLOOD] * 3 + [closing]}, ["24"], user_context=None, judge_context=CONTEXT
    )
    (result,) = events.results
    assert result.termination_reason == "agent_error" and result.reward == 0.0
    assert (result.error or "").startswith("judge failed: the agent put")
    assert report.excluded["infrastructure_error"] == 0


async def test_agent_text_bound_ends_the_trial_before_the_llm_sees_it(data: RetailData) -> None:
    """With a context that holds everything, the bound itself stops the flood: the sixth 12 KiB message
    would pass 64 KiB, so it is cut, and the customer never receives it."""
    report, events = await assess(data, {"1": [FLOOD] * 8}, ["1"], user_context=None)
    (result,) = events.results
    assert result.termination_reason == "agent_error" and result.reward == 0.0
    assert "max_agent_text_bytes_per_trial=65536" in (result.error or "")
    last = result.transcript[-1]
    assert last.role == "assistant" and (last.content or "").endswith("over 65536 bytes]")
    assert report.excluded["infrastructure_error"] == 0


async def test_a_context_too_small_for_an_honest_conversation_is_ours(data: RetailData) -> None:
    """The honest agent solves task 0 (a few KiB of tool results); a customer model whose context holds only
    our prompts refuses the rest: our configuration, so excluded, and retried first."""
    guidelines = load_prompt("user_guidelines.md")
    opening_request = len(user_system_prompt(guidelines, data.tasks["0"]).encode()) + len(GREETING)
    report, events = await assess(data, {}, ["0"], user_context=opening_request + 10)
    (result,) = events.results
    assert result.termination_reason == "infrastructure_error" and result.reward is None
    assert "maximum context length" in (result.error or "")
    assert report.excluded["infrastructure_error"] == 1


@pytest.mark.parametrize("failure", ["500", "401", "403", "404", "429", "400 other", "timeout"])
async def test_other_llm_failures_stay_ours_even_after_a_flood(data: RetailData, failure: str) -> None:
    """Two floods (24 KiB, then 36 KiB of agent text) and then the customer-LLM fails in a way the agent
    cannot cause: excluded, whatever the agent sent."""
    ask_again = customer(data)

    def failing(body: dict[str, Any]) -> FakeReply:
        if sum(m["content"] == FLOOD_TEXT for m in body["messages"]) < 3:
            return ask_again(body)
        if failure == "timeout":
            return FakeReply("too late", delay_s=1.0)
        return FakeReply(status=int(failure.split()[0]))

    # A 429 never spends a retry: the trial waits, here for a tolerance of half a second (900 s by default).
    report, events = await assess(
        data,
        {"1": [FLOOD] * 8},
        ["1"],
        user=failing,
        user_context=None,
        llm_timeout_s=0.3,
        llm_outage_tolerance_s=0.5,
    )
    (result,) = events.results
    assert result.termination_reason == "infrastructure_error" and result.reward is None, result.error
    assert report.excluded["infrastructure_error"] == 1
