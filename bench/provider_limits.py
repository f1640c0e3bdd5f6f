"""Benchmark: an assessment against an LLM provider that says no (issue 27).

The 114-task oracle assessment at concurrency 32, run as `green-agent run` runs it (the service, its queue,
SQLite), with the customer and the judge played by the fake provider (`tests/support/fake_llm.py`, in a
process of its own: `scenario_customer` names the task and ends the conversation after the oracle's closing
line, `passing_judge` passes every assertion) behind one key that allows 5 requests a second and 6 in flight
(429 + `Retry-After: 1` beyond, as the issue measured), each answer taking `--latency-s`. The oracle agent
runs in its own process too.

Runs:

* `told`: the operator configured the key's limits (`requests_per_minute=300`, `max_in_flight=6`);
* `untold`: no limits configured, the gate learns them from the 429s (AIMD);
* `outage`: `told`, and the provider answers 503 for `--outage-s` (120) seconds from 5 s into the run;
* `gate`: no assessment: the CPU one request costs at the gate (`green_agent/llm/gate.py`), 50 at once;
* `shared`: no assessment: two worker processes (`tests/support/provider_client.py`), each told the key's
  whole limit and not knowing of the other, send `--shared-requests` (150) requests each through the same key:
  wall time against the key's bound, 429s, and how far apart the two finish (fairness).

Each prints the wall time against the rate-limit bound (successful requests / 5 per second; for the outage
run plus the outage), the share of 429 answers and the excluded trials. Goals (issue 27): 0 excluded in
every run, wall <= 1.2x the bound, 429 answers <= 10% of requests.

    .venv/bin/python -m bench.provider_limits                     # every run (~8 minutes)
    .venv/bin/python -m bench.provider_limits --runs told --num-tasks 40
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from bench.harness import engine_settings, fresh_database, green_agent_service
from bench.tables import print_table
from bench.white_agent import white_agent_process
from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.llm.gate import EndpointGate, EndpointLimits
from retail_domain import load_retail_data

RATE_PER_S = 5
IN_FLIGHT = 6
RUNS = ("told", "untold", "outage", "gate", "shared")


@dataclass
class Outcome:
    run: str
    wall_s: float
    answered: int
    rate_limited: int
    other_errors: int
    excluded: int
    trials: int
    avg_reward: float | None
    outage_s: float

    @property
    def bound_s(self) -> float:
        return self.answered / RATE_PER_S + self.outage_s

    @property
    def requests(self) -> int:
        return self.answered + self.rate_limited + self.other_errors


@contextlib.asynccontextmanager
async def fake_provider(latency_s: float, outage_s: float | None) -> AsyncIterator[str]:
    """The fake provider in a child process; yields its base URL (ending in /v1)."""
    command = [sys.executable, "-m", "tests.support.fake_provider_process"]
    command += ["--requests-per-second", str(RATE_PER_S), "--max-in-flight", str(IN_FLIGHT)]
    command += ["--retry-after-s", "1", "--latency-s", str(latency_s)]
    if outage_s:
        command += ["--outage-from-s", "5", "--outage-s", str(outage_s)]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(120):
            while not (line := (await process.stdout.readline()).decode()).startswith("READY"):
                if not line:
                    raise RuntimeError("the fake provider exited before it served")
        yield line.split()[1]
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def provider_stats(base_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{base_url.removesuffix('/v1')}/fake/stats")
        response.raise_for_status()
        return dict(response.json())


async def one_run(run: str, options: argparse.Namespace) -> Outcome:
    data = await asyncio.to_thread(load_retail_data)
    await asyncio.to_thread(lambda: [data.gold(task_id) for task_id in data.tasks])  # before the clock
    outage_s = options.outage_s if run == "outage" else 0.0
    limits = {} if run == "untold" else {"requests_per_minute": 60 * RATE_PER_S, "max_in_flight": IN_FLIGHT}
    async with (
        fake_provider(options.latency_s, outage_s) as llm_url,
        white_agent_process("oracle") as white,
        fresh_database("sqlite") as database_url,
    ):
        endpoint = LLMEndpoint(model="fake-provider", base_url=llm_url, **limits)
        settings = engine_settings(options.concurrency).model_copy(
            update={"user_models": {"fake": endpoint}, "default_user_model": "fake", "judge": endpoint}
        )
        async with green_agent_service(database_url, settings, data) as green:
            config = AssessmentConfig(
                agent_url=white.url,
                tasks=TaskSelection(num_tasks=options.num_tasks),
                concurrency=options.concurrency,
            )
            began = time.perf_counter()
            record, _ = await green.service.create(config, source="bench")
            final = await green.service.wait(record.id)
            wall = time.perf_counter() - began
            if final.report is None:
                raise RuntimeError(
                    f"assessment {record.id} ended {final.status} without a report: {final.error}"
                )
            report = final.report
        answered = (await provider_stats(llm_url))["answered"]
    ok, limited = int(answered.get("200", 0)), int(answered.get("429", 0))
    return Outcome(
        run=run,
        wall_s=wall,
        answered=ok,
        rate_limited=limited,
        other_errors=sum(int(n) for status, n in answered.items() if status not in ("200", "429")),
        excluded=report.excluded.get("infrastructure_error", 0),
        trials=report.trials_total,
        avg_reward=report.avg_reward,
        outage_s=outage_s,
    )


def print_outcomes(outcomes: list[Outcome]) -> None:
    rows = [
        [
            o.run,
            f"{o.wall_s:.1f}",
            f"{o.bound_s:.1f}",
            f"{o.wall_s / o.bound_s:.2f}",
            str(o.requests),
            f"{o.rate_limited} ({100 * o.rate_limited / max(o.requests, 1):.1f}%)",
            str(o.other_errors),
            f"{o.excluded} / {o.trials}",
            f"{o.avg_reward:.3f}" if o.avg_reward is not None else "-",
        ]
        for o in outcomes
    ]
    headers = ["run", "wall s", "bound s", "wall/bound", "requests", "429s", "5xx", "excluded", "avg reward"]
    print_table("Against 5 requests/s and 6 in flight (bench.provider_limits)", headers, rows)
    print("goals: 0 excluded, wall/bound <= 1.2, 429s <= 10% of requests")


async def gate_cost(requests: int = 50_000) -> None:
    """CPU per request taken at a gate, without and with limits (granted at once: the cost of the
    bookkeeping, not of waiting), minus the same coroutines without the gate."""

    async def through(gate: EndpointGate) -> None:
        async with gate.request(100) as turn:
            turn.answered(100)

    async def bare() -> None:
        return None

    rows = []
    for name, limits in (
        ("no limits", EndpointLimits()),
        ("max_in_flight + tokens_per_minute", EndpointLimits(max_in_flight=64, tokens_per_minute=10**9)),
    ):
        gate = EndpointGate("bench", limits)
        spent = []
        for make in (functools.partial(through, gate), bare):
            began = time.process_time()
            for _ in range(requests // 50):
                await asyncio.gather(*(make() for _ in range(50)))
            spent.append(time.process_time() - began)
        rows.append([name, f"{(spent[0] - spent[1]) / requests * 1e6:.1f}"])
    print_table("CPU per LLM request at the gate (bench.provider_limits --runs gate)", ["limits", "us"], rows)


async def shared_key(options: argparse.Namespace) -> None:
    """Two processes on one key, each configured with all of it: do they settle on it together?"""
    async with fake_provider(options.latency_s, None) as llm_url:
        command = [sys.executable, "-m", "tests.support.provider_client", llm_url]
        command += ["--requests", str(options.shared_requests), "--concurrency", "16"]
        command += ["--max-in-flight", str(IN_FLIGHT), "--requests-per-minute", str(60 * RATE_PER_S)]
        began = time.perf_counter()
        children = [
            await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE) for _ in range(2)
        ]
        outputs = [json.loads((await child.communicate())[0]) for child in children]
        wall = time.perf_counter() - began
        answered = (await provider_stats(llm_url))["answered"]
    ok, limited = int(answered.get("200", 0)), int(answered.get("429", 0))
    seconds = sorted(float(o["seconds"]) for o in outputs)
    bound = ok / RATE_PER_S
    rows = [
        [
            f"{wall:.1f}",
            f"{bound:.1f}",
            f"{wall / bound:.2f}",
            " / ".join(f"{s:.1f}" for s in seconds),
            str(ok + limited),
            f"{limited} ({100 * limited / max(ok + limited, 1):.1f}%)",
            str(sum(int(o["failed"]) for o in outputs)),
        ]
    ]
    headers = ["wall s", "bound s", "wall/bound", "each process s", "requests", "429s", "failed"]
    title = f"Two processes, each told the whole key, {options.shared_requests} requests each (--runs shared)"
    print_table(title, headers, rows)


async def main(options: argparse.Namespace) -> int:
    outcomes = []
    for run in options.runs:
        if run == "gate":
            await gate_cost()
            continue
        if run == "shared":
            await shared_key(options)
            continue
        outcome = await one_run(run, options)
        outcomes.append(outcome)
        if len(options.runs) > 1:
            print_outcomes([outcome])
    if outcomes:
        print_outcomes(outcomes)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="an assessment against a rate-limiting, failing provider")
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("--num-tasks", type=int, default=None, help="first N tasks (default: all 114)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-s", type=float, default=0.3, help="time the provider takes per answer")
    parser.add_argument("--outage-s", type=float, default=120.0)
    parser.add_argument("--shared-requests", type=int, default=150, help="per process (--runs shared)")
    sys.exit(asyncio.run(main(parser.parse_args())))
