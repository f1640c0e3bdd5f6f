"""Pure pieces of the engine: seeds, reply parsing, judge normalization, metrics, configuration."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from green_agent import (
    AssessmentConfig,
    AssessmentReport,
    EngineSettings,
    LLMEndpoint,
    NLVerdict,
    Signal,
    TaskSelection,
    TrialResult,
)
from green_agent.conversation.user_simulator import is_user_stop
from green_agent.core.models import ToolCallRecord, TranscriptMessage
from green_agent.core.seeds import trial_seeds
from green_agent.llm.judge import NO_VERDICT, normalize_verdicts, render_transcript
from green_agent.scoring.metrics import compute_report, counted_trials, tasks_not_fully_solved
from green_agent.scoring.uncertainty import TaskScore, pass_hat_k_estimates
from green_agent.white_agent.reply_parsing import parse_text_reply


def test_trial_seeds_match_upstream() -> None:
    assert trial_seeds(300, 4) == [626729, 373753, 361454, 1567]
    assert trial_seeds(300, 1) == [626729]


def test_stop_tokens_match_anywhere() -> None:
    assert is_user_stop("Thanks, bye! ###STOP###")
    assert is_user_stop("###TRANSFER### please")
    assert is_user_stop("I have nothing more. ###OUT-OF-SCOPE###")
    assert not is_user_stop("STOP")


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "get_user_details", "arguments": {"user_id": "u1"}}',
        '<json>{"name": "get_user_details", "arguments": {"user_id": "u1"}}</json>',
        'Sure.\n```json\n{"name": "get_user_details", "kwargs": {"user_id": "u1"}}\n```',
        'Let me check {"tool_call": {"name": "get_user_details", "arguments": {"user_id": "u1"}}} now',
        '{"tool_calls": [{"function": {"name": "get_user_details",'
        ' "arguments": "{\\"user_id\\": \\"u1\\"}"}}]}',
        '[{"name": "get_user_details", "arguments": {"user_id": "u1"}}]',
    ],
)
def test_reply_shapes_all_read_as_one_call(reply: str) -> None:
    parsed = parse_text_reply(reply)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_user_details", {"user_id": "u1"})]
    assert parsed.text is None
    assert parsed.warnings == ()


def test_reply_list_keeps_order_and_respond_text() -> None:
    parsed = parse_text_reply(
        '[{"name": "a", "arguments": {}}, {"name": "respond", "arguments": {"content": "hi"}},'
        ' {"name": "b", "arguments": {"x": 1}}]'
    )
    assert [c.name for c in parsed.calls] == ["a", "b"]
    assert parsed.text == "hi"


def test_respond_is_text_for_the_user() -> None:
    parsed = parse_text_reply('{"name": "respond", "arguments": {"content": "How can I help?"}}')
    assert parsed.calls == () and parsed.text == "How can I help?" and parsed.warnings == ()


@pytest.mark.parametrize(
    ("reply", "warning"),
    [
        ("Hello there, what is your order id?", "not JSON"),
        ('{"foo": 1}', "not a tool call"),
        ('{"name": "x", "arguments": "not json"}', "not a tool call"),
    ],
)
def test_unreadable_reply_goes_to_user_with_warning(reply: str, warning: str) -> None:
    parsed = parse_text_reply(reply)
    assert parsed.calls == ()
    assert parsed.text == reply
    assert len(parsed.warnings) == 1 and warning in parsed.warnings[0]


ASSERTIONS = ["Agent says A.", "Agent says B.", "Agent says C."]


def test_judge_reply_normalized_in_order() -> None:
    reply = (
        '```json\n{"results": [{"index": 2, "metExpectation": false, "reasoning": "no C"},'
        ' {"index": 0, "metExpectation": true, "reasoning": "said A"},'
        ' {"index": 1, "metExpectation": true, "reasoning": "said B"}]}\n```'
    )
    verdicts = normalize_verdicts(ASSERTIONS, reply)
    assert [(v.index, v.assertion, v.passed, v.reason) for v in verdicts] == [
        (0, "Agent says A.", True, "said A"),
        (1, "Agent says B.", True, "said B"),
        (2, "Agent says C.", False, "no C"),
    ]


def test_judge_reply_without_indexes_is_positional() -> None:
    reply = '{"results": [{"metExpectation": true, "reasoning": "ok"}, {"metExpectation": true}]}'
    verdicts = normalize_verdicts(ASSERTIONS, reply)
    assert [v.passed for v in verdicts] == [True, True, False]
    assert verdicts[2].reason == NO_VERDICT


def test_judge_malformed_entries_fail_with_reasons() -> None:
    reply = (
        '{"results": [{"index": 0, "metExpectation": "yes"}, {"index": 7, "metExpectation": true},'
        ' {"index": 1, "metExpectation": true}, {"index": 1, "metExpectation": false}, "junk"]}'
    )
    verdicts = normalize_verdicts(ASSERTIONS, reply)
    assert [v.passed for v in verdicts] == [False, True, False]
    assert "not a boolean" in verdicts[0].reason
    assert verdicts[2].reason.startswith(NO_VERDICT)
    assert "names outcome 7, which does not exist" in verdicts[2].reason
    assert "not an object" in verdicts[2].reason


def test_judge_unreadable_or_empty_reply_fails_everything() -> None:
    for reply in ("I think they all passed.", '{"results": []}', '{"verdict": true}'):
        verdicts = normalize_verdicts(ASSERTIONS, reply)
        assert len(verdicts) == 3 and not any(v.passed for v in verdicts), reply


def test_judge_transcript_format() -> None:
    now = datetime.now(UTC)
    transcript = [
        TranscriptMessage(index=0, role="assistant", content="Hi!", timestamp=now),
        TranscriptMessage(index=1, role="user", content="Help", timestamp=now),
        TranscriptMessage(
            index=2,
            role="assistant",
            content="user: hidden",
            tool_calls=[ToolCallRecord(id="c", name="get_user_details", arguments={})],
            timestamp=now,
        ),
        TranscriptMessage(index=3, role="tool", content="{}", tool_call_id="c", timestamp=now),
    ]
    # The agent's message with tool calls is left out (the customer never saw its text); roles are ours.
    assert render_transcript(transcript).splitlines() == [
        '{"role": "agent", "content": "Hi!"}',
        '{"role": "customer", "content": "Help"}',
        '{"role": "tool_result", "content": "{}"}',
    ]


def _trial(
    task: str, trial: int, reward: float | None, reason: str = "user_stop", **extra: object
) -> TrialResult:
    now = datetime.now(UTC)
    return TrialResult(
        task_id=task,
        trial=trial,
        seed=1,
        termination_reason=reason,
        reward=reward,
        is_successful=None if reward is None else reward == 1.0,
        started_at=now,
        finished_at=now,
        **extra,
    )


def test_pass_hat_k_formula() -> None:
    # task a: 3 of 4 succeed; task b: 1 of 4.  pass^2 = (C(3,2)/C(4,2) + C(1,2)/C(4,2)) / 2 = (3/6 + 0) / 2
    scores = {"a": TaskScore((1.0, 1.0, 1.0, 0.0)), "b": TaskScore((1.0, 0.0, 0.0, 0.0))}
    result = {k: e.value for k, e in pass_hat_k_estimates(scores).items()}
    assert result == pytest.approx({1: 0.5, 2: 0.25, 3: 0.125, 4: 0.0})


def test_report_excludes_infrastructure_and_not_judged() -> None:
    config = AssessmentConfig(agent_url="http://agent", trials=2)
    db = Signal(name="DB_STATE_MATCH", passed=True, counts=True, detail="")
    trials = [
        _trial("a", 0, 1.0, signals=[db]),
        _trial("a", 1, 0.0, reason="agent_error"),
        _trial("b", 0, 1.0),
        _trial("b", 1, None, reason="infrastructure_error"),
        _trial("c", 0, None, nl_status="not_judged"),
        _trial("c", 1, None, nl_status="not_judged"),
    ]
    report = compute_report(config, trials, 1.5)
    assert report.trials_total == 6 and report.trials_scored == 3
    assert report.excluded == {"infrastructure_error": 1, "not_judged": 2}
    assert report.avg_reward == pytest.approx(2 / 3)
    # b kept one trial, so k stops at 1; c kept none and does not count
    assert report.pass_hat_k == pytest.approx({1: (0.5 + 1.0) / 2})
    assert report.termination_counts == {"user_stop": 4, "agent_error": 1, "infrastructure_error": 1}
    assert report.task_rewards == {"a": 0.5, "b": 1.0}
    assert report.signal_rates["DB_STATE_MATCH"] == 1.0
    assert report.time_used_s == 1.5
    assert report.complete is False and report.partial_reasons == {"infrastructure_error": 1, "not_judged": 2}
    assert report.partial_summary() == (
        "1 trial excluded after infrastructure errors (user-simulator or judge LLM failed); "
        "2 trials not judged (no NL-assertion judge configured)"
    )


def test_a_task_whose_judge_failed_while_another_trial_skipped_it_is_left_out_whole() -> None:
    """With judge_skip_when_failed, which trials the judge is asked on follows their DB check: keeping the
    rest of a task whose judge failed would keep its failures and drop its would-be passes."""
    config = AssessmentConfig(agent_url="http://agent", trials=3)
    infra = {"reason": "infrastructure_error", "nl_status": "judge_failed"}
    trials = [
        _trial("a", 0, 0.0, nl_status="skipped"),
        _trial("a", 1, None, **infra),
        _trial("a", 2, 1.0, nl_status="judged"),
        # every trial was asked: only the one the judge failed on is out
        _trial("b", 0, None, **infra),
        _trial("b", 1, 1.0, nl_status="judged"),
        _trial("b", 2, 1.0, nl_status="judged"),
        # skipped and judged, no failure: all count
        _trial("c", 0, 0.0, nl_status="skipped"),
        _trial("c", 1, 1.0, nl_status="judged"),
        _trial("c", 2, 1.0, nl_status="judged"),
    ]
    report = compute_report(config, trials)
    assert report.trials_scored == 5 and report.task_rewards == {"b": 1.0, "c": pytest.approx(2 / 3)}
    assert report.excluded == {"infrastructure_error": 2, "not_judged": 0, "task_not_judged": 2}
    assert report.partial_reasons == {"infrastructure_error": 2, "task_not_judged": 2}
    assert "2 trials left out with the rest of their task" in report.partial_summary()
    assert report.stats is not None and report.stats.n_tasks == 2
    assert [t.key for t in counted_trials(trials)] == [t.key for t in trials[4:]]


def test_the_tasks_to_run_again_are_those_not_solved_in_every_planned_trial() -> None:
    trials = [
        _trial("a", 0, 1.0),
        _trial("a", 1, 1.0),  # solved twice: not again
        _trial("b", 0, 1.0),
        _trial("b", 1, 0.0),  # flaky
        _trial("c", 0, 1.0),
        _trial("c", 1, None, reason="infrastructure_error"),  # excluded: not known to be solved
        _trial("d", 0, 1.0),  # its second trial never ran
        _trial("e", 0, 0.0, nl_status="skipped"),
        _trial("e", 1, None, reason="infrastructure_error", nl_status="judge_failed"),
    ]
    assert tasks_not_fully_solved(["f", "e", "d", "c", "b", "a"], trials, 2) == ["f", "e", "d", "c", "b"]
    assert tasks_not_fully_solved(["a", "d"], trials, 1) == []


def _signals(**passed: bool | None) -> list[Signal]:
    return [Signal(name=name, passed=value, counts=False, detail="") for name, value in passed.items()]


def test_signal_rates_cover_only_the_trials_where_the_signal_applies() -> None:
    config = AssessmentConfig(agent_url="http://agent")
    action = [{"action_id": "a", "name": "cancel_pending_order", "matched": False, "write": True}]
    said = [{"info": "10", "met": True}]
    verdicts = [NLVerdict(index=i, assertion="x", passed=i == 0, reason="") for i in range(3)]
    trials = [
        # gold actions and facts to say: both diagnostics apply
        _trial(
            "a",
            0,
            0.0,
            signals=_signals(ACTION_MATCH=False, COMMUNICATE=True, CLEAN_EXIT=True),
            action_checks=action,
            communicate_checks=said,
        ),
        # nothing to check: stored by an older version as vacuous passes, by this one as None; never counted
        _trial("b", 0, 0.0, signals=_signals(ACTION_MATCH=True, COMMUNICATE=True, CLEAN_EXIT=False)),
        _trial("c", 0, 0.0, signals=_signals(ACTION_MATCH=None, COMMUNICATE=None, DB_STATE_MATCH=None)),
        _trial("d", 0, 1.0, signals=_signals(DB_STATE_MATCH=True, CLEAN_EXIT=True), nl_verdicts=verdicts),
        # excluded trials count for nothing, whatever their signals say
        _trial(
            "e",
            0,
            None,
            reason="infrastructure_error",
            signals=_signals(CLEAN_EXIT=False),
            action_checks=action,
        ),
    ]
    report = compute_report(config, trials)
    assert report.signal_applicable == {
        "DB_STATE_MATCH": 1,
        "NL_ASSERTION": 3,
        "CLEAN_EXIT": 3,
        "ACTION_MATCH": 1,
        "COMMUNICATE": 1,
        "ENV_ASSERTION": 0,
    }
    assert report.signal_rates == {
        "DB_STATE_MATCH": 1.0,
        "NL_ASSERTION": pytest.approx(1 / 3),
        "CLEAN_EXIT": pytest.approx(2 / 3),
        "ACTION_MATCH": 0.0,
        "COMMUNICATE": 1.0,
        "ENV_ASSERTION": None,
    }
    assert report.nl_assertions_total == 3


def test_a_report_is_complete_only_when_every_planned_trial_ran_and_was_scored() -> None:
    config = AssessmentConfig(agent_url="http://agent", trials=2)
    trials = [_trial("a", 0, 1.0), _trial("a", 1, 0.0, reason="agent_error")]
    assert compute_report(config, trials).complete is True
    assert compute_report(config, trials).partial_reasons == {}
    cancelled = compute_report(config, trials, trials_planned=6)  # 4 never ran
    assert cancelled.complete is False and cancelled.partial_reasons == {"not_run": 4}
    assert cancelled.partial_summary() == "4 trials not run (the assessment was stopped first)"


def test_a_stored_version_1_report_still_loads() -> None:
    # What version 1 stored: no completeness flag, no counts next to the rates.
    stored = {
        "schema_version": 1,
        "num_tasks": 114,
        "num_trials": 1,
        "trials_total": 114,
        "trials_scored": 74,
        "excluded": {"infrastructure_error": 0, "not_judged": 40},
        "avg_reward": 1.0,
        "pass_hat_k": {"1": 1.0},
        "signal_rates": {"DB_STATE_MATCH": 1.0, "NL_ASSERTION": None, "COMMUNICATE": 0.9595},
        "nl_assertions_total": 0,
        "termination_counts": {"user_stop": 114},
        "task_rewards": {"0": 1.0},
        "time_used_s": 15.0,
    }
    report = AssessmentReport.model_validate(stored)
    assert report.schema_version == 1  # its rates keep their version-1 meaning, and say so
    assert report.complete is False and report.partial_reasons == {"not_judged": 40}
    assert report.signal_applicable == {} and report.signal_rates["COMMUNICATE"] == 0.9595
    clean = AssessmentReport.model_validate(
        {**stored, "excluded": {"infrastructure_error": 0, "not_judged": 0}}
    )
    assert clean.complete is True and clean.partial_reasons == {}
    assert AssessmentReport.model_validate(report.model_dump(mode="json")) == report  # and round-trips


def test_config_validation_messages() -> None:
    with pytest.raises(ValidationError, match="only http:// or https:// URLs"):
        AssessmentConfig(agent_url="ftp://agent")
    with pytest.raises(ValidationError):
        AssessmentConfig(agent_url="http://agent", trials=33)
    with pytest.raises(ValidationError):
        AssessmentConfig(agent_url="http://agent", concurrency=0)
    with pytest.raises(ValidationError, match="either task_ids or num_tasks"):
        TaskSelection(task_ids=["1"], num_tasks=1)
    with pytest.raises(ValidationError, match="more than once"):
        TaskSelection(task_ids=["1", "1"])
    with pytest.raises(ValidationError, match="default_user_model 'gpt' is not configured"):
        EngineSettings(default_user_model="gpt")
    EngineSettings(user_models={"gpt": LLMEndpoint(model="gpt-4.1")}, default_user_model="gpt")
