"""A re-scored tau2 simulation as this service's `TrialResult`, so `green-agent rescore --store` can keep a
tau2 file as an assessment (source `import`) that the API and the UI show like any other.

The verdict stored is the *recomputed* one; the transcript is the file's (assistant/user/tool messages with
tool calls and results). What the file does not record (protocol warnings, step counts) stays empty."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from domain_kit import Task
from green_agent.core.models import (
    SIGNAL_DB,
    SIGNAL_NL,
    NLVerdict,
    Signal,
    ToolCallRecord,
    TranscriptMessage,
    TrialResult,
)
from green_agent.scoring.metrics import is_success
from green_agent.scoring.score import env_signal, exit_and_diagnostic_signals
from green_agent.tau2_format.replay import SimulationRescore, iter_messages


def imported_trial(
    simulation: Mapping[str, Any],
    outcome: SimulationRescore,
    task: Task,
    verdicts: Sequence[NLVerdict] | None,
) -> TrialResult:
    db_match = outcome.db_match.recomputed
    # not judged: the judge was not configured, or not needed (the reward is 0 whatever it says)
    nl_status = "judged" if verdicts is not None else ("not_judged" if task.judged else "not_required")
    reward = outcome.reward.recomputed
    actions, said = outcome.action_checks, outcome.communicate_checks
    signals = [
        Signal(
            name=SIGNAL_DB,
            passed=db_match,
            counts="DB" in task.reward_basis,
            detail="not checked after a premature end"
            if db_match is None
            else f"recomputed: match={db_match}",
        ),
        Signal(
            name=SIGNAL_NL,
            passed=all(v.passed for v in verdicts)
            if verdicts is not None
            else (None if task.judged else True),
            counts="NL_ASSERTION" in task.reward_basis,
            detail=f"{nl_status} on import",
        ),
        *exit_and_diagnostic_signals(task, outcome.termination_reason, actions, said),
        env_signal(task, outcome.assertion_checks, evaluated=True, unfinished=False),
    ]
    started = _time(simulation.get("start_time"))
    return TrialResult(
        task_id=outcome.task_id,
        trial=outcome.trial if isinstance(outcome.trial, int) and outcome.trial >= 0 else 0,
        seed=simulation["seed"] if isinstance(simulation.get("seed"), int) else 0,
        termination_reason=outcome.termination_reason,
        reward=reward,
        is_successful=is_success(reward) if reward is not None else None,
        signals=signals,
        nl_status=nl_status,
        nl_verdicts=list(verdicts or ()),
        db_expected_hash=outcome.gold_hash,
        db_actual_hash=outcome.db_hash,
        action_checks=[dataclasses.asdict(a) for a in actions],
        communicate_checks=[dataclasses.asdict(c) for c in said],
        env_assertion_checks=[dataclasses.asdict(a) for a in outcome.assertion_checks],
        transcript=transcript(simulation),
        started_at=started,
        finished_at=_time(simulation.get("end_time"), default=started),
    )


def transcript(simulation: Mapping[str, Any]) -> list[TranscriptMessage]:
    """The file's messages as this service's transcript (system messages, if any, left out)."""
    out: list[TranscriptMessage] = []
    for message in iter_messages(simulation):
        role = message.get("role")
        if role not in ("assistant", "user", "tool"):
            continue
        content = message.get("content")
        calls = [
            ToolCallRecord(
                id=str(c.get("id") or ""), name=str(c.get("name")), arguments=dict(c.get("arguments") or {})
            )
            for c in message.get("tool_calls") or ()
        ]
        out.append(
            TranscriptMessage(
                index=len(out),
                role=role,
                content=content if isinstance(content, str) else None,
                tool_calls=calls or None,
                tool_call_id=str(message.get("id")) if role == "tool" else None,
                error=bool(message.get("error")) if role == "tool" else False,
                timestamp=_time(message.get("timestamp")),
            )
        )
    return out


def _time(value: Any, default: datetime | None = None) -> datetime:
    """tau2 writes naive local ISO times; they are read as UTC (the file does not say which zone)."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return default or datetime.now(UTC)
