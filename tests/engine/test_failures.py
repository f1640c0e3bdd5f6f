"""classify_trial on hand-made trials, one per failure kind and some with several: what a vendor reads on the
trial page and in the CSV (which gold write is missing, which argument differs, which write was extra...)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from green_agent.core.limits import AgentLimits
from green_agent.core.models import (
    SIGNAL_DB,
    Failure,
    NLVerdict,
    Signal,
    ToolCallRecord,
    TranscriptMessage,
    TrialResult,
)
from green_agent.scoring import score as scoring
from green_agent.scoring.failures import NOT_SENT, classify_trial, kinds, trial_calls_with_results
from retail_domain import RetailData

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EXCHANGE = "exchange_delivered_order_items"
Call = tuple[str, dict[str, Any], bool]  # name, arguments, whether its result is an error


def gold_calls(data: RetailData, task_id: str, *, skip: str | None = None) -> list[Call]:
    return [(a.name, dict(a.arguments), False) for a in data.tasks[task_id].gold_actions if a.name != skip]


def trial(
    task_id: str,
    calls: list[Call],
    *,
    db: bool | None = False,
    reason: str = "user_stop",
    reward: float | None = 0.0,
    verdicts: list[NLVerdict] | None = None,
    error: str | None = None,
) -> TrialResult:
    transcript = [TranscriptMessage(index=0, role="assistant", content="Hi! How can I help you today?")]
    for i, (name, arguments, failed) in enumerate(calls):
        call = ToolCallRecord(id=f"c{i}", name=name, arguments=arguments)
        transcript.append(TranscriptMessage(index=len(transcript), role="assistant", tool_calls=[call]))
        content = "Error: not found" if failed else '{"ok": true}'
        transcript.append(
            TranscriptMessage(
                index=len(transcript), role="tool", content=content, tool_call_id=f"c{i}", error=failed
            )
        )
    return TrialResult(
        task_id=task_id,
        trial=0,
        seed=1,
        termination_reason=reason,
        reward=reward,
        is_successful=reward == 1.0 if reward is not None else None,
        signals=[Signal(name=SIGNAL_DB, passed=db, counts=True, detail="")],
        nl_verdicts=verdicts or [],
        transcript=transcript,
        error=error,
        steps=len(calls),
        num_errors=sum(failed for *_, failed in calls),
        started_at=NOW,
        finished_at=NOW,
    )


def classify(data: RetailData, result: TrialResult, **limits: int) -> list[Failure]:
    gold_failed = {index for index, _, _ in data.gold(result.task_id).failed_calls}
    task = data.tasks[result.task_id]
    return classify_trial(
        task, result, write_tools=data.write_tools, gold_failed=gold_failed, limits=AgentLimits(**limits)
    )


def test_a_missing_gold_write_is_named_with_what_gold_sends(data: RetailData) -> None:
    failures = classify(data, trial("0", gold_calls(data, "0", skip=EXCHANGE)))
    assert [(f.kind, f.action) for f in failures] == [("missing_action", EXCHANGE)]
    gold = data.tasks["0"].gold_actions[-1].arguments
    assert failures[0].expected == gold and failures[0].got is None
    assert failures[0].detail.startswith(f"{EXCHANGE} was never called")


def test_wrong_arguments_name_the_argument_with_gold_and_sent_values(data: RetailData) -> None:
    calls = gold_calls(data, "0")
    name, arguments, _ = calls[-1]
    wrong = {**arguments, "new_item_ids": ["7706410293", "1111111111"]}
    failures = classify(data, trial("0", [*calls[:-1], (name, wrong, False)]))
    assert [(f.kind, f.action, f.argument) for f in failures] == [
        ("wrong_arguments", EXCHANGE, "new_item_ids")
    ]
    assert failures[0].expected == ["7706410293", "7747408585"]
    assert failures[0].got == ["7706410293", "1111111111"]
    # The wrong attempt is that gold action's, not also an extra write.
    assert "extra_write" not in kinds(failures)


def test_an_argument_left_out_where_gold_compares_it_reads_not_sent(data: RetailData) -> None:
    # A copy of task 0 whose exchange compares two arguments only (compare_args), payment included.
    task = data.tasks["0"]
    action = task.gold_actions[-1]
    strict = type(action)(action.action_id, action.name, action.arguments, ("order_id", "payment_method_id"))
    strict_task = type(task)(
        task.id, task.user_scenario, (*task.gold_actions[:-1], strict), (), (), task.reward_basis
    )
    sent = {k: v for k, v in action.arguments.items() if k != "payment_method_id"}
    result = trial("0", [*gold_calls(data, "0")[:-1], (EXCHANGE, sent, False)])
    failures = classify_trial(strict_task, result, write_tools=data.write_tools)
    assert [(f.kind, f.argument, f.got) for f in failures] == [
        ("wrong_arguments", "payment_method_id", NOT_SENT)
    ]


def test_a_write_the_task_did_not_want_is_extra(data: RetailData) -> None:
    cancel = ("cancel_pending_order", {"order_id": "#W9999999", "reason": "no longer needed"}, False)
    failures = classify(data, trial("0", [*gold_calls(data, "0"), cancel]))
    assert [(f.kind, f.action) for f in failures] == [("extra_write", "cancel_pending_order")]
    assert failures[0].got == cancel[1]
    # A write that failed changed nothing: a tool error, not an extra write.
    failed = classify(data, trial("0", [*gold_calls(data, "0"), (*cancel[:2], True)]))
    assert kinds(failed) == ["db_difference", "tool_errors"]


def test_a_db_difference_no_call_explains(data: RetailData) -> None:
    failures = classify(
        data, trial("0", gold_calls(data, "0"))
    )  # every gold write made, DB differs all the same
    assert [f.kind for f in failures] == ["db_difference"]
    # A DB equal to gold (a trial failed by its NL assertion): no write analysis, whatever the calls were.
    verdict = NLVerdict(index=0, assertion="Agent should say so.", passed=False, reason="it did not")
    nl = classify(data, trial("0", gold_calls(data, "0", skip=EXCHANGE), db=True, verdicts=[verdict]))
    assert [(f.kind, f.expected, f.got) for f in nl] == [
        ("nl_assertion", "Agent should say so.", "it did not")
    ]
    assert nl[0].detail == "NL assertion 1 not met: Agent should say so."


def test_tool_errors_but_not_the_ones_gold_makes_too(data: RetailData) -> None:
    bogus = ("get_order_details", {"order_id": "#W0000000"}, True)
    calls = [
        bogus,
        *(
            (n, a, n == "get_product_details" and a["product_id"] == "6086499569")
            for n, a, _ in gold_calls(data, "2")
        ),
    ]
    # Task 2's gold looks up product 6086499569, which does not exist: the agent doing the same is no error
    # of its own; the bogus order lookup is.
    failures = classify(data, trial("2", calls, db=False))
    errors = [f for f in failures if f.kind == "tool_errors"]
    assert [(f.action, f.got) for f in errors] == [("get_order_details", "Error: not found")]
    assert errors[0].detail == "get_order_details (call 1) returned an error: Error: not found"


def test_terminations_say_which_limit_or_error(data: RetailData) -> None:
    calls = gold_calls(data, "0")
    steps = classify(data, trial("0", calls, db=True, reason="max_steps"))
    assert [(f.kind, f.got) for f in steps] == [("termination", "max_steps")]
    assert "step limit (5 steps, max_steps)" in steps[0].detail
    errors = classify(data, trial("0", calls, db=True, reason="too_many_errors"))
    assert "tool errors (max_errors)" in errors[0].detail
    agent = classify(data, trial("0", calls, db=True, reason="agent_error", error="timed out\ntraceback"))
    assert agent[0].detail == "the agent failed: timed out"
    ours = classify(data, trial("0", calls, db=True, reason="internal_error"))
    assert "bug of its own" in ours[0].detail


def test_a_trial_carries_several_failures_in_kind_order(data: RetailData) -> None:
    verdict = NLVerdict(index=0, assertion="Agent should say so.", passed=False, reason="no")
    bogus = ("get_order_details", {"order_id": "#W0000000"}, True)
    result = trial(
        "0", [bogus, *gold_calls(data, "0", skip=EXCHANGE)], reason="max_steps", verdicts=[verdict]
    )
    assert kinds(classify(data, result)) == ["termination", "missing_action", "nl_assertion", "tool_errors"]


def test_passed_and_excluded_trials_have_none(data: RetailData) -> None:
    assert classify(data, trial("0", gold_calls(data, "0"), db=True, reward=1.0)) == []
    excluded = trial("0", [], reason="infrastructure_error", reward=None)
    assert classify(data, excluded) == []


def test_bounds_on_what_failures_quote(data: RetailData) -> None:
    bogus = [("get_order_details", {"order_id": f"#W{i:07d}"}, True) for i in range(4)]
    at = classify(data, trial("0", [*gold_calls(data, "0"), *bogus], db=True), max_failures_per_kind=4)
    assert [f.kind for f in at].count("tool_errors") == 4  # at the bound: all listed
    past = classify(data, trial("0", [*gold_calls(data, "0"), *bogus], db=True), max_failures_per_kind=3)
    listed = [f for f in past if f.kind == "tool_errors"]
    assert (
        len(listed) == 4 and listed[-1].detail == "and 1 more tool_errors not listed (max_failures_per_kind)"
    )

    long_note = "x" * 200
    calls = [*gold_calls(data, "0"), ("modify_user_address", {"user_id": "u", "address1": long_note}, False)]
    fits = classify(data, trial("0", calls), max_failure_value_bytes=256)
    assert fits[0].got == calls[-1][1]  # its compact JSON fits in 256 bytes
    cut = classify(data, trial("0", calls), max_failure_value_bytes=128)
    assert isinstance(cut[0].got, str) and cut[0].got.endswith("over 128 bytes]")
    assert len(cut[0].got.encode()) <= 128 and len(cut[0].detail.encode()) <= 128


def test_calls_are_paired_with_their_results_in_order(data: RetailData) -> None:
    result = trial("0", [("get_order_details", {"order_id": "#W1"}, True), ("get_user_details", {}, False)])
    calls = trial_calls_with_results(result)
    assert [(c.index, c.name, c.error) for c in calls] == [
        (0, "get_order_details", True),
        (1, "get_user_details", False),
    ]
    cut_short = result.model_copy(
        update={"transcript": result.transcript[:-1]}
    )  # no result for the last call
    assert trial_calls_with_results(cut_short)[-1].error is None


def test_a_bug_in_the_classification_leaves_failures_unknown_never_the_score(
    data: RetailData, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Failures are a diagnostic: scoring keeps its verdict, and logs the bug."""

    def broken(*args: Any, **kwargs: Any) -> list[Failure]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(scoring, "classify_trial", broken)
    deps = SimpleNamespace(data=data, limits=AgentLimits())
    result = trial("0", gold_calls(data, "0", skip=EXCHANGE))
    assert scoring.failures_of(result, data.tasks["0"], deps) is None  # type: ignore[arg-type]
    assert "classifying the failures of trial 0/0" in caplog.text
