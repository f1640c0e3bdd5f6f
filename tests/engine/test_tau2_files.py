"""Re-scoring tau2 results files the tests build themselves, in the v0.x shape (tasks without reward_basis,
so DB x COMMUNICATE) and the v1.0.x shape (DB x NL_ASSERTION), and the submission's honesty rules."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from green_agent import AssessmentConfig, LLMEndpoint
from green_agent.core.models import AssessmentReport, RunInfo
from green_agent.llm.client import ChatLLM, RetryPolicy
from green_agent.llm.judge import Judge
from green_agent.tau2_format import ExportSource
from green_agent.tau2_format.rescore import InvalidResultsFile, rescore_document
from green_agent.tau2_format.submission import (
    TAU2_MAX_ERRORS,
    TAU2_MAX_STEPS,
    UPSTREAM_GUIDELINES_SHA256,
    SubmissionRefused,
    Submitter,
    build_submission,
)
from retail_domain import RetailData
from tests.support.fake_llm import FakeReply, serve_fake_llm


def _message(role: str, content: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": calls, "turn_idx": 0, "timestamp": "t"}


def _simulation(
    data: RetailData,
    task_id: str,
    *,
    calls: list[tuple[str, dict[str, Any]]],
    said: str,
    reason: str = "user_stop",
    reward_info: dict[str, Any] | None,
) -> dict[str, Any]:
    """A tau2-shaped simulation: greeting, the user's request, one assistant message per call with its tool
    message (outputs taken from a real replay), the agent's closing text."""
    env = data.new_environment()
    messages = [_message("assistant", "Hi! How can I help you today?"), _message("user", "help me")]
    for i, (name, arguments) in enumerate(calls):
        result = env.call(name, arguments)
        call_id = f"call_{i}"
        messages.append(
            _message(
                "assistant",
                None,
                [{"id": call_id, "name": name, "arguments": arguments, "requestor": "assistant"}],
            )
        )
        messages.append(
            {
                "id": call_id,
                "role": "tool",
                "content": result.content,
                "requestor": "assistant",
                "error": result.error,
            }
        )
    messages += [_message("assistant", said), _message("user", "###STOP###")]
    return {
        "id": f"sim-{task_id}-{len(calls)}-{reason}",
        "task_id": task_id,
        "start_time": "s",
        "end_time": "e",
        "duration": 1.0,
        "termination_reason": reason,
        "reward_info": reward_info,
        "messages": messages,
        "trial": 0,
        "seed": 626729,
    }


def _gold_calls(data: RetailData, task_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in data.gold(task_id).actions]


def _v0_task(data: RetailData, task_id: str) -> dict[str, Any]:
    """The v0 shape: no reward_basis (tau2 then uses DB x COMMUNICATE), no NL assertions."""
    task = data.task_document(task_id)
    task["evaluation_criteria"].pop("reward_basis")
    task["evaluation_criteria"].pop("nl_assertions", None)
    return task


def _stored(reward: float, db_match: bool) -> dict[str, Any]:
    return {"reward": reward, "db_check": {"db_match": db_match, "db_reward": float(db_match)}}


async def test_v0_file_is_scored_db_times_communicate_with_the_file_tasks(data: RetailData) -> None:
    # Task 2's communicate_info is ["10"]: the agent must say it. Gold writes for task 0 are an exchange.
    gold2, gold0 = _gold_calls(data, "2"), _gold_calls(data, "0")
    document = {
        "info": {"num_trials": 1},
        "tasks": [_v0_task(data, "2"), _v0_task(data, "0")],
        "simulations": [
            _simulation(data, "2", calls=gold2, said="There are 10 options.", reward_info=_stored(1.0, True)),
            _simulation(
                data, "2", calls=gold2, said="There are some options.", reward_info=_stored(0.0, True)
            ),
            # stored as a success although the exchange never happened: the disagreement must show
            _simulation(data, "0", calls=gold0[:-1], said="Done.", reward_info=_stored(1.0, True)),
            _simulation(
                data, "0", calls=gold0, said="Done.", reason="max_steps", reward_info={"reward": 0.0}
            ),
            _simulation(data, "0", calls=[], said="", reason="infrastructure_error", reward_info=None),
        ],
    }
    report = await rescore_document(document, data)
    rows = report.simulations
    assert [(r.reward, r.reward_agrees) for r in rows] == [
        (1.0, True),
        (0.0, True),
        (0.0, False),
        (0.0, True),
    ]
    assert [r.communicate_agrees for r in rows[:2]] == [None, None]  # nothing stored to compare with
    assert rows[2].db_match is False and rows[2].db_agrees is False
    assert rows[3].db_match is None  # after a premature end tau2 runs no check, so none is compared
    totals = report.totals
    assert (totals.simulations, totals.excluded, totals.rewards_compared, totals.rewards_agree) == (
        5,
        1,
        4,
        3,
    )
    assert totals.replay_mismatches == 0 and report.tasks_in_file == 2


async def test_v1_file_needs_a_judge_for_nl_tasks_and_flags_replay_mismatches(data: RetailData) -> None:
    gold24 = _gold_calls(data, "24")  # no gold actions; one NL assertion gates the reward
    tampered = _simulation(
        data, "20", calls=_gold_calls(data, "20"), said="Done.", reward_info=_stored(1.0, True)
    )
    write = next(
        m for m in tampered["messages"] if m["role"] == "tool" and "pending (item modified)" in m["content"]
    )
    write["content"] = "Error: something else was recorded"
    document = {
        "tasks": [data.task_document("24"), data.task_document("20"), data.task_document("2")],
        "simulations": [
            _simulation(
                data, "24", calls=gold24, said="Polyester and cotton.", reward_info=_stored(1.0, True)
            ),
            tampered,
            # task 2 needs the judge, but nothing was done: the DB check fails, so 0 without a judge
            _simulation(data, "2", calls=[], said="Ten options.", reward_info=_stored(0.0, False)),
        ],
    }
    unjudged = await rescore_document(copy.deepcopy(document), data)
    first, second, third = unjudged.simulations
    assert third.reward == 0.0 and third.reward_agrees is True and not third.nl_judged
    assert first.reward is None and first.reward_agrees is None and "not judged" in (first.note or "")
    assert first.db_agrees is True and unjudged.totals.rewards_unknown == 1
    assert second.reward == 1.0 and second.replay_mismatches == 1  # the DB still matches gold

    async with serve_fake_llm(
        lambda body: FakeReply('{"results": [{"index": 0, "metExpectation": true, "reasoning": "said"}]}')
    ) as fake:
        llm = ChatLLM(LLMEndpoint(model="fake-judge", base_url=fake.base_url))
        try:
            judged = await rescore_document(document, data, Judge(llm=llm, rubric="grade"))
        finally:
            await llm.aclose()
    async with serve_fake_llm(lambda body: FakeReply(status=503)) as down:
        llm = ChatLLM(LLMEndpoint(model="down", base_url=down.base_url), retry=RetryPolicy(max_retries=0))
        try:
            failed = await rescore_document(copy.deepcopy(document), data, Judge(llm=llm, rubric="grade"))
        finally:
            await llm.aclose()
    assert failed.simulations[0].reward is None and "judge failed" in (failed.simulations[0].note or "")
    assert failed.simulations[1].reward_agrees is True  # the other simulations still re-scored
    assert judged.simulations[0].reward == 1.0 and judged.simulations[0].nl_judged
    assert judged.totals.rewards_agree == judged.totals.rewards_compared == 3
    assert failed.simulations[2].reward == 0.0  # never asked, so never failed by the judge
    assert len(fake.requests) == 1 and "Polyester and cotton." in fake.requests[0]["messages"][1]["content"]


async def test_a_document_that_is_not_a_results_file_is_refused(data: RetailData) -> None:
    with pytest.raises(InvalidResultsFile, match="'simulations' list"):
        await rescore_document({"tasks": []}, data)
    with pytest.raises(InvalidResultsFile, match="malformed"):
        await rescore_document({"tasks": [{"id": "1"}], "simulations": []}, data)
    broken = {
        "id": "s",
        "task_id": "0",
        "start_time": "s",
        "end_time": "e",
        "duration": 1.0,
        "termination_reason": "user_stop",
        "reward_info": {"reward": 1.0},
    }
    with pytest.raises(InvalidResultsFile, match="simulation 1 is malformed"):
        messages = [{"role": "assistant", "tool_calls": ["not a call"]}]
        await rescore_document(
            {"simulations": [{**broken, "messages": []}, {**broken, "messages": messages}]}, data
        )
    # What tau2 itself refuses to load is refused before any simulation is scored, naming the field.
    refused: list[tuple[dict[str, Any], str]] = [
        ({"messages": "not a list of messages"}, "messages"),
        ({"task_id": None}, "task_id"),
        ({"task_id": 0}, "task_id"),
        ({"termination_reason": "gave_up"}, "termination_reason"),
        ({"duration": "long"}, "duration"),
    ]
    for change, field in refused:
        with pytest.raises(InvalidResultsFile, match=f"simulation 1 is not one tau2 accepts: {field}"):
            await rescore_document({"simulations": [broken, {**broken, **change}]}, data)
    without_task = {k: v for k, v in broken.items() if k != "task_id"}
    with pytest.raises(
        InvalidResultsFile, match="simulation 0 is not one tau2 accepts: task_id: Field required"
    ):
        await rescore_document({"simulations": [without_task, broken]}, data)


def _source(report: AssessmentReport, **config: Any) -> ExportSource:
    return ExportSource(
        assessment_id="a1",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        agent_url="http://agent",
        config=AssessmentConfig(agent_url="http://agent", trials=4, **config),
        report=report,
        trials=[],
    )


def _report(**changes: Any) -> AssessmentReport:
    run = RunInfo(
        user_model_name="gpt", user_model="gpt-5.2", user_guidelines_sha256=UPSTREAM_GUIDELINES_SHA256
    )
    base = AssessmentReport(
        num_tasks=114,
        num_trials=4,
        trials_total=456,
        trials_scored=456,
        complete=True,
        excluded={"infrastructure_error": 0, "not_judged": 0},
        avg_reward=0.5,
        pass_hat_k={1: 0.5, 2: 0.4, 3: 0.3, 4: 0.25},
        run_info=run,
    )
    return base.model_copy(update=changes)


def _build(report: AssessmentReport, **config: Any) -> Any:
    submitter = Submitter(
        model_name="m", model_organization="o", submitting_organization="o", email="e@x.org"
    )
    return build_submission(_source(report, **config), submitter, today=date(2026, 1, 3))


def test_tau2s_conversation_limits_are_the_configs_defaults() -> None:
    fields = AssessmentConfig.model_fields
    assert (fields["max_steps"].default, fields["max_errors"].default) == (TAU2_MAX_STEPS, TAU2_MAX_ERRORS)


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"max_steps": 20}, "max_steps 20 (tau2: 200)"),  # a small customer model's own step limit
        ({"max_steps": 201}, "max_steps 201 (tau2: 200)"),
        ({"max_errors": 11}, "max_errors 11 (tau2: 10)"),
    ],
)
def test_a_run_with_other_conversation_limits_is_a_custom_submission(
    config: dict[str, int], said: str
) -> None:
    submission = _build(_report(), **config)
    assert submission.document["submission_type"] == "custom"
    assert any(said in notice and "custom" in notice for notice in submission.notices)
    assert said in submission.document["methodology"]["notes"]


def test_submission_is_standard_only_with_tau2s_guidelines_all_tasks_and_a_complete_report() -> None:
    standard = _build(_report())
    verification = standard.document["methodology"]["verification"]
    assert verification == {**verification, "modified_prompts": False, "omitted_questions": False}
    assert standard.document["submission_type"] == "standard" and standard.notices == []
    assert standard.document["results"]["retail"] == {
        "pass_1": 50.0,
        "pass_2": 40.0,
        "pass_3": 30.0,
        "pass_4": 25.0,
        "cost": None,
    }
    assert standard.document["methodology"]["user_simulator"] == "gpt-5.2"

    other = _report(
        run_info=RunInfo(user_model_name="gpt", user_model="gpt-5.2", user_guidelines_sha256="0" * 64)
    )
    assert _build(other).document["methodology"]["verification"]["modified_prompts"] is True

    for partial in (
        {"infrastructure_error": 1, "not_judged": 0},
        {"infrastructure_error": 0, "not_judged": 40},
    ):
        with pytest.raises(SubmissionRefused, match="partial"):
            _build(_report(excluded=partial))
    with pytest.raises(SubmissionRefused, match="only 400 of 456 trials"):
        _build(_report(trials_total=400))
    json.dumps(standard.document)  # JSON-ready as it is


def test_a_refused_submission_names_a_judge_only_when_none_was_configured() -> None:
    judged = RunInfo(
        user_model_name="gpt",
        user_model="gpt-5.2",
        user_guidelines_sha256=UPSTREAM_GUIDELINES_SHA256,
        judge_model="gpt-4.1",
    )
    with pytest.raises(SubmissionRefused) as with_judge:
        _build(_report(excluded={"infrastructure_error": 3, "not_judged": 0}, run_info=judged))
    assert "configure a judge" not in str(with_judge.value)
    assert "3 infrastructure_error" in str(with_judge.value) and "LLM endpoints" in str(with_judge.value)
    with pytest.raises(SubmissionRefused, match="configure a judge") as without_judge:
        _build(_report(excluded={"infrastructure_error": 0, "not_judged": 40}))
    assert "LLM endpoints" not in str(without_judge.value)


def test_submission_notes_are_separate_sentences() -> None:
    """Before, the notices ran together: "...(custom submission) the customer was the scripted user..."."""
    scripted = RunInfo(user_model_name="scripted", user_model=None, user_guidelines_sha256=None)
    submission = _build(_report(num_tasks=30, num_trials=2, trials_total=60, run_info=scripted))
    notes = submission.document["methodology"]["notes"]
    assert len(submission.notices) == 4
    for notice in submission.notices:
        assert (notice[:1].upper() + notice[1:] + ".") in notes
    assert "(custom submission). The customer was the scripted user" in notes
    assert ") the" not in notes and ".." not in notes
