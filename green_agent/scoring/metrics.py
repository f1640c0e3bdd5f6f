"""Assessment metrics from trial results, as tau2 computes them (pure; the service rebuilds reports with it).

* Excluded: trials without a reward (infrastructure errors; assertions not judged), counted separately, and
  every trial of a task whose judge failed on one trial while another was scored without asking it (the
  operator's `judge_skip_when_failed`): keeping the others would keep that task's failures and drop its
  passes (`task_not_judged`; `counted_trials`).
* avg reward over the remaining trials; success = reward within 1e-6 of 1.
* pass^k = mean over tasks of C(c, k) / C(n, k), n = a task's remaining trials, c = its successes, for
  k = 1 .. the smallest n over tasks that kept at least one trial.
* Signal rates over the scored trials where the signal applies (`signal_applicable` holds how many):
  DB_STATE_MATCH where the trial has a final DB to compare; CLEAN_EXIT every scored trial; ACTION_MATCH where
  the task has gold actions; COMMUNICATE where the task has facts to communicate; NL_ASSERTION over the
  assertions of judged trials, not over trials. A check with nothing to check would pass vacuously and say
  nothing about the agent, so it is left out rather than counted as a pass.
* Complete: every planned trial ran and was scored; otherwise `partial_reasons` counts what is missing.
* `stats`: the same numbers with task-clustered error bars (green_agent/scoring/uncertainty.py).
* `action_task_rewards`: each task's mean over the same trials of the action score the official AgentBeats
  tau2 green reports (`action_reward`), for leaderboards that move from it and need both numbers for a while.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

from domain_kit.termination import is_clean_exit
from green_agent.config import AssessmentConfig
from green_agent.core.models import (
    SIGNAL_ACTION,
    SIGNAL_COMMUNICATE,
    SIGNAL_NAMES,
    SIGNAL_NL,
    AssessmentReport,
    ReportStats,
    RunInfo,
    TrialResult,
    UsageReport,
)
from green_agent.core.usage import total
from green_agent.scoring.uncertainty import (
    SUCCESS_TOLERANCE,
    TaskScore,
    min_detectable_difference,
    pass_hat_k_estimates,
    reward_estimate,
)

INFRASTRUCTURE_ERROR = "infrastructure_error"
NOT_JUDGED = "not_judged"
TASK_NOT_JUDGED = "task_not_judged"
NOT_RUN = "not_run"


def is_success(reward: float | None) -> bool:
    return reward is not None and abs(reward - 1.0) <= SUCCESS_TOLERANCE


def action_reward(trial: TrialResult) -> float | None:
    """A trial's score as the official AgentBeats tau2 green computes it (tau2's ACTION evaluation alone,
    whatever the task's reward basis): 0 unless the conversation ended with user_stop or agent_stop; then 1
    when every gold action (reads and writes) is matched by some tool call of the trial, as tau2's action
    check compares them, else 0 (1 for a task without gold actions). The database and what was said play no
    part. None for a trial excluded as an infrastructure error (ours, not the agent's: it is run again)."""
    if trial.termination_reason == INFRASTRUCTURE_ERROR:
        return None
    if not is_clean_exit(trial.termination_reason):
        return 0.0
    return 1.0 if all(check.get("matched") is True for check in trial.action_checks) else 0.0


class ScoredTrial(Protocol):
    """What the counting rules read of a trial: a stored `TrialResult` or a listed summary of one."""

    @property
    def task_id(self) -> str: ...
    @property
    def reward(self) -> float | None: ...
    @property
    def nl_status(self) -> str: ...


T = TypeVar("T", bound=ScoredTrial)


def tasks_left_out(trials: Sequence[ScoredTrial]) -> set[str]:
    """Tasks whose trials are all left out: the judge failed on one of their trials (ours: no reward) while
    another was scored 0 without asking it (`skipped`). Which trials the judge was asked on then followed
    their DB check, so keeping the rest would keep the task's failures and drop its would-be passes."""
    failed = {t.task_id for t in trials if t.nl_status == "judge_failed" and t.reward is None}
    skipped = {t.task_id for t in trials if t.nl_status == "skipped"}
    return failed & skipped


def counted_trials(trials: Sequence[T]) -> list[T]:
    """The trials the metrics count (and the tau2 export writes): those with a reward, outside the tasks
    `tasks_left_out`."""
    left_out = tasks_left_out(trials)
    return [t for t in trials if t.reward is not None and t.task_id not in left_out]


def task_scores(trials: Sequence[ScoredTrial]) -> dict[str, TaskScore]:
    """Task -> its counted trials' rewards, in the order given; tasks without a counted trial are absent."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for t in counted_trials(trials):
        assert t.reward is not None
        rewards[t.task_id].append(t.reward)
    return {task: TaskScore(tuple(r)) for task, r in rewards.items()}


def tasks_not_fully_solved(
    task_ids: Sequence[str], trials: Sequence[ScoredTrial], trials_per_task: int
) -> list[str]:
    """The tasks of `task_ids` (in that order) that fewer than `trials_per_task` counted trials solved: the
    failed and the flaky ones, and those with a trial excluded or never run (what `run --failed-from`
    runs again)."""
    solved = Counter(t.task_id for t in counted_trials(trials) if is_success(t.reward))
    return [task for task in task_ids if solved[task] < trials_per_task]


def report_stats(scores: dict[str, TaskScore], trials_per_task: int) -> ReportStats:
    """The report's numbers with their error bars; per-task successes when more than one trial was run."""
    avg = reward_estimate(scores)
    several = trials_per_task > 1
    return ReportStats(
        n_tasks=len(scores),
        avg_reward=avg,
        pass_hat_k=pass_hat_k_estimates(scores),
        min_detectable_difference=min_detectable_difference(avg.stderr) if avg is not None else None,
        task_successes={t: (s.successes, s.trials) for t, s in scores.items()} if several else None,
        mixed_tasks=[t for t, s in scores.items() if 0 < s.successes < s.trials] if several else None,
    )


def usage_report(trials: Sequence[TrialResult]) -> UsageReport:
    """Per-party totals over every trial; the agent's mean cost only when each trial has one."""
    user = total(t.usage.user if t.usage else None for t in trials)
    judge = total(t.usage.judge if t.usage else None for t in trials)
    agent = total(t.usage.agent if t.usage else None for t in trials)
    green = total([user, judge])
    agent_costs = [t.usage.agent.cost_usd if t.usage and t.usage.agent else None for t in trials]
    known = [c for c in agent_costs if c is not None]
    return UsageReport(
        user=user,
        judge=judge,
        agent=agent,
        green_cost_usd=green.cost_usd if green is not None else None,
        agent_cost_per_trial_usd=sum(known) / len(known) if known and len(known) == len(trials) else None,
    )


def compute_report(
    config: AssessmentConfig,
    trials: Sequence[TrialResult],
    time_used_s: float = 0.0,
    *,
    trials_planned: int | None = None,
    tasks_planned: int | None = None,
    run_info: RunInfo | None = None,
) -> AssessmentReport:
    """The report over `trials`; `trials_planned` (default: as many as given) counts the ones never run,
    `tasks_planned` (default: the tasks of `trials`) what was set out to run."""
    scored = counted_trials(trials)
    infra = sum(1 for t in trials if t.termination_reason == INFRASTRUCTURE_ERROR)
    not_judged = sum(1 for t in trials if t.reward is None and t.termination_reason != INFRASTRUCTURE_ERROR)
    task_not_judged = sum(1 for t in trials if t.reward is not None) - len(scored)
    not_run = max(0, (trials_planned or len(trials)) - len(trials))
    scores = task_scores(trials)
    stats = report_stats(scores, config.trials)

    signal_rates: dict[str, float | None] = {}
    signal_applicable: dict[str, int] = {}
    for name in SIGNAL_NAMES:
        outcomes = _outcomes(scored, name)
        signal_rates[name] = sum(outcomes) / len(outcomes) if outcomes else None
        signal_applicable[name] = len(outcomes)

    excluded = {INFRASTRUCTURE_ERROR: infra, NOT_JUDGED: not_judged}
    if task_not_judged:
        excluded[TASK_NOT_JUDGED] = task_not_judged
    partial = {reason: n for reason, n in {**excluded, NOT_RUN: not_run}.items() if n}
    return AssessmentReport(
        domain=config.domain,
        num_tasks=len({t.task_id for t in trials}),
        num_trials=config.trials,
        trials_total=len(trials),
        trials_scored=len(scored),
        tasks_planned=tasks_planned if tasks_planned is not None else len({t.task_id for t in trials}),
        trials_planned=trials_planned if trials_planned is not None else len(trials),
        complete=not partial,
        partial_reasons=partial,
        excluded=excluded,
        avg_reward=stats.avg_reward.value if stats.avg_reward is not None else None,
        pass_hat_k={k: estimate.value for k, estimate in stats.pass_hat_k.items()},
        signal_rates=signal_rates,
        signal_applicable=signal_applicable,
        nl_assertions_total=signal_applicable[SIGNAL_NL],
        termination_counts=dict(Counter(t.termination_reason for t in trials)),
        task_rewards={task: float(score.mean_reward) for task, score in scores.items()},
        action_task_rewards=action_task_rewards(scored),
        time_used_s=time_used_s,
        usage=usage_report(trials),
        run_info=run_info,
        stats=stats,
    )


def action_task_rewards(scored: Sequence[TrialResult]) -> dict[str, float]:
    """Task -> the mean `action_reward` of its counted trials (the tasks of `task_rewards`, in its order)."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for trial in scored:
        reward = action_reward(trial)
        if reward is not None:
            rewards[trial.task_id].append(reward)
    return {task: sum(values) / len(values) for task, values in rewards.items()}


def _outcomes(scored: Sequence[TrialResult], name: str) -> list[bool]:
    """One pass/fail per trial where the signal applies; for NL_ASSERTION one per judged assertion."""
    if name == SIGNAL_NL:
        return [verdict.passed for t in scored for verdict in t.nl_verdicts]
    return [passed for t in scored if (passed := _applicable_outcome(t, name)) is not None]


def _applicable_outcome(trial: TrialResult, name: str) -> bool | None:
    """The trial's outcome for one signal, or None where the signal does not apply to it.

    Applicability is read from the checks stored with the trial (not only from the signal's `passed`), so
    trials stored before ACTION_MATCH and COMMUNICATE said "not applicable" are counted the same way."""
    if name == SIGNAL_ACTION and not trial.action_checks:
        return None
    if name == SIGNAL_COMMUNICATE and not trial.communicate_checks:
        return None
    signal = next((s for s in trial.signals if s.name == name), None)
    return signal.passed if signal is not None else None
