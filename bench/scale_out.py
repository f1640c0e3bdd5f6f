"""Benchmark: scale-out over worker processes on one PostgreSQL database.

For 1, 2 and 4 `green-agent worker` processes (each its own event loop, so its own core when there is one),
one assessment of 114 tasks x 4 trials at concurrency 128 (the assessment's lock lanes hold that total
across workers) against the oracle white agent (child process) answering after `--agent-delay-s`, the
scripted user after `--user-delay-s`. This process creates the assessment through the service with no
worker of its own and waits for it; it prints turns per second, green CPU per turn (all worker processes and
this one together) and wall time.

    .venv/bin/python -m bench.scale_out                         # 1, 2, 4 workers, 300 ms agent latency
    .venv/bin/python -m bench.scale_out --workers 1 2 --agent-delay-s 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import uvloop

from api.runtime.runtime import open_runtime
from api.settings import Settings
from bench.harness import DEFAULT_PG_URL, a2a_sends, fresh_database
from bench.procstats import cpu_count, cpu_seconds, machine_busy_seconds, self_cpu_seconds
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, TaskSelection

GREEN_AGENT_BIN = Path(sys.executable).parent / "green-agent"
START_TIMEOUT_S = 120.0


def start_workers(
    n: int, database_url: str, args: argparse.Namespace, log_dir: Path
) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "GREEN_AGENT_MAX_CONCURRENT_TRIALS": str(args.concurrency),
        "GREEN_AGENT_MAX_CONCURRENT_PER_AGENT": str(args.concurrency),
        "GREEN_AGENT_SCRIPTED_USER_DELAY_S": str(args.user_delay_s),
        # Up to 5 processes share one server (100 connections by default) with other users of it.
        "GREEN_AGENT_DB_POOL_SIZE": "4",
        "GREEN_AGENT_DB_MAX_OVERFLOW": "4",
        "GREEN_AGENT_QUEUE_POOL_SIZE": "3",
        "GREEN_AGENT_WORKER_POLL_INTERVAL_S": os.environ.get("GREEN_AGENT_WORKER_POLL_INTERVAL_S", "0.5"),
    }
    workers = []
    for i in range(n):
        log = (log_dir / f"worker{i}.log").open("wb")
        workers.append(
            subprocess.Popen(
                [str(GREEN_AGENT_BIN), "worker", "--log-level", "warning"], env=env, stdout=log, stderr=log
            )
        )
        log.close()
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


async def one_point(n: int, white_url: str, args: argparse.Namespace) -> list[object]:
    async with fresh_database("postgres", args.pg_url) as database_url:
        settings = Settings(_env_file=None, database_url=database_url)
        async with open_runtime(settings, worker=False) as runtime:
            with tempfile.TemporaryDirectory(prefix="green-scale-out-") as logs:
                workers = start_workers(n, database_url, args, Path(logs))
                try:
                    deadline = time.monotonic() + START_TIMEOUT_S
                    while await runtime.service.queue.live_workers() < n:
                        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                            raise RuntimeError(f"workers did not start; logs in {logs}")
                        await asyncio.sleep(0.2)
                    config = AssessmentConfig(
                        agent_url=white_url,
                        tasks=TaskSelection(split="base"),
                        trials=args.trials,
                        concurrency=args.concurrency,
                        user_model="scripted",
                    )
                    cpu_before = self_cpu_seconds() + sum(cpu_seconds(w.pid) for w in workers)
                    machine_before = machine_busy_seconds()
                    started = time.perf_counter()
                    record, _ = await runtime.service.create(config, source="bench")
                    final = await runtime.service.wait(record.id)
                    wall = time.perf_counter() - started
                    green_cpu = self_cpu_seconds() + sum(cpu_seconds(w.pid) for w in workers) - cpu_before
                    machine = machine_busy_seconds() - machine_before
                finally:
                    stop_workers(workers)
            if final.status != "completed":
                raise RuntimeError(f"assessment ended {final.status}: {final.error}")
            trials = await runtime.repository.trial_results(record.id)
    turns = sum(a2a_sends(t) for t in trials)
    return [
        n,
        len(trials),
        f"{wall:.1f}",
        f"{turns / wall:.0f}",
        f"{1000 * green_cpu / turns:.2f}",
        f"{green_cpu / wall:.2f}",
        f"{machine / wall:.2f}",
    ]


async def measure(args: argparse.Namespace) -> list[list[object]]:
    rows = []
    async with white_agent_process("oracle", delay_s=args.agent_delay_s) as white:
        for n in args.workers:
            rows.append(await one_point(n, white.url, args))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--agent-delay-s", type=float, default=0.3)
    parser.add_argument("--user-delay-s", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    args = parser.parse_args(argv)
    rows = uvloop.run(measure(args))
    print_table(
        f"Scale-out over worker processes: 114 x {args.trials} trials, concurrency {args.concurrency}, "
        f"white agent {1000 * args.agent_delay_s:.0f} ms, scripted user {1000 * args.user_delay_s:.0f} ms "
        f"(PostgreSQL; {cpu_count()} cores)",
        [
            "workers",
            "trials",
            "wall s",
            "turns/s",
            "green CPU ms/turn",
            "green cores busy",
            "machine cores busy",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
