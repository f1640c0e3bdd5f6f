"""Benchmark: what starting trials longest first saves, measured live.

One assessment of 114 tasks x 4 trials at concurrency 128 against the oracle white agent (child process)
answering after `--agent-delay-s`, the scripted user after `--user-delay-s`: once with trials in report order
(first come, first served), once longest first (the engine's default). Also printed: the makespan a
zero-overhead engine would reach with each order, from the trials' critical paths (see latency_scaling).

    .venv/bin/python -m bench.scheduling                      # 300 ms and 2 s agent latency
    .venv/bin/python -m bench.scheduling --agent-delay-s 2.0
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import uvloop

from bench.harness import DEFAULT_PG_URL, engine_settings, fresh_database, green_agent_service, run_measured
from bench.latency_scaling import critical_path, zero_overhead_makespan
from bench.procstats import cpu_count
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, Engine, TaskSelection
from retail_domain import load_retail_data


async def measure(args: argparse.Namespace) -> list[list[object]]:
    data = await asyncio.to_thread(load_retail_data)
    rows: list[list[object]] = []
    for delay in args.agent_delay_s:
        async with white_agent_process("oracle", delay_s=delay) as white:
            walls: dict[bool, float] = {}
            for longest_first in (False, True):
                settings = engine_settings(args.concurrency, user_delay_s=args.user_delay_s).model_copy(
                    update={"longest_first": longest_first}
                )
                async with (
                    fresh_database(args.db, args.pg_url) as url,
                    green_agent_service(url, settings, data) as green,
                ):
                    config = AssessmentConfig(
                        agent_url=white.url,
                        tasks=TaskSelection(split="base"),
                        trials=args.trials,
                        concurrency=args.concurrency,
                        user_model="scripted",
                    )
                    result = await run_measured(green, config, white)
                by_key = {(t.task_id, t.trial): t for t in result.trials}
                start_order = Engine(settings, data).longest_first(
                    config, [(t, k) for k in range(args.trials) for t in data.splits["base"]]
                )
                paths = [critical_path(by_key[key], delay, args.user_delay_s) for key in start_order]
                walls[longest_first] = result.wall_s
                rows.append(
                    [
                        f"{1000 * delay:.0f}",
                        "longest first" if longest_first else "report order (FCFS)",
                        f"{result.wall_s:.1f}",
                        f"{zero_overhead_makespan(paths, args.concurrency):.1f}",
                        f"{max(paths):.1f}",
                        f"{1 - walls[True] / walls[False]:.0%}" if longest_first else "",
                    ]
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agent-delay-s", type=float, nargs="+", default=[0.3, 2.0])
    parser.add_argument("--user-delay-s", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    args = parser.parse_args(argv)
    rows = uvloop.run(measure(args))
    print_table(
        f"Longest first against first come, first served: 114 x {args.trials} trials, "
        f"concurrency {args.concurrency}, scripted user {1000 * args.user_delay_s:.0f} ms "
        f"({args.db}; {cpu_count()} cores)",
        ["agent delay ms", "start order", "wall s", "zero-overhead schedule s", "longest trial s", "saved"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
