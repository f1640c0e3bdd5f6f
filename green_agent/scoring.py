"""Turning a finished conversation into a `TrialResult`: the checks, the judge, the reward and the signals.

The reward is retail_domain's `score_trial` (tau2's rule). On top, named signals explain the verdict:
DB_STATE_MATCH, NL_ASSERTION and CLEAN_EXIT gate success; ACTION_MATCH and COMMUNICATE are diagnostics. The
judge runs only for tasks whose reward needs it, and only when its verdicts can still change the reward (a
clean exit whose DB check passed): a trial already at 0 is scored 0 without it. With no judge configured,
the trials of such a task whose reward is not already 0 have no reward (`nl_status="not_judged"`) and are
excluded from the metrics, visibly.

COMMUNICATE and the judge read only what the customer saw (`customer_visible_texts`,
`judge.customer_visible`): text the agent attaches to a tool call never reaches the customer, so it counts
for neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from green_agent.errors import InfrastructureError
from green_agent.judge import customer_visible_texts
from green_agent.limits import llm_failure_outcome
from green_agent.llm import TokenUsage
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
from green_agent.usage import TrialUsage, Usage, priced
from retail_domain import (
    ActionCheck,
    CommunicateCheck,
    DbCheck,
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
    from green_agent.orchestrator import TrialDeps, TrialSpec, TrialState


NLStatus = Literal["not_required", "judged", "not_judged"]


@dataclasses.dataclass
class _Judgement:
    status: NLStatus = "not_required"
    verdicts: list[NLVerdict] = dataclasses.field(default_factory=list)
    judge_input: str | None = None
    tokens: TokenUsage | None = None


async def score(
    spec: TrialSpec, deps: TrialDeps, state: TrialState, reason: TerminationReason, started: datetime
) -> TrialResult:
    task, data, judge = spec.task, deps.data, deps.judge
    gold_hash = data.gold(task.id).db_hash
    db = check_db(state.db_hash, gold_hash) if state.db_hash is not None else None
    db_matched = db.matched if db else False
    unfinished = reason == TerminationReason.INFRASTRUCTURE_ERROR  # our customer failed mid-conversation
    judgement = _Judgement(status="not_judged" if task.judged else "not_required")
    # The judge is asked only when its verdicts can still change the reward: after a clean exit, with every
    # other component of the reward basis passed. A trial already at 0 is scored 0 without it (never excluded
    # for a judge failure, and the call is saved); so is one our customer never finished (excluded anyway:
    # its error stays the customer's, and `retry` runs it again).
    needs_judge = not unfinished and score_trial(task, reason, db_matched, None).reward is None
    if task.judged and judge is not None and needs_judge:
        try:
            outcome = await judge.judge(task.nl_assertions, state.transcript)
            judgement = _Judgement("judged", outcome.verdicts, outcome.judge_input, outcome.usage)
        except InfrastructureError as exc:  # excluded, unless the agent's text provoked it (limits.py)
            reason, state.error = llm_failure_outcome(exc, state.agent_bytes, deps.limits, "judge")

    verdict_flags = [v.passed for v in judgement.verdicts] if judgement.status == "judged" else None
    # With no judge, a judged task's reward stays unknown (excluded, `not_judged`) unless it is 0 anyway.
    reward = score_trial(task, reason, db_matched, verdict_flags).reward

    calls = [
        ToolCall(call.name, call.arguments)
        for message in state.transcript
        if message.role == "assistant"
        for call in message.tool_calls or ()
    ]
    actions = check_actions(task.gold_actions, calls)
    said = customer_visible_texts(state.transcript)
    communicate = check_communicate(task.communicate_info, said)
    verdicts = judgement.verdicts
    nl_rate = sum(v.passed for v in verdicts) / len(verdicts) if verdicts else None

    signals = [
        _db_signal(task, db, unfinished),
        _nl_signal(task, judgement, nl_rate, reward),
        *exit_and_diagnostic_signals(task, reason, actions, communicate),
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
        usage=trial_usage(deps, state, judgement.tokens),
        started_at=started,
        finished_at=utcnow(),
    )


def trial_usage(deps: TrialDeps, state: TrialState, judge_tokens: TokenUsage | None = None) -> TrialUsage:
    """The trial's tokens per party, priced with the operator's prices (unknown model: cost None)."""

    def metered(model: str | None, tokens: TokenUsage | None) -> Usage | None:
        if model is None or tokens is None or not tokens.calls:
            return None
        return priced(model, tokens.calls, tokens.prompt_tokens, tokens.completion_tokens, deps.prices)

    judge_model = deps.judge.llm.endpoint.model if deps.judge is not None else None
    return TrialUsage(
        user=metered(deps.user_model, state.user_tokens),
        judge=metered(judge_model, judge_tokens),
        agent=state.agent_usage.usage() if state.agent_usage is not None else None,
    )


def exit_and_diagnostic_signals(
    task: Task, reason: str, actions: Sequence[ActionCheck], communicate: Sequence[CommunicateCheck]
) -> list[Signal]:
    """CLEAN_EXIT, ACTION_MATCH and COMMUNICATE (counted only where the task's basis names it: v0 tasks)."""
    return [
        Signal(
            name=SIGNAL_CLEAN_EXIT, passed=is_clean_exit(reason), counts=True, detail=f"ended with {reason}"
        ),
        _check_signal(
            SIGNAL_ACTION, [a.matched for a in actions], False, "gold actions matched", "no gold actions"
        ),
        _check_signal(
            SIGNAL_COMMUNICATE,
            [c.met for c in communicate],
            "COMMUNICATE" in task.reward_basis,
            "required facts said",
            "no facts to communicate",
        ),
    ]


def _check_signal(name: str, checks: list[bool], counts: bool, what: str, nothing: str) -> Signal:
    """A signal over a list of checks. With nothing to check, a diagnostic is not applicable (None: a vacuous
    pass says nothing about the agent); a signal that gates the reward passes, as tau2 scores it."""
    if not checks:
        if counts:
            return Signal(name=name, passed=True, counts=True, detail=f"{nothing} in this task")
        return Signal(name=name, passed=None, counts=False, detail=f"{nothing} in this task (not applicable)")
    detail = f"{sum(checks)}/{len(checks)} {what}" + ("" if counts else " (diagnostic)")
    return Signal(name=name, passed=all(checks), counts=counts, detail=detail)


def _db_signal(task: Task, db: DbCheck | None, unfinished: bool) -> Signal:
    """DB_STATE_MATCH; not evaluated when our customer failed mid-conversation (the trial is excluded: a DB
    the conversation never finished with is no verdict on the agent)."""
    counts = "DB" in task.reward_basis
    if unfinished:
        detail = "not checked: our user simulator failed before the conversation ended (trial excluded)"
        return Signal(name=SIGNAL_DB, passed=None, counts=counts, detail=detail)
    if db is None:
        return Signal(name=SIGNAL_DB, passed=None, counts=counts, detail="no final DB")
    detail = "final DB equals the gold DB" if db.matched else "final DB differs from the gold DB"
    return Signal(name=SIGNAL_DB, passed=db.matched, counts=counts, detail=detail)


def _nl_signal(task: Task, judgement: _Judgement, rate: float | None, reward: float | None) -> Signal:
    counts = "NL_ASSERTION" in task.reward_basis
    if judgement.status == "judged":
        passed = sum(v.passed for v in judgement.verdicts)
        detail = f"{passed}/{len(judgement.verdicts)} assertions passed"
        return Signal(name=SIGNAL_NL, passed=rate == 1.0, counts=counts, detail=detail)
    if judgement.status == "not_judged":
        detail = f"{len(task.nl_assertions)} assertions not judged"
        if reward == 0.0:
            detail += " (not needed: the reward is 0 whatever they say)"
        return Signal(name=SIGNAL_NL, passed=None, counts=counts, detail=detail)
    return Signal(name=SIGNAL_NL, passed=True, counts=counts, detail="no assertions to judge for this task")


def unscored(
    spec: TrialSpec, deps: TrialDeps, state: TrialState, started: datetime, error: str
) -> TrialResult:
    """The result of a trial whose scoring met a bug of ours: `internal_error`, reward 0 (never excluded:
    the agent's input may have provoked the bug, and it must not pay off)."""
    return TrialResult(
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=str(TerminationReason.INTERNAL_ERROR),
        reward=0.0,
        is_successful=False,
        transcript=state.transcript,
        protocol_warnings=state.warnings,
        error=error,
        steps=state.steps,
        num_errors=state.num_errors,
        usage=trial_usage(deps, state),
        db_actual_hash=state.db_hash,
        started_at=started,
        finished_at=utcnow(),
    )
