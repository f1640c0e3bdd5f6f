"""Re-scoring tau2 results files the tests build themselves, in the v0.x shape (tasks without reward_basis,
so DB x COMMUNICATE) and the v1.0.x shape (DB x NL_ASSERTION), in retail and airline, and the submission's
honesty rules: one domain or several, and every setting that differs from the leaderboard's standard
protocol named."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from domain_kit import DomainData
from green_agent import AssessmentConfig, Engine, EngineSettings, LLMEndpoint
from green_agent.config import ProviderEndpoint, UserLLMArgs
from green_agent.core.models import (
    AssessmentReport,
    RunInfo,
    ToolCallRecord,
    TranscriptMessage,
    TrialResult,
)
from green_agent.domains import load_domain
from green_agent.llm.client import ChatLLM, RetryPolicy
from green_agent.llm.judge import Judge
from green_agent.tau2_format import ExportSource, tau2_results
from green_agent.tau2_format.rescore import InvalidResultsFile, domain_to_rescore, rescore_document
from green_agent.tau2_format.submission import (
    STANDARD,
    TAU2_MAX_ERRORS,
    TAU2_MAX_STEPS,
    UPSTREAM_GUIDELINES_SHA256,
    DomainRun,
    SubmissionRefused,
    Submitter,
    build_submission,
)
from retail_domain import RetailData
from tests.support import tau2_schema
from tests.support.fake_llm import FakeReply, serve_fake_llm


def _message(role: str, content: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": calls, "turn_idx": 0, "timestamp": "t"}


def _simulation(
    data: DomainData,
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


def _gold_calls(data: DomainData, task_id: str) -> list[tuple[str, dict[str, Any]]]:
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


def _communicate(met: bool) -> dict[str, Any]:
    return {"communicate_checks": [{"info": "5244", "met": met, "justification": "-"}]}


async def test_an_airline_file_is_scored_db_times_communicate_in_airline(
    data: RetailData, airline: DomainData
) -> None:
    """Task 11: one flight change, and the agent must tell the customer 5244 (commas stripped). The domain
    comes from the file; its task document carries airline's `annotations` (parsed all the same)."""
    gold = _gold_calls(airline, "11")
    stored_ok = {**_stored(1.0, True), **_communicate(True)}
    aside = _simulation(airline, "11", calls=gold, said="Done.", reward_info={**_stored(1.0, True)})
    call = next(m for m in aside["messages"] if m.get("tool_calls"))
    call["content"] = "That comes to 5244 dollars."  # next to a tool call: the customer never saw it
    document: dict[str, Any] = {
        "info": {"num_trials": 1, "environment_info": {"domain_name": "airline", "policy": "-"}},
        "tasks": [airline.task_document("11")],
        "simulations": [
            _simulation(airline, "11", calls=gold, said="It is $5,244 in total.", reward_info=stored_ok),
            _simulation(
                airline,
                "11",
                calls=gold,
                said="All done.",
                reward_info={**_stored(0.0, True), **_communicate(False)},
            ),
            _simulation(airline, "11", calls=[], said="5244.", reward_info=_stored(0.0, False)),
            aside,
        ],
    }
    assert "annotations" in document["tasks"][0]
    assert domain_to_rescore(document, None) == "airline" == domain_to_rescore(document, "airline")
    report = await rescore_document(document, airline)
    assert report.domain == "airline"
    rows = report.simulations
    assert [(r.reward, r.reward_agrees, r.db_match) for r in rows] == [
        (1.0, True, True),
        (0.0, True, True),
        (0.0, True, False),
        (0.0, False, True),  # stored 1.0 by a grader that read text next to tool calls; not here
    ]
    assert [r.communicate_agrees for r in rows[:2]] == [True, True]
    assert report.totals.replay_mismatches == 0 and report.totals.db_agree == 4

    with pytest.raises(InvalidResultsFile, match="holds airline results; it cannot be re-scored in retail"):
        await rescore_document(document, data)
    with pytest.raises(InvalidResultsFile, match="not retail"):
        domain_to_rescore(document, "retail")
    unnamed = {k: v for k, v in document.items() if k != "info"}
    assert domain_to_rescore(unnamed, "airline") == "airline" and domain_to_rescore(unnamed, None) == "retail"


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


def test_the_export_names_who_made_each_call(data: RetailData) -> None:
    """Dual control: a customer's own tool call is exported with requestor "user", and so is its tool message;
    the agent's stay "assistant". (A hand-made transcript: retail's customer has no tools of its own.)"""
    at = datetime(2026, 1, 2, tzinfo=UTC)
    messages = [
        ("assistant", "Hi! How can I help you today?", None, None),
        (
            "user",
            "My phone has no signal.",
            [ToolCallRecord(id="u1", name="check_status_bar", arguments={})],
            None,
        ),
        ("tool", "No service", None, "u1"),
        (
            "assistant",
            None,
            [ToolCallRecord(id="a1", name="get_user_details", arguments={"user_id": "x"})],
            None,
        ),
        ("tool", "Error: user not found", None, "a1"),
        ("assistant", "Sorry, I cannot find you.", None, None),
        ("user", "###STOP###", None, None),
    ]
    transcript = [
        TranscriptMessage(
            index=i, role=role, content=text, tool_calls=calls, tool_call_id=answers, timestamp=at
        )
        for i, (role, text, calls, answers) in enumerate(messages)
    ]
    trial = TrialResult(
        task_id="0",
        trial=0,
        seed=1,
        termination_reason="user_stop",
        reward=0.0,
        is_successful=False,
        transcript=transcript,
        started_at=at,
        finished_at=at,
    )
    config = AssessmentConfig(agent_url="http://agent")
    source = ExportSource("a1", at, "http://agent", config, _report(), [trial])
    document = tau2_results(source, data)
    tau2_schema.Results.model_validate(document)
    exported = document["simulations"][0]["messages"]
    assert exported[1]["tool_calls"][0]["requestor"] == "user" and exported[2]["requestor"] == "user"
    assert (
        exported[3]["tool_calls"][0]["requestor"] == "assistant" and exported[4]["requestor"] == "assistant"
    )


@pytest.fixture(scope="module")
def airline() -> DomainData:
    return load_domain("airline")


STANDARD_RUN = RunInfo(
    user_model_name="gpt-5.2",
    user_model="gpt-5.2",
    # temperature null: not sent (gpt-5.2 reasoning); the standard entries sent reasoning_effort only
    user_llm_args={"temperature": None, "reasoning_effort": "low"},
    user_guidelines_sha256=UPSTREAM_GUIDELINES_SHA256,
    judge_model="gpt-4.1-2025-04-14",
    judge_rubric_sha256="ab" * 32,
    trial_retries=2,
)


def _source(report: AssessmentReport, domain: str = "retail", **config: Any) -> ExportSource:
    return ExportSource(
        assessment_id=f"a-{domain}",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        agent_url="http://agent",
        config=AssessmentConfig(agent_url="http://agent", domain=domain, trials=4, **config),
        report=report,
        trials=[],
    )


def _report(**changes: Any) -> AssessmentReport:
    base = AssessmentReport(
        num_tasks=114,
        num_trials=4,
        trials_total=456,
        trials_scored=456,
        complete=True,
        excluded={"infrastructure_error": 0, "not_judged": 0},
        avg_reward=0.5,
        pass_hat_k={1: 0.5, 2: 0.4, 3: 0.3, 4: 0.25},
        run_info=STANDARD_RUN,
    )
    return base.model_copy(update=changes)


def _airline_report(**changes: Any) -> AssessmentReport:
    return _report(num_tasks=50, trials_total=200, trials_scored=200, **changes)


SUBMITTER = Submitter(model_name="m", model_organization="o", submitting_organization="o", email="e@x.org")


def _build(report: AssessmentReport, data: DomainData, **config: Any) -> Any:
    run = DomainRun(_source(report, data.name, **config), data)
    return build_submission([run], SUBMITTER, today=date(2026, 1, 3))


def test_tau2s_conversation_limits_are_the_configs_defaults() -> None:
    fields = AssessmentConfig.model_fields
    assert (fields["max_steps"].default, fields["max_errors"].default) == (TAU2_MAX_STEPS, TAU2_MAX_ERRORS)
    assert (fields["seed"].default, STANDARD.seed) == (300, 300)


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"max_steps": 20}, "max_steps 20 (tau2: 200)"),  # a small customer model's own step limit
        ({"max_steps": 201}, "max_steps 201 (tau2: 200)"),
        ({"max_errors": 11}, "max_errors 11 (tau2: 10)"),
    ],
)
def test_a_run_with_other_conversation_limits_is_a_custom_submission(
    data: RetailData, config: dict[str, int], said: str
) -> None:
    submission = _build(_report(), data, **config)
    assert submission.document["submission_type"] == "custom"
    assert any(said in notice and "custom" in notice for notice in submission.notices)
    assert said in submission.document["methodology"]["notes"]


def test_submission_is_standard_only_with_tau2s_guidelines_all_tasks_and_a_complete_report(
    data: RetailData,
) -> None:
    standard = _build(_report(), data)
    verification = standard.document["methodology"]["verification"]
    assert verification == {**verification, "modified_prompts": False, "omitted_questions": False}
    assert standard.document["submission_type"] == "standard" and standard.notices == []
    assert standard.document["results"] == {
        "retail": {"pass_1": 50.0, "pass_2": 40.0, "pass_3": 30.0, "pass_4": 25.0, "cost": None}
    }
    assert standard.document["methodology"]["user_simulator"] == "gpt-5.2"
    assert standard.trajectory_files == {"retail": "m_retail_default_gpt-5.2_4trials.json"}

    other = _report(run_info=STANDARD_RUN.model_copy(update={"user_guidelines_sha256": "0" * 64}))
    assert _build(other, data).document["methodology"]["verification"]["modified_prompts"] is True

    for partial in (
        {"infrastructure_error": 1, "not_judged": 0},
        {"infrastructure_error": 0, "not_judged": 40},
    ):
        with pytest.raises(SubmissionRefused, match="partial"):
            _build(_report(excluded=partial), data)
    with pytest.raises(SubmissionRefused, match="only 400 of 456 trials"):
        _build(_report(trials_total=400), data)
    json.dumps(standard.document)  # JSON-ready as it is


def test_a_standard_run_says_so_and_how_infrastructure_errors_were_counted(data: RetailData) -> None:
    """The standard protocol's settings are named with this run's, and the one way this service always
    differs (infrastructure errors are run again, never counted as the agent's failures) is said."""
    notes = _build(_report(), data).document["methodology"]["notes"]
    assert f"The leaderboard's standard protocol is {STANDARD.describe()}" in notes
    assert "this run follows it but for infrastructure errors." in notes
    assert "not counted as failures here, unlike the standard entries" in notes
    assert "run again (up to 2 times within the run) or by `green-agent retry`" in notes
    assert (
        'Retail: 114 tasks x 4 trials, seed 300, customer gpt-5.2 with {"reasoning_effort": "low"}, NL judge '
        f"gpt-4.1-2025-04-14 with this service's rubric (sha256 {'ab' * 32}), max_steps 200, max_errors 10, "
        "trial retries 2." in notes
    )
    assert "the 16 retail tool schemas" in notes


@pytest.mark.parametrize(
    ("run", "config", "said", "custom"),
    [
        (
            {"user_model": "gpt-4.1-2025-04-14"},
            {},
            "customer model gpt-4.1-2025-04-14 (standard: gpt-5.2)",
            False,
        ),
        (
            {"user_llm_args": {"temperature": 0.0, "reasoning_effort": "low"}},
            {},
            'customer arguments {"reasoning_effort": "low", "temperature": 0.0} (standard: '
            '{"reasoning_effort": "low"})',
            False,
        ),
        (
            {"user_llm_args": {"temperature": None}},
            {},
            'customer arguments no arguments (standard: {"reasoning_effort": "low"})',
            False,
        ),
        ({"judge_model": "gpt-4o"}, {}, "NL judge gpt-4o (standard: gpt-4.1-2025-04-14)", True),
        ({}, {"seed": 301}, "seed 301 (standard: 300)", False),
        ({}, {"max_errors": 5}, "max_errors 5 (tau2: 10)", True),
        (
            {"user_guidelines_sha256": "0" * 64},
            {},
            f"the user-simulator guidelines in use (sha256 {'0' * 64}) are not byte-identical to tau2's "
            f"({UPSTREAM_GUIDELINES_SHA256})",
            True,
        ),
    ],
)
def test_every_setting_that_differs_from_the_standard_protocol_is_named(
    data: RetailData, run: dict[str, Any], config: dict[str, Any], said: str, custom: bool
) -> None:
    submission = _build(_report(run_info=STANDARD_RUN.model_copy(update=run)), data, **config)
    notes = submission.document["methodology"]["notes"]
    assert "; this run differs as follows. " in notes
    assert len(submission.notices) == 1 and said in submission.notices[0]
    notice = submission.notices[0]
    assert notice[:1].upper() + notice[1:] + "." in notes  # each notice is a sentence of the notes
    assert submission.document["submission_type"] == ("custom" if custom else "standard")


@pytest.mark.parametrize(
    ("trials", "said"), [(2, "2 trial(s) per task"), (5, "5 trials per task (standard: 4)")]
)
def test_other_trial_counts_are_named(data: RetailData, trials: int, said: str) -> None:
    pass_k = {k: 0.5 for k in range(1, trials + 1)}
    report = _report(
        num_trials=trials, trials_total=114 * trials, trials_scored=114 * trials, pass_hat_k=pass_k
    )
    submission = _build(report, data)
    assert [n for n in submission.notices if said in n] and said in submission.document["methodology"][
        "notes"
    ]


def test_the_judge_is_no_difference_where_no_task_is_judged(airline: DomainData) -> None:
    """Airline scores DB x COMMUNICATE: its NL assertions never count, so a run without a judge (or another
    one) is the standard protocol there, and the notes say no judge was needed."""
    no_judge = STANDARD_RUN.model_copy(update={"judge_model": None, "judge_rubric_sha256": None})
    submission = _build(_airline_report(run_info=no_judge), airline)
    assert submission.notices == [] and submission.document["submission_type"] == "standard"
    notes = submission.document["methodology"]["notes"]
    assert "Airline: 50 tasks x 4 trials" in notes and "no NL judge needed" in notes
    assert "the 14 airline tool schemas" in notes
    assert submission.trajectory_files == {"airline": "m_airline_default_gpt-5.2_4trials.json"}
    fewer = _build(_report(num_tasks=30, trials_total=120, trials_scored=120), airline)
    assert fewer.document["methodology"]["verification"]["omitted_questions"] is True
    assert fewer.notices == [
        "only 30 of 50 airline tasks were run: marked omitted_questions (the leaderboard lists it as "
        "unverified)"
    ]


def test_one_submission_carries_retail_and_airline(data: RetailData, airline: DomainData) -> None:
    runs = [
        DomainRun(_source(_report(), "retail"), data),
        DomainRun(_source(_airline_report(pass_hat_k={1: 0.6, 2: 0.5, 3: 0.4, 4: 0.3}), "airline"), airline),
    ]
    submission = build_submission(runs, SUBMITTER, today=date(2026, 1, 3))
    document = submission.document
    assert (
        document["results"]["retail"]["pass_1"] == 50.0 and document["results"]["airline"]["pass_4"] == 30.0
    )
    assert submission.trajectory_files == {
        "retail": "m_retail_default_gpt-5.2_4trials.json",
        "airline": "m_airline_default_gpt-5.2_4trials.json",
    }
    assert document["trajectory_files"] == submission.trajectory_files
    assert document["submission_type"] == "standard" and submission.notices == []
    notes = document["methodology"]["notes"]
    assert "assessments a-retail (retail), a-airline (airline)" in notes
    assert "Retail: 114 tasks x 4 trials" in notes and "Airline: 50 tasks x 4 trials" in notes

    # Each domain's differences are named with its domain.
    runs[1] = DomainRun(_source(_airline_report(), "airline", seed=7), airline)
    marked = build_submission(runs, SUBMITTER, today=date(2026, 1, 3))
    assert marked.notices == ["airline: seed 7 (standard: 300)"]

    # Upstream refuses a set whose domains ran different customers; so do we, before writing anything.
    other = STANDARD_RUN.model_copy(update={"user_model": "gpt-4.1"})
    runs[1] = DomainRun(_source(_airline_report(run_info=other), "airline"), airline)
    with pytest.raises(SubmissionRefused, match="different customers"):
        build_submission(runs, SUBMITTER, today=date(2026, 1, 3))
    with pytest.raises(SubmissionRefused, match="both ran retail"):
        build_submission([runs[0], runs[0]], SUBMITTER, today=date(2026, 1, 3))
    partial = DomainRun(_source(_airline_report(excluded={"infrastructure_error": 2}), "airline"), airline)
    with pytest.raises(SubmissionRefused, match=r"assessment a-airline \(airline\): the report is partial"):
        build_submission([runs[0], partial], SUBMITTER, today=date(2026, 1, 3))


@pytest.mark.parametrize("route", ["operator", "request"])
async def test_the_documented_settings_give_the_standard_protocol(data: RetailData, route: str) -> None:
    """docs/tau2-leaderboard.md: the customer as the operator offers it or as a request names it on the
    OpenAI key, the judge, 4 trials. What the engine records for such a run names no difference; the
    guidelines are tau2's file, which the project does not ship, so their fingerprint is set as that file's
    would be."""
    low = {"reasoning_effort": "low", "temperature": None}
    judge = LLMEndpoint(model="gpt-4.1-2025-04-14")
    if route == "operator":
        settings = EngineSettings(
            user_models={"gpt-5.2": LLMEndpoint(model="gpt-5.2", extra_args=low)}, judge=judge
        )
        config = AssessmentConfig(agent_url="http://agent", user_model="gpt-5.2", trials=4)
    else:
        key = ProviderEndpoint(api_key="not-used", env_var="OPENAI_API_KEY")
        settings = EngineSettings(providers={"openai": key}, judge=judge)
        config = AssessmentConfig(
            agent_url="http://agent", user_model="openai/gpt-5.2", user_llm_args=UserLLMArgs(**low), trials=4
        )
    async with Engine(settings, data) as engine:
        run_info = engine.run_info(config)
    assert (run_info.user_model, run_info.judge_model) == ("gpt-5.2", "gpt-4.1-2025-04-14")
    run_info = run_info.model_copy(update={"user_guidelines_sha256": UPSTREAM_GUIDELINES_SHA256})
    submission = _build(_report(run_info=run_info), data)
    assert submission.notices == [] and submission.document["submission_type"] == "standard"
    if (
        route == "request"
    ):  # without "temperature": null the customer is sent temperature 0; the standard runs sent none
        del low["temperature"]
        async with Engine(settings, data) as engine:
            warm = engine.run_info(config.model_copy(update={"user_llm_args": UserLLMArgs(**low)}))
        warm = warm.model_copy(update={"user_guidelines_sha256": UPSTREAM_GUIDELINES_SHA256})
        assert _build(_report(run_info=warm), data).notices == [
            'customer arguments {"reasoning_effort": "low", "temperature": 0.0} (standard: '
            '{"reasoning_effort": "low"})'
        ]


def test_a_refused_submission_names_a_judge_only_when_none_was_configured(data: RetailData) -> None:
    with pytest.raises(SubmissionRefused) as with_judge:
        _build(_report(excluded={"infrastructure_error": 3, "not_judged": 0}), data)
    assert "configure a judge" not in str(with_judge.value)
    assert "3 infrastructure_error" in str(with_judge.value) and "LLM endpoints" in str(with_judge.value)
    no_judge = STANDARD_RUN.model_copy(update={"judge_model": None})
    with pytest.raises(SubmissionRefused, match="configure a judge") as without_judge:
        _build(_report(excluded={"infrastructure_error": 0, "not_judged": 40}, run_info=no_judge), data)
    assert "LLM endpoints" not in str(without_judge.value)


def test_submission_notes_are_separate_sentences(data: RetailData) -> None:
    """Before, the notices ran together: "...(custom submission) the customer was the scripted user..."."""
    scripted = RunInfo(user_model_name="scripted", user_model=None, user_guidelines_sha256=None)
    submission = _build(_report(num_tasks=30, num_trials=2, trials_total=60, run_info=scripted), data)
    notes = submission.document["methodology"]["notes"]
    assert len(submission.notices) == 5  # omitted tasks, trials, scripted customer, no judge, guidelines
    for notice in submission.notices:
        assert (notice[:1].upper() + notice[1:] + ".") in notes
    assert "these numbers are not comparable. NL judge none" in notes
    assert ") the" not in notes and ".." not in notes
