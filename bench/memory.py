"""Benchmark 3: green-agent memory as live trials grow (10, 100, 1,000 trials waiting on an idle white agent).

The idle reference agent (child process) never answers within the run, so every trial sits at its first
white-agent turn: greeting and customer message recorded, the opening message (policy + tool schemas) sent,
its HTTP connection open. Each point runs in a fresh green-agent process (`--point N`), so memory freed by
an earlier point cannot hide the cost of a later one; it reports its RSS before any trial (the base) and with
all N trials live. Bytes per trial = (live - base) / N; the marginal column compares consecutive points,
which removes one-time costs (first HTTP clients, lazily imported code) from the estimate.

    .venv/bin/python -m bench.memory                     # 10, 100, 1000
    .venv/bin/python -m bench.memory --trials 10 100     # quicker
    .venv/bin/python -m bench.memory --domain airline    # airline's trials (its DB is 2.5x retail's)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass

import uvloop

from api.runtime.events import Lagged, Subscription
from bench.harness import DEFAULT_PG_URL, DatabaseKind, engine_settings, fresh_database, green_agent_service
from bench.procstats import mib, rss_bytes
from bench.tables import print_table
from bench.white_agent import WhiteKind, white_agent_process
from green_agent import AssessmentConfig, TaskSelection, TurnTaken
from green_agent.domains import DEFAULT_DOMAIN, domain_names, load_domain

WAITING = {
    "idle": "every trial waits on its first message: policy + tool schemas, ~24 KB",
    "idle_after_call": "every trial waits on its second message: one tool result",
}
MAX_PER_ASSESSMENT = 512
"""`AssessmentConfig.concurrency` allows at most 512: larger points run several assessments side by side."""
TARGET_BYTES_PER_TRIAL = 100 * 1024
SETTLE_S = 1.0
LIVE_TIMEOUT_S = 240.0


@dataclass
class PointResult:
    trials: int
    base_rss: int
    live_rss: int
    white_rss: int
    seconds_to_live: float


def plan(n: int, tasks: int = 114) -> list[tuple[int, int, int]]:
    """(tasks, trials per task, concurrency) per assessment, together holding exactly `n` live trials, from a
    split of `tasks` tasks."""
    chunks = math.ceil(n / MAX_PER_ASSESSMENT)
    sizes = [n // chunks + (1 if i < n % chunks else 0) for i in range(chunks)]
    out = []
    for size in sizes:
        trials = math.ceil(size / tasks)
        out.append((math.ceil(size / trials), trials, size))
    return out


async def _until_waiting(subscriptions: list[Subscription], n: int, role: str) -> float:
    """Seconds until `n` trials have recorded a `role` message (the one before the send they wait on)."""
    started = time.perf_counter()
    counted: asyncio.Queue[None] = asyncio.Queue()

    async def count(subscription: Subscription) -> None:
        async for event in subscription:
            if isinstance(event, Lagged):
                raise RuntimeError("progress subscription lagged; cannot count live trials")
            if isinstance(event, TurnTaken) and event.message.role == role:
                counted.put_nowait(None)

    counters = [asyncio.create_task(count(s)) for s in subscriptions]
    try:
        async with asyncio.timeout(LIVE_TIMEOUT_S):
            for _ in range(n):
                await counted.get()
    finally:
        for task in counters:
            task.cancel()
        await asyncio.gather(*counters, return_exceptions=True)
    return time.perf_counter() - started


def _print_allocations(n: int, top: int = 25) -> None:
    """Where the live trials' memory was allocated (Python heap only; to stderr, for profiling)."""
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = snapshot.statistics("lineno")
    total = sum(s.size for s in stats)
    print(f"tracemalloc: {total / n / 1024:.1f} KiB per live trial allocated since the base", file=sys.stderr)
    for stat in stats[:top]:
        frame = stat.traceback[0]
        where = frame.filename.split("site-packages/")[-1].replace("/work/main/", "")
        line = f"{stat.size / n:9.0f} B/trial {stat.count / n:7.1f} blocks/trial  {where}:{frame.lineno}"
        print(line, file=sys.stderr)


async def run_point(
    n: int,
    agent_url: str,
    white_pid: int,
    white_kind: str,
    database: DatabaseKind,
    pg_url: str,
    trace: bool = False,
    domain: str = DEFAULT_DOMAIN,
) -> PointResult:
    data = await asyncio.to_thread(load_domain, domain)
    async with (
        fresh_database(database, pg_url) as url,
        green_agent_service(url, engine_settings(n), data) as green,
    ):
        service = green.service
        records = []
        for num_tasks, trials, concurrency in plan(n, len(data.split(data.default_split))):
            config = AssessmentConfig(
                agent_url=agent_url,
                domain=domain,
                tasks=TaskSelection(split="base", num_tasks=num_tasks),
                trials=trials,
                concurrency=concurrency,
                user_model="scripted",
                turn_timeout_s=3600,
            )
            record, _ = await service.create(config, source="bench", start=False)
            records.append(record)
        await asyncio.to_thread(gc.collect)
        if trace:
            tracemalloc.start(1)
        base = rss_bytes()
        async with contextlib.AsyncExitStack() as stack:
            # Subscribe before starting, so no trial's first customer message is missed.
            subscriptions = [await stack.enter_async_context(service.subscribe(r.id)) for r in records]
            for record in records:
                await service.start(record)
            before_send = "tool" if white_kind == "idle_after_call" else "user"
            to_live = await _until_waiting(subscriptions, n, before_send)
            await asyncio.sleep(SETTLE_S)  # let the last messages reach the wire
            await asyncio.to_thread(gc.collect)
            live = rss_bytes()
            white = rss_bytes(white_pid)
            if trace:
                _print_allocations(n)
        for record in records:
            await service.cancel(record.id)
    return PointResult(n, base, live, white, to_live)


async def measure(
    counts: list[int],
    database: DatabaseKind,
    pg_url: str,
    white_kind: WhiteKind,
    trace: bool = False,
    domain: str = DEFAULT_DOMAIN,
) -> list[PointResult]:
    results = []
    async with white_agent_process(white_kind, domain=domain) as white:
        for n in counts:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.memory",
                "--point",
                str(n),
                "--agent-url",
                white.url,
                "--white-pid",
                str(white.pid),
                "--white",
                white_kind,
                "--db",
                database,
                "--pg-url",
                pg_url,
                "--domain",
                domain,
                *(["--trace"] if trace else []),
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await process.communicate()
            if process.returncode != 0:
                raise RuntimeError(f"memory point {n} failed (exit {process.returncode})")
            results.append(PointResult(**json.loads(out.decode().strip().splitlines()[-1])))
    return results


def _load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} / {five:.2f} (1 / 5 min)"


def report(
    results: list[PointResult], database: DatabaseKind, white_kind: WhiteKind, domain: str = DEFAULT_DOMAIN
) -> None:
    rows = []
    previous: PointResult | None = None
    for r in results:
        per_trial = (r.live_rss - r.base_rss) / r.trials
        marginal = "-"
        if previous is not None:
            grown = (r.live_rss - r.base_rss) - (previous.live_rss - previous.base_rss)
            marginal = f"{grown / (r.trials - previous.trials) / 1024:.1f}"
        rows.append(
            [
                r.trials,
                mib(r.base_rss),
                mib(r.live_rss),
                f"{per_trial / 1024:.1f}",
                marginal,
                f"{per_trial / TARGET_BYTES_PER_TRIAL:.2f}",
                f"{r.seconds_to_live:.1f}",
                mib(r.white_rss),
            ]
        )
        previous = r
    print_table(
        f"Green-agent memory with N live {domain} trials, white agent {white_kind!r} ({WAITING[white_kind]}; "
        f"{database}; fresh process per point; load average {_load_average()})",
        [
            "live trials",
            "base RSS MiB",
            "live RSS MiB",
            "KiB per trial",
            "marginal KiB per trial (vs previous point)",
            "per trial / 100 KiB target",
            "s until all live",
            "white agent RSS MiB",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--white",
        choices=["idle", "idle_after_call", "both"],
        default="both",
        help="idle: trials wait on their opening message; idle_after_call: on their second message",
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    parser.add_argument("--domain", choices=domain_names(), default=DEFAULT_DOMAIN)
    parser.add_argument(
        "--trace", action="store_true", help="profile: print the top allocation sites (tracemalloc) per point"
    )
    parser.add_argument("--point", type=int, help=argparse.SUPPRESS)  # child mode: one point
    parser.add_argument("--agent-url", help=argparse.SUPPRESS)
    parser.add_argument("--white-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point is not None:
        result = uvloop.run(
            run_point(
                args.point,
                args.agent_url,
                args.white_pid,
                args.white,
                args.db,
                args.pg_url,
                args.trace,
                args.domain,
            )
        )
        print(json.dumps(asdict(result)), flush=True)
        return 0
    kinds: list[WhiteKind] = ["idle", "idle_after_call"] if args.white == "both" else [args.white]
    for kind in kinds:
        results = uvloop.run(measure(args.trials, args.db, args.pg_url, kind, args.trace, args.domain))
        report(results, args.db, kind, args.domain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
