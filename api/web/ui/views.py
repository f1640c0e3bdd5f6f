"""What the web UI's pages show, computed from stored records: pure functions, no I/O, no HTML.

Each trial gets one outcome (the grid's colour): passed, excluded (no reward), pending (not run yet), or for a
failed trial its first failure kind (green_agent.scoring.failures, `FAILURE_KINDS` order: termination, missing
write, wrong arguments, extra write, DB difference, env assertion, NL assertion, tool errors). A trial stored
before failures were classified falls back on what its signals say (termination, DB difference, NL
assertion).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.db.repository import CANCELLED, FAILED, AssessmentRecord, ScoredAssessment, TrialSummary
from domain_kit import is_clean_exit
from green_agent.core.limits import LLM_FAILURE_CODE
from green_agent.core.models import (
    FAILURE_KINDS,
    SIGNAL_ACTION,
    SIGNAL_COMMUNICATE,
    SIGNAL_DB,
    SIGNAL_NL,
    AssessmentReport,
    Estimate,
    Signal,
    TrialResult,
)
from green_agent.core.usage import TrialUsage
from green_agent.scoring.failures import failure_label, kinds
from green_agent.scoring.metrics import task_scores
from green_agent.scoring.uncertainty import Comparison, NoSharedTasks, compare, plus_minus

FAILURE_NAMES = {
    "termination": "ended badly",
    "missing_action": "missing action",
    "wrong_arguments": "wrong arguments",
    "extra_write": "extra write",
    "db_difference": "DB differs",
    "env_assertion": "env assertion failed",
    "nl_assertion": "NL assertion failed",
    "tool_errors": "tool errors",
}
"""Each failure kind (`FAILURE_KINDS`, in that order) in the words of the legend, the filter and the trial
page."""

# Outcome keys (CSS classes `o-<key>`) with their legend labels, in legend order.
OUTCOMES = {
    "passed": "passed",
    **FAILURE_NAMES,
    "failed": "failed (reward below 1)",
    "excluded": "excluded",
    "pending": "not run yet",
}


def _signal(summary: TrialSummary, name: str) -> bool | None:
    for signal in summary.signals:
        if signal.get("name") == name:
            passed = signal.get("passed")
            return passed if isinstance(passed, bool) else None
    return None


def is_failed(summary: TrialSummary) -> bool:
    return summary.reward is not None and not summary.is_successful


def trial_kinds(summary: TrialSummary) -> list[str]:
    """The failure kinds of a failed trial (none for a passed or excluded one), in `FAILURE_KINDS` order."""
    if not is_failed(summary):
        return []
    if summary.failures is not None:
        return list(kinds(summary.failures))
    coarse = []  # stored before failures were classified: what its signals say
    if not is_clean_exit(summary.termination_reason):
        coarse.append("termination")
    if _signal(summary, SIGNAL_DB) is False:
        coarse.append("db_difference")
    if _signal(summary, SIGNAL_NL) is False:
        coarse.append("nl_assertion")
    return coarse


def outcome(summary: TrialSummary) -> str:
    """The trial's outcome key (see OUTCOMES)."""
    if summary.reward is None:
        return "excluded"
    if summary.is_successful:
        return "passed"
    found = trial_kinds(summary)
    return found[0] if found else "failed"


def failure_reasons(summary: TrialSummary) -> list[str]:
    """Why a scored trial did not pass, in a few words per cause (empty for passed or excluded trials): its
    failures' labels ("missing exchange_delivered_order_items"), then its error."""
    if not is_failed(summary):
        return []
    if summary.failures:
        reasons = list(dict.fromkeys(failure_label(f) for f in summary.failures))
    else:  # stored before failures were classified
        reasons = []
        if not is_clean_exit(summary.termination_reason):
            reasons.append(f"ended by {summary.termination_reason}")
        if _signal(summary, SIGNAL_DB) is False:
            reasons.append("final DB differs from gold")
        if _signal(summary, SIGNAL_NL) is False:
            reasons.append("an NL assertion failed")
    if summary.error:
        reasons.append(error_reason(summary.error))
    return reasons or ["reward below 1"]


def error_reason(error: str) -> str:
    """A trial's error in one short line; a failure of our LLM that the agent's text provoked (the code
    `provoked_llm_failure:<cause>` leads its error) says so in words."""
    first = error.splitlines()[0]
    code, _, rest = first.partition(":")
    if code == LLM_FAILURE_CODE:
        cause = rest.partition(":")[0]
        party = "judge" if rest.partition(":")[2].startswith(" the judge LLM") else "customer"
        return f"the agent's text made our {party} LLM fail ({cause.replace('_', ' ')})"
    return first[:160]


def common_failures(
    summaries: Iterable[TrialSummary], limit: int = 10, *, kind: str | None = None
) -> list[tuple[str, int]]:
    """The most frequent failure reasons and how many trials have each (of the trials of `kind`, if given)."""
    counts: Counter[str] = Counter()
    for summary in summaries:
        if kind is None or kind in trial_kinds(summary):
            counts.update(failure_reasons(summary))
    return counts.most_common(limit)


def kind_counts(summaries: Iterable[TrialSummary]) -> dict[str, int]:
    """Failed trials per failure kind (a trial with several kinds counts for each), in kind order."""
    counts = Counter(kind for summary in summaries for kind in trial_kinds(summary))
    return {kind: counts[kind] for kind in FAILURE_KINDS if counts[kind]}


@dataclass(frozen=True)
class FailingTask:
    """A task with failed trials, for the assessment page's table."""

    task_id: str
    failed: int
    scored: int
    reasons: list[tuple[str, int]]  # reason -> failed trials with it, most frequent first
    trials: list[int]  # the failed trials (of the kind filtered on)


def failing_tasks(summaries: Iterable[TrialSummary], *, kind: str | None = None) -> list[FailingTask]:
    """Each task with a failed trial (of `kind`, if given), in task order."""
    by_task: dict[str, list[TrialSummary]] = defaultdict(list)
    for summary in summaries:
        by_task[summary.task_id].append(summary)
    rows = []
    for task_id in sorted(by_task, key=task_sort_key):
        trials = sorted(by_task[task_id], key=lambda s: s.trial)
        failed = [s for s in trials if is_failed(s)]
        shown = [s for s in failed if kind is None or kind in trial_kinds(s)]
        if not shown:
            continue
        reasons: Counter[str] = Counter(r for s in shown for r in failure_reasons(s))
        rows.append(
            FailingTask(
                task_id=task_id,
                failed=len(failed),
                scored=sum(1 for s in trials if s.reward is not None),
                reasons=reasons.most_common(),
                trials=[s.trial for s in shown],
            )
        )
    return rows


def failed_neighbours(
    summaries: Iterable[TrialSummary], task_id: str, trial: int, *, kind: str | None = None
) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The failed trials (of `kind`, if given) before and after this one, in grid order (task, then trial)."""
    shown = [s for s in summaries if is_failed(s) and (kind is None or kind in trial_kinds(s))]
    keys = sorted(((s.task_id, s.trial) for s in shown), key=lambda key: (task_sort_key(key[0]), key[1]))
    here = (task_sort_key(task_id), trial)
    before = [k for k in keys if (task_sort_key(k[0]), k[1]) < here]
    after = [k for k in keys if (task_sort_key(k[0]), k[1]) > here]
    return (before[-1] if before else None, after[0] if after else None)


def task_sort_key(task_id: str) -> tuple[int, int | str]:
    """Numeric task ids in numeric order, any others after them alphabetically."""
    return (0, int(task_id)) if task_id.isdigit() else (1, task_id)


@dataclass(frozen=True)
class Cell:
    task_id: str
    trial: int
    outcome: str
    title: str
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class GridRow:
    task_id: str
    cells: list[Cell]


def cell(summary: TrialSummary) -> Cell:
    kind = outcome(summary)
    detail = "; ".join(failure_reasons(summary)) or OUTCOMES[kind]
    return Cell(
        summary.task_id,
        summary.trial,
        kind,
        f"task {summary.task_id}, trial {summary.trial}: {detail}",
        tuple(trial_kinds(summary)),
    )


def grid(task_ids: Sequence[str], trials: int, summaries: Iterable[TrialSummary]) -> list[GridRow]:
    """Task x trial cells; tasks with stored trials but missing from `task_ids` are added at the end."""
    by_key = {(s.task_id, s.trial): s for s in summaries}
    ordered = list(dict.fromkeys([*task_ids, *sorted({t for t, _ in by_key}, key=task_sort_key)]))
    width = max([trials, *(k + 1 for _, k in by_key)])
    rows = []
    for task_id in ordered:
        cells = []
        for trial in range(width):
            summary = by_key.get((task_id, trial))
            if summary is None:
                cells.append(Cell(task_id, trial, "pending", f"task {task_id}, trial {trial}: not run yet"))
            else:
                cells.append(cell(summary))
        rows.append(GridRow(task_id, cells))
    return rows


def outcome_counts(rows: Iterable[GridRow]) -> dict[str, int]:
    counts = Counter(cell.outcome for row in rows for cell in row.cells)
    return {key: counts[key] for key in OUTCOMES if counts[key]}


def complete_from(excluded: dict[str, int], flag: bool | None) -> bool:
    """Whether a stored report is complete, from values read inside its JSON: its `complete` flag, or for a
    version-1 report (no flag) its exclusion counts, as `AssessmentReport` derives it on loading."""
    return flag if flag is not None else not any(excluded.values())


# -- how things are labelled -----------------------------------------------------------------------------


def short_id(assessment_id: str) -> str:
    """The first 8 characters of an assessment id: enough to tell rows apart, short enough for a phone."""
    return assessment_id[:8]


def agent_label(agent_url: str) -> str:
    """An agent URL without its scheme and trailing slash (the rows' name for the agent)."""
    return agent_url.split("://", 1)[-1].rstrip("/")


def ended_badly(record: AssessmentRecord) -> bool:
    """Failed or cancelled: shown in red, with the reason."""
    return record.status in (FAILED, CANCELLED)


def end_reason(record: AssessmentRecord, limit: int = 200) -> str:
    """Why a failed or cancelled assessment ended, in one line (empty otherwise)."""
    if not ended_badly(record):
        return ""
    first = (
        (record.error or record.status).strip().splitlines()[0]
        if (record.error or "").strip()
        else record.status
    )
    return first if len(first) <= limit else first[: limit - 1] + "…"


@dataclass(frozen=True)
class SignalView:
    """A trial's signal as shown: one state among passed, failed, not applicable (nothing to check in this
    task, whatever the stored `passed` says) and not evaluated (e.g. no judge)."""

    name: str
    state: str  # passed, failed, not_applicable, not_evaluated
    counts: bool
    detail: str

    @property
    def label(self) -> str:
        return self.state.replace("_", " ")


def signal_views(result: TrialResult) -> list[SignalView]:
    """The trial's signals, with "nothing to check" shown the same way for every signal: NL_ASSERTION of a
    task without assertions passes vacuously in tau2's score, COMMUNICATE without facts is stored as not
    evaluated; both are `not applicable` here."""
    nothing_to_check = {
        SIGNAL_NL: result.nl_status == "not_required",
        SIGNAL_ACTION: not result.action_checks,
        SIGNAL_COMMUNICATE: not result.communicate_checks,
    }
    views = []
    for signal in result.signals:
        views.append(
            SignalView(
                signal.name,
                _state(signal, nothing_to_check.get(signal.name, False)),
                signal.counts,
                signal.detail,
            )
        )
    return views


def _state(signal: Signal, nothing_to_check: bool) -> str:
    if nothing_to_check:
        return "not_applicable"
    if signal.passed is None:
        return "not_evaluated"
    return "passed" if signal.passed else "failed"


def has_usage(usage: TrialUsage | None) -> bool:
    """Whether any party made a metered call (else the tokens table would be empty: it is left out)."""
    return usage is not None and any(party is not None for party in (usage.user, usage.judge, usage.agent))


def tool_result_view(content: str | None) -> tuple[str, str]:
    """A tool result as (one-line summary, pretty text): JSON is indented; anything else is kept as it is."""
    text = content or ""
    try:
        pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        pretty = text
    first = " ".join(text.split())
    summary = first if len(first) <= 80 else first[:79] + "…"
    return summary, pretty


# -- charts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    x: float
    y: float
    width: float
    height: float
    error: tuple[float, float] | None = None
    """The y coordinates of the 95% interval's ends (drawn as a whisker), when the value has one."""
    text: str = ""
    """The value as shown ("0.600 ± 0.480")."""


@dataclass(frozen=True)
class BarChart:
    """Geometry of a bar chart of values in [0, 1], drawn by the `bar_chart` template macro as inline SVG."""

    width: float
    height: float
    top: float
    bottom: float
    bars: list[Bar] = field(default_factory=list)


def bar_chart(
    values: dict[str, float],
    *,
    intervals: dict[str, tuple[float, float]] | None = None,
    texts: dict[str, str] | None = None,
    width: float | None = None,
    height: float = 110,
) -> BarChart:
    top, bottom, gap = 16.0, 24.0, 8.0
    width = width if width is not None else gap + len(values) * (56 + gap)
    plot = height - top - bottom
    n = max(len(values), 1)
    bar_width = (width - gap * (n + 1)) / n
    bars = []
    for i, (label, value) in enumerate(values.items()):
        clipped = min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0
        bar_height = plot * clipped
        interval = (intervals or {}).get(label)
        error = None
        if interval is not None:
            low, high = (min(max(end, 0.0), 1.0) for end in interval)
            error = (top + plot * (1 - high), top + plot * (1 - low))
        bars.append(
            Bar(
                label=label,
                value=value,
                x=gap + i * (bar_width + gap),
                y=top + plot - bar_height,
                width=bar_width,
                height=bar_height,
                error=error,
                text=(texts or {}).get(label, f"{value:.3f}"),
            )
        )
    return BarChart(width=width, height=height, top=top, bottom=bottom, bars=bars)


def pass_hat_k_chart(report: AssessmentReport) -> BarChart:
    """pass^k by k, each bar with its 95% interval over tasks when the report has error bars."""
    if report.stats is None:
        return bar_chart({f"pass^{k}": v for k, v in sorted(report.pass_hat_k.items())})
    estimates = {f"pass^{k}": e for k, e in sorted(report.stats.pass_hat_k.items())}
    return bar_chart(
        {label: e.value for label, e in estimates.items()},
        intervals={label: e.ci95 for label, e in estimates.items() if e.ci95 is not None},
        texts={label: estimate_text(e) for label, e in estimates.items()},
    )


def estimate_text(estimate: Estimate | None) -> str:
    """ "0.817 ± 0.081": the value and the half-width of its 95% interval ("0.750" without one)."""
    return plus_minus(estimate).replace(" +- ", " ± ")


def error_bars_note(report: AssessmentReport) -> str:
    """What the error bars are over, or why there are none, in one sentence for the assessment page."""
    stats = report.stats
    if stats is None:
        return "No error bars: this report was stored before they existed (schema version 2 or older)."
    if stats.avg_reward is None:
        return "No error bars: no trial was scored."
    if stats.avg_reward.stderr is None:
        return "No error bars: one task was scored, and one task has no spread to measure."
    note = (
        f"± is the 95% interval over the {stats.n_tasks} tasks scored (the task is the unit: its trials "
        "are not independent). Another run of the same design must differ by "
        f"{stats.min_detectable_difference:.3f} in average reward to be told apart from this one (80% power)."
    )
    if stats.mixed_tasks:
        note += f" {len(stats.mixed_tasks)} tasks had mixed outcomes across their trials."
    return note


# -- compare ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskDelta:
    task_id: str
    a: str  # "2/4" style, or "-" when the task is absent
    b: str
    a_rate: float | None  # success rate over scored trials; None when none scored
    b_rate: float | None
    change: str  # better, worse, same, only_a, only_b, not_scored

    @property
    def delta(self) -> float | None:
        if self.a_rate is None or self.b_rate is None:
            return None
        return self.b_rate - self.a_rate


def _task_rates(summaries: Iterable[TrialSummary]) -> dict[str, tuple[int, int]]:
    """task -> (successes, scored trials)."""
    rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in summaries:
        entry = rates[s.task_id]
        if s.reward is not None:
            entry[1] += 1
            entry[0] += int(bool(s.is_successful))
    return {task: (c, n) for task, (c, n) in rates.items()}


def compare_tasks(a: Iterable[TrialSummary], b: Iterable[TrialSummary]) -> list[TaskDelta]:
    """Per task: successes over scored trials in A and in B, and whether B got better or worse."""
    rates_a, rates_b = _task_rates(a), _task_rates(b)
    deltas = []
    for task_id in sorted(rates_a.keys() | rates_b.keys(), key=task_sort_key):
        in_a, in_b = rates_a.get(task_id), rates_b.get(task_id)
        rate_a = in_a[0] / in_a[1] if in_a and in_a[1] else None
        rate_b = in_b[0] / in_b[1] if in_b and in_b[1] else None
        if in_a is None:
            change = "only_b"
        elif in_b is None:
            change = "only_a"
        elif rate_a is None or rate_b is None:
            change = "not_scored"
        elif rate_b > rate_a + 1e-9:
            change = "better"
        elif rate_b < rate_a - 1e-9:
            change = "worse"
        else:
            change = "same"
        deltas.append(
            TaskDelta(
                task_id=task_id,
                a=f"{in_a[0]}/{in_a[1]}" if in_a else "-",
                b=f"{in_b[0]}/{in_b[1]}" if in_b else "-",
                a_rate=rate_a,
                b_rate=rate_b,
                change=change,
            )
        )
    return deltas


def delta_order(delta: TaskDelta) -> tuple[int, float, tuple[int, int | str]]:
    """Regressions first (largest first), then improvements, then the rest: what a vendor looks at first."""
    rank = {"worse": 0, "better": 1}.get(delta.change, 2)
    size = -abs(delta.delta) if delta.delta is not None else 0.0
    return (rank, size, task_sort_key(delta.task_id))


@dataclass(frozen=True)
class ComparisonView:
    """The compare page's verdict: B - A paired by task (scoring.uncertainty), or why there is none."""

    result: Comparison | None
    problem: str | None = None

    def row(self, k: int | None) -> Any:
        """The paired difference for the average reward (k None) or for pass^k; None when not computed."""
        if self.result is None:
            return None
        return self.result if k is None else self.result.pass_hat_k.get(k)


def compare_view(a: Sequence[TrialSummary], b: Sequence[TrialSummary]) -> ComparisonView:
    """B against A (the page's "after" against its "before"), over the tasks both scored."""
    try:
        return ComparisonView(compare(task_scores(b), task_scores(a), names=("B", "A")))
    except NoSharedTasks:
        return ComparisonView(None, "A and B have no scored task in common: there is nothing to compare.")


def interval_text(ci95: tuple[float, float] | None) -> str:
    return "n/a" if ci95 is None else f"[{ci95[0]:+.3f}, {ci95[1]:+.3f}]"


# -- leaderboard --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """What an assessment's numbers are over: the tasks it scored, trials per task, and the customer. Only
    assessments over the same coverage are ranked against each other."""

    tasks: tuple[str, ...]
    trials: int
    customer: str | None  # the user-simulator name (run_info), None in reports without it

    def label(self, all_tasks: int) -> str:
        n = len(self.tasks)
        if not n:
            tasks = "no task scored"
        elif n == all_tasks:
            tasks = f"all {n} tasks"
        else:
            tasks = f"{n} task{'' if n == 1 else 's'} ({task_ranges(self.tasks)})"
        text = f"{tasks} × {self.trials} trial{'' if self.trials == 1 else 's'}"
        return text + (f", customer {self.customer}" if self.customer else "")


def coverage(report: AssessmentReport) -> Coverage:
    customer = report.run_info.user_model_name if report.run_info is not None else None
    return Coverage(tuple(sorted(report.task_rewards, key=task_sort_key)), report.num_trials, customer)


def partial_coverage(report: AssessmentReport) -> str:
    """What a partial assessment's numbers cover: "6 of 8 trials scored, on 3 of 4 tasks (0–1, 5), customer
    scripted"."""
    scored = coverage(report)
    text = (
        f"{report.trials_scored} of {report.trials_total} trials scored, on {len(scored.tasks)} of "
        f"{report.num_tasks} task{'' if report.num_tasks == 1 else 's'}"
    )
    if scored.tasks:
        text += f" ({task_ranges(scored.tasks)})"
    return text + (f", customer {scored.customer}" if scored.customer else "")


def task_ranges(task_ids: Sequence[str], limit: int = 8) -> str:
    """ "0–3, 7, 10–12": numeric ids as runs, others as they are; past `limit` runs, an ellipsis."""
    parts: list[str] = []
    numbers = sorted(int(t) for t in task_ids if t.isdigit())
    start = previous = None
    for number in [*numbers, None]:
        if number is not None and previous is not None and number == previous + 1:
            previous = number
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}–{previous}")
        start = previous = number
    parts.extend(t for t in task_ids if not t.isdigit())
    return ", ".join(parts[:limit]) + (", …" if len(parts) > limit else "")


@dataclass(frozen=True)
class LeaderboardRow:
    agent_url: str
    agent_name: str | None
    assessment_id: str
    created_at: Any
    complete: bool
    report: AssessmentReport

    @property
    def coverage(self) -> Coverage:
        return coverage(self.report)

    def estimate(self, column: str) -> Estimate | float | None:
        """The value of a column with its error bar when the report has one (schema 3), else bare."""
        stats = self.report.stats
        if column == "avg_reward":
            return stats.avg_reward if stats is not None else self.report.avg_reward
        k = int(column[4:])
        return stats.pass_hat_k.get(k) if stats is not None else self.report.pass_hat_k.get(k)

    def sort_value(self, column: str) -> tuple[int, float | str]:
        """Missing values sort last whatever the direction."""
        if column == "agent":
            return (0, (self.agent_name or "") + self.agent_url)
        if column == "avg_reward":
            value = self.report.avg_reward
        elif column.startswith("pass") and column[4:].isdigit():
            value = self.report.pass_hat_k.get(int(column[4:]))
        else:
            raise ValueError(column)
        return (0, value) if value is not None else (1, 0.0)


LEADERBOARD_COLUMNS = ("agent", "avg_reward")


@dataclass(frozen=True)
class LeaderboardChoice:
    """The assessments the leaderboard shows: each agent's most recent complete one (ranked, by coverage),
    and on request each agent's partial ones newer than that (not ranked)."""

    complete: list[ScoredAssessment]
    partial: list[ScoredAssessment]
    partial_hidden: int  # partial ones left out (shown on request)


def latest_per_agent(scored: Iterable[ScoredAssessment], *, include_partial: bool) -> LeaderboardChoice:
    """`scored` newest first."""
    complete: dict[str, ScoredAssessment] = {}
    partial: list[ScoredAssessment] = []
    for item in scored:
        if item.agent_url in complete:
            continue  # older than the agent's most recent complete run
        if complete_from(item.excluded, item.complete):
            complete[item.agent_url] = item
        else:
            partial.append(item)
    if include_partial:
        return LeaderboardChoice(list(complete.values()), partial, 0)
    return LeaderboardChoice(list(complete.values()), [], len(partial))


def leaderboard_rows(
    chosen: Iterable[ScoredAssessment], reports: dict[str, AssessmentReport]
) -> list[LeaderboardRow]:
    return [
        LeaderboardRow(
            b.agent_url,
            b.agent_name,
            b.id,
            b.created_at,
            complete_from(b.excluded, b.complete),
            reports[b.id],
        )
        for b in chosen
        if b.id in reports
    ]


@dataclass(frozen=True)
class LeaderboardGroup:
    """Rows over one coverage, ranked against each other."""

    coverage: Coverage
    rows: list[LeaderboardRow]


def group_by_coverage(rows: Iterable[LeaderboardRow]) -> list[LeaderboardGroup]:
    """One group per coverage, the widest first (most tasks x trials, then the most agents)."""
    groups: dict[Coverage, list[LeaderboardRow]] = defaultdict(list)
    for row in rows:
        groups[row.coverage].append(row)
    ordered = sorted(groups.items(), key=lambda g: (-len(g[0].tasks) * g[0].trials, -len(g[1]), g[0].tasks))
    return [LeaderboardGroup(c, members) for c, members in ordered]


def sort_leaderboard(rows: list[LeaderboardRow], column: str, descending: bool) -> list[LeaderboardRow]:
    present = [r for r in rows if r.sort_value(column)[0] == 0]
    missing = [r for r in rows if r.sort_value(column)[0] == 1]
    present.sort(key=lambda r: r.sort_value(column)[1], reverse=descending)
    return present + missing
