"""What a user sees while our LLM provider says no (issue 27), over real HTTP on SQLite and PostgreSQL: the
assessment's `waiting_for` ("waiting for fake at HOST: down since HH:MM:SS"), the `waiting` event of its
progress stream, and /metrics (429 answers, seconds waited, the endpoint's state). The customer is the fake
provider (tests/support/fake_llm.py), down for a window and limited to one request a second."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import httpx

from green_agent.llm.gate import endpoint_label
from retail_domain import RetailData
from tests.api.runtime.test_metrics import scrape
from tests.api.servers import poll, serve_green
from tests.support.fake_llm import ProviderRules, scenario_customer, serve_fake_llm

TASKS = ["0", "1", "5", "6"]
"""Scored on the DB alone: no judge."""


async def _events(
    client: httpx.AsyncClient, path: str, into: list[tuple[str, Any]], count: int | None = None
) -> list[tuple[str, Any]]:
    """Read the assessment's progress stream into `into` (its `count` first events, or until it ends)."""
    async with client.stream("GET", f"{path}/events") as stream:
        kind = ""
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                into.append((kind, json.loads(line.split(":", 1)[1])))
                if len(into) == count:
                    break
    return into


async def test_an_outage_and_a_rate_limit_are_shown(
    database_url: str, oracle_url: str, retail_data: RetailData
) -> None:
    rules = ProviderRules(requests_per_second=1, retry_after_s=1.0, outage_from_s=1.0, outage_s=3.0)
    async with serve_fake_llm(scenario_customer(retail_data), rules=rules) as llm:
        model = {"model": "fake", "base_url": llm.base_url}
        settings = {"user_models": {"fake": model}, "default_user_model": "fake", "llm_retry_backoff_s": 0.1}
        async with (
            serve_green(database_url, **settings) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            before = await scrape(client)
            body = {"agent_url": oracle_url, "tasks": {"task_ids": TASKS}, "concurrency": 4}
            llm.started_at = time.monotonic()  # the outage starts a second into the assessment
            created = (await client.post("/assessments", json=body)).json()
            path = f"/assessments/{created['id']}"
            events: list[tuple[str, Any]] = []
            streaming = asyncio.create_task(_events(client, path, events))
            seen = await poll(
                client, path, lambda b: any("down since" in w for w in b["waiting_for"]), timeout_s=60
            )
            late = await _events(client, path, [], 2)  # a stream opened now starts with what it waits for
            final = await poll(client, path, lambda b: b["status"] == "completed", timeout_s=120)
            await asyncio.wait_for(streaming, 30)
            after = await scrape(client)
    assert final["report"]["complete"] and final["report"]["avg_reward"] == 1.0 and final["waiting_for"] == []
    (shown,) = seen["waiting_for"]
    assert re.fullmatch(r"waiting for fake at 127\.0\.0\.1:\d+: down since \d\d:\d\d:\d\d", shown), shown
    waiting = [data["waiting_for"] for kind, data in events if kind == "waiting"]
    assert [shown] in waiting and waiting[-1] == []  # said while it lasted, cleared once it answered
    assert [kind for kind, _ in late] == ["status", "waiting"] and "down since" in late[1][1]["waiting_for"][
        0
    ]
    label = endpoint_label("fake", llm.base_url)
    assert shown.startswith(f"waiting for {label}: ")

    def value(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert value("green_agent_llm_rate_limited_total", endpoint=label) == llm.answered[429] > 0
    assert value("green_agent_llm_wait_seconds_total", endpoint=label) > 2.0
    assert after[("green_agent_llm_endpoint_state", (("endpoint", label), ("state", "ok")))] == 1
    assert after[("green_agent_llm_endpoint_state", (("endpoint", label), ("state", "down")))] == 0
