"""replay_trial: a stored trial's tool calls, replayed on a fresh DB, diffed against gold."""

from __future__ import annotations

from datetime import UTC, datetime

from green_agent.core.models import SIGNAL_DB, Signal, ToolCallRecord, TranscriptMessage, TrialResult
from green_agent.scoring.diagnosis import diagnose, replay_trial, trial_calls
from retail_domain import RetailData

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def result_with_calls(
    data: RetailData, task_id: str, skip_last: bool, stored_hash: str | None
) -> TrialResult:
    actions = list(data.tasks[task_id].gold_actions)
    if skip_last:
        actions = actions[:-1]
    transcript = [TranscriptMessage(index=0, role="assistant", content="Hi! How can I help you today?")]
    for i, action in enumerate(actions):
        call = ToolCallRecord(id=f"c{i}", name=action.name, arguments=dict(action.arguments))
        transcript.append(TranscriptMessage(index=len(transcript), role="assistant", tool_calls=[call]))
        transcript.append(
            TranscriptMessage(index=len(transcript), role="tool", content="...", tool_call_id=f"c{i}")
        )
    return TrialResult(
        task_id=task_id,
        trial=0,
        seed=1,
        termination_reason="user_stop",
        reward=0.0,
        is_successful=False,
        transcript=transcript,
        db_actual_hash=stored_hash,
        started_at=NOW,
        finished_at=NOW,
    )


def test_replay_of_a_trial_that_skipped_the_write(data: RetailData) -> None:
    # Task 0's last gold action is the exchange; without it the order stays delivered.
    result = result_with_calls(data, "0", skip_last=True, stored_hash=None)
    assert [c.name for c in trial_calls(result)] == [a.name for a in data.tasks["0"].gold_actions[:-1]]
    replay = replay_trial(data, result)
    assert not replay.matched and replay.calls == 4 and replay.gold_hash == data.gold("0").db_hash
    status = [d for d in replay.differences if d.path.endswith(".status")]
    assert [(d.actual, d.expected) for d in status] == [("delivered", "exchange requested")]
    assert replay.reproduced  # nothing stored to compare with

    stored = result.model_copy(update={"db_actual_hash": replay.replayed_hash})
    assert replay_trial(data, stored).reproduced
    assert not replay_trial(data, result.model_copy(update={"db_actual_hash": "f" * 64})).reproduced


def test_replay_of_the_gold_calls_matches(data: RetailData) -> None:
    replay = replay_trial(data, result_with_calls(data, "0", skip_last=False, stored_hash=None))
    assert replay.matched and replay.differences == []


def test_diagnose_names_the_missing_write_and_replays_the_db(data: RetailData) -> None:
    result = result_with_calls(data, "0", skip_last=True, stored_hash=None)
    failed = result.model_copy(
        update={
            "signals": [Signal(name=SIGNAL_DB, passed=False, counts=True, detail="")],
            "db_expected_hash": data.gold("0").db_hash,
        }
    )
    diagnosis = diagnose(data, failed)
    assert diagnosis.replay is not None and not diagnosis.replay.matched
    assert [(f.kind, f.action) for f in diagnosis.failures or []] == [
        ("missing_action", "exchange_delivered_order_items")
    ]
    passed = diagnose(data, result_with_calls(data, "0", skip_last=False, stored_hash=None))
    assert passed.failures == [] and passed.replay is None  # no DB hash stored: nothing to replay


def test_a_db_difference_no_call_explains_lists_the_fields(data: RetailData) -> None:
    """Upstream's ACTION check compares the keys of the call when the gold action has no compare_args: an
    exchange without its payment method "matches" gold, yet the tool refuses it and the DB stays as it was."""
    result = result_with_calls(data, "0", skip_last=False, stored_hash=None)
    call = result.transcript[-2].tool_calls[0]  # type: ignore[index]
    del call.arguments["payment_method_id"]
    result.transcript[-1].error = True
    result = result.model_copy(
        update={
            "signals": [Signal(name=SIGNAL_DB, passed=False, counts=True, detail="")],
            "db_expected_hash": data.gold("0").db_hash,
        }
    )
    failures = diagnose(data, result).failures or []
    fields = [(f.argument or "", f.got, f.expected) for f in failures if f.kind == "db_difference"]
    assert any(
        path.endswith(".status") and (got, gold) == ("delivered", "exchange requested")
        for path, got, gold in fields
    ), fields
    assert [f.kind for f in failures][-1] == "tool_errors"
