"""Per-trial cost of the service path, one operation at a time: CPU of this process per call.

What a trial job does besides running the trial: its opening read (is the assessment still unfinished, is
this trial stored already), the commit of the finished trial (`save_trial`, a transcript of real oracle
trials), the queueing of its successor, and procrastinate's own handling of a job (fetch, run, finish).
Each operation runs `--calls` times per round; rounds alternate the operations; the medians are printed.

    .venv/bin/python -m bench.trial_storage --db both
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import uvloop
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.runtime.queue import QueueSettings, TrialQueue
from bench.harness import DatabaseKind, engine_settings, fresh_database, green_agent_service, run_measured
from bench.procstats import machine_busy_seconds
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from retail_domain import load_retail_data

Operation = Callable[[int], Awaitable[object]]


async def _cpu_per_call(operation: Operation, calls: int, offset: int) -> float:
    started = time.process_time()
    for i in range(calls):
        await operation(offset + i)
    return 1000 * (time.process_time() - started) / calls


async def _enqueue_cost(database_url: str, calls: int, database: AsyncEngine | None) -> float:
    """CPU per `enqueue` of one job (a queue without a worker: nothing runs them)."""
    queue = TrialQueue(database_url, QueueSettings(), database=database)
    queue.register(lambda *args: asyncio.sleep(0))
    await queue.open()
    try:
        await queue.enqueue("warm-up", [("t", 0)])
        return await _cpu_per_call(lambda i: queue.enqueue("e", [(f"t{i}", time.monotonic_ns())]), calls, 0)
    finally:
        await queue.close()


async def _procrastinate_job_cost(database_url: str, jobs: int, database: AsyncEngine | None) -> float:
    """CPU per job of procrastinate alone: a worker running no-op jobs, each queueing the next (as trial jobs
    do), 32 at a time. With `database` (PostgreSQL), its hot statements on that engine's asyncpg pool, as
    the service opens the queue."""
    queue = TrialQueue(database_url, QueueSettings(worker_concurrency=32), database=database)
    done = asyncio.Event()
    count = 0

    async def handler(context: object, assessment_id: str, task_id: str, trial: int) -> None:
        nonlocal count
        count += 1
        if count <= jobs - 32:
            await queue.enqueue(assessment_id, [(f"t{count + 31}", 0)])
        if count == jobs:
            done.set()

    queue.register(handler)
    await queue.open()
    try:
        await queue.enqueue("a", [(f"t{i}", 0) for i in range(32)])
        started = time.process_time()
        worker = asyncio.create_task(queue.run_worker("bench"))
        await done.wait()
        cost = 1000 * (time.process_time() - started) / jobs
        worker.cancel()
        with_cancel = asyncio.gather(worker, return_exceptions=True)
        await with_cancel
    finally:
        await queue.close()
    return cost


async def measure(kind: DatabaseKind, calls: int, rounds: int) -> dict[str, list[float]]:
    data = await asyncio.to_thread(load_retail_data)
    results: dict[str, list[float]] = {}
    async with white_agent_process("oracle") as white:
        config = AssessmentConfig(
            agent_url=white.url,
            tasks=TaskSelection(split="base", num_tasks=16),
            trials=1,
            concurrency=16,
            user_model="scripted",
        )
        async with fresh_database(kind) as url, green_agent_service(url, engine_settings(32), data) as green:
            trials = (await run_measured(green, config, white)).trials
            # A transcript of the median size, as a trial job stores it (oracle trials: ~16 messages).
            trials.sort(key=lambda t: len(t.transcript))
            sample: TrialResult = trials[len(trials) // 2]
            big = config.model_copy(update={"trials": 32, "tasks": TaskSelection(split="base")})
            record, _ = await green.service.create(big, source="bench", start=False)
            repo, aid = green.repository, record.id
            keys = [(task_id, trial) for task_id in sorted(data.tasks) for trial in range(32)]

            async def save(i: int) -> object:
                task_id, trial = keys[i]
                update = {"task_id": task_id, "trial": trial}
                return await repo.save_trial(aid, sample.model_copy(update=update), run_seconds=1.0)

            async def job_start(i: int) -> object:
                # What a job reads before it runs its trial (the assessment is opened in this process).
                if hasattr(repo, "trial_job_state"):
                    return await repo.trial_job_state(aid, "x", i)
                await repo.get(aid)
                return await repo.trial_stored(aid, "x", i)

            operations: dict[str, Operation] = {
                "job start reads": job_start,
                "repository.get": lambda i: repo.get(aid),
                "repository.trial_stored": lambda i: repo.trial_stored(aid, "x", i),
                f"save_trial ({len(sample.transcript)} messages)": save,
            }
            for operation in operations.values():  # warm-up: compiled statements, pools
                await operation(len(keys) - 1)
            for r in range(rounds):
                for name, operation in operations.items():
                    offset = r * calls
                    results.setdefault(name, []).append(await _cpu_per_call(operation, calls, offset))
        async with fresh_database(kind) as url:
            database = create_engine(url) if kind == "postgres" else None
            try:
                if database is not None:
                    await upgrade(database)
                for _ in range(rounds):
                    cost = await _enqueue_cost(url, calls, database)
                    results.setdefault("queue.enqueue (one job)", []).append(cost)
                    cost = await _procrastinate_job_cost(url, 500, database)
                    results.setdefault("procrastinate job (fetch, run, finish, defer next)", []).append(cost)
            finally:
                if database is not None:
                    await database.dispose()
    return results


async def main(kinds: list[DatabaseKind], calls: int, rounds: int) -> None:
    busy_before, wall_before = machine_busy_seconds(), time.monotonic()
    table: dict[str, dict[str, float]] = {}
    for kind in kinds:
        for name, values in (await measure(kind, calls, rounds)).items():
            table.setdefault(name, {})[kind] = statistics.median(values)
    load = (machine_busy_seconds() - busy_before) / (time.monotonic() - wall_before)
    print(f"CPU ms per call, median of {rounds} rounds of {calls} calls; machine busy {load:.2f} cores")
    print("| operation | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for name, by_kind in table.items():
        print(f"| {name} | " + " | ".join(f"{by_kind[k]:.3f}" for k in kinds) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kinds: list[DatabaseKind] = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    uvloop.run(main(kinds, args.calls, args.rounds))
