"""What the UI pages compute, on hand-made records: outcomes, failure reasons, the grid, compare deltas, the
leaderboard and chart geometry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.db.repository import ScoredAssessment, TrialSummary
from api.web.ui import views
from green_agent.config import AssessmentConfig
from green_agent.core.errors import LLMRefusedConversation
from green_agent.core.limits import AgentLimits, llm_failure_outcome
from green_agent.core.models import FAILURE_KINDS, AssessmentReport, RunInfo, TrialResult
from green_agent.scoring.metrics import compute_report

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def trial(
    task_id: str = "0",
    k: int = 0,
    *,
    reason: str = "user_stop",
    reward: float | None = 1.0,
    db: bool | None = True,
    nl: bool | None = None,
    error: str | None = None,
) -> TrialSummary:
    signals: list[dict[str, Any]] = [{"name": "DB_STATE_MATCH", "passed": db}]
    if nl is not None:
        signals.append({"name": "NL_ASSERTION", "passed": nl})
    return TrialSummary(
        task_id=task_id,
        trial=k,
        termination_reason=reason,
        reward=reward,
        is_successful=reward == 1.0 if reward is not None else None,
        nl_status="judged" if nl is not None else "not_required",
        steps=3,
        error=error,
        finished_at=NOW,
        signals=tuple(signals),
    )


def test_outcomes_and_reasons() -> None:
    assert views.outcome(trial()) == "passed"
    assert views.outcome(trial(reward=None)) == "excluded"
    # Trials stored before failures were classified: what their signals say.
    assert views.outcome(trial(reward=0.0, db=False)) == "db_difference"
    assert views.outcome(trial(reward=0.0, nl=False)) == "nl_assertion"
    assert views.outcome(trial(reason="max_steps", reward=0.0)) == "termination"
    assert (
        views.outcome(trial(reason="agent_error", reward=0.0, db=False, error="timed out")) == "termination"
    )
    assert views.trial_kinds(trial(reason="agent_error", reward=0.0, db=False)) == [
        "termination",
        "db_difference",
    ]
    assert views.outcome(trial(reward=0.0)) == "failed"  # nothing says why (a v0 COMMUNICATE basis)

    failed = trial(reason="too_many_errors", reward=0.0, db=False, error="line one\nline two")
    assert views.failure_reasons(failed) == [
        "ended by too_many_errors",
        "final DB differs from gold",
        "line one",
    ]
    assert views.failure_reasons(trial()) == [] and views.failure_reasons(trial(reward=None)) == []
    assert views.common_failures([failed, trial(reward=0.0, db=False), trial()]) == [
        ("final DB differs from gold", 2),
        ("ended by too_many_errors", 1),
        ("line one", 1),
    ]


def test_a_failure_of_our_llm_that_the_agent_provoked_is_the_agents_with_its_cause() -> None:
    """The errors are the engine's own (limits.llm_failure_outcome), as it stores them."""
    for party, cause in (("customer", "content_policy"), ("judge", "empty_reply")):
        limits = AgentLimits()
        _, error = llm_failure_outcome(
            LLMRefusedConversation("LLM 'm' failed: ...", cause), 10, limits, party
        )
        provoked = trial(reason="agent_error", reward=0.0, db=False, error=error)
        assert views.outcome(provoked) == "termination"
        assert views.failure_reasons(provoked) == [
            "ended by agent_error",
            "final DB differs from gold",
            f"the agent's text made our {party} LLM fail ({cause.replace('_', ' ')})",
        ]
    # ours (no agent text involved) stays excluded, never a failure of the agent
    _, ours = llm_failure_outcome(LLMRefusedConversation("refused", "content_policy"), 0, AgentLimits())
    excluded = trial(reason="infrastructure_error", reward=None, db=None, error=ours)
    assert views.outcome(excluded) == "excluded" and views.failure_reasons(excluded) == []


def test_grid_orders_tasks_and_marks_pending_cells() -> None:
    rows = views.grid(["2", "10", "1"], 2, [trial("10", 1, reward=0.0, db=False), trial("99", 0)])
    assert [r.task_id for r in rows] == ["2", "10", "1", "99"]  # the selection's order, then strays
    assert [c.outcome for c in rows[1].cells] == ["pending", "db_difference"]
    assert "final DB differs from gold" in rows[1].cells[1].title
    assert views.outcome_counts(rows) == {"passed": 1, "db_difference": 1, "pending": 6}


MISSING = {"kind": "missing_action", "action": "exchange_delivered_order_items", "detail": "never called"}
WRONG = {"kind": "wrong_arguments", "action": "cancel_pending_order", "argument": "reason", "detail": "..."}
ENDED = {"kind": "termination", "got": "max_steps", "detail": "step limit"}


def failed(task_id: str, k: int, *failures: dict[str, Any], reason: str = "user_stop") -> TrialSummary:
    base = trial(task_id, k, reason=reason, reward=0.0, db=False)
    return TrialSummary(**{**base.__dict__, "failures": failures})


def test_stored_failures_colour_filter_count_and_list_the_failing_tasks() -> None:
    assert tuple(views.FAILURE_NAMES) == FAILURE_KINDS  # every kind has its words, in kind order
    summaries = [
        failed("2", 0, MISSING),
        failed("2", 1, ENDED, MISSING, reason="max_steps"),
        trial("2", 2),
        failed("10", 0, WRONG),
        trial("5", 0, reward=None),
    ]
    assert [views.outcome(s) for s in summaries] == [
        "missing_action",
        "termination",  # the first kind names the colour
        "passed",
        "wrong_arguments",
        "excluded",
    ]
    assert views.cell(summaries[1]).kinds == ("termination", "missing_action")
    assert views.failure_reasons(summaries[1]) == [
        "ended by max_steps",
        "missing exchange_delivered_order_items",
    ]
    assert views.kind_counts(summaries) == {"termination": 1, "missing_action": 2, "wrong_arguments": 1}
    assert views.common_failures(summaries) == [
        ("missing exchange_delivered_order_items", 2),
        ("ended by max_steps", 1),
        ("wrong reason to cancel_pending_order", 1),
    ]
    assert views.common_failures(summaries, kind="wrong_arguments") == [
        ("wrong reason to cancel_pending_order", 1)
    ]

    tasks = views.failing_tasks(summaries)
    assert [(t.task_id, t.failed, t.scored, t.trials) for t in tasks] == [
        ("2", 2, 3, [0, 1]),
        ("10", 1, 1, [0]),
    ]
    assert tasks[0].reasons[0] == ("missing exchange_delivered_order_items", 2)
    only = views.failing_tasks(summaries, kind="termination")
    assert [(t.task_id, t.trials) for t in only] == [("2", [1])]

    # Next and previous failed trial, in grid order (task 2 before task 10), optionally of one kind.
    assert views.failed_neighbours(summaries, "2", 0) == (None, ("2", 1))
    assert views.failed_neighbours(summaries, "2", 1) == (("2", 0), ("10", 0))
    assert views.failed_neighbours(summaries, "2", 2) == (("2", 1), ("10", 0))  # from a passed trial too
    assert views.failed_neighbours(summaries, "10", 0, kind="missing_action") == (("2", 1), None)


def test_compare_puts_regressions_first() -> None:
    before = [
        trial("1"),
        trial("1", 1),
        trial("2", reward=0.0, db=False),
        trial("3"),
        trial("4", reward=None),
    ]
    after = [trial("1", reward=0.0, db=False), trial("1", 1), trial("2"), trial("4", reward=None), trial("5")]
    deltas = sorted(views.compare_tasks(before, after), key=views.delta_order)
    assert [(d.task_id, d.change, d.a, d.b) for d in deltas] == [
        ("1", "worse", "2/2", "1/2"),
        ("2", "better", "0/1", "1/1"),
        ("3", "only_a", "1/1", "-"),
        ("4", "not_scored", "0/0", "0/0"),
        ("5", "only_b", "-", "1/1"),
    ]
    assert deltas[0].delta == -0.5


def report(
    avg: float | None,
    pass_k: dict[int, float],
    not_judged: int = 0,
    tasks: tuple[str, ...] = ("1", "2"),
    customer: str = "scripted",
) -> AssessmentReport:
    return AssessmentReport(
        num_tasks=2,
        num_trials=len(pass_k),
        trials_total=4,
        trials_scored=4 - not_judged,
        complete=not not_judged,
        partial_reasons={"not_judged": not_judged} if not_judged else {},
        excluded={"infrastructure_error": 0, "not_judged": not_judged},
        avg_reward=avg,
        pass_hat_k=pass_k,
        task_rewards={t: avg for t in tasks} if avg is not None else {},
        run_info=RunInfo(user_model_name=customer, user_model=None),
    )


def scored(assessment_id: str, agent: str, age_days: int, report: AssessmentReport) -> ScoredAssessment:
    return ScoredAssessment(
        assessment_id,
        agent,
        NOW - timedelta(days=age_days),
        report.avg_reward,
        report.excluded,
        report.complete,
    )


def test_leaderboard_keeps_each_agents_most_recent_complete_run_and_ranks_by_coverage() -> None:
    reports = {
        "a3": report(0.5, {1: 0.5}),
        "a2": report(0.9, {1: 0.9, 2: 0.8}),  # better, but older: a's row is a3
        "b2": report(1.0, {1: 1.0}, not_judged=2),  # partial, newer than b's complete run
        "b1": report(0.7, {1: 0.7}),
        "c1": report(None, {}),
        "d1": report(0.2, {1: 0.2}, tasks=("1", "2", "3")),  # another subset: ranked apart
        "e1": report(0.8, {1: 0.8}, customer="gpt-4.1"),  # another customer: ranked apart
    }
    newest_first = [
        scored("a3", "http://a", 0, reports["a3"]),
        scored("a2", "http://a", 1, reports["a2"]),
        scored("b2", "http://b", 0, reports["b2"]),
        scored("b1", "http://b", 1, reports["b1"]),
        scored("c1", "http://c", 0, reports["c1"]),
        scored("d1", "http://d", 0, reports["d1"]),
        scored("e1", "http://e", 0, reports["e1"]),
    ]
    chosen = views.latest_per_agent(newest_first, include_partial=False)
    assert [c.id for c in chosen.complete] == ["a3", "b1", "c1", "d1", "e1"]
    assert chosen.partial == [] and chosen.partial_hidden == 1
    shown = views.latest_per_agent(newest_first, include_partial=True)
    assert [c.id for c in shown.partial] == ["b2"] and shown.partial_hidden == 0

    groups = views.group_by_coverage(views.leaderboard_rows(chosen.complete, reports))
    # The widest coverage first; c1 scored nothing (its own group, last).
    assert [[r.assessment_id for r in g.rows] for g in groups] == [["d1"], ["a3", "b1"], ["e1"], ["c1"]]
    assert groups[-1].coverage.label(114) == "no task scored × 0 trials, customer scripted"
    same = next(g for g in groups if "a3" in {r.assessment_id for r in g.rows})
    assert same.coverage.label(114) == "2 tasks (1–2) × 1 trial, customer scripted"
    assert groups[0].coverage.label(3) == "all 3 tasks × 1 trial, customer scripted"
    ascending = views.sort_leaderboard(same.rows, "avg_reward", descending=False)
    assert [r.assessment_id for r in ascending][:2] == ["a3", "b1"]
    with_pass2 = [*same.rows, *views.leaderboard_rows([newest_first[1]], reports)]  # a2 has pass^2
    by_pass2 = views.sort_leaderboard(with_pass2, "pass2", descending=False)
    assert by_pass2[0].assessment_id == "a2"  # the rows without one last, either way
    partial_row = views.leaderboard_rows(shown.partial, reports)[0]
    assert views.partial_coverage(partial_row.report) == (
        "2 of 4 trials scored, on 2 of 2 tasks (1–2), customer scripted"
    )
    # A report's own `complete` flag wins over the exclusion counts.
    assert views.complete_from({"not_judged": 3}, True) and not views.complete_from({}, False)


def test_task_ranges_and_what_a_row_shows() -> None:
    assert views.task_ranges(["0", "1", "2", "3", "7", "10", "11"]) == "0–3, 7, 10–11"
    assert views.task_ranges([str(i) for i in range(0, 40, 2)], limit=3) == "0, 2, 4, …"
    assert views.task_ranges(["5", "x"]) == "5, x"


def test_bar_chart_geometry_stays_inside_the_plot() -> None:
    chart = views.bar_chart({"pass^1": 0.5, "pass^2": 1.7, "pass^3": float("nan")}, width=300, height=100)
    plot = chart.height - chart.top - chart.bottom
    assert [round(b.height, 6) for b in chart.bars] == [plot / 2, plot, 0.0]
    assert all(chart.top <= b.y <= chart.height - chart.bottom for b in chart.bars)
    assert chart.bars[-1].x + chart.bars[-1].width <= chart.width


def test_the_pass_hat_k_chart_draws_each_95_percent_interval() -> None:
    # Tasks 3/4, 1/4, 4/4, 0/4: pass^2 0.375 with ci95 [0, 0.844140] (tests/engine/test_uncertainty.py).
    outcomes = {"1": 3, "2": 1, "3": 4, "4": 0}
    trials = [trial(t, k, reward=float(k < c)) for t, c in outcomes.items() for k in range(4)]
    config = AssessmentConfig(agent_url="http://agent", trials=4)
    full = compute_report(config, [as_result(s) for s in trials])
    chart = views.pass_hat_k_chart(full)
    second = chart.bars[1]
    assert second.label == "pass^2" and second.text == "0.375 ± 0.469"
    plot = chart.height - chart.top - chart.bottom
    assert second.error is not None
    assert second.error[0] == pytest.approx(chart.top + plot * (1 - 0.844140), abs=1e-3)
    assert second.error[1] == pytest.approx(chart.top + plot)  # clipped at 0
    assert views.estimate_text(full.stats.pass_hat_k[1] if full.stats else None) == "0.500 ± 0.447"
    # A report without error bars draws bars alone.
    assert all(bar.error is None for bar in views.pass_hat_k_chart(report(0.5, {1: 0.5, 2: 0.4})).bars)


def test_the_error_bars_note_says_what_they_are_over_or_why_there_are_none() -> None:
    config = AssessmentConfig(agent_url="http://agent", trials=2)
    two = compute_report(config, [as_result(trial("1", 0)), as_result(trial("2", 0, reward=0.0))])
    assert "95% interval over the 2 tasks scored" in views.error_bars_note(two)
    one = compute_report(config, [as_result(trial("1", 0))])
    assert views.error_bars_note(one) == (
        "No error bars: one task was scored, and one task has no spread to measure."
    )
    assert "stored before they existed" in views.error_bars_note(report(0.5, {1: 0.5}))


def test_the_compare_page_reads_b_against_a() -> None:
    before = [trial("1", reward=0.0, db=False), trial("2"), trial("3", reward=0.0, db=False)]
    after = [trial("1"), trial("2"), trial("3")]
    view = views.compare_view(before, after)
    assert view.result is not None and view.result.difference == pytest.approx(2 / 3)
    # B - A per task: 1, 0, 1: mean 2/3, sd sqrt(1/3), stderr 1/3; ci95 0.667 +- 0.653 = [0.013, 1.320],
    # which excludes 0; z = 2, p = 0.046.
    assert view.result.sentence == "B is ahead of A by 0.667 +- 0.653 in mean reward (p = 0.046, 3 tasks)"
    assert view.row(None) is view.result and view.row(1) is view.result.pass_hat_k[1] and view.row(2) is None
    nothing = views.compare_view(before, [trial("9")])
    assert nothing.result is None and nothing.problem is not None and "no scored task" in nothing.problem


def as_result(summary: TrialSummary) -> TrialResult:
    return TrialResult(
        task_id=summary.task_id,
        trial=summary.trial,
        seed=1,
        termination_reason=summary.termination_reason,
        reward=summary.reward,
        is_successful=summary.is_successful,
        started_at=NOW,
        finished_at=NOW,
    )
