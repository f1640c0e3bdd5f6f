"""Benchmark 2: wall time against the ideal with simulated LLM latency, at several concurrencies.

The oracle white agent (child process) sleeps `--agent-delay-s` (300 ms) before every reply; the scripted user
sleeps `--user-delay-s` (200 ms) before every message. A trial's critical path is then its number of
white-agent replies x 300 ms + its number of user messages x 200 ms, read from the stored transcripts.
Two ideals:

* `sum / c`: the sum of critical paths divided by the concurrency (what the issue asks for);
* `schedule`: the makespan of a zero-overhead engine running the same trials in the same order with `c`
  slots (trials start the moment a slot frees). It differs from `sum / c` by the tail (the last wave is
  partly empty), which no engine can avoid; `schedule / wall` isolates the engine's own overhead.

Each point runs about `--waves` waves of trials (concurrency x waves trials, capped at 114 x 32): enough
for a stable ratio without spending 15 minutes at concurrency 1.

    .venv/bin/python -m bench.latency_scaling                            # c = 1, 8, 32, 128
    .venv/bin/python -m bench.latency_scaling --concurrency 128 --trials-total 456   # the full assessment
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import uvloop

from bench.harness import (
    DEFAULT_PG_URL,
    DatabaseKind,
    RunResult,
    a2a_sends,
    engine_settings,
    fresh_database,
    green_agent_service,
    run_measured,
    user_turns,
)
from bench.procstats import cpu_count
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from retail_domain import load_retail_data

NUM_TASKS = 114
MAX_TRIALS_PER_TASK = 32
TARGET_EFFICIENCY = 0.9


@dataclass
class Options:
    concurrencies: list[int]
    waves: float
    trials_total: int | None
    agent_delay_s: float
    user_delay_s: float
    database: DatabaseKind
    pg_url: str


@dataclass
class Point:
    concurrency: int
    num_tasks: int
    trials_per_task: int
    result: RunResult
    sum_critical_s: float
    schedule_s: float
    longest_s: float


def selection(n: int) -> tuple[int, int]:
    """(tasks, trials per task) giving about `n` trials: the first tasks of the base split, repeated."""
    n = max(1, min(n, NUM_TASKS * MAX_TRIALS_PER_TASK))
    trials = math.ceil(n / NUM_TASKS)
    return math.ceil(n / trials), trials


def critical_path(trial: TrialResult, agent_delay_s: float, user_delay_s: float) -> float:
    return a2a_sends(trial) * agent_delay_s + user_turns(trial) * user_delay_s


def zero_overhead_makespan(paths: Sequence[float], slots: int) -> float:
    """Trials in order, each starting as soon as one of `slots` frees: the engine's own FIFO semaphores."""
    free = [0.0] * min(slots, len(paths))
    heapq.heapify(free)
    end = 0.0
    for path in paths:
        start = heapq.heappop(free)
        end = max(end, start + path)
        heapq.heappush(free, start + path)
    return end


async def measure(options: Options) -> list[Point]:
    data = await asyncio.to_thread(load_retail_data)
    points: list[Point] = []
    async with white_agent_process("oracle", delay_s=options.agent_delay_s) as white:
        for c in options.concurrencies:
            wanted = options.trials_total or round(c * options.waves)
            num_tasks, trials = selection(wanted)
            settings = engine_settings(c, user_delay_s=options.user_delay_s)
            async with (
                fresh_database(options.database, options.pg_url) as url,
                green_agent_service(url, settings, data) as green,
            ):
                config = AssessmentConfig(
                    agent_url=white.url,
                    tasks=TaskSelection(split="base", num_tasks=num_tasks),
                    trials=trials,
                    concurrency=c,
                    user_model="scripted",
                )
                result = await run_measured(green, config, white)
            order = {task_id: i for i, task_id in enumerate(data.splits["base"])}
            ordered = sorted(result.trials, key=lambda t: (t.trial, order[t.task_id]))
            paths = [critical_path(t, options.agent_delay_s, options.user_delay_s) for t in ordered]
            points.append(
                Point(
                    concurrency=c,
                    num_tasks=num_tasks,
                    trials_per_task=trials,
                    result=result,
                    sum_critical_s=sum(paths),
                    schedule_s=zero_overhead_makespan(paths, c),
                    longest_s=max(paths),
                )
            )
    return points


def report(options: Options, points: list[Point]) -> None:
    rows = []
    for p in points:
        r = p.result
        n = len(r.trials)
        ideal = p.sum_critical_s / p.concurrency
        rows.append(
            [
                p.concurrency,
                f"{n} ({p.num_tasks} x {p.trials_per_task})",
                f"{n / p.concurrency:.1f}",
                f"{p.sum_critical_s / n:.2f}",
                f"{r.wall_s:.1f}",
                f"{ideal:.1f}",
                f"{ideal / r.wall_s:.3f}",
                f"{p.schedule_s:.1f}",
                f"{p.schedule_s / r.wall_s:.3f}",
                f"{r.green_cpu_s / r.wall_s:.2f}",
                f"{(r.green_cpu_s + r.white_cpu_s) / p.schedule_s:.2f}",
                f"{1000 * r.green_cpu_s / r.a2a_turns:.2f}",
                f"{r.other_cores:.2f}",
                f"{r.avg_reward:.3f}" if r.avg_reward is not None else "n/a",
            ]
        )
    print_table(
        f"Wall time against the ideal, white agent {1000 * options.agent_delay_s:.0f} ms per reply, "
        f"scripted user {1000 * options.user_delay_s:.0f} ms per message "
        f"({options.database}; {cpu_count()} cores)",
        [
            "concurrency",
            "trials (tasks x trials)",
            "waves",
            "mean critical path s",
            "wall s",
            "ideal sum/c s",
            "efficiency (sum/c) / wall",
            "zero-overhead schedule s",
            "engine efficiency schedule / wall",
            "green cores busy",
            "cores needed at ideal pace (green + white CPU / schedule)",
            "green CPU ms/turn",
            "other processes, cores busy",
            "avg reward",
        ],
        rows,
    )
    print(
        f"On {cpu_count()} cores, a point whose 'cores needed' exceeds the cores left by other processes is "
        "CPU-bound: its efficiency cannot pass (cores available) / (cores needed)."
    )
    print(
        f"target: efficiency above {TARGET_EFFICIENCY} at concurrency 128. Low-concurrency points run "
        f"~{options.waves:g} waves (a task subset), not all 456 trials."
    )


def parse(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--waves", type=float, default=8.0, help="trials per point = concurrency x waves")
    parser.add_argument("--trials-total", type=int, help="run this many trials at every point instead")
    parser.add_argument("--agent-delay-s", type=float, default=0.3)
    parser.add_argument("--user-delay-s", type=float, default=0.2)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    args = parser.parse_args(argv)
    return Options(
        args.concurrency,
        args.waves,
        args.trials_total,
        args.agent_delay_s,
        args.user_delay_s,
        args.db,
        args.pg_url,
    )


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    report(options, uvloop.run(measure(options)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
