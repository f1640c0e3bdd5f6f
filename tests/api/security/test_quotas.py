"""Admission quotas over real HTTP, on SQLite and PostgreSQL: each limit, just past it, over REST (429 with
Retry-After, or 422 for limits of the assessment itself) and over A2A (a rejected task saying why), with a
per-tenant override. The white agent never answers, so admitted assessments stay unfinished."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types import TaskState

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from tests.api.servers import a2a_final_task, serve_green

QUOTAS: dict[str, Any] = {
    "quota_active_assessments": 2,
    "quota_queued_trials": 6,
    "quota_queued_trials_total": 9,
    "quota_trials_per_assessment": 4,
    "quota_max_steps": 300,
    "quota_turn_timeout_s": 60,
    "quota_retry_after_s": 17,
    "tenant_quotas": {"big": {"active_assessments": 3, "trials_per_assessment": 5}},
}


@pytest.fixture
async def green(database_url: str) -> AsyncIterator[tuple[str, dict[str, str]]]:
    async with serve_green(database_url, **QUOTAS) as url:
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            secrets = {
                t: (await keys.create(t, admin=False, allow_private_agents=True))[1] for t in ("a", "big")
            }
        finally:
            await engine.dispose()
        yield url, secrets


def assessment(agent_url: str, tasks: int, trials: int = 1, **extra: Any) -> dict[str, Any]:
    return {"agent_url": agent_url, "tasks": {"num_tasks": tasks}, "trials": trials, **extra}


async def test_admission_quotas_over_rest(green: tuple[str, dict[str, str]], idle_url: str) -> None:
    url, secrets = green
    async with (
        httpx.AsyncClient(base_url=url, timeout=30, headers={"Authorization": f"Bearer {secrets['a']}"}) as a,
        httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {secrets['big']}"}
        ) as big,
    ):
        # Limits of one assessment: 422, for good, whatever the load.
        for body, message in (
            (assessment(idle_url, 5), "5 trials (tasks x trials) but at most 4"),
            (assessment(idle_url, 2, trials=3), "6 trials (tasks x trials) but at most 4"),
            (assessment(idle_url, 1, max_steps=301), "max_steps is 301; at most 300"),
            (assessment(idle_url, 1, turn_timeout_s=60.5), "turn_timeout_s is 60.5; at most 60"),
        ):
            response = await a.post("/assessments", json=body)
            assert response.status_code == 422 and message in response.text, response.text
        at_bounds = assessment(idle_url, 4, max_steps=300, turn_timeout_s=60)
        first = await a.post("/assessments", json=at_bounds, headers={"Idempotency-Key": "one"})
        assert first.status_code == 202, first.text

        # Queued trials of the tenant: 4 waiting, 2 more fit (6), a third does not.
        second = await a.post("/assessments", json=assessment(idle_url, 2))
        assert second.status_code == 202, second.text
        # Active assessments of the tenant: 2 of 2.
        third = await a.post("/assessments", json=assessment(idle_url, 1))
        assert third.status_code == 429 and third.headers["Retry-After"] == "17"
        assert "already has 2 queued or running assessments (limit 2)" in third.json()["detail"]
        # A replayed request is not new work: it returns the first assessment even at the limit.
        replay = await a.post("/assessments", json=at_bounds, headers={"Idempotency-Key": "one"})
        assert replay.status_code == 202 and replay.json()["id"] == first.json()["id"]

        # Cancelling frees the slot; then the tenant's trial quota is what binds (4 + 3 > 6).
        await a.post(f"/assessments/{second.json()['id']}/cancel")
        over_trials = await a.post("/assessments", json=assessment(idle_url, 3))
        assert over_trials.status_code == 429 and "limit 6" in over_trials.json()["detail"]
        assert (await a.post("/assessments", json=assessment(idle_url, 2))).status_code == 202

        # Tenant "big" has its own overrides (5 trials per assessment, 3 active), but the whole service
        # has room for 9 waiting trials, 6 of which are a's.
        too_big = await big.post("/assessments", json=assessment(idle_url, 6))
        assert too_big.status_code == 422 and "6 trials (tasks x trials) but at most 5" in too_big.text
        assert (await big.post("/assessments", json=assessment(idle_url, 3))).status_code == 202
        total = await big.post("/assessments", json=assessment(idle_url, 1))
        assert total.status_code == 429 and "the service has 9 trials waiting" in total.json()["detail"]

        # Every admitted assessment is still unfinished: nothing was admitted past a limit.
        for client in (a, big):
            for item in (await client.get("/assessments")).json()["data"]:
                if item["status"] in ("queued", "running"):
                    await client.post(f"/assessments/{item['id']}/cancel")


async def test_a_full_quota_rejects_an_a2a_request_with_a_message(database_url: str, idle_url: str) -> None:
    async with (
        serve_green(database_url, quota_active_assessments=1, quota_retry_after_s=9) as url,
        httpx.AsyncClient(timeout=30) as http,
    ):
        first = await http.post(url + "assessments", json=assessment(idle_url, 1))
        assert first.status_code == 202
        client = await create_client(url, ClientConfig(httpx_client=http, streaming=False))
        text = json.dumps(
            {
                "participants": {"agent": idle_url},
                "config": {"domain": "retail", "num_tasks": 1, "user_llm": "scripted"},
            }
        )
        task = await a2a_final_task(client, text)
        assert task.status.state == TaskState.TASK_STATE_REJECTED
        reply = get_message_text(task.status.message)
        assert "(limit 1)" in reply and "retry in 9 s" in reply, reply
        await http.post(f"{url}assessments/{first.json()['id']}/cancel")
