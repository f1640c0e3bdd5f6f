"""POST /assessments/{id}/retry over real HTTP, on SQLite and PostgreSQL: 202 with the attempt history, the
tenant rules (404 for an unknown id and for another tenant's, an admin may), 409 with a one-line reason while
it runs and when nothing is left to do; and a retry that survives `kill -9` of the processes running it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from tests.api.servers import GreenProcess, free_port, poll, serve_green


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _cancel_after(client: httpx.AsyncClient, assessment_id: str, trials: int) -> dict[str, Any]:
    path = f"/assessments/{assessment_id}"
    await poll(client, path, lambda b: b["progress"]["trials_done"] >= trials, timeout_s=120)
    cancelled = await client.post(f"{path}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    return dict(cancelled.json())


async def test_retry_over_rest_with_tenants(database_url: str, slow_oracle_url: str) -> None:
    async with serve_green(database_url) as url:
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            _, a = await keys.create("a", admin=False, allow_private_agents=True)
            _, b = await keys.create("b", admin=False, allow_private_agents=True)
            _, admin = await keys.create("ops", admin=True, allow_private_agents=False)
        finally:
            await engine.dispose()
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(a)) as client:
            body = {
                "agent_url": slow_oracle_url,
                "tasks": {"task_ids": ["0", "1", "5", "6"]},
                "concurrency": 1,
            }
            created = (await client.post("/assessments", json=body)).json()
            path = f"/assessments/{created['id']}"
            assert created["links"]["retry"] == f"{path}/retry" and created["attempt"] == 1
            cancelled = await _cancel_after(client, created["id"], 1)
            assert cancelled["status"] == "cancelled"
            report = cancelled["report"]
            assert report["trials_planned"] == 4 and report["tasks_planned"] == 4

            assert (await client.post("/assessments/nope/retry")).status_code == 404
            other = await client.post(f"{path}/retry", headers=bearer(b))
            assert other.status_code == 404  # another tenant's looks like none

            retried = await client.post(f"{path}/retry")
            assert retried.status_code == 202, retried.text
            assert retried.headers["Location"] == path
            again = retried.json()
            assert again["status"] in ("queued", "running") and again["attempt"] == 2
            assert [a["number"] for a in again["attempts"]] == [1, 2]
            assert again["attempts"][0]["status"] == "cancelled" and again["attempts"][1]["source"] == "rest"
            running = await client.post(f"{path}/retry")
            assert running.status_code == 409
            assert "retry it once it has finished" in running.json()["detail"]

            final = await poll(client, path, lambda x: x["status"] == "completed", timeout_s=120)
            assert final["report"]["complete"]  # tasks scored on the DB alone: no judge needed
            assert final["progress"] == {"trials_done": 4, "trials_total": 4}
            assert [a["status"] for a in final["attempts"]] == ["cancelled", "completed"]
            nothing = await client.post(f"{path}/retry", headers=bearer(admin))  # an admin may ask
            assert nothing.status_code == 409 and "nothing left to retry" in nothing.json()["detail"]
            listed = (await client.get("/assessments")).json()["data"]
            assert listed[0]["attempts"] is None and listed[0]["attempt"] == 2  # history in the single view


async def test_a_retry_survives_kill_9(database_url: str, slow_oracle_url: str, tmp_path: Path) -> None:
    """A cancelled assessment retried; the processes running the retry are SIGKILLed midway and started
    again: the rest runs, no trial runs twice, and the history says so. On PostgreSQL the trials also run on
    a separate worker process."""
    fast_failover = {"GREEN_AGENT_WORKER_HEARTBEAT_S": "0.5", "GREEN_AGENT_WORKER_STALLED_AFTER_S": "3"}
    green = GreenProcess(database_url, free_port(), tmp_path / "green.log", env=fast_failover)
    workers = []
    if database_url.startswith("postgresql"):
        workers.append(
            GreenProcess(database_url, 0, tmp_path / "worker.log", command=["worker"], env=fast_failover)
        )
    body = {"agent_url": slow_oracle_url, "tasks": {"num_tasks": 10}, "trials": 2, "concurrency": 2}
    try:
        green.start()
        for worker in workers:
            worker.start()
        await green.wait_ready()
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            assessment_id = (await client.post("/assessments", json=body)).json()["id"]
            path = f"/assessments/{assessment_id}"
            first = await _cancel_after(client, assessment_id, 3)
            done = first["progress"]["trials_done"]
            kept = {
                (t["task_id"], t["trial"]): t["finished_at"]
                for t in (await client.get(f"{path}/trials")).json()["data"]
            }
            assert (await client.post(f"{path}/retry")).status_code == 202
            await poll(client, path, lambda x: x["progress"]["trials_done"] >= done + 3, timeout_s=120)
        for process in (green, *workers):
            process.kill()

        green.start()
        for worker in workers:
            worker.start()
        await green.wait_ready()
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            final = await poll(client, path, lambda x: x["status"] == "completed", timeout_s=240)
            trials = (await client.get(f"{path}/trials", params={"limit": 100})).json()
    finally:
        for process in (green, *workers):
            process.stop()
    keys = [(t["task_id"], t["trial"]) for t in trials["data"]]
    assert trials["count"] == 20 and len(set(keys)) == 20
    assert final["progress"] == {"trials_done": 20, "trials_total": 20}
    after = {(t["task_id"], t["trial"]): t["finished_at"] for t in trials["data"]}
    assert all(after[key] == finished for key, finished in kept.items())  # kept, never run twice
    assert final["report"]["trials_planned"] == 20 and "not_run" not in final["report"]["partial_reasons"]
    assert [(a["number"], a["status"], a["trials_to_run"]) for a in final["attempts"]] == [
        (1, "cancelled", 20),
        (2, "completed", 20 - done),
    ]
