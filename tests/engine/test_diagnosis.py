"""replay_trial: a stored trial's tool calls, replayed on a fresh DB, diffed against gold."""

from __future__ import annotations

from datetime import UTC, datetime

from green_agent.diagnosis import replay_trial, trial_calls
from green_agent.models import ToolCallRecord, TranscriptMessage, TrialResult
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
