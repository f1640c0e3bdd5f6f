"""The LLM-backed parts against a deterministic OpenAI-compatible server on loopback (tests/support):
the NL judge (good, malformed and failing replies), the LLM user simulator and the `llm` reference agent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.conversation.user_simulator import GREETING
from green_agent.llm.prompts import load_prompt
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.engine.conftest import run
from tests.support.fake_llm import FakeReply, last_user_text, serve_fake_llm

FAST_RETRIES = {
    "llm_max_retries": 1,
    "llm_retry_backoff_s": 0.01,
    "trial_retries": 1,
    "trial_retry_backoff_s": 0.01,
    # The breaker never opens here: these failures use up the retries; an endpoint found down is waited
    # for (tests/engine/test_provider_limits.py).
    "llm_breaker_failures": 1000,
}


def _task_of(body: dict[str, Any]) -> str:
    match = re.search(r"scripted customer for task (\d+)", last_user_text(body))
    assert match, "the judge must see the whole conversation"
    return match.group(1)


def judge_replies(body: dict[str, Any]) -> FakeReply:
    """Per task, a different judge behaviour (the scripted customer names the task in the transcript)."""
    task = _task_of(body)
    if task == "2":  # well-formed, passing
        return FakeReply('{"results": [{"index": 0, "reasoning": "told", "metExpectation": true}]}')
    if task == "19":  # fenced, second assertion failed, entries reversed
        return FakeReply(
            '```json\n{"results": [{"index": 1, "reasoning": "not said", "metExpectation": false},'
            ' {"index": 0, "reasoning": "said", "metExpectation": true}]}\n```'
        )
    if task == "43":  # malformed: a string verdict, an out-of-range index, one missing
        return FakeReply(
            '{"results": [{"index": 0, "metExpectation": "true"}, {"index": 5, "metExpectation": true},'
            ' {"index": 1, "metExpectation": true}]}'
        )
    return FakeReply("All good!")  # task 24: not JSON at all


async def test_judge_verdicts_are_normalized_stored_and_gate_the_reward(data: RetailData) -> None:
    tasks = TaskSelection(task_ids=["0", "2", "19", "24", "43"])
    async with (
        serve_fake_llm(judge_replies) as judge,
        serve_reference_agent("oracle", data=data) as url,
    ):
        settings = {"judge": LLMEndpoint(model="fake-judge", base_url=judge.base_url), **FAST_RETRIES}
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks), **settings)

    results = events.by_task()
    assert len(judge.requests) == 4  # one call per judged trial; task 0 has no assertions
    rubric = load_prompt("judge_rubric.md")
    for body in judge.requests:
        assert body["model"] == "fake-judge" and body["temperature"] == 0.0
        assert body["messages"][0] == {"role": "system", "content": rubric}

    assert results["0"].nl_status == "not_required" and results["0"].reward == 1.0
    assert results["0"].judge_input is None

    passing = results["2"]
    assert passing.nl_status == "judged" and passing.reward == 1.0 and passing.is_successful is True
    assert [(v.index, v.passed, v.reason) for v in passing.nl_verdicts] == [(0, True, "told")]
    assert passing.nl_verdicts[0].assertion == data.tasks["2"].nl_assertions[0]
    sent = next(b for b in judge.requests if _task_of(b) == "2")
    assert json.loads(passing.judge_input or "") == sent["messages"]
    assert json.dumps({"role": "agent", "content": GREETING}) in sent["messages"][1]["content"]
    assert '{"role": "tool_result", ' in sent["messages"][1]["content"]  # tool results are judged too

    partial = results["19"]
    assert [v.passed for v in partial.nl_verdicts] == [True, False]
    assert partial.reward == 0.0 and partial.nl_assertion_pass_rate == 0.5
    nl = next(s for s in partial.signals if s.name == "NL_ASSERTION")
    assert nl.passed is False and nl.counts and nl.detail == "1/2 assertions passed"
    db = next(s for s in partial.signals if s.name == "DB_STATE_MATCH")
    assert db.passed is True  # the DB was right; the assertion alone failed the trial

    malformed = results["43"]
    assert [v.passed for v in malformed.nl_verdicts] == [False, True, False]
    assert "not a boolean" in malformed.nl_verdicts[0].reason
    assert "does not exist" in malformed.nl_verdicts[2].reason
    assert malformed.reward == 0.0

    unreadable = results["24"]
    assert [v.passed for v in unreadable.nl_verdicts] == [False]
    assert "could not be read" in unreadable.nl_verdicts[0].reason

    assert report.excluded == {"infrastructure_error": 0, "not_judged": 0}
    assert report.nl_assertions_total == 1 + 2 + 1 + 3
    assert report.signal_rates["NL_ASSERTION"] == 3 / 7  # over assertions, not trials
    assert report.avg_reward == 2 / 5


async def test_failing_judge_makes_an_infrastructure_error_that_is_excluded(data: RetailData) -> None:
    tasks = TaskSelection(task_ids=["0", "2"])
    async with (
        serve_fake_llm(lambda body: FakeReply(status=503)) as judge,
        serve_reference_agent("oracle", data=data) as url,
    ):
        settings = {"judge": LLMEndpoint(model="fake-judge", base_url=judge.base_url), **FAST_RETRIES}
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks), **settings)
    # task 2 only: (first call + one LLM retry) in the trial, and again when the trial itself is run again
    assert len(judge.requests) == 4
    failed = events.by_task()["2"]
    assert failed.termination_reason == "infrastructure_error" and failed.reward is None
    assert failed.error is not None and "judge failed" in failed.error and "HTTP 503" in failed.error
    assert report.excluded == {"infrastructure_error": 1, "not_judged": 0}
    assert report.trials_scored == 1 and report.avg_reward == 1.0


async def test_an_unclean_exit_is_judged_too_and_stays_at_zero(data: RetailData) -> None:
    """Upstream runs no check after an unclean exit; we ask the judge all the same, so that whether a trial
    can be left out for a judge outage never depends on how it ended. Its reward is 0 whatever the verdicts.
    With `judge_skip_when_failed` the call is saved."""
    config_tasks = TaskSelection(task_ids=["2"])
    async with (
        serve_fake_llm(judge_replies) as judge,
        serve_reference_agent("garbage", data=data) as url,
    ):
        settings = {"judge": LLMEndpoint(model="fake-judge", base_url=judge.base_url)}
        config = AssessmentConfig(agent_url=url, tasks=config_tasks)
        _, events = await run(data, config, **settings)
        assert len(judge.requests) == 1
        (result,) = events.results
        assert result.termination_reason == "agent_error" and result.reward == 0.0
        assert result.nl_status == "judged" and result.nl_verdicts

        _, skipping = await run(data, config, **settings, judge_skip_when_failed=True)
        assert len(judge.requests) == 1  # not asked again
    (skipped,) = skipping.results
    assert skipped.reward == 0.0 and skipped.nl_status == "skipped" and skipped.judge_input is None
    nl = next(s for s in skipped.signals if s.name == "NL_ASSERTION")
    assert nl.passed is None and "judge_skip_when_failed" in nl.detail


def customer(body: dict[str, Any]) -> FakeReply:
    """A fake customer-LLM: states a request, then stops once the agent has answered twice."""
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return FakeReply(
        "I'd like to check my order, please." if turns == 0 else "Thanks, that's all. ###STOP###"
    )


async def test_llm_user_simulator_prompt_roles_and_seed(data: RetailData) -> None:
    async with (
        serve_fake_llm(customer) as user_llm,
        serve_reference_agent("no_tools", data=data) as url,
    ):
        settings = {
            "user_models": {"fake-user": LLMEndpoint(model="fake-user-model", base_url=user_llm.base_url)}
        }
        config = AssessmentConfig(
            agent_url=url, tasks=TaskSelection(task_ids=["7"]), user_model="fake-user", trials=2
        )
        report, events = await run(data, config, **settings)

    assert report.termination_counts == {"user_stop": 2}
    assert len(user_llm.requests) == 4
    first, second = (b for b in user_llm.requests if b["seed"] == 626729)
    expected_system = (
        load_prompt("user_guidelines.md")
        + "\n\n<scenario>\n"
        + data.tasks["7"].scenario_text()
        + "\n</scenario>"
    )
    assert first["messages"] == [
        {"role": "system", "content": expected_system},
        {"role": "user", "content": GREETING},
    ]
    assert first["temperature"] == 0.0 and first["model"] == "fake-user-model" and "tools" not in first
    # roles flipped: the agent's text is "user", the customer's own lines are "assistant"
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == "I'd like to check my order, please."
    assert {b["seed"] for b in user_llm.requests} == {626729, 373753}
    transcript = events.results[0].transcript
    assert [m.role for m in transcript] == ["assistant", "user", "assistant", "user"]


async def test_failing_user_llm_is_an_infrastructure_error(data: RetailData) -> None:
    async with (
        serve_fake_llm(lambda body: FakeReply(content="")) as user_llm,
        serve_reference_agent("oracle", data=data) as url,
    ):
        settings = {
            "user_models": {"fake": LLMEndpoint(model="fake", base_url=user_llm.base_url)},
            "default_user_model": "fake",
            **FAST_RETRIES,
        }
        report, events = await run(
            data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["1"])), **settings
        )
    assert len(user_llm.requests) == 4  # the empty reply was retried once, in the trial and in its retry
    (result,) = events.results
    assert result.termination_reason == "infrastructure_error" and result.reward is None
    assert result.error is not None and "empty reply" in result.error
    assert report.trials_scored == 0 and report.avg_reward is None and report.pass_hat_k == {}


async def test_llm_reference_agent_calls_tools_in_the_structured_dialect(data: RetailData) -> None:
    task = data.tasks["5"]
    gold = task.gold_actions

    def model(body: dict[str, Any]) -> FakeReply:
        """A fake agent-LLM that replays the gold actions as native tool calls, then closes."""
        assert body["tools"] and body["messages"][0]["role"] == "system"
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < len(gold):
            return FakeReply(tool_calls=[{"name": gold[done].name, "arguments": gold[done].arguments}])
        return FakeReply("Your return is done.")

    async with (
        serve_fake_llm(model) as agent_llm,
        serve_reference_agent(
            "llm", data=data, llm=LLMEndpoint(model="m", base_url=agent_llm.base_url)
        ) as url,
    ):
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["5"])))
    (result,) = events.results
    assert result.db_actual_hash == data.gold("5").db_hash, result.error
    assert result.reward == 1.0 and result.protocol_warnings == []
    calls = [c.name for m in result.transcript for c in m.tool_calls or ()]
    assert calls == [a.name for a in gold]
    # tool results went back with the ids the agent chose (the agent-LLM saw them as tool messages)
    assert len(agent_llm.requests) == len(gold) + 1
    # the trial seed travels in the message metadata, and the llm agent hands it to its model
    assert {body["seed"] for body in agent_llm.requests} == {626729}


async def test_operator_files_replace_the_built_in_guidelines_and_rubric(
    data: RetailData, tmp_path: Path
) -> None:
    guidelines = tmp_path / "guidelines.md"
    guidelines.write_text("Operator guidelines.\n", encoding="utf-8")
    rubric = tmp_path / "rubric.md"
    rubric.write_text("Operator rubric.", encoding="utf-8")

    def both(body: dict[str, Any]) -> FakeReply:
        if body["model"] == "judge":
            return FakeReply('{"results": [{"index": 0, "metExpectation": true, "reasoning": "ok"}]}')
        return FakeReply("###STOP###")

    async with serve_fake_llm(both) as fake, serve_reference_agent("no_tools", data=data) as url:
        settings = {
            "user_models": {"u": LLMEndpoint(model="user", base_url=fake.base_url)},
            "default_user_model": "u",
            "judge": LLMEndpoint(model="judge", base_url=fake.base_url),
            "user_guidelines_file": guidelines,
            "judge_rubric_file": rubric,
        }
        _, events = await run(
            data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["24"])), **settings
        )
    user_request, judge_request = fake.requests
    assert user_request["messages"][0]["content"].startswith("Operator guidelines.\n\n\n<scenario>\n")
    assert judge_request["messages"][0]["content"] == "Operator rubric."
    (result,) = events.results
    assert result.termination_reason == "user_stop" and result.nl_status == "judged"
