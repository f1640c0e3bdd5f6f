"""Benchmark: the green agent's event loop and memory while 64 hostile trials run at once.

The hostile white agent (a child process, `python -m bench.white_agent --kind hostile`) answers every task
with one of the worst cases of `green_agent.reference_agents.hostile.worst_cases()`: 100,000 nested brackets,
12,000 argument keys, 600 tool calls, NUL and lone surrogates, NaN and 1e999, 5,000-character ids, bodies of
braces, DataParts of 2,000 values, 16 calls of 7 KiB per reply until the transcript bound, truncated and
duplicated bodies. The green agent runs in this process through the service, with its SQL storage.

Printed per database: event-loop lag (how late a 5 ms timer fires; p50, p99, max: wall time, so a busy
machine inflates it), the longest single callbacks the loop ran, in CPU time (where the task resumed -> where
it stopped next; how many took over 10 ms, with and without the garbage collections inside them; the longest
full collection), the longest callback while one trial at `max_transcript_bytes` is stored, the green agent's
RSS before and at its peak, bytes stored, and how the trials ended. The loop is plain asyncio here, so that
each callback can be timed. One unmeasured pass over the same tasks comes first: one-time costs are not the
point here.

    .venv/bin/python -m bench.hostile_load                    # 64 trials, SQLite and PostgreSQL
    .venv/bin/python -m bench.hostile_load --trials 32 --databases sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.harness import (
    DEFAULT_PG_URL,
    DatabaseKind,
    GreenAgent,
    engine_settings,
    fresh_database,
    green_agent_service,
)
from bench.procstats import mib, peak_rss_bytes, reset_peak_rss, rss_bytes
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from green_agent.core.limits import AgentLimits, message_bytes
from green_agent.core.models import ToolCallRecord, TranscriptMessage, utcnow
from green_agent.reference_agents.hostile import worst_cases
from retail_domain import load_retail_data

TIMER_S = 0.005
TARGET_S = 0.010


@dataclass
class LoopWatch:
    """Event-loop lag from a 5 ms ticker, and the duration of every callback the loop runs."""

    lags: list[float] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    callbacks: int = 0
    over_target: int = 0
    """Callbacks that took more than `TARGET_S` of CPU (issue 8: no message costs more than ~10 ms)."""
    over_target_without_gc: int = 0
    """The same, not counting the garbage collections that ran inside them: the callback's own work."""
    longest_without_gc: float = 0.0
    longest_full_gc: float = 0.0
    """The longest full (generation 2) collection: it walks every object alive, so it grows with the live
    trials, whichever callback happens to trigger it."""
    _gc_s: float = 0.0
    _gc_started: float = 0.0

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
            gc_before = self._gc_s
            started = time.thread_time()  # CPU of the loop's thread: a busy machine does not inflate it
            original(handle)
            took = time.thread_time() - started
            in_gc = self._gc_s - gc_before
            self.callbacks += 1
            self.over_target += took > TARGET_S
            self.over_target_without_gc += took - in_gc > TARGET_S
            self.longest_without_gc = max(self.longest_without_gc, took - in_gc)
            if len(self.slowest) < 5 or took > self.slowest[-1][0]:
                gc_note = f" (GC {in_gc * 1000:.1f} ms of it)" if in_gc > 0.0005 else ""
                self.slowest.append((took, f"{resumed} -> {_where(handle)}{gc_note}"))
                self.slowest.sort(reverse=True)
                del self.slowest[5:]

        def collecting(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                self._gc_started = time.thread_time()
                return
            took = time.thread_time() - self._gc_started
            self._gc_s += took
            if info["generation"] == 2:
                self.longest_full_gc = max(self.longest_full_gc, took)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
        gc.callbacks.append(collecting)
        try:
            yield
        finally:
            asyncio.events.Handle._run = original  # type: ignore[method-assign]
            gc.callbacks.remove(collecting)


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


def trial_at_transcript_bound(task_id: str) -> TrialResult:
    """A trial whose transcript fills `max_transcript_bytes` with small messages, the costliest kind to store
    (the cost is per row): replies of 4 tool calls of ~120 bytes each, and their results."""
    bound = AgentLimits().max_transcript_bytes
    now = utcnow()
    messages: list[TranscriptMessage] = []
    size = 0
    while size < bound:
        i = len(messages)
        if i % 2:
            message = TranscriptMessage(index=i, role="tool", content="é" * 256, tool_call_id=f"c{i - 1}_0")
        else:
            calls = [
                ToolCallRecord(id=f"c{i}_{j}", name="calculate", arguments={"expression": "1." + "0" * 100})
                for j in range(4)
            ]
            message = TranscriptMessage(index=i, role="assistant", tool_calls=calls)
        size += message_bytes(message.content, message.tool_calls)
        messages.append(message)
    return TrialResult(
        task_id=task_id,
        trial=0,
        seed=0,
        termination_reason="agent_error",
        reward=0.0,
        is_successful=False,
        transcript=messages,
        steps=len(messages),
        started_at=now,
        finished_at=now,
    )


async def store_at_bound(green: GreenAgent, config: AssessmentConfig) -> tuple[LoopWatch, int]:
    """Store one trial at the transcript bound (in an assessment of its own), timing the loop's callbacks."""
    record, _ = await green.service.create(config, source="bench", start=False)
    trial = trial_at_transcript_bound(config.tasks.task_ids[0] if config.tasks.task_ids else "0")
    watch = LoopWatch()
    with watch.timing_callbacks():
        await green.repository.save_trial(record.id, trial)
    return watch, len(trial.transcript)


@dataclass
class Outcome:
    database: str
    wall_s: float
    watch: LoopWatch
    store_watch: LoopWatch
    store_messages: int
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
        store_watch, store_messages = await store_at_bound(green, config)
    return Outcome(database, wall, watch, store_watch, store_messages, rss_before, rss_peak, stored)


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
                ms(o.watch.longest_without_gc),
                f"{o.watch.over_target} / {o.watch.over_target_without_gc} of {o.watch.callbacks}",
                ms(o.watch.longest_full_gc),
                ms(o.store_watch.slowest[0][0]),
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
            "longest without GC",
            f"callbacks over {TARGET_S * 1000:.0f} ms CPU (with / without GC)",
            "longest full GC ms",
            "storing a full transcript: longest callback CPU ms",
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
        print(
            f"{o.database}: storing one trial at max_transcript_bytes ({o.store_messages} messages): longest "
            "callbacks: " + "; ".join(f"{ms(t)} ms {w}" for t, w in o.store_watch.slowest)
        )


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
