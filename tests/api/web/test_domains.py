"""Domains through the whole service, over real HTTP, on SQLite and PostgreSQL: the built-in oracle solves all
50 airline tasks with the scripted customer; one service runs a retail and an airline assessment at once
(their task ids overlap) and shows each with its domain; an AgentBeats request for airline ends in a Result
whose domain is airline. Unknown domains and cross-domain comparisons are refused in one line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from a2a.helpers import get_data_parts
from a2a.types import TaskState

from tests.api.servers import poll, serve_green
from tests.api.web.test_a2a import a2a_client, agentbeats, collect

AIRLINE_TASKS = 50

FOUR = "'retail', 'airline', 'telecom', 'mock'"
"""The domains this service runs, as refusals name them."""


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http


async def start(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    created = await client.post("/assessments", json=body)
    assert created.status_code == 202, created.text
    return dict(created.json())


async def finished(client: httpx.AsyncClient, assessment_id: str, timeout_s: float = 300) -> dict[str, Any]:
    return await poll(
        client, f"/assessments/{assessment_id}", lambda b: b["status"] in ("completed", "failed"), timeout_s
    )


async def test_the_oracle_solves_every_airline_task_through_the_service(
    client: httpx.AsyncClient, oracle_url: str
) -> None:
    created = await start(client, {"agent_url": oracle_url, "domain": "airline", "concurrency": 16})
    assert created["domain"] == "airline" and created["config"]["domain"] == "airline"
    assert created["progress"]["trials_total"] == AIRLINE_TASKS
    done = await finished(client, created["id"])
    assert done["status"] == "completed", done["error"]
    report = done["report"]
    assert report["domain"] == "airline" and report["complete"] is True
    assert report["num_tasks"] == AIRLINE_TASKS and report["trials_scored"] == AIRLINE_TASKS
    assert report["avg_reward"] == 1.0 and report["pass_hat_k"] == {"1": 1.0}
    assert set(report["task_rewards"]) == {str(i) for i in range(AIRLINE_TASKS)}
    # Airline scores DB and COMMUNICATE: both hold on every trial.
    assert report["signal_rates"]["DB_STATE_MATCH"] == 1.0 and report["signal_rates"]["COMMUNICATE"] == 1.0

    trial = (await client.get(f"/assessments/{created['id']}/trials/8/0")).json()
    assert trial["domain"] == "airline" and trial["reward"] == 1.0 and trial["failures"] == []
    assert "airline" in trial["transcript"][1]["content"]  # the scripted customer names domain and task
    ready = (await client.get("/readyz")).json()
    # Domains load on first use: telecom and mock are listed, not loaded (None) until an assessment asks.
    loaded = {"retail": 114, "airline": AIRLINE_TASKS, "telecom": None, "mock": None}
    assert ready["domains"] == loaded and ready["tasks"] == 114


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    start_a, end_a = datetime.fromisoformat(a["started_at"]), datetime.fromisoformat(a["finished_at"])
    start_b, end_b = datetime.fromisoformat(b["started_at"]), datetime.fromisoformat(b["finished_at"])
    return start_a < end_b and start_b < end_a


async def test_one_service_runs_a_retail_and_an_airline_assessment_at_once(
    client: httpx.AsyncClient, slow_oracle_url: str
) -> None:
    tasks = {"task_ids": [str(i) for i in range(8)]}  # ids 0-7 exist in both domains
    retail, airline = await asyncio.gather(
        start(client, {"agent_url": slow_oracle_url, "tasks": tasks, "concurrency": 4}),
        start(client, {"agent_url": slow_oracle_url, "domain": "airline", "tasks": tasks, "concurrency": 4}),
    )
    assert (retail["domain"], airline["domain"]) == ("retail", "airline")
    done_retail, done_airline = await asyncio.gather(
        finished(client, retail["id"]), finished(client, airline["id"])
    )
    for done, domain in ((done_retail, "retail"), (done_airline, "airline")):
        assert done["status"] == "completed", done["error"]
        assert done["domain"] == done["report"]["domain"] == domain
        assert done["report"]["avg_reward"] == 1.0 and done["report"]["num_tasks"] == 8
    assert _overlap(done_retail, done_airline)  # both ran at once, on one service

    # The same task id, each in its own domain.
    first = (await client.get(f"/assessments/{retail['id']}/trials/5/0")).json()
    second = (await client.get(f"/assessments/{airline['id']}/trials/5/0")).json()
    assert (first["domain"], second["domain"]) == ("retail", "airline")
    assert {c["name"] for m in second["transcript"] for c in m.get("tool_calls") or []} <= {
        "get_user_details",
        "get_reservation_details",
        "search_direct_flight",
        "search_onestop_flight",
        "list_all_airports",
        "calculate",
        "transfer_to_human_agents",
        "get_flight_status",
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    }

    # Lists filter by domain; an unknown one is refused in one line naming the domains.
    listed = (await client.get("/assessments", params={"domain": "airline"})).json()
    assert [a["id"] for a in listed["data"]] == [airline["id"]] and listed["count"] == 1
    assert {a["domain"] for a in (await client.get("/assessments")).json()["data"]} == {"retail", "airline"}
    refused = await client.get("/assessments", params={"domain": "banking"})
    assert refused.status_code == 422
    (problem,) = refused.json()["detail"]
    assert problem["loc"] == ["query", "domain"]
    assert problem["msg"] == f"unknown domain 'banking'; this service runs {FOUR}"

    # Two domains are not compared task by task: 409, in one line.
    compared = await client.get(f"/assessments/{retail['id']}/compare/{airline['id']}")
    assert compared.status_code == 409
    message = compared.json()["detail"]
    assert message == (
        f"assessments {retail['id']} (retail) and {airline['id']} (airline) assess different domains; "
        "compare two assessments of the same domain"
    )

    # The AgentBeats results file of each names its domain.
    board = (await client.get(f"/assessments/{airline['id']}/leaderboard")).json()
    assert board["results"][0]["domain"] == "airline"


async def test_an_unknown_domain_is_refused_in_one_line(client: httpx.AsyncClient, oracle_url: str) -> None:
    refused = await client.post("/assessments", json={"agent_url": oracle_url, "domain": "banking"})
    assert refused.status_code == 422
    (problem,) = refused.json()["detail"]
    assert problem["loc"] == ["body", "domain"]
    assert f"unknown domain 'banking'; this service runs {FOUR}" in problem["msg"]
    assert "\n" not in problem["msg"]
    assert (await client.get("/assessments")).json()["count"] == 0


async def test_an_agentbeats_request_for_airline_returns_an_airline_result(
    database_url: str, oracle_url: str
) -> None:
    async with serve_green(database_url) as green_url, httpx.AsyncClient(timeout=60) as http:
        client = await a2a_client(green_url, http)
        _, task = await collect(client, agentbeats(oracle_url, domain="airline", task_ids=[7, 8, 9]))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        parts = list(task.artifacts[0].parts)
        assert parts[0].text.startswith("tau2 airline assessment"), parts[0].text
        (data,) = get_data_parts(parts)
        assert data["domain"] == "airline" and data["complete"] is True
        assert data["task_rewards"] == {"7": 1.0, "8": 1.0, "9": 1.0} and data["pass_rate"] == 100.0
        stored = (await http.get(f"{green_url}assessments/{data['assessment_id']}")).json()
        assert stored["domain"] == "airline" and stored["source"] == "a2a"
