"""tau2-bench v1.0.1's headline metrics of a results file, as its `compute_metrics` computes them, written in
our own words from reading upstream (src/tau2/metrics/agent_metrics.py, `Results.to_df`); no upstream code.

* Simulations whose termination is `infrastructure_error` are left out; nothing else is.
* A simulation's reward is `reward_info.reward`, or missing when it has no `reward_info`.
* avg reward: the mean over the rewards that are not missing (pandas skips missing values).
* success: a reward within 1e-6 of 1; a missing reward is no success.
* pass^k for k = 1 .. min(info.num_trials, the fewest simulations any task kept): per task C(c, k) / C(n, k)
  with n its simulations and c its successes, averaged over the tasks that kept any.

Deliberately not our `green_agent.scoring.metrics`: the tests compare the two.
"""

from __future__ import annotations

from collections import defaultdict
from math import comb
from typing import Any


def upstream_metrics(results: dict[str, Any]) -> tuple[float | None, dict[int, float]]:
    """(avg reward, pass^k by k) of a tau2 results document, as tau2 v1.0.1 reports them."""
    kept = [s for s in results["simulations"] if s["termination_reason"] != "infrastructure_error"]
    if not kept:
        return None, {}
    rewards = [(s["reward_info"] or {}).get("reward") for s in kept]
    known = [r for r in rewards if r is not None]
    average = sum(known) / len(known) if known else None
    by_task: dict[str, list[bool]] = defaultdict(list)
    for simulation, reward in zip(kept, rewards, strict=True):
        by_task[simulation["task_id"]].append(reward is not None and abs(reward - 1.0) <= 1e-6)
    top = min(results["info"]["num_trials"], *(len(s) for s in by_task.values()))
    pass_k = {
        k: sum(comb(sum(s), k) / comb(len(s), k) for s in by_task.values()) / len(by_task)
        for k in range(1, top + 1)
    }
    return average, pass_k
