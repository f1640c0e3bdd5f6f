"""Dual control through the service, on SQLite and PostgreSQL: a mock assessment over REST with the oracle and
the scripted customer stores upstream's gold-run rewards, and an LLM customer's own tool calls (function
calling, a deterministic fake provider) are stored on its messages, their results with requestor "user"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from green_agent.conversation.user_simulator import SCRIPTED_OPENING
from green_agent.domains import load_domain
from green_agent.reference_agents.oracle import DONE_TEXT, OracleExecutor
from tests.api.servers import poll, serve_green
from tests.support.agents import serve_executor
from tests.support.fake_llm import FakeReply, serve_fake_llm

FACTS = json.loads((Path(__file__).parents[2] / "domain" / "mock" / "task_facts.json").read_text())
GOLD_RUN_REWARD = {task["id"]: task["gold_trajectory_eval"]["reward"] for task in FACTS["tasks"]}
STATES_COMMUNICATE_INFO = {"update_task_with_initialization_data": 1.0}
"""Where the oracle's closing text (which states the task's communicate_info) wins what the bare gold
trajectory does not (tests/engine/test_dual_control.py runs both)."""


async def completed(client: httpx.AsyncClient, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    response = await client.post("/assessments", json=config)
    assert response.status_code in (200, 201, 202), response.text
    assessment_id = response.json()["id"]
    body = await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
    return assessment_id, body


async def test_a_mock_assessment_with_the_oracle_stores_upstreams_gold_run_rewards(
    database_url: str, oracle_url: str
) -> None:
    """The oracle making exactly the gold calls (its closing text states nothing) gets upstream's gold-run
    reward on each of the 10 tasks, 1 on 7; the oracle as served also states the facts to communicate, which
    wins an eighth."""
    async with (
        serve_executor(OracleExecutor(load_domain("mock"), state_facts=False)) as bare_oracle_url,
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        _, bare = await completed(client, {"agent_url": bare_oracle_url, "domain": "mock"})
        assessment_id, body = await completed(client, {"agent_url": oracle_url, "domain": "mock"})
        trials = (await client.get(f"/assessments/{assessment_id}/trials")).json()
    assert bare["report"]["task_rewards"] == GOLD_RUN_REWARD and bare["report"]["avg_reward"] == 0.7
    report = body["report"]
    assert report["domain"] == "mock" and report["num_tasks"] == 10 and report["complete"]
    assert report["task_rewards"] == {**GOLD_RUN_REWARD, **STATES_COMMUNICATE_INFO}
    assert report["avg_reward"] == 0.8
    assert trials["count"] == 10


def inbox_customer(body: dict[str, Any]) -> FakeReply:
    """update_task_with_user_tools played as its scenario says: check the inbox, ask (naming the task for
    the oracle), dismiss the notification once the agent is done, stop."""
    last = body["messages"][-1]
    if len(body["messages"]) == 2:
        return FakeReply(tool_calls=[{"name": "check_notifications", "arguments": {}}])
    if last["role"] == "tool" and "assigned to you" in last["content"]:
        return FakeReply(SCRIPTED_OPENING.format(task_id="update_task_with_user_tools", domain="mock"))
    if last["role"] == "user" and DONE_TEXT in last["content"]:
        return FakeReply(
            tool_calls=[{"name": "dismiss_notification", "arguments": {"notification_id": "notif_1"}}]
        )
    return FakeReply("Thanks! ###STOP###")


async def test_an_llm_customers_tool_calls_are_stored(database_url: str, oracle_url: str) -> None:
    async with serve_fake_llm(inbox_customer) as fake:
        model = {"model": "fake", "base_url": fake.base_url, "api_key": "x"}
        async with (
            serve_green(database_url, user_models={"fake": model}) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            config = {
                "agent_url": oracle_url,
                "domain": "mock",
                "user_model": "fake",
                "tasks": {"task_ids": ["update_task_with_user_tools"]},
            }
            assessment_id, body = await completed(client, config)
            trial = (
                await client.get(f"/assessments/{assessment_id}/trials/update_task_with_user_tools/0")
            ).json()
    transcript = trial["transcript"]
    customer_calls = [
        (m["role"], c["name"]) for m in transcript if m["role"] == "user" for c in m["tool_calls"] or ()
    ]
    assert customer_calls == [("user", "check_notifications"), ("user", "dismiss_notification")]
    results = [(m["requestor"], m["content"]) for m in transcript if m["role"] == "tool"]
    assert results[0][0] == "user" and "notif_1" in results[0][1]
    assert results[1][0] is None  # the agent's update_task_status
    assert results[2] == ("user", "Notification notif_1 dismissed")
    # The customer did as told, and the task stays unwinnable: the gold replay never dismisses notif_1.
    signals = {s["name"]: s["passed"] for s in trial["signals"]}
    assert signals["ENV_ASSERTION"] is True and signals["DB_STATE_MATCH"] is False
    assert trial["reward"] == 0.0 and body["report"]["run_info"]["user_model"] == "fake"
