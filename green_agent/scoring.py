"""Turning a finished conversation into a `TrialResult`: the checks, the judge, the reward and the signals.

The reward is retail_domain's `score_trial` (tau2's rule). On top, named signals explain the verdict:
DB_STATE_MATCH, NL_ASSERTION and CLEAN_EXIT gate success; ACTION_MATCH and COMMUNICATE are diagnostics. The
judge runs only after a clean exit, only for tasks whose reward needs it; with no judge configured every
trial of such a task has no reward (`nl_status="not_judged"`) and is excluded from the metrics, visibly.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from green_agent.errors import InfrastructureError
from green_agent.judge import Judge
from green_agent.metrics import is_success
from green_agent.models import (
    SIGNAL_ACTION,
    SIGNAL_CLEAN_EXIT,
    SIGNAL_COMMUNICATE,
    SIGNAL_DB,
    SIGNAL_NL,
    NLVerdict,
    Signal,
    TrialResult,
    utcnow,
)
from retail_domain import (
    RetailData,
    Task,
    TerminationReason,
    ToolCall,
    check_actions,
    check_communicate,
    check_db,
    is_clean_exit,
    score_trial,
)

if TYPE_CHECKING:
    from green_agent.orchestrator import TrialSpec, TrialState


NLStatus = Literal["not_required", "judged", "not_judged"]


@dataclasses.dataclass
class _Judgement:
    status: NLStatus = "not_required"
    verdicts: list[NLVerdict] = dataclasses.field(default_factory=list)
    judge_input: str | None = None


async def score(
    spec: TrialSpec,
    data: RetailData,
    judge: Judge | None,
    state: TrialState,
    reason: TerminationReason,
    started: datetime,
) -> TrialResult:
    task = spec.task
    judgement = _Judgement(status="not_judged" if task.judged else "not_required")
    if task.judged and judge is not None and is_clean_exit(reason):
        try:
            outcome = await judge.judge(task.nl_assertions, state.transcript)
            judgement = _Judgement("judged", outcome.verdicts, outcome.judge_input)
        except InfrastructureError as exc:
            reason, state.error = TerminationReason.INFRASTRUCTURE_ERROR, f"judge failed: {exc}"

    gold_hash = data.gold(task.id).db_hash
    db = check_db(state.db_hash, gold_hash) if state.db_hash is not None else None
    verdict_flags = [v.passed for v in judgement.verdicts] if judgement.status == "judged" else None
    reward = score_trial(task, reason, db.matched if db else False, verdict_flags).reward
    if task.judged and judge is None and reason != TerminationReason.INFRASTRUCTURE_ERROR:
        # With no judge this task cannot be scored as tau2 scores it, however the trial ended: all its trials
        # are excluded. Counting only the ones whose reward is 0 anyway (an unclean exit, a DB mismatch) would
        # bias the assessment downwards.
        reward = None

    calls = [
        ToolCall(call.name, call.arguments)
        for message in state.transcript
        if message.role == "assistant"
        for call in message.tool_calls or ()
    ]
    actions = check_actions(task.gold_actions, calls)
    said = [m.content for m in state.transcript if m.role == "assistant"]
    communicate = check_communicate(task.communicate_info, said)
    verdicts = judgement.verdicts
    nl_rate = sum(v.passed for v in verdicts) / len(verdicts) if verdicts else None

    signals = [
        Signal(
            name=SIGNAL_DB,
            passed=db.matched if db else None,
            counts="DB" in task.reward_basis,
            detail=("final DB equals the gold DB" if db.matched else "final DB differs from the gold DB")
            if db
            else "no final DB",
        ),
        _nl_signal(task, judgement, nl_rate),
        Signal(
            name=SIGNAL_CLEAN_EXIT,
            passed=is_clean_exit(reason),
            counts=True,
            detail=f"ended with {reason}",
        ),
        _diagnostic(SIGNAL_ACTION, [a.matched for a in actions], "gold actions matched", "no gold actions"),
        _diagnostic(
            SIGNAL_COMMUNICATE, [c.met for c in communicate], "required facts said", "no facts to communicate"
        ),
    ]
    return TrialResult(
        task_id=task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=str(reason),
        reward=reward,
        is_successful=is_success(reward) if reward is not None else None,
        signals=signals,
        nl_status=judgement.status,
        nl_verdicts=verdicts,
        nl_assertion_pass_rate=nl_rate,
        judge_input=judgement.judge_input,
        db_expected_hash=gold_hash,
        db_actual_hash=state.db_hash,
        action_checks=[dataclasses.asdict(a) for a in actions],
        communicate_checks=[dataclasses.asdict(c) for c in communicate],
        transcript=state.transcript,
        protocol_warnings=state.warnings,
        error=state.error,
        steps=state.steps,
        num_errors=state.num_errors,
        started_at=started,
        finished_at=utcnow(),
    )


def _diagnostic(name: str, checks: list[bool], what: str, nothing: str) -> Signal:
    """ACTION_MATCH or COMMUNICATE: not applicable (None) when the task has nothing to check, since a vacuous
    pass says nothing about the agent."""
    if not checks:
        return Signal(name=name, passed=None, counts=False, detail=f"{nothing} in this task (not applicable)")
    return Signal(
        name=name, passed=all(checks), counts=False, detail=f"{sum(checks)}/{len(checks)} {what} (diagnostic)"
    )


def _nl_signal(task: Task, judgement: _Judgement, rate: float | None) -> Signal:
    counts = "NL_ASSERTION" in task.reward_basis
    if judgement.status == "judged":
        passed = sum(v.passed for v in judgement.verdicts)
        detail = f"{passed}/{len(judgement.verdicts)} assertions passed"
        return Signal(name=SIGNAL_NL, passed=rate == 1.0, counts=counts, detail=detail)
    if judgement.status == "not_judged":
        detail = f"{len(task.nl_assertions)} assertions not judged"
        return Signal(name=SIGNAL_NL, passed=None, counts=counts, detail=detail)
    return Signal(name=SIGNAL_NL, passed=True, counts=counts, detail="no assertions to judge for this task")


def unscored(spec: TrialSpec, state: TrialState, started: datetime, error: str) -> TrialResult:
    """The result of a trial that could not be scored: an infrastructure error, excluded from the metrics."""
    return TrialResult(
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=str(TerminationReason.INFRASTRUCTURE_ERROR),
        reward=None,
        is_successful=None,
        transcript=state.transcript,
        protocol_warnings=state.warnings,
        error=error,
        steps=state.steps,
        num_errors=state.num_errors,
        db_actual_hash=state.db_hash,
        started_at=started,
        finished_at=utcnow(),
    )
