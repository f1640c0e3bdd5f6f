"""Error bars on an assessment's numbers, and paired comparisons of two assessments (pure).

The method is E. Miller, "Adding Error Bars to Evals" (2024, arXiv:2411.00640). The trials of one task are
not independent draws (same task, same agent, often the same outcome), so the unit of sampling is the task:

* a number over tasks (pass^k: the mean of the per-task estimates C(c, k) / C(n, k)) has the standard error
  sd(per-task values) / sqrt(n_tasks), the sample standard deviation taken with ddof 1;
* the average reward is a mean over trials; its task-clustered standard error is
  sqrt(n / (n - 1) * sum over tasks of (S_t - n_t * mean)^2) / N (S_t: the task's reward sum, n_t its trials,
  N all trials, n the tasks). With the same number of trials in every task this is exactly sd(per-task mean
  reward) / sqrt(n_tasks); it stays right when exclusions leave tasks with fewer trials;
* ci95 = value +- 1.96 stderr (normal approximation), clipped to [0, 1] for a report's numbers;
* two assessments are compared over the tasks both scored, paired by task: the per-task differences have the
  mean `difference` and the standard error sd(differences) / sqrt(n); p is two-sided, from the normal
  approximation. Pairing removes the between-task variance that both runs share;
* power: at 80% power and a two-sided 5% test, a true difference of 2.8 standard errors of the difference is
  found (1.96 + 0.84). Against another assessment of the same design the difference's standard error is about
  sqrt(2) x stderr (unpaired), hence a report's `min_detectable_difference` = 2.8 x sqrt(2) x stderr; pairing
  can only make it smaller.

Everything is computed in exact fractions up to the last square root, so that "every task has the same
value" gives a standard error of exactly 0 and compare(A, B) is exactly -compare(B, A). With one task a
standard error is undefined (no spread to measure): it is None, and so are the interval and the detectable
difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import variance

from pydantic import BaseModel, Field

from green_agent.core.models import Estimate

Z95 = 1.96
"""The two-sided 95% quantile of the normal distribution."""
POWER80_FACTOR = 2.8
"""Standard errors between a true difference and 0 for an 80%-power, two-sided 5% test (1.96 + 0.84)."""
SUCCESS_TOLERANCE = 1e-6
"""A reward within this of 1 is a success (tau2's rule)."""


@dataclass(frozen=True)
class TaskScore:
    """The counted trials of one task: their rewards, in trial order."""

    rewards: tuple[float, ...]

    @property
    def trials(self) -> int:
        return len(self.rewards)

    @property
    def successes(self) -> int:
        return sum(1 for r in self.rewards if abs(r - 1.0) <= SUCCESS_TOLERANCE)

    @property
    def mean_reward(self) -> Fraction:
        return sum(map(Fraction, self.rewards), Fraction(0)) / len(self.rewards)

    def pass_hat(self, k: int) -> Fraction:
        """The unbiased per-task estimate of "k trials in a row succeed": C(c, k) / C(n, k)."""
        return Fraction(math.comb(self.successes, k), math.comb(self.trials, k))


def interval(value: float, stderr: float | None, *, clip: bool) -> tuple[float, float] | None:
    """value +- 1.96 stderr; clipped to [0, 1] for a rate, not for a difference."""
    if stderr is None:
        return None
    low, high = value - Z95 * stderr, value + Z95 * stderr
    return (max(0.0, low), min(1.0, high)) if clip else (low, high)


def _stderr_of_mean(values: Sequence[Fraction]) -> float | None:
    """sd(values, ddof 1) / sqrt(n), exactly 0 when every value is the same; None for fewer than 2."""
    if len(values) < 2:
        return None
    return math.sqrt(variance(values) / len(values))


def mean_estimate(values: Sequence[Fraction]) -> Estimate:
    """The mean of per-task values with its task-level error bar (pass^k)."""
    value = float(sum(values, Fraction(0)) / len(values))
    stderr = _stderr_of_mean(values)
    return Estimate(value=value, stderr=stderr, ci95=interval(value, stderr, clip=True))


def reward_estimate(scores: Mapping[str, TaskScore]) -> Estimate | None:
    """The average reward over every counted trial (tau2's avg reward), with its task-clustered error bar;
    None without a counted trial."""
    tasks = [s for s in scores.values() if s.trials]
    if not tasks:
        return None
    sums = [sum(map(Fraction, s.rewards), Fraction(0)) for s in tasks]
    total_trials = sum(s.trials for s in tasks)
    mean = sum(sums, Fraction(0)) / total_trials
    value = float(mean)
    stderr = None
    if len(tasks) >= 2:
        n = len(tasks)
        deviations = (total - s.trials * mean for total, s in zip(sums, tasks, strict=True))
        spread = sum((d * d for d in deviations), Fraction(0))
        stderr = math.sqrt(Fraction(n, n - 1) * spread / total_trials**2)
    return Estimate(value=value, stderr=stderr, ci95=interval(value, stderr, clip=True))


def max_k(scores: Mapping[str, TaskScore]) -> int:
    """The largest k for which pass^k is defined: the fewest counted trials of any task that kept one."""
    counts = [s.trials for s in scores.values() if s.trials]
    return min(counts) if counts else 0


def pass_hat_k_estimates(scores: Mapping[str, TaskScore]) -> dict[int, Estimate]:
    """pass^k for k = 1 .. `max_k`, each the mean over tasks of C(c, k) / C(n, k), with its error bar."""
    tasks = [s for s in scores.values() if s.trials]
    return {k: mean_estimate([s.pass_hat(k) for s in tasks]) for k in range(1, max_k(scores) + 1)}


def plus_minus(estimate: Estimate | None, digits: int = 3) -> str:
    """An estimate for people: "0.817 +- 0.081" (1.96 standard errors), the bare value when it has no error
    bar (one task), "n/a" for no estimate."""
    if estimate is None:
        return "n/a"
    if estimate.stderr is None:
        return f"{estimate.value:.{digits}f}"
    return f"{estimate.value:.{digits}f} +- {Z95 * estimate.stderr:.{digits}f}"


def min_detectable_difference(stderr: float | None) -> float | None:
    """The smallest true difference (80% power, two-sided 5%) between this assessment and another of the
    same design: 2.8 x sqrt(2) x stderr."""
    return None if stderr is None else POWER80_FACTOR * math.sqrt(2) * stderr


# -- paired comparison ------------------------------------------------------------------------------------


class NoSharedTasks(ValueError):
    """The two assessments have no scored task in common: there is nothing to pair."""


class FlippedTask(BaseModel):
    """A task one assessment solved in every counted trial and the other in none."""

    task_id: str
    a: float = Field(description="Mean reward of the task in A.")
    b: float = Field(description="Mean reward of the task in B.")


class Difference(BaseModel):
    """A - B over the tasks both scored, paired by task."""

    difference: float = Field(description="Mean over the shared tasks of (A's per-task value - B's).")
    stderr: float | None = Field(
        description="sd(per-task differences, ddof 1) / sqrt(tasks compared); None with one task."
    )
    ci95: tuple[float, float] | None = Field(description="difference +- 1.96 stderr (not clipped).")
    p_value: float | None = Field(
        description="Two-sided, normal approximation; 1.0 when every difference is 0; None when undefined "
        "(one task, not 0)."
    )
    min_detectable_difference: float | None = Field(
        description="2.8 x stderr: the smallest true difference this comparison finds with 80% power."
    )
    significant: bool = Field(description="True when ci95 excludes 0 (p < 0.05).")
    sentence: str


class Comparison(Difference):
    """Two assessments, A and B, compared on mean reward per task (the top-level numbers) and on pass^k;
    the sentences call them A and B."""

    a: str | None = Field(default=None, description="A's assessment id.")
    b: str | None = Field(default=None, description="B's assessment id.")
    tasks_compared: int
    a_better: int = Field(description="Shared tasks where A's mean reward is higher.")
    b_better: int = Field(description="Shared tasks where B's mean reward is higher.")
    ties: int
    flipped: list[FlippedTask] = Field(
        default_factory=list,
        description="Shared tasks solved in every trial by one and in none by the other.",
    )
    only_in_a: list[str] = Field(default_factory=list, description="Tasks A scored and B did not (left out).")
    only_in_b: list[str] = Field(default_factory=list, description="Tasks B scored and A did not (left out).")
    pass_hat_k: dict[int, Difference] = Field(
        default_factory=dict,
        description="k -> the same comparison on the per-task pass^k estimates, for "
        "every k both assessments have the trials for on the shared tasks.",
    )


def compare(
    a: Mapping[str, TaskScore],
    b: Mapping[str, TaskScore],
    *,
    a_id: str | None = None,
    b_id: str | None = None,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """A against B, paired by task over the tasks both scored (at least one counted trial in each); raises
    `NoSharedTasks` when there are none. `a_id` and `b_id` identify them in the result, `names` in its
    sentences (a page that shows B - A calls compare(b, a, names=("B", "A")))."""
    a_name, b_name = names
    scored_a = {t for t, s in a.items() if s.trials}
    scored_b = {t for t, s in b.items() if s.trials}
    shared = sorted(scored_a & scored_b, key=_natural)
    if not shared:
        raise NoSharedTasks(f"{a_id or a_name} and {b_id or b_name} have no scored task in common")
    mean_a = {t: a[t].mean_reward for t in shared}
    mean_b = {t: b[t].mean_reward for t in shared}
    overall = _difference([mean_a[t] - mean_b[t] for t in shared], a_name, b_name, "mean reward")
    common_a = {t: a[t] for t in shared}
    common_b = {t: b[t] for t in shared}
    ks = range(1, min(max_k(common_a), max_k(common_b)) + 1)
    return Comparison(
        **overall.model_dump(),
        a=a_id,
        b=b_id,
        tasks_compared=len(shared),
        a_better=sum(1 for t in shared if mean_a[t] > mean_b[t]),
        b_better=sum(1 for t in shared if mean_a[t] < mean_b[t]),
        ties=sum(1 for t in shared if mean_a[t] == mean_b[t]),
        flipped=[
            FlippedTask(task_id=t, a=float(mean_a[t]), b=float(mean_b[t]))
            for t in shared
            if _all_or_nothing(a[t], b[t]) or _all_or_nothing(b[t], a[t])
        ],
        only_in_a=sorted(scored_a - scored_b, key=_natural),
        only_in_b=sorted(scored_b - scored_a, key=_natural),
        pass_hat_k={
            k: _difference([a[t].pass_hat(k) - b[t].pass_hat(k) for t in shared], a_name, b_name, f"pass^{k}")
            for k in ks
        },
    )


def _all_or_nothing(solved: TaskScore, failed: TaskScore) -> bool:
    return solved.successes == solved.trials and failed.successes == 0


def _difference(diffs: Sequence[Fraction], a_name: str, b_name: str, what: str) -> Difference:
    mean = sum(diffs, Fraction(0)) / len(diffs)
    value = float(mean)
    stderr = _stderr_of_mean(diffs)
    ci95 = interval(value, stderr, clip=False)
    if all(d == 0 for d in diffs):
        p_value: float | None = 1.0
    elif stderr is None:
        p_value = None
    elif stderr == 0:
        p_value = 0.0  # every task moved by the same nonzero amount
    else:
        p_value = math.erfc(abs(value) / stderr / math.sqrt(2))
    significant = ci95 is not None and (ci95[0] > 0 or ci95[1] < 0)
    mdd = None if stderr is None else POWER80_FACTOR * stderr
    return Difference(
        difference=value,
        stderr=stderr,
        ci95=ci95,
        p_value=p_value,
        min_detectable_difference=mdd,
        significant=significant,
        sentence=_sentence(value, stderr, p_value, significant, mdd, len(diffs), a_name, b_name, what),
    )


def _sentence(
    value: float,
    stderr: float | None,
    p_value: float | None,
    significant: bool,
    mdd: float | None,
    tasks: int,
    a_name: str,
    b_name: str,
    what: str,
) -> str:
    if value == 0 and stderr == 0:
        same = f"the same {what} on each of the {tasks} tasks compared"
        return f"{a_name} and {b_name} have {same}: no difference"
    if stderr is None:
        return (
            f"one task compared: too few to tell a difference in {what} from noise "
            f"({a_name} - {b_name} = {value:+.3f} on it)"
        )
    if significant:
        ahead, behind = (a_name, b_name) if value > 0 else (b_name, a_name)
        return (
            f"{ahead} is ahead of {behind} by {abs(value):.3f} +- {Z95 * stderr:.3f} in {what} "
            f"({format_p(p_value)}, {tasks} tasks)"
        )
    assert mdd is not None
    return (
        f"no difference in {what} this comparison can detect (smaller than +-{mdd:.3f}; "
        f"{a_name} - {b_name} = {value:+.3f} +- {Z95 * stderr:.3f}, {format_p(p_value)}, {tasks} tasks)"
    )


def format_p(p_value: float | None) -> str:
    """A p-value for people: "p = 0.29", two significant digits below 0.1, "p < 0.001" below that."""
    if p_value is None:
        return "p n/a"
    if p_value < 0.001:
        return "p < 0.001"
    return f"p = {p_value:.2g}" if p_value < 0.1 else f"p = {p_value:.2f}"


def _natural(task_id: str) -> tuple[int, int | str]:
    """Numeric task ids in numeric order ("2" before "10"), others after them."""
    return (0, int(task_id)) if task_id.isdigit() else (1, task_id)
