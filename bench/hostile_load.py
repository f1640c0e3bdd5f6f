"""Benchmark: the green agent's event loop and memory while 64 hostile trials run at once.

The hostile white agent (a child process, `python -m bench.white_agent --kind hostile`) answers every task
with one of the worst cases of `green_agent.reference_agents.hostile.worst_cases()`: 100,000 nested brackets,
12,000 argument keys, 600 tool calls, NUL and lone surrogates, NaN and 1e999, 5,000-character ids, bodies of
braces, DataParts of 2,000 values, 16 calls of 7 KiB per reply until the transcript bound, truncated and
duplicated bodies. The green agent runs in this process through the service, with its SQL storage.

Printed per database: event-loop lag (how late a 5 ms timer fires; p50, p99, max: wall time, so a busy
machine inflates it), the longest single callbacks the loop ran, in CPU time (where the task resumed -> where
it stopped next), the green agent's RSS before and at its peak, bytes stored, and how the trials ended. The
loop is plain asyncio here, so that each callback can be timed. One unmeasured pass over the same tasks comes
first: one-time costs are not the point here.

    .venv/bin/python -m bench.hostile_load                    # 64 trials, SQLite and PostgreSQL
    .venv/bin/python -m bench.hostile_load --trials 32 --databases sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.harness import DEFAULT_PG_URL, DatabaseKind, engine_settings, fresh_database, green_agent_service
from bench.procstats import mib, peak_rss_bytes, reset_peak_rss, rss_bytes
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from green_agent.limits import message_bytes
from green_agent.reference_agents.hostile import worst_cases
from retail_domain import load_retail_data

TIMER_S = 0.005


@dataclass
class LoopWatch:
    """Event-loop lag from a 5 ms ticker, and the duration of every callback the loop runs."""

    lags: list[float] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)

    async def tick(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(TIMER_S)
            self.lags.append(time.perf_counter() - started - TIMER_S)

    @contextmanager
    def timing_callbacks(self) -> Iterator[None]:
        """Time each `Handle._run` (each callback and task step of a plain asyncio loop) in CPU time; keep
        the slowest 5, with where the task resumed and where it stopped next."""
        original = asyncio.events.Handle._run

        def timed(handle: asyncio.events.Handle) -> None:
            resumed = _where(handle)
            started = time.thread_time()  # CPU of the loop's thread: a busy machine does not inflate it
            original(handle)
            took = time.thread_time() - started
            if len(self.slowest) < 5 or took > self.slowest[-1][0]:
                self.slowest.append((took, f"{resumed} -> {_where(handle)}"))
                self.slowest.sort(reverse=True)
                del self.slowest[5:]

        asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            asyncio.events.Handle._run = original  # type: ignore[method-assign]


def _where(handle: asyncio.events.Handle) -> str:
    """The innermost coroutine frame of the task a handle steps (file:line), or the callback's name."""
    callback = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    if not isinstance(task, asyncio.Task):
        return getattr(callback, "__qualname__", repr(callback))[:60]
    coro: Any = task.get_coro()
    location = "done"
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        frame = coro.cr_frame
        location = f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        coro = getattr(coro, "cr_await", None)
    return location


@dataclass
class Outcome:
    database: str
    wall_s: float
    watch: LoopWatch
    rss_before: int
    rss_peak: int
    trials: list[TrialResult]


async def run_one(database: DatabaseKind, trials: int, pg_url: str) -> Outcome:
    data = await asyncio.to_thread(load_retail_data)
    # Tasks without NL assertions: with no judge configured, the others would be excluded as not judged,
    # which says nothing about hostile input.
    task_ids = [task_id for task_id, task in data.tasks.items() if not task.judged][:trials]
    config = AssessmentConfig(
        agent_url="http://placeholder", tasks=TaskSelection(task_ids=task_ids), concurrency=trials
    )
    watch = LoopWatch()
    async with (
        white_agent_process("hostile") as white,
        fresh_database(database, pg_url) as url,
        green_agent_service(url, engine_settings(trials), data) as green,
    ):
        config = config.model_copy(update={"agent_url": white.url})
        # A first, unmeasured pass over the same tasks takes one-time costs (lazy imports, HTTP clients, each
        # task's gold replay) out of the numbers.
        warm_up, _ = await green.service.create(config, source="bench")
        await green.service.wait(warm_up.id)
        reset_peak_rss()
        rss_before = rss_bytes()
        ticker = asyncio.create_task(watch.tick())
        started = time.perf_counter()
        with watch.timing_callbacks():
            record, _ = await green.service.create(config, source="bench")
            final = await green.service.wait(record.id)
        wall = time.perf_counter() - started
        ticker.cancel()
        if final.status != "completed":
            raise RuntimeError(f"assessment ended {final.status}: {final.error}")
        rss_peak = peak_rss_bytes()
        stored = await green.repository.trial_results(record.id)
    return Outcome(database, wall, watch, rss_before, rss_peak, stored)


def report(outcomes: list[Outcome], trials: int) -> None:
    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.1f}"

    rows = []
    for o in outcomes:
        lags = sorted(o.watch.lags)
        stored = [sum(message_bytes(m.content, m.tool_calls) for m in t.transcript) for t in o.trials]
        excluded = sum(1 for t in o.trials if t.reward is None)
        rows.append(
            [
                o.database,
                f"{o.wall_s:.1f}",
                ms(statistics.median(lags)),
                ms(lags[int(0.99 * (len(lags) - 1))]),
                ms(lags[-1]),
                ms(o.watch.slowest[0][0]),
                mib(o.rss_before),
                mib(o.rss_peak),
                f"{sum(stored) / 1024:.0f} / {max(stored) / 1024:.0f}",
                excluded,
            ]
        )
    print_table(
        f"{trials} hostile trials at once (one worst case per task, {len(worst_cases())} kinds in turn; "
        "green agent in-process with SQL, hostile agent in a child process; plain asyncio loop)",
        [
            "database",
            "wall s",
            "lag p50 ms",
            "lag p99 ms",
            "lag max ms",
            "longest callback CPU ms",
            "RSS before MiB",
            "RSS peak MiB",
            "transcripts KiB total / max",
            "excluded",
        ],
        rows,
    )
    for o in outcomes:
        print(f"{o.database}: longest callbacks: " + "; ".join(f"{ms(t)} ms {w}" for t, w in o.watch.slowest))
        ends = Counter(t.termination_reason for t in o.trials)
        print(f"{o.database}: trials ended: {dict(ends)}")


async def measure(options: argparse.Namespace) -> list[Outcome]:
    return [await run_one(db, options.trials, options.pg_url) for db in options.databases]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=64, help="hostile trials, all at once (max 74)")
    parser.add_argument(
        "--databases", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"]
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    options = parser.parse_args(argv)
    outcomes = asyncio.run(measure(options))
    report(outcomes, options.trials)
    return 0


if __name__ == "__main__":
    sys.exit(main())
