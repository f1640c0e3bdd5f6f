"""Scoring integrity against hostile white agents, end to end: `green-agent serve` as a real process on SQLite
and PostgreSQL, hostile agents over real loopback A2A, replies drawn by hypothesis.

For every drawn plan: the assessment completes; no trial is excluded (every hostile trial was caused by the
agent); the gaming agent (honest on half the tasks, hostile on the others) never scores above its honest twin
(the same agent giving up politely instead); every stored transcript stays within `max_transcript_bytes`; and
/healthz, polled from another thread all along, always answers within 100 ms while the service is running
(see `healthz_watch`: on this shared 2-core machine a process can also wait 100 ms for a core).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from bench.procstats import cpu_seconds
from green_agent.core.limits import message_bytes
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.hostile import HostileAgent, HostileReply, text_reply
from retail_domain import RetailData
from tests.api.servers import GreenProcess, free_port
from tests.support.hostile_replies import hostile_programs

T = TypeVar("T")

TASKS = ["0", "1", "5", "6", "7", "8", "9", "10"]
"""Tasks without NL assertions (nothing is excluded for want of a judge); 10's gold DB is the initial one."""
HOSTILE_TASKS = TASKS[1::2]
MAX_TRANSCRIPT_BYTES = 96 * 1024
"""Small enough that hostile trials reach it (three replies of text cut at 64 KiB), large enough for honest
ones."""
HEALTHZ_BUDGET_S = 0.1
BUSY_SHARE = 0.8
"""A slow /healthz counts against the service when the service had a core for most of the wait (its CPU time
meanwhile is at least this share of the wait): then its event loop was busy, not waiting for the machine."""
ISSUE_EXPLOIT = {task: [text_reply("[" * 100_000 + "]" * 100_000)] for task in HOSTILE_TASKS}
"""The exploit as the issue reported it: 100,000 nested brackets on the tasks the agent cannot do."""


@pytest.fixture
async def green(database_url: str, tmp_path: Path) -> AsyncIterator[GreenProcess]:
    process = GreenProcess(
        database_url,
        free_port(),
        tmp_path / "green.log",
        env={"GREEN_AGENT_MAX_TRANSCRIPT_BYTES": str(MAX_TRANSCRIPT_BYTES)},
    )
    process.start()
    try:
        await process.wait_ready()
        yield process
    finally:
        process.stop()


def in_own_loop(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh event loop in a thread of its own (hypothesis calls the test synchronously,
    and the session's loop must not be disturbed)."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(asyncio.run(make()))  # type: ignore[arg-type]
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


@contextmanager
def healthz_watch(url: str, pid: int) -> Iterator[list[tuple[float, float]]]:
    """Poll /healthz every 20 ms from a thread of its own for as long as the block runs; yields, per request,
    its latency and the CPU time the service used meanwhile. A request is slow *because of the service* when
    the service ran for most of the wait: a long wait while it did not run is the machine's scheduler (several
    engineers share 2 cores), not a blocked event loop. The benchmark (bench/hostile_load.py) measures the
    event-loop lag itself."""
    samples: list[tuple[float, float]] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=url, timeout=5) as client:
            client.get("healthz")  # the connection is opened outside the measurement
            while not stop.is_set():
                cpu, started = cpu_seconds(pid), time.perf_counter()
                assert client.get("healthz").status_code == 200
                samples.append((time.perf_counter() - started, cpu_seconds(pid) - cpu))
                stop.wait(0.02)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(timeout=10)


async def assess(
    green_url: str, data: RetailData, plan: Mapping[str, Sequence[HostileReply]]
) -> dict[str, Any]:
    """Run one assessment of `TASKS` against a hostile agent with this plan; return its stored state and
    its trials in full."""
    agent = HostileAgent(data, plan)
    async with serve_app(agent.app) as agent_url, httpx.AsyncClient(base_url=green_url, timeout=30) as client:
        created = await client.post(
            "/assessments", json={"agent_url": agent_url, "tasks": {"task_ids": TASKS}}
        )
        assert created.status_code == 202, created.text
        path = f"/assessments/{created.json()['id']}"
        deadline = time.monotonic() + 120
        while (body := (await client.get(path)).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, body
            await asyncio.sleep(0.1)
        trials = [(await client.get(f"{path}/trials/{task}/0")).json() for task in TASKS]
    return {"assessment": body, "trials": trials}


def test_hostile_agents_never_gain_and_never_break_the_service(
    green: GreenProcess, retail_data: RetailData
) -> None:
    twin = in_own_loop(lambda: assess(green.url, retail_data, {task: [] for task in HOSTILE_TASKS}))
    twin_rewards = twin["assessment"]["report"]["task_rewards"]
    assert twin["assessment"]["status"] == "completed" and len(twin_rewards) == len(TASKS)

    # Bounded: one explicit example (the issue's exploit) and five drawn ones per backend, no shrinking (a
    # failure is reported with the plan that failed, whose labels say what the agent sent).
    @settings(
        max_examples=5,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(plans=st.fixed_dictionaries({task: hostile_programs for task in HOSTILE_TASKS}))
    @example(plans=ISSUE_EXPLOIT)
    def check(plans: dict[str, list[HostileReply]]) -> None:
        assert green.process is not None
        with healthz_watch(green.url, green.process.pid) as samples:
            gaming = in_own_loop(lambda: assess(green.url, retail_data, plans))
        state, report = gaming["assessment"], gaming["assessment"]["report"]
        assert state["status"] == "completed", state
        assert report["trials_total"] == report["trials_scored"] == len(TASKS)
        assert sum(report["excluded"].values()) == 0
        for trial in gaming["trials"]:
            assert trial["reward"] is not None, trial["termination_reason"]
            stored = sum(message_bytes(m["content"], m["tool_calls"]) for m in trial["transcript"])
            assert stored <= MAX_TRANSCRIPT_BYTES, (trial["task_id"], stored)
        for task, reward in report["task_rewards"].items():
            assert reward <= twin_rewards[task], (task, [r.label for r in plans.get(task, [])])
        assert report["avg_reward"] <= twin["assessment"]["report"]["avg_reward"]
        assert samples
        blocked = [(s, cpu) for s, cpu in samples if s >= HEALTHZ_BUDGET_S and cpu >= BUSY_SHARE * s]
        assert not blocked, (blocked, sorted(samples)[-5:])

    check()
