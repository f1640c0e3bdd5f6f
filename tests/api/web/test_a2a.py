"""The A2A door over real HTTP, on SQLite and PostgreSQL: the agent card, an AgentBeats request streamed with
the a2a-sdk client up to the Result artifact (and visible over REST), a rejected request, a 0.3 JSON-RPC
client, the REST binding, and cancel."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import get_data_parts, get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.api.servers import poll, serve_green
from tests.support.fake_llm import passing_judge, serve_fake_llm


@pytest.fixture
async def green_url(database_url: str) -> AsyncIterator[str]:
    async with serve_green(database_url) as url:
        yield url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as client:
        yield client


async def a2a_client(
    url: str, http: httpx.AsyncClient, *, streaming: bool = True, rest: bool = False
) -> Client:
    bindings = ["HTTP+JSON"] if rest else ["JSONRPC"]
    config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=bindings)
    return await create_client(url, config)


def request(text: str, *, return_immediately: bool = False) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )


def agentbeats(agent_url: str, **config: Any) -> str:
    """The request; the scripted customer unless `user_llm` says otherwise (only a request naming it gets
    it)."""
    config = {"domain": "retail", "user_llm": "scripted", **config}
    return json.dumps({"participants": {"agent": agent_url}, "config": config})


async def collect(client: Client, text: str) -> tuple[list[StreamResponse], Task]:
    responses = [r async for r in client.send_message(request(text))]
    task_id = next(r.task.id for r in responses if r.HasField("task"))
    return responses, await client.get_task(GetTaskRequest(id=task_id))


async def test_agent_card(green_url: str, http: httpx.AsyncClient) -> None:
    card = (await http.get(green_url + ".well-known/agent-card.json")).json()
    assert card["capabilities"]["streaming"] is True
    assert card["documentationUrl"] == green_url + "docs"
    assert card["skills"] and card["skills"][0]["id"] == "tau2-assessment"
    interfaces = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert interfaces[("JSONRPC", "1.0")] == green_url
    assert interfaces[("JSONRPC", "0.3")] == green_url
    assert interfaces[("HTTP+JSON", "1.0")] == green_url + "a2a"


async def test_agentbeats_request_streams_and_completes_with_result(
    database_url: str, http: httpx.AsyncClient, oracle_url: str, retail_data: RetailData
) -> None:
    async with (
        serve_fake_llm(passing_judge) as judge,
        serve_green(
            database_url, judge_model={"model": "fake-judge", "base_url": judge.base_url}
        ) as green_url,
    ):
        client = await a2a_client(green_url, http)
        text = agentbeats(oracle_url, task_ids=[2, 0, 1], num_trials=2, extra_key=1)
        responses, task = await collect(client, text)

        updates = [r.status_update for r in responses if r.HasField("status_update")]
        working = [u for u in updates if u.status.state == TaskState.TASK_STATE_WORKING]
        progress = [get_message_text(u.status.message) for u in working]
        assert sum("trials done" in p for p in progress) == 6, progress
        # One sentence each: what runs, then every warning (the ignored key, the scripted customer).
        assert (
            progress[0].startswith("Assessment ") and ": 3 tasks x 2 trials = 6 trials. Note: " in progress[0]
        )
        assert "config keys ignored (not used by this green agent): 'extra_key'." in progress[0]

        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [a.name for a in task.artifacts] == ["Result"]
        parts = list(task.artifacts[0].parts)
        assert parts[0].text.startswith("tau2 retail assessment"), parts[0].text
        (data,) = get_data_parts(parts)
        assert data["complete"] is True and data["partial_reasons"] == {}
        assert set(data["signal_applicable"]) == set(data["signal_rates"])
        assert data["signal_applicable"]["CLEAN_EXIT"] == data["trials_scored"] == 6
        assert data["domain"] == "retail" and data["judge_model"] == "fake-judge"
        assert data["max_score"] == len(data["task_rewards"]) == 3
        assert data["score"] == 3 and data["pass_rate"] == 100.0 == data["tau2_pass_rate"]
        assert data["evaluation"] == "tau2" and data["action_pass_rate"] == 100.0
        assert set(data["task_rewards"]) == {"0", "1", "2"}
        assert data["trials_total"] == 6
        assert data["time_used"] > 0 and data["num_trials"] == 2 and set(data["pass_hat_k"]) == {"1", "2"}
        assert "DB_STATE_MATCH" in data["signal_rates"]
        assert any("extra_key" in w for w in data["warnings"])
        # The error bars are added fields; every key above keeps its shape. Every task solved: 1.0, stderr
        # exactly 0 (every task the same), as text "1.000 +- 0.000".
        stats = data["stats"]
        assert stats["n_tasks"] == 3
        assert stats["avg_reward"] == {"value": 1.0, "stderr": 0.0, "ci95": [1.0, 1.0]}
        assert set(stats["pass_hat_k"]) == {"1", "2"}
        assert "average reward 1.000 +- 0.000 (95% intervals over 3 tasks)" in parts[0].text, parts[0].text
        assert "pass^2 1.000 +- 0.000" in parts[0].text

        # On the 1.x JSON-RPC wire, as on 0.3's (tests/api/web/test_agentbeats_pipeline.py), counts are
        # integers although a DataPart's numbers are doubles: a leaderboard shows "3.0/3", not "3.0/3.0".
        raw = await http.post(
            green_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}},
            headers={"A2A-Version": "1.0"},
        )
        (wire,) = [p["data"] for p in raw.json()["result"]["artifacts"][0]["parts"] if "data" in p]
        # As parsed from the wire's JSON: "3" reads as an int, "3.0" as a float (not a substring test: a
        # Struct's keys come in any order, and max_score was sometimes the last one).
        assert wire["max_score"] == 3 and type(wire["max_score"]) is int and type(wire["trials_total"]) is int
        assert type(wire["score"]) is float and type(wire["stats"]["n_tasks"]) is int

        # The same assessment through the REST door.
        rest = (await http.get(f"{green_url}assessments/{data['assessment_id']}")).json()
        assert rest["source"] == "a2a" and rest["status"] == "completed" and rest["a2a_task_id"] == task.id
        assert rest["progress"] == {"trials_done": 6, "trials_total": 6}


async def test_a_request_that_cannot_be_scored_in_full_is_rejected_before_it_runs(
    green_url: str, http: httpx.AsyncClient, oracle_url: str
) -> None:
    # Task 2 is scored by NL assertions and this service has no judge: the result could never be complete.
    client = await a2a_client(green_url, http)
    _, task = await collect(client, agentbeats(oracle_url, task_ids=[0, 1, 2]))
    assert task.status.state == TaskState.TASK_STATE_REJECTED and not task.artifacts
    message = get_message_text(task.status.message)
    assert message.startswith("Not run: 1 of the selected tasks (2) are scored by NL assertions")
    assert "judge_llm" in message and "\n" not in message
    assert (await http.get(green_url + "assessments")).json()["count"] == 0


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # Never silently the scripted customer: a model not offered here is refused, naming what is.
        ({"user_llm": "openai/gpt-4o-mini"}, "user model 'openai/gpt-4o-mini' needs OPENAI_API_KEY"),
        (
            {"user_llm": "not-configured"},
            "user model 'not-configured' is not offered here; use one of: scripted",
        ),
        ({"user_llm": None}, "needs OPENAI_API_KEY"),  # the official green's default customer
        ({"judge_llm": "openai/gpt-4.1"}, "judge model 'openai/gpt-4.1' needs OPENAI_API_KEY"),
    ],
)
async def test_a_model_not_offered_here_is_refused_in_one_line(
    green_url: str, http: httpx.AsyncClient, oracle_url: str, config: dict[str, Any], expected: str
) -> None:
    client = await a2a_client(green_url, http, streaming=False)
    _, task = await collect(client, agentbeats(oracle_url, num_tasks=2, **config))
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    message = get_message_text(task.status.message)
    assert expected in message and "\n" not in message, message
    assert (await http.get(green_url + "assessments")).json()["count"] == 0


async def test_a_complete_result_carries_the_flag_and_counts(
    green_url: str, http: httpx.AsyncClient, oracle_url: str
) -> None:
    client = await a2a_client(green_url, http, streaming=False)
    _, task = await collect(client, agentbeats(oracle_url, task_ids=[0, 57]))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    parts = list(task.artifacts[0].parts)
    assert parts[0].text.startswith("tau2 retail assessment"), parts[0].text
    (data,) = get_data_parts(parts)
    assert data["complete"] is True and data["partial_reasons"] == {}
    # task 57 has no gold actions: ACTION_MATCH covers task 0 only
    assert data["signal_applicable"]["ACTION_MATCH"] == 1 and data["signal_rates"]["ACTION_MATCH"] == 1.0


async def test_an_unreachable_agent_fails_the_task_saying_what_to_fix(
    green_url: str, http: httpx.AsyncClient
) -> None:
    client = await a2a_client(green_url, http)
    _, task = await collect(client, agentbeats("http://127.0.0.1:9/", num_tasks=2))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert not task.artifacts  # no Result: nothing a pipeline could publish as a score of 0
    message = get_message_text(task.status.message)
    assert message.startswith("Assessment failed: the white agent at http://127.0.0.1:9")
    assert "could not be reached" in message and "Check that the agent is running" in message
    rest = (await http.get(f"{green_url}assessments")).json()["data"][0]
    assert rest["status"] == "failed" and rest["a2a_task_id"] == task.id and rest["error"] in message


async def test_a_resumed_a2a_assessment_whose_agent_is_gone_fails_its_task_saying_why(
    database_url: str, http: httpx.AsyncClient, retail_data: RetailData
) -> None:
    # Started over A2A, interrupted by a restart, and by the next start its agent has gone away: the A2A
    # task (nobody attached to it any more) ends failed with the reason, like a live one.
    async with (
        serve_reference_agent("idle", data=retail_data) as agent_url,
        serve_green(database_url) as url,
    ):
        client = await a2a_client(url, http, streaming=False)
        text = agentbeats(agent_url, num_tasks=2)
        (first,) = [r async for r in client.send_message(request(text, return_immediately=True))]
        await poll(http, f"{url}assessments", lambda b: b["data"] and b["data"][0]["status"] == "running")
    async with serve_green(database_url) as url:
        done = await poll(http, f"{url}assessments", lambda b: b["data"][0]["status"] == "failed")
        client = await a2a_client(url, http, streaming=False)
        task = await client.get_task(GetTaskRequest(id=first.task.id))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    message = get_message_text(task.status.message)
    assert message == f"Assessment failed: {done['data'][0]['error']}"
    assert "could not be reached" in message and agent_url.rstrip("/") in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello", "not JSON"),
        (json.dumps({"participants": {"agent": "http://a"}, "config": {"domain": "banking"}}), "airline"),
        (
            json.dumps(
                {
                    "participants": {"agent": "http://a.test"},
                    "config": {"domain": "retail", "task_ids": ["nope"]},
                }
            ),
            "do not exist: 'nope'",
        ),
    ],
)
async def test_invalid_request_is_rejected(
    green_url: str, http: httpx.AsyncClient, text: str, expected: str
) -> None:
    client = await a2a_client(green_url, http, streaming=False)
    _, task = await collect(client, text)
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert expected in get_message_text(task.status.message)
    assert (await http.get(green_url + "assessments")).json()["count"] == 0
    assert (await http.get(green_url + "healthz")).status_code == 200


async def test_v03_jsonrpc_client_is_accepted(
    green_url: str, http: httpx.AsyncClient, oracle_url: str
) -> None:
    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "role": "user",
                "messageId": uuid.uuid4().hex,
                "parts": [{"kind": "text", "text": agentbeats(oracle_url, num_tasks=2)}],
            },
            "configuration": {"blocking": True},
        },
    }
    response = await http.post(green_url, json=payload)  # no A2A-Version header: a 0.3 client
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["kind"] == "task"
    task_id = result["id"]
    rest = await poll(http, f"{green_url}assessments?limit=1", lambda b: b["count"] == 1)
    assert rest["data"][0]["a2a_task_id"] == task_id
    done = await poll(
        http,
        f"{green_url}assessments/{rest['data'][0]['id']}",
        lambda b: b["status"] == "completed",
    )
    assert done["progress"]["trials_done"] == 2


async def test_rest_binding_and_cancel(green_url: str, http: httpx.AsyncClient, idle_url: str) -> None:
    client = await a2a_client(green_url, http, streaming=False, rest=True)
    (first,) = [
        r
        async for r in client.send_message(
            request(agentbeats(idle_url, num_tasks=2), return_immediately=True)
        )
    ]
    task_id = first.task.id
    page = await poll(
        http, f"{green_url}assessments", lambda b: b["count"] == 1 and b["data"][0]["status"] == "running"
    )
    assessment_id = page["data"][0]["id"]

    cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    rest = (await http.get(f"{green_url}assessments/{assessment_id}")).json()
    assert rest["status"] == "cancelled"


async def test_cancel_over_rest_cancels_the_a2a_task(
    green_url: str, http: httpx.AsyncClient, idle_url: str
) -> None:
    client = await a2a_client(green_url, http, streaming=False)
    text = agentbeats(idle_url, num_tasks=2)
    (first,) = [r async for r in client.send_message(request(text, return_immediately=True))]
    page = await poll(
        http, f"{green_url}assessments", lambda b: b["count"] == 1 and b["data"][0]["status"] == "running"
    )
    cancelled = await http.post(f"{green_url}assessments/{page['data'][0]['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    for _ in range(100):
        task = await client.get_task(GetTaskRequest(id=first.task.id))
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            break
        await asyncio.sleep(0.05)
    assert task.status.state == TaskState.TASK_STATE_CANCELED
