"""Comparing two assessments and rerunning what failed, over real HTTP, on SQLite and PostgreSQL.

A vendor's loop: an agent that gives up on tasks 1 and 6 is assessed; its failed tasks are run again against
the fixed agent (the oracle); the comparison of the two says by how much, over the tasks both scored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from api.db.engine import create_engine
from api.db.repository import AssessmentRepository
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.hostile import HostileAgent
from retail_domain import RetailData
from tests.api.servers import poll, serve_green

TASKS = ["0", "1", "5", "6", "7"]
"""Tasks without NL assertions (no judge here): 1 and 6 are the ones the first agent gives up on."""


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        yield http


@pytest.fixture
async def giving_up_url(retail_data: RetailData) -> AsyncIterator[str]:
    """Honest (gold actions) except on tasks 1 and 6, where it apologizes and does nothing."""
    async with serve_app(HostileAgent(retail_data, {"1": [], "6": []}).app) as url:
        yield url


async def finished(client: httpx.AsyncClient, assessment_id: str) -> dict[str, Any]:
    path = f"/assessments/{assessment_id}"
    return await poll(client, path, lambda a: a["status"] not in ("queued", "running"), 120)


async def test_rerun_what_failed_then_compare(
    client: httpx.AsyncClient, giving_up_url: str, oracle_url: str, database_url: str
) -> None:
    body = {
        "agent_url": giving_up_url,
        "tasks": {"task_ids": TASKS},
        "trials": 2,
        "agent_headers": {"X-Agent-Key": "s3cret"},
    }
    first = (await client.post("/assessments", json=body)).json()
    before = await finished(client, first["id"])
    assert before["status"] == "completed"
    report = before["report"]
    assert report["task_rewards"] == {t: float(t not in "16") for t in TASKS}
    # 5 tasks with mean rewards 1, 0, 1, 0, 1: mean 0.6, sd 0.547723, stderr 0.244949; ci95 0.6 +- 0.480100
    stats = report["stats"]
    assert stats["n_tasks"] == 5 and stats["avg_reward"]["value"] == pytest.approx(0.6)
    assert stats["avg_reward"]["stderr"] == pytest.approx(0.244949, abs=1e-6)
    assert stats["avg_reward"]["ci95"] == pytest.approx([0.119900, 1.0], abs=1e-6)
    assert stats["task_successes"] == {t: [2 if t not in "16" else 0, 2] for t in TASKS}
    assert stats["mixed_tasks"] == []

    # The same agent again: its headers go with it. A fixed agent elsewhere: they do not.
    same = await client.post(f"/assessments/{first['id']}/rerun-failed")
    assert same.status_code == 202, same.text
    fixed = await client.post(f"/assessments/{first['id']}/rerun-failed", json={"agent_url": oracle_url})
    assert fixed.status_code == 202, fixed.text
    assert fixed.headers["location"] == f"/assessments/{fixed.json()['id']}"
    rerun = fixed.json()
    assert rerun["config"]["tasks"]["task_ids"] == ["1", "6"] and rerun["config"]["trials"] == 2
    assert rerun["agent_url"] == oracle_url.rstrip("/") and "agent_headers" not in rerun["config"]
    assert rerun["rerun_of"] == same.json()["rerun_of"] == first["id"] and first["rerun_of"] is None
    assert any(f"assessment {first['id']} not solved in every trial" in w for w in rerun["warnings"])
    engine = create_engine(database_url)
    try:
        repository = AssessmentRepository(engine)
        kept, dropped = [await repository.get(x) for x in (same.json()["id"], rerun["id"])]
    finally:
        await engine.dispose()
    assert kept is not None and kept.agent_headers == {"X-Agent-Key": "s3cret"}
    assert dropped is not None and dropped.agent_headers == {}
    after = await finished(client, rerun["id"])
    assert after["status"] == "completed"
    await finished(client, same.json()["id"])

    # B = the first run, A = the rerun: tasks 1 and 6 went from 0 to 1 in both trials. Differences 1, 1:
    # mean 1, sd 0, so stderr 0 and p 0 (every task moved the same way); ci95 [1, 1].
    compared = await client.get(f"/assessments/{rerun['id']}/compare/{first['id']}")
    assert compared.status_code == 200, compared.text
    result = compared.json()
    assert (result["a"], result["b"]) == (rerun["id"], first["id"])
    assert result["tasks_compared"] == 2 and result["only_in_b"] == ["0", "5", "7"]
    assert result["difference"] == 1.0 and result["stderr"] == 0.0 and result["ci95"] == [1.0, 1.0]
    assert result["p_value"] == 0.0 and result["significant"] is True
    assert (result["a_better"], result["b_better"], result["ties"]) == (2, 0, 0)
    assert [f["task_id"] for f in result["flipped"]] == ["1", "6"]
    assert set(result["pass_hat_k"]) == {"1", "2"} and result["pass_hat_k"]["2"]["difference"] == 1.0
    assert result["sentence"] == "A is ahead of B by 1.000 +- 0.000 in mean reward (p < 0.001, 2 tasks)"
    backwards = (await client.get(f"/assessments/{first['id']}/compare/{rerun['id']}")).json()
    assert backwards["difference"] == -1.0 and backwards["sentence"].startswith("B is ahead of A")
    itself = (await client.get(f"/assessments/{first['id']}/compare/{first['id']}")).json()
    assert itself["difference"] == 0 and itself["p_value"] == 1.0 and "no difference" in itself["sentence"]

    # Nothing left to rerun; nothing shared to compare; nobody there.
    solved = await client.post(f"/assessments/{rerun['id']}/rerun-failed")
    assert solved.status_code == 409 and "solved all its 2 tasks in every trial" in solved.text
    other = await client.post("/assessments", json={"agent_url": oracle_url, "tasks": {"task_ids": ["9"]}})
    await finished(client, other.json()["id"])
    disjoint = await client.get(f"/assessments/{other.json()['id']}/compare/{rerun['id']}")
    assert disjoint.status_code == 409 and "no scored task in common" in disjoint.text
    assert (await client.get(f"/assessments/nope/compare/{rerun['id']}")).status_code == 404
    assert (await client.get(f"/assessments/{rerun['id']}/compare/nope")).status_code == 404
    assert (await client.post("/assessments/nope/rerun-failed")).status_code == 404


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"trials": 0}, "greater than or equal to 1"),
        ({"tasks": {"task_ids": ["1"]}}, "Extra inputs"),
        ({"user_model": "gpt-x"}, "is not offered here"),
        ({"agent_url": "ftp://agent"}, "http:// or https://"),
    ],
)
async def test_rerun_overrides_that_cannot_run_are_422(
    client: httpx.AsyncClient, giving_up_url: str, overrides: dict[str, object], message: str
) -> None:
    body = {"agent_url": giving_up_url, "tasks": {"task_ids": ["1"]}}
    first = await client.post("/assessments", json=body)
    await finished(client, first.json()["id"])
    response = await client.post(f"/assessments/{first.json()['id']}/rerun-failed", json=overrides)
    assert response.status_code == 422 and message in response.text, response.text


async def test_a_running_assessment_is_not_rerun_yet(client: httpx.AsyncClient, idle_url: str) -> None:
    running = await client.post("/assessments", json={"agent_url": idle_url, "tasks": {"task_ids": ["1"]}})
    assessment_id = running.json()["id"]
    response = await client.post(f"/assessments/{assessment_id}/rerun-failed")
    assert response.status_code == 409 and "once it has finished" in response.text, response.text
    await client.post(f"/assessments/{assessment_id}/cancel")
