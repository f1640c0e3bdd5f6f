"""The `Result` artifact: the keys AgentBeats leaderboards already read, plus this project's additions."""

from __future__ import annotations

from typing import Any

from a2a.helpers import new_data_part
from a2a.types import Part

from api.db.repository import AssessmentRecord
from green_agent.core.models import AssessmentReport
from green_agent.scoring.uncertainty import plus_minus

RESULT_ARTIFACT = "Result"


def result_data(record: AssessmentRecord, report: AssessmentReport) -> dict[str, Any]:
    """The DataPart of the Result artifact.

    `score` is the sum over tasks of each task's mean reward and `max_score` the number of tasks scored, so
    `pass_rate` (0-100) is the tau2 average reward as a percentage, as the official tau2 green reports it.
    `complete` is false when any trial is missing from it (`partial_reasons` says why): a leaderboard pipeline
    should refuse such a result. `signal_applicable` says how many trials (assertions, for NL_ASSERTION) each
    entry of `signal_rates` covers. `stats` (added in schema version 3, the keys above unchanged) holds the
    average reward and each pass^k with its task-clustered standard error and 95% interval; null for a report
    stored before it."""
    score = sum(report.task_rewards.values())
    max_score = len(report.task_rewards)
    return {
        "domain": "retail",
        "score": score,
        "max_score": max_score,
        "pass_rate": 100.0 * score / max_score if max_score else 0.0,
        "task_rewards": dict(report.task_rewards),
        "time_used": report.time_used_s,
        "assessment_id": record.id,
        "complete": report.complete,
        "partial_reasons": dict(report.partial_reasons),
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
        f"{headline}tau2 retail assessment {record.id}: "
        f"{report.num_tasks} tasks x {report.num_trials} trials, "
        f"{report.trials_scored}/{report.trials_total} trials scored; average reward {avg}; "
        f"pass rate {data['pass_rate']:.1f}%; {pass_k}; {report.time_used_s:.1f} s."
    )


def result_parts(record: AssessmentRecord, report: AssessmentReport) -> list[Part]:
    """The parts of the `Result` artifact: the text summary, then the DataPart."""
    return [Part(text=result_summary(record, report)), new_data_part(result_data(record, report))]
