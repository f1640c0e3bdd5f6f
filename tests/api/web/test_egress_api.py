"""Egress and agent headers through the service's doors (REST and A2A, real HTTP, SQLite and PostgreSQL):
refused URLs are 422 or a failed assessment with the reason; agent headers reach the agent and appear in no
response, event, stored transcript, A2A task or log line."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from a2a.types import GetTaskRequest
from sqlalchemy import inspect, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.servers import poll, serve_green
from tests.api.web.test_a2a import a2a_client, agentbeats, collect
from tests.api.web.test_rest import read_sse
from tests.support.agents import FunctionExecutor, answer_done, serve_agent

SECRET = "Bearer white-agent-secret-4c1d9"


def _column_names(sync: Any, table: str) -> list[str]:
    return [column["name"] for column in inspect(sync).get_columns(table)]


async def columns_holding(database: AsyncEngine, needle: str) -> set[str]:
    """Every `table.column` of the whole database (the service's and the SDK's tables) whose text holds
    `needle`."""
    async with database.connect() as connection:
        tables = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
        found = set()
        for table in tables:
            columns = await connection.run_sync(_column_names, table)
            for row in (await connection.execute(select(text("*")).select_from(text(f'"{table}"')))).all():
                for column, value in zip(columns, row, strict=True):
                    if value is not None and needle in (
                        value if isinstance(value, str) else json.dumps(value, default=str)
                    ):
                        found.add(f"{table}.{column}")
    return found


def loggers_leaking(caplog: pytest.LogCaptureFixture) -> set[str]:
    """Loggers that wrote the secret: any at INFO or above, and the service's own at any level. (At DEBUG
    the A2A SDK's server logs incoming requests and the database drivers their SQL parameters: the README
    says to run them at INFO.)"""
    return {
        record.name
        for record in caplog.records
        if SECRET in record.getMessage()
        and (record.levelno >= logging.INFO or record.name.split(".")[0] in ("api", "green_agent"))
    }


@pytest.mark.parametrize(
    ("agent_url", "message"),
    [
        ("http://user:pw@agent.test/", "user name or password"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        ("http://[fd00:ec2::254]/", "cloud metadata address"),
        ("http://169.254.7.7:9019/", "link-local"),
        ("gopher://agent.test/", "only http:// or https://"),
    ],
)
async def test_refused_agent_urls_are_422(database_url: str, agent_url: str, message: str) -> None:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post("/assessments", json={"agent_url": agent_url})
        assert response.status_code == 422, response.text
        assert message in json.dumps(response.json()["detail"])
        assert (await client.get("/assessments")).json()["count"] == 0


async def test_private_agents_when_the_operator_refuses_them(database_url: str, oracle_url: str) -> None:
    """A literal loopback URL is 422 at once; a name that resolves to loopback fails the assessment with the
    reason (it is resolved when connecting, not when asked)."""
    port = oracle_url.rstrip("/").rsplit(":", 1)[1]
    async with (
        serve_green(database_url, allow_private_agents=False) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        literal = await client.post("/assessments", json={"agent_url": oracle_url})
        assert literal.status_code == 422 and "loopback" in literal.text
        named = await client.post(
            "/assessments", json={"agent_url": f"http://localhost:{port}/", "tasks": {"task_ids": ["0"]}}
        )
        assert named.status_code == 202, named.text
        done = await poll(client, f"/assessments/{named.json()['id']}", lambda b: b["status"] == "failed")
        assert "AgentEgressError" in done["error"] and "loopback" in done["error"]
        assert done["progress"]["trials_done"] == 0


async def test_operator_deny_list(database_url: str, oracle_url: str) -> None:
    async with (
        serve_green(database_url, egress_deny=["127.0.0.0/8"]) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        response = await client.post("/assessments", json={"agent_url": oracle_url})
        assert response.status_code == 422 and "deny-list" in response.text


async def test_rest_agent_headers_reach_the_agent_and_are_never_shown(
    database_url: str, database: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {
        "agent_url": "",
        "tasks": {"task_ids": ["0", "1"]},
        "agent_headers": {"Authorization": SECRET, "X-Agent-Key": SECRET + "-2"},
    }
    async with (
        serve_agent(FunctionExecutor(answer_done)) as (agent_url, _, recorder),
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        body["agent_url"] = agent_url
        created = await client.post("/assessments", json=body, headers={"Idempotency-Key": "k1"})
        assert created.status_code == 202, created.text
        assessment_id = created.json()["id"]
        events = await read_sse(client, f"/assessments/{assessment_id}/events")
        done = await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
        trial = await client.get(f"/assessments/{assessment_id}/trials/0/0")
        assert trial.json()["transcript"], "the trial ran: there is a transcript to search"
        replay = await client.post("/assessments", json=body, headers={"Idempotency-Key": "k1"})
        assert replay.headers.get("Idempotent-Replayed") == "true"
        shown = [
            created.text,
            replay.text,
            json.dumps(events),
            json.dumps(done),
            (await client.get("/assessments")).text,
            (await client.get(f"/assessments/{assessment_id}/trials")).text,
            trial.text,
            (await client.get(f"/assessments/{assessment_id}/leaderboard")).text,
            (await client.get("/openapi.json")).text,
        ]
    assert all(SECRET not in page for page in shown)
    assert any(seen.get("authorization") == SECRET for seen in recorder.seen)
    assert all(seen.get("x-agent-key") == SECRET + "-2" for seen in recorder.seen)
    assert await columns_holding(database, SECRET) == {"assessments.agent_headers"}
    assert loggers_leaking(caplog) == set()
    assert caplog.records  # the logs were captured: there was something to search


async def test_a2a_agent_headers_are_redacted_from_the_task(
    database_url: str, database: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        serve_agent(FunctionExecutor(answer_done)) as (agent_url, _, recorder),
        serve_green(database_url) as url,
        httpx.AsyncClient(timeout=60) as http,
    ):
        client = await a2a_client(url, http)
        text_request = agentbeats(agent_url, task_ids=["0"], agent_headers={"Authorization": SECRET})
        responses, task = await collect(client, text_request)
        again = await client.get_task(GetTaskRequest(id=task.id, history_length=100))
        listed = (await http.get(url + "assessments")).text
    shown: list[Any] = [str(r) for r in responses] + [str(task), str(again), listed]
    assert all(SECRET not in page for page in shown)
    assert "[redacted]" in str(again)  # the request is still in the history, its secret is not
    assert any(seen.get("authorization") == SECRET for seen in recorder.seen)
    assert await columns_holding(database, SECRET) == {"assessments.agent_headers"}
    assert loggers_leaking(caplog) == set()
