"""The `Result` artifact: the keys AgentBeats leaderboards already read, plus this project's additions."""

from __future__ import annotations

from typing import Any

from a2a.helpers import new_data_part
from a2a.types import Part

from api.db.repository import AssessmentRecord
from green_agent.core.models import AssessmentReport
from green_agent.scoring.uncertainty import plus_minus

RESULT_ARTIFACT = "Result"


def _rate(rewards: dict[str, float]) -> float:
    return 100.0 * sum(rewards.values()) / len(rewards) if rewards else 0.0


def result_data(record: AssessmentRecord, report: AssessmentReport) -> dict[str, Any]:
    """The DataPart of the Result artifact.

    `score` is the sum over tasks of each task's mean score and `max_score` the number of tasks scored (an
    integer), so `pass_rate` (0-100) is the average in percent, as the official tau2 green reports it. Which
    score: the assessment's `evaluation`, "tau2" (the tau2 reward on the task's basis; the default) or
    "action" (the official AgentBeats tau2 green's action check, `metrics.action_reward`); both are always
    there as `tau2_pass_rate` and `action_pass_rate` (and their task rewards), so a leaderboard moving from
    the official green can show the two side by side. `complete` is false when any trial is missing from it
    (`partial_reasons` says why): the A2A door publishes only complete results. `warnings` are what the
    request was told (ignored keys, the judge chosen for it, ...). `signal_applicable` says how many trials
    (assertions, for NL_ASSERTION) each entry of `signal_rates` covers. `stats` (schema version 3) holds the
    average reward and each pass^k with its task-clustered standard error and 95% interval; null for a
    report stored before it. Counts are integers (`INTEGER_KEYS`)."""
    evaluation = record.config.get("evaluation", "tau2")
    tau2_rewards = dict(report.task_rewards)
    action_rewards = dict(report.action_task_rewards)
    rewards = action_rewards if evaluation == "action" else tau2_rewards
    score = float(sum(rewards.values()))
    max_score = len(rewards)
    run = report.run_info
    return {
        "domain": record.domain,
        "score": score,
        "max_score": max_score,
        "pass_rate": _rate(rewards),
        "task_rewards": rewards,
        "time_used": report.time_used_s,
        "evaluation": evaluation,
        "tau2_pass_rate": _rate(tau2_rewards),
        "action_pass_rate": _rate(action_rewards),
        "tau2_task_rewards": tau2_rewards,
        "action_task_rewards": action_rewards,
        "assessment_id": record.id,
        "complete": report.complete,
        "partial_reasons": dict(report.partial_reasons),
        "warnings": list(record.warnings),
        "user_model": (run.user_model or run.user_model_name) if run is not None else None,
        "user_llm_args": dict(run.user_llm_args) if run is not None else {},
        "judge_model": run.judge_model if run is not None else None,
        "num_tasks": report.num_tasks,
        "num_trials": report.num_trials,
        "trials_total": report.trials_total,
        "trials_scored": report.trials_scored,
        "excluded": dict(report.excluded),
        "avg_reward": report.avg_reward,
        "pass_hat_k": {str(k): v for k, v in report.pass_hat_k.items()},
        "pass_power_k_scores": {f"Pass^{k}": v for k, v in report.pass_hat_k.items()},
        "signal_rates": dict(report.signal_rates),
        "signal_applicable": dict(report.signal_applicable),
        "termination_counts": dict(report.termination_counts),
        "nl_assertions_total": report.nl_assertions_total,
        "schema_version": report.schema_version,
        "stats": report.stats.model_dump(mode="json") if report.stats is not None else None,
    }


INTEGER_KEYS = frozenset(
    {"max_score", "num_tasks", "num_trials", "trials_total", "trials_scored", "nl_assertions_total"}
    | {"schema_version"}
)
"""Keys of the Result's data that hold counts."""
INTEGER_MAPS = frozenset({"partial_reasons", "excluded", "signal_applicable", "termination_counts"})
"""Keys of the Result's data whose values (name -> count) are counts."""


def whole_counts(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a Result's data, as read back from an A2A DataPart) with its counts as integers again: an A2A
    DataPart is a protobuf Value, whose numbers are all doubles, and a leaderboard shows `max_score` 5 as
    "5.0". Only whole numbers at the counts' places change."""

    def whole(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    fixed = dict(data)
    for key in INTEGER_KEYS & fixed.keys():
        fixed[key] = whole(fixed[key])
    for key in INTEGER_MAPS & fixed.keys():
        if isinstance(fixed[key], dict):
            fixed[key] = {name: whole(count) for name, count in fixed[key].items()}
    stats = fixed.get("stats")
    if isinstance(stats, dict) and "n_tasks" in stats:
        fixed["stats"] = {**stats, "n_tasks": whole(stats["n_tasks"])}
    return fixed


def result_summary(record: AssessmentRecord, report: AssessmentReport) -> str:
    """One paragraph; a partial result says so first, so nobody reads its pass rate as final."""
    data = result_data(record, report)
    stats = report.stats
    if stats is not None:  # with its 95% interval over tasks
        pass_k = ", ".join(f"pass^{k} {plus_minus(e)}" for k, e in stats.pass_hat_k.items()) or "no pass^k"
        avg = plus_minus(stats.avg_reward) + f" (95% intervals over {stats.n_tasks} tasks)"
    else:
        pass_k = ", ".join(f"pass^{k} {v:.3f}" for k, v in report.pass_hat_k.items()) or "no pass^k"
        avg = f"{report.avg_reward:.3f}" if report.avg_reward is not None else "n/a"
    headline = "" if report.complete else f"Partial result: {report.partial_summary()}. "
    return (
        f"{headline}tau2 {data['domain']} assessment {record.id}: "
        f"{report.num_tasks} tasks x {report.num_trials} trials, "
        f"{report.trials_scored}/{report.trials_total} trials scored; average reward {avg}; "
        f"pass rate {data['tau2_pass_rate']:.1f}% (tau2 reward), {data['action_pass_rate']:.1f}% (action "
        f"check); score {data['score']:g}/{data['max_score']} by {data['evaluation']}; {pass_k}; "
        f"{report.time_used_s:.1f} s."
    )


def result_parts(record: AssessmentRecord, report: AssessmentReport) -> list[Part]:
    """The parts of the `Result` artifact: the text summary, then the DataPart."""
    return [Part(text=result_summary(record, report)), new_data_part(result_data(record, report))]
