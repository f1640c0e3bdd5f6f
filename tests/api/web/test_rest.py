"""The REST door over real HTTP (uvicorn on loopback, httpx), on SQLite and PostgreSQL: lifecycle, 422s,
idempotency, SSE progress, trials, cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from api.runtime.service import SCRIPTED_CUSTOMER_WARNING
from tests.api.servers import poll, serve_green


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        yield http


async def read_sse(client: httpx.AsyncClient, path: str, timeout_s: float = 60) -> list[tuple[str, Any]]:
    """Every event of an SSE stream until the server ends it."""
    events: list[tuple[str, Any]] = []

    async def consume() -> None:
        async with client.stream("GET", path, headers={"Accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            name = "message"
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line.removeprefix("event:").strip()
                elif line.startswith("data:"):
                    events.append((name, json.loads(line.removeprefix("data:").strip())))
                    name = "message"

    await asyncio.wait_for(consume(), timeout_s)
    return events


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = (await client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["database"] == "ok" and ready["tasks"] == 114
    assert (await client.get("/openapi.json")).json()["paths"]["/assessments"]["post"]
    assert (await client.get("/docs")).status_code == 200


@pytest.mark.parametrize(
    ("body", "location", "message"),
    [
        ({"agent_url": "http://a.test", "trials": 0}, ["body", "trials"], "greater than or equal to 1"),
        ({"agent_url": "not a url"}, ["body", "agent_url"], "http:// or https://"),
        ({"agent_url": "http://a.test", "tasks": {"task_ids": ["9999"]}}, ["body"], "unknown task ids"),
        ({"agent_url": "http://a.test", "user_model": "gpt-x"}, ["body"], "is not offered here; use one of"),
        ({"agent_url": "http://a.test", "api_key": "sk-x"}, ["body", "api_key"], "Extra inputs"),
        (
            {"agent_url": "http://a.test", "tasks": {"task_ids": ["1"], "num_tasks": 3}},
            ["body", "tasks"],
            "either task_ids or num_tasks",
        ),
    ],
)
async def test_invalid_requests_are_422_with_a_message(
    client: httpx.AsyncClient, body: dict[str, Any], location: list[str], message: str
) -> None:
    response = await client.post("/assessments", json=body)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["loc"][: len(location)] == location and message in e["msg"] for e in errors), errors
    assert (await client.get("/assessments")).json()["count"] == 0


async def test_lifecycle_with_idempotency_and_sse(client: httpx.AsyncClient, oracle_url: str) -> None:
    body = {"agent_url": oracle_url, "tasks": {"task_ids": ["0", "1", "2"]}, "trials": 2, "concurrency": 4}
    created = await client.post("/assessments", json=body, headers={"Idempotency-Key": "retry-me"})
    assert created.status_code == 202, created.text
    assessment = created.json()
    assessment_id = assessment["id"]
    assert created.headers["location"] == f"/assessments/{assessment_id}"
    assert assessment["links"]["events"] == f"/assessments/{assessment_id}/events"
    assert assessment["progress"]["trials_total"] == 6

    events = await read_sse(client, f"/assessments/{assessment_id}/events")

    retried = await client.post("/assessments", json=body, headers={"Idempotency-Key": "retry-me"})
    assert retried.status_code == 202 and retried.json()["id"] == assessment_id
    assert retried.headers["idempotent-replayed"] == "true"
    conflict = await client.post(
        "/assessments", json={**body, "trials": 1}, headers={"Idempotency-Key": "retry-me"}
    )
    assert conflict.status_code == 422 and "different request" in conflict.text

    kinds = [name for name, _ in events]
    assert kinds[0] == "status"
    assert kinds.count("trial_finished") == 6 - events[0][1]["trials_done"]
    assert "turn_taken" in kinds or events[0][1]["status"] == "completed"
    assert events[-1][0] == "status" and events[-1][1]["status"] == "completed"
    assert events[-1][1]["trials_done"] == 6

    done = (await client.get(f"/assessments/{assessment_id}")).json()
    assert done["status"] == "completed" and done["progress"] == {"trials_done": 6, "trials_total": 6}
    report = done["report"]
    assert report["trials_total"] == 6 and report["num_tasks"] == 3 and report["avg_reward"] == 1.0
    assert set(report["pass_hat_k"]) == {"1", "2"}

    leaderboard = (await client.get(f"/assessments/{assessment_id}/leaderboard")).json()
    assert leaderboard["participants"] == {"agent": done["agent_url"]}
    [result] = leaderboard["results"]
    assert result["domain"] == "retail" and result["assessment_id"] == assessment_id
    # Task 2 carries an NL assertion and this service has no judge: not judged, so not in the score, and the
    # report and the results file say they are partial, so that no pipeline publishes them as final.
    assert result["task_rewards"] == {"0": 1.0, "1": 1.0} and result["excluded"]["not_judged"] == 2
    assert (result["score"], result["max_score"], result["pass_rate"]) == (2.0, 2, 100.0)
    assert report["complete"] is False and report["partial_reasons"] == {"not_judged": 2}
    assert result["complete"] is False and result["partial_reasons"] == {"not_judged": 2}
    assert report["signal_applicable"]["CLEAN_EXIT"] == 4 and report["signal_applicable"]["COMMUNICATE"] == 0
    assert result["signal_applicable"] == report["signal_applicable"]
    assert report["schema_version"] == 3

    trials = (await client.get(f"/assessments/{assessment_id}/trials")).json()
    assert trials["count"] == 6
    assert {(t["task_id"], t["trial"]) for t in trials["data"]} == {(t, k) for t in "012" for k in (0, 1)}
    detail = (await client.get(trials["data"][0]["link"])).json()
    assert detail["transcript"] and detail["signals"]
    assert {"nl_verdicts", "protocol_warnings", "judge_input", "db_expected_hash"} <= set(detail)
    assert detail["db_expected_hash"] == detail["db_actual_hash"]
    assert (await client.get(f"/assessments/{assessment_id}/trials/0/7")).status_code == 404

    page = (await client.get("/assessments", params={"status": "completed", "agent_url": oracle_url})).json()
    assert page["count"] == 1 and page["data"][0]["id"] == assessment_id
    assert (await client.get("/assessments", params={"status": "running"})).json()["count"] == 0
    assert (await client.get("/assessments", params={"status": "bogus"})).status_code == 422

    # A finished assessment cannot be cancelled; its events stream is just the final status.
    assert (await client.post(f"/assessments/{assessment_id}/cancel")).status_code == 409
    assert [name for name, _ in await read_sse(client, f"/assessments/{assessment_id}/events")] == ["status"]


async def test_a_complete_report_says_so(client: httpx.AsyncClient, oracle_url: str) -> None:
    body = {"agent_url": oracle_url, "tasks": {"task_ids": ["0", "30"]}, "trials": 1}
    assessment_id = (await client.post("/assessments", json=body)).json()["id"]
    done = await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
    report = done["report"]
    assert report["complete"] is True and report["partial_reasons"] == {}
    # task 30 has a fact to communicate and task 0 none: the COMMUNICATE rate covers one trial
    assert report["signal_applicable"]["COMMUNICATE"] == 1 and report["signal_applicable"]["CLEAN_EXIT"] == 2
    [result] = (await client.get(f"/assessments/{assessment_id}/leaderboard")).json()["results"]
    assert result["complete"] is True and result["partial_reasons"] == {}
    # the oracle states the facts in its closing text: "1.0 of 1", not a vacuous pass counted for task 0
    assert result["signal_rates"]["COMMUNICATE"] == 1.0 and result["signal_applicable"]["COMMUNICATE"] == 1


async def test_an_unreachable_agent_fails_the_assessment_with_the_reason(client: httpx.AsyncClient) -> None:
    body = {"agent_url": "http://127.0.0.1:9/", "tasks": {"num_tasks": 3}}
    assessment_id = (await client.post("/assessments", json=body)).json()["id"]
    done = await poll(
        client, f"/assessments/{assessment_id}", lambda b: b["status"] not in ("queued", "running")
    )
    assert done["status"] == "failed" and done["report"] is None
    assert "http://127.0.0.1:9" in done["error"] and "could not be reached" in done["error"]
    assert "Check that the agent is running" in done["error"]
    assert (await client.get(f"/assessments/{assessment_id}/trials")).json()["count"] == 0
    assert (await client.get(f"/assessments/{assessment_id}/leaderboard")).status_code == 409


async def test_cancel_running_assessment(client: httpx.AsyncClient, idle_url: str) -> None:
    created = await client.post(
        "/assessments", json={"agent_url": idle_url, "tasks": {"num_tasks": 4}, "turn_timeout_s": 600}
    )
    assessment_id = created.json()["id"]
    await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "running")
    not_yet = await client.get(f"/assessments/{assessment_id}/leaderboard")
    assert not_yet.status_code == 409 and "no report yet" in not_yet.text
    cancelled = await client.post(f"/assessments/{assessment_id}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["finished_at"]
    again = await client.post(f"/assessments/{assessment_id}/cancel")
    assert again.status_code == 409 and "already cancelled" in again.text
    assert (await client.get(f"/assessments/{assessment_id}")).json()["status"] == "cancelled"


async def test_unknown_assessment_is_404(client: httpx.AsyncClient) -> None:
    for path in (
        "/assessments/nope",
        "/assessments/nope/trials",
        "/assessments/nope/events",
        "/assessments/nope/leaderboard",
    ):
        response = await client.get(path)
        assert response.status_code == 404 and "nope" in response.text
    assert (await client.post("/assessments/nope/cancel")).status_code == 404


async def test_sse_progress_arrives_while_the_assessment_runs(
    client: httpx.AsyncClient, slow_oracle_url: str
) -> None:
    body = {"agent_url": slow_oracle_url, "tasks": {"num_tasks": 4}, "concurrency": 1}
    assessment_id = (await client.post("/assessments", json=body)).json()["id"]
    seen: list[str] = []
    first_status: dict[str, Any] = {}
    status_at_first_trial = None
    async with client.stream("GET", f"/assessments/{assessment_id}/events") as response:
        async for line in response.aiter_lines():
            if line.startswith("data:") and not first_status:
                first_status = json.loads(line.removeprefix("data:"))
            if not line.startswith("event:"):
                continue
            seen.append(line.removeprefix("event:").strip())
            if seen[-1] == "trial_finished" and status_at_first_trial is None:
                status_at_first_trial = (await client.get(f"/assessments/{assessment_id}")).json()["status"]
    assert status_at_first_trial == "running"  # streamed live, not in a burst at the end
    # Whatever happened before the stream opened is in its first status event; the rest comes through it.
    assert seen[0] == "status" and seen.count("trial_finished") == 4 - first_status["trials_done"]
    assert seen.count("trial_started") >= 3
    assert "turn_taken" in seen and seen[-1] == "status"


async def test_concurrency_above_the_operator_bounds_is_reported(database_url: str, idle_url: str) -> None:
    async with (
        serve_green(database_url, max_concurrent_trials=48, max_concurrent_per_agent=16) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        body = {"agent_url": idle_url, "tasks": {"task_ids": ["0"]}}
        capped = (await http.post("/assessments", json={**body, "concurrency": 128})).json()
        per_agent = (await http.post("/assessments", json={**body, "concurrency": 20})).json()
        within = (await http.post("/assessments", json={**body, "concurrency": 16})).json()

        # Every one of them also pairs the scripted customer with an agent that is not the built-in oracle.
        scripted, warning = (await http.get(f"/assessments/{capped['id']}")).json()["warnings"]
        assert scripted == SCRIPTED_CUSTOMER_WARNING
        assert "concurrency 128 was asked but at most 16 trials run at once" in warning
        assert "max_concurrent_per_agent is 16" in warning and "max_concurrent_trials is 48" in warning
        assert "GREEN_AGENT_MAX_CONCURRENT_PER_AGENT" in warning
        scripted, warning = per_agent["warnings"]
        assert "at most 16" in warning and "max_concurrent_trials" not in warning
        assert within["warnings"] == [SCRIPTED_CUSTOMER_WARNING]
        for created in (capped, per_agent, within):
            assert (await http.post(f"/assessments/{created['id']}/cancel")).status_code == 200
