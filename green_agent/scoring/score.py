"""Turning a finished conversation into a `TrialResult`: the checks, the judge, the reward and the signals.

The reward is domain_kit's `score_trial` (tau2's rule). On top, named signals explain the verdict:
DB_STATE_MATCH, NL_ASSERTION and CLEAN_EXIT gate success; ACTION_MATCH and COMMUNICATE are diagnostics.

Which trials count must never depend on whether they passed (threat model, principle 1). So for a task with
NL assertions the judge is asked on every trial whose conversation finished, whatever its DB check and its
exit said (upstream judges every clean exit; an unclean one is 0 whatever the verdicts, and is judged too so
that a judge outage cannot pick which trials are left out). A judge failure that no agent text can cause
excludes that trial (`judge_failed`, infrastructure error); one the agent's text provoked is the agent's
(limits.py). With no judge configured, every trial of such a task has no reward (`not_judged`), passes and
failures alike. The operator may trade that for judge tokens (`judge_skip_when_failed`): trials at 0
whatever the verdicts are then scored without asking (`skipped`), and a task whose judge then fails on
another trial is left out whole by the metrics (`metrics.tasks_left_out`).

COMMUNICATE and the judge read only what the customer saw (`customer_visible_texts`,
`judge.customer_visible`): text the agent attaches to a tool call never reaches the customer, so it counts
for neither.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime

from domain_kit import (
    ActionCheck,
    AssertionCheck,
    CommunicateCheck,
    DbCheck,
    DomainData,
    Task,
    TerminationReason,
    check_actions,
    check_communicate,
    check_db,
    is_clean_exit,
    score_trial,
)
from green_agent.core.errors import InfrastructureError
from green_agent.core.limits import AgentLimits, llm_failure_outcome
from green_agent.core.models import (
    SIGNAL_ACTION,
    SIGNAL_CLEAN_EXIT,
    SIGNAL_COMMUNICATE,
    SIGNAL_DB,
    SIGNAL_ENV,
    SIGNAL_NL,
    ConversationEnd,
    Failure,
    NLStatus,
    NLVerdict,
    Signal,
    TrialResult,
    utcnow,
)
from green_agent.core.trial import TrialSpec, TrialState, trajectory_calls
from green_agent.core.usage import ModelPrice, TokenUsage, TrialUsage, Usage, priced
from green_agent.llm.judge import Judge, customer_visible_texts
from green_agent.scoring.failures import classify_trial, is_failed
from green_agent.scoring.metrics import is_success

log = logging.getLogger(__name__)


@dataclasses.dataclass(kw_only=True)
class ScoringDeps:
    """What scoring a trial needs from the engine; built once per assessment (the conversation's
    `TrialDeps` extends it)."""

    data: DomainData
    judge: Judge | None
    limits: AgentLimits = dataclasses.field(default_factory=AgentLimits)
    user_model: str | None = None
    """The user simulator's model id, for pricing (None: scripted)."""
    prices: Mapping[str, ModelPrice] = dataclasses.field(default_factory=dict)
    judge_skip_when_failed: bool = False
    """No judge where the reward is 0 whatever it says (`EngineSettings.judge_skip_when_failed`)."""


@dataclasses.dataclass
class _Judgement:
    status: NLStatus = "not_required"
    verdicts: list[NLVerdict] = dataclasses.field(default_factory=list)
    judge_input: str | None = None
    tokens: TokenUsage | None = None
    note: str = ""
    """Why there is no verdict, for the NL_ASSERTION signal."""


async def score(
    spec: TrialSpec, deps: ScoringDeps, state: TrialState, reason: TerminationReason, started: datetime
) -> TrialResult:
    task, data, judge = spec.task, deps.data, deps.judge
    conversation_end = ConversationEnd(reason=str(reason), error=state.error, agent_bytes=state.agent_bytes)
    gold_hash = data.gold(task.id).db_hash
    environment = state.environment
    db = check_db(state.db_hash, gold_hash) if state.db_hash is not None else None
    if db is not None and environment is not None:
        # The domain's verdict: in dual control both sides' DBs must equal gold's (upstream's DB check).
        db = DbCheck(environment.db_matched, environment.db_expected_hash, environment.db_actual_hash)
    db_matched = db.matched if db else False
    assertions = environment.assertions if environment is not None else ()
    unfinished = reason == TerminationReason.INFRASTRUCTURE_ERROR  # our customer failed mid-conversation
    # ACTION and COMMUNICATE over the whole trajectory: calls of both parties (upstream's action check
    # ignores who called), and what the customer saw.
    actions = check_actions(task.gold_actions, trajectory_calls(state.transcript), data.write_tools)
    communicate = check_communicate(task.communicate_info, customer_visible_texts(state.transcript))
    checks = {
        "db_matched": db_matched,
        "communicate_met": all(c.met for c in communicate),
        "env_assertions_met": environment.assertions_met if environment is not None else False,
        "actions_met": all(a.matched for a in actions),
    }
    judgement = _Judgement("not_required")
    if task.judged and unfinished:
        judgement = _Judgement("not_judged", note="the conversation did not finish")
    elif task.judged and judge is None:
        judgement = _Judgement("not_judged", note="no judge configured; the trial is excluded")
    elif task.judged and judge is not None:
        decided = score_trial(task, reason, nl_verdicts=None, **checks).reward == 0.0
        if decided and deps.judge_skip_when_failed:
            note = "the judge was not asked: the reward is 0 whatever they say (judge_skip_when_failed)"
            judgement = _Judgement("skipped", note=note)
        else:
            try:
                outcome = await judge.judge(task.nl_assertions, state.transcript)
                judgement = _Judgement("judged", outcome.verdicts, outcome.judge_input, outcome.usage)
            except InfrastructureError as exc:  # excluded, unless the agent's text provoked it (limits.py)
                ended = f" (the conversation had ended {reason}: {state.error})" if state.error else ""
                reason, why = llm_failure_outcome(exc, state.agent_bytes, deps.limits, "judge")
                state.error = why + ended
                judgement = _Judgement("judge_failed", note="the judge failed (the trial's error says how)")

    verdict_flags = [v.passed for v in judgement.verdicts] if judgement.status == "judged" else None
    # No verdict where the task needs one: no reward (excluded), whatever the DB and the exit say. A skipped
    # trial is 0 (checked above), a failed judge's is what its outcome says (excluded, or the agent's 0).
    reward = (
        None
        if judgement.status == "not_judged"
        else score_trial(task, reason, nl_verdicts=verdict_flags, **checks).reward
    )
    verdicts = judgement.verdicts
    nl_rate = sum(v.passed for v in verdicts) / len(verdicts) if verdicts else None

    signals = [
        _db_signal(task, db, unfinished),
        _nl_signal(task, judgement, nl_rate),
        *exit_and_diagnostic_signals(task, reason, actions, communicate),
        env_signal(task, assertions, environment is not None, unfinished),
    ]
    result = TrialResult(
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
        env_assertion_checks=[dataclasses.asdict(a) for a in assertions],
        transcript=state.transcript,
        protocol_warnings=state.warnings,
        error=state.error,
        steps=state.steps,
        num_errors=state.num_errors,
        usage=trial_usage(deps, state, judgement.tokens),
        conversation_end=conversation_end,
        started_at=started,
        finished_at=utcnow(),
    )
    if is_failed(result):  # in a thread: a flood of calls costs tens of ms to classify, off the event loop
        result.failures = await asyncio.to_thread(failures_of, result, task, deps)
    else:
        result.failures = []
    return result


def failures_of(result: TrialResult, task: Task, deps: ScoringDeps) -> list[Failure] | None:
    """What went wrong in a failed trial (scoring/failures.py). A diagnostic: a bug in it is logged and
    leaves the failures unknown (None), never changes the trial's score."""
    try:
        gold_failed = {index for index, _, _ in deps.data.gold(task.id).failed_calls}
        return classify_trial(
            task, result, write_tools=deps.data.write_tools, gold_failed=gold_failed, limits=deps.limits
        )
    except Exception:
        log.exception("classifying the failures of trial %s/%s met an internal error", task.id, result.trial)
        return None


def trial_usage(deps: ScoringDeps, state: TrialState, judge_tokens: TokenUsage | None = None) -> TrialUsage:
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
            SIGNAL_ACTION,
            [a.matched for a in actions],
            "ACTION" in task.reward_basis,
            "gold actions matched",
            "no gold actions",
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


def env_signal(task: Task, assertions: Sequence[AssertionCheck], evaluated: bool, unfinished: bool) -> Signal:
    """ENV_ASSERTION: every env assertion of the task holds on the end state (where the basis names it, it
    gates the reward; a task without assertions has nothing to check)."""
    counts = "ENV_ASSERTION" in task.reward_basis
    if not task.env_assertions:
        return _check_signal(SIGNAL_ENV, [], counts, "", "no env assertions")
    if unfinished or not evaluated:
        return Signal(name=SIGNAL_ENV, passed=None, counts=counts, detail="not checked: no end state")
    met = [a.met for a in assertions]
    detail = f"{sum(met)}/{len(met)} env assertions hold" + ("" if counts else " (diagnostic)")
    return Signal(name=SIGNAL_ENV, passed=all(met), counts=counts, detail=detail)


def _db_signal(task: Task, db: DbCheck | None, unfinished: bool) -> Signal:
    """DB_STATE_MATCH; not evaluated when our customer failed mid-conversation (the trial is excluded: a DB
    the conversation never finished with is no verdict on the agent)."""
    counts = "DB" in task.reward_basis
    if unfinished:
        detail = "not checked: our user simulator failed before the conversation ended (trial excluded)"
        return Signal(name=SIGNAL_DB, passed=None, counts=counts, detail=detail)
    if db is None:
        return Signal(name=SIGNAL_DB, passed=None, counts=counts, detail="no final DB")
    if db.matched:
        detail = "final DB equals the gold DB"
    elif db.actual_hash == db.expected_hash:
        detail = "the customer's final DB differs from the gold one (the agent's equals it)"
    else:
        detail = "final DB differs from the gold DB"
    return Signal(name=SIGNAL_DB, passed=db.matched, counts=counts, detail=detail)


def _nl_signal(task: Task, judgement: _Judgement, rate: float | None) -> Signal:
    counts = "NL_ASSERTION" in task.reward_basis
    if judgement.status == "judged":
        passed = sum(v.passed for v in judgement.verdicts)
        detail = f"{passed}/{len(judgement.verdicts)} assertions passed"
        return Signal(name=SIGNAL_NL, passed=rate == 1.0, counts=counts, detail=detail)
    if judgement.status == "not_required":
        detail = "no assertions to judge for this task"
        return Signal(name=SIGNAL_NL, passed=True, counts=counts, detail=detail)
    detail = f"{len(task.nl_assertions)} assertions not judged: {judgement.note}"
    return Signal(name=SIGNAL_NL, passed=None, counts=counts, detail=detail)


def unscored(
    spec: TrialSpec, deps: ScoringDeps, state: TrialState, started: datetime, error: str
) -> TrialResult:
    """The result of a trial whose scoring met a bug of ours: `internal_error`, reward 0 (never excluded:
    the agent's input may have provoked the bug, and it must not pay off), except where no judge is
    configured for a task that needs one: then, like every trial of that task, it has no reward."""
    not_judged = spec.task.judged and deps.judge is None
    result = TrialResult(
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=str(TerminationReason.INTERNAL_ERROR),
        reward=None if not_judged else 0.0,
        is_successful=None if not_judged else False,
        nl_status="not_judged" if spec.task.judged else "not_required",
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
    result.failures = failures_of(result, spec.task, deps)  # a rare path: not worth a thread
    return result
